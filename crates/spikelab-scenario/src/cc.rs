//! A flow's congestion control: `cc = "NAME"`, or a `[flow.cc]` table with `algo = "NAME"` and
//! that algorithm's parameters. Each algorithm's parameters, defaults and checks are its own
//! (spikelab-tcp's `cc/`, one module per algorithm; the registry is the list at the end of
//! `cc/mod.rs`): this module reads the name or the table, refuses a parameter the algorithm does
//! not take, dispatches the checks and writes the congestion control back the way it came.

use super::*;
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserializer, Serializer};
pub use spikelab_tcp::cc::{CcConfig, CcTable};
use spikelab_tcp::cc::{CcParams, RenoParams};

/// What a flow whose congestion control only the kernel has is read as.
const RENO: &str = RenoParams::NAME;

/// Congestion controls the simulator knows (the registry's order).
pub const CONGESTION_CONTROLS: &[&str] = CcConfig::NAMES;

/// A flow's congestion control: one algorithm's own configuration. Written back the way it
/// came (a name when no parameter is set).
#[derive(Clone, Debug, PartialEq)]
pub struct CcSpec {
    pub table: CcTable,
    /// Given as a bare name (`cc = "..."`): errors about the name point at `cc`, not `cc.algo`.
    pub named: bool,
}

impl Default for CcSpec {
    /// Reno, by name.
    fn default() -> Self {
        CcSpec {
            table: CcTable::Reno(Default::default()),
            named: true,
        }
    }
}

impl CcSpec {
    pub fn algo(&self) -> &'static str {
        self.table.algo()
    }
}

/// Why `name` is not a congestion control.
fn unknown(name: &str) -> String {
    format!(
        "unknown congestion control {name:?} (available: {})",
        CONGESTION_CONTROLS.join(", ")
    )
}

/// The algorithms that have a parameter, in the registry's order.
fn with_parameters() -> impl Iterator<Item = &'static str> {
    CONGESTION_CONTROLS
        .iter()
        .copied()
        .filter(|a| CcTable::fields_of(a).is_some_and(|f| !f.is_empty()))
}

impl Serialize for CcSpec {
    /// The name alone when no parameter is set; else `algo`, then the parameters.
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        if self.table.set_fields().is_empty() {
            return s.serialize_str(self.algo());
        }
        #[derive(Serialize)]
        struct Written<'a> {
            algo: &'static str,
            #[serde(flatten)]
            table: &'a CcTable,
        }
        Written {
            algo: self.algo(),
            table: &self.table,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for CcSpec {
    /// A name, or a table whose `algo` comes first (the scenario's reader hands a table's
    /// `algo` out first, `strict.rs`): the algorithm's configuration reads the other fields, so
    /// a field's error names it (`flow[0].cc.beta: ...`); a parameter of another algorithm is
    /// refused by name.
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(CcVisitor)
    }
}

struct CcVisitor;

impl<'de> Visitor<'de> for CcVisitor {
    type Value = CcSpec;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a congestion control name or a table with `algo`")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<CcSpec, E> {
        let table = CcTable::named(v).ok_or_else(|| E::custom(unknown(v)))?;
        Ok(CcSpec { table, named: true })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<CcSpec, A::Error> {
        if map.next_key::<String>()?.as_deref() != Some("algo") {
            return Err(de::Error::missing_field("algo"));
        }
        let algo = map.next_value_seed(Algo)?;
        let fields = CcTableFields { map, algo: &algo };
        let table = CcTable::deserialize_as(&algo, de::value::MapAccessDeserializer::new(fields))?
            .expect("a known algorithm");
        Ok(CcSpec {
            table,
            named: false,
        })
    }
}

/// A cc table's `algo`: one of the registered algorithms.
struct Algo;

impl<'de> DeserializeSeed<'de> for Algo {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<String, D::Error> {
        let name = String::deserialize(d)?;
        match CcTable::fields_of(&name) {
            Some(_) => Ok(name),
            None => Err(de::Error::custom(unknown(&name))),
        }
    }
}

/// The fields of a cc table after its `algo`, as the algorithm's configuration reads them: a
/// key the algorithm does not take is refused where it stands.
struct CcTableFields<'a, A> {
    map: A,
    algo: &'a str,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for CcTableFields<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> std::result::Result<Option<K::Value>, A::Error> {
        self.map.next_key_seed(CcKey {
            seed,
            algo: self.algo,
        })
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> std::result::Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// Reads a key of a cc table of the algorithm `algo`, refusing one it does not take: a
/// parameter of other algorithms says whose it is and what `algo` takes; any other key lists
/// every algorithm's parameters.
struct CcKey<'a, K> {
    seed: K,
    algo: &'a str,
}

impl<'de, K: DeserializeSeed<'de>> DeserializeSeed<'de> for CcKey<'_, K> {
    type Value = K::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<K::Value, D::Error> {
        let key = String::deserialize(d)?;
        let algo = self.algo;
        let own = CcTable::fields_of(algo).expect("a known algorithm");
        if !own.contains(&key.as_str()) {
            let owners: Vec<&str> = with_parameters()
                .filter(|a| CcTable::fields_of(a).is_some_and(|f| f.contains(&key.as_str())))
                .collect();
            let msg = if owners.is_empty() {
                let mut all = vec!["algo"];
                for f in with_parameters().flat_map(|a| CcTable::fields_of(a).unwrap_or(&[])) {
                    if !all.contains(f) {
                        all.push(f);
                    }
                }
                let quoted: Vec<String> = all.iter().map(|f| format!("`{f}`")).collect();
                format!(
                    "unknown field `{key}`, expected one of {}",
                    quoted.join(", ")
                )
            } else {
                let takes = if own.is_empty() {
                    format!("{algo} takes no parameters")
                } else {
                    format!("{algo} takes {}", own.join(", "))
                };
                format!(
                    "is a parameter of {}, not of {algo} ({takes})",
                    owners.join(" and ")
                )
            };
            return Err(de::Error::custom(msg));
        }
        let field: de::value::StringDeserializer<D::Error> = key.into_deserializer();
        self.seed.deserialize(field)
    }
}

/// A `cc` table without `algo` (`--set flow[0].cc.beta=0.6` on a flow that leaves `cc` out
/// makes one): says to give the algorithm with the parameters, in the `--set` words that do
/// it, instead of serde's "missing field `algo`". The example algorithm is the first (in the
/// registry's order) that takes every parameter given, or the first with parameters.
pub(super) fn check_cc_tables(root: &toml::Value) -> Result<()> {
    let Some(flows) = root.get("flow").and_then(|f| f.as_array()) else {
        return Ok(());
    };
    for (i, flow) in flows.iter().enumerate() {
        let Some(cc) = flow.get("cc").and_then(|c| c.as_table()) else {
            continue;
        };
        if cc.contains_key("algo") {
            continue;
        }
        let takes = |algo: &&str| {
            let own = CcTable::fields_of(algo).unwrap_or(&[]);
            cc.keys().all(|k| own.contains(&k.as_str()))
        };
        let algo = with_parameters()
            .find(takes)
            .or_else(|| with_parameters().next())
            .unwrap_or(CONGESTION_CONTROLS[0]);
        let mut whole = vec![format!("algo={:?}", algo)];
        whole.extend(cc.iter().map(|(k, v)| format!("{k}={v}")));
        let at = format!("flow[{i}].cc");
        return Err(ScenarioError::new(
            &at,
            format!(
                "a cc table needs algo (set {at}={{{}}} whole, or {at}={algo:?} first)",
                whole.join(", ")
            ),
        ));
    }
    Ok(())
}

impl FlowSpec {
    /// Checks the parameters `[flow.cc]` gives (the name and which parameters the algorithm
    /// takes were checked when the file was read).
    pub(super) fn validate_cc(&self, at: &str) -> Result<()> {
        self.cc.table.config(&format!("{at}.cc")).map(|_| ())
    }

    /// The congestion control this flow runs, defaults filled.
    pub fn cc_config(&self) -> CcConfig {
        self.cc.table.config("flow.cc").expect("validated")
    }
}

/// For the emulator, whose kernel knows congestion controls the simulator does not model
/// (`bbr`, `vegas`, ...): each TCP flow's congestion control that is not in the registry, by
/// flow index, replaced in `value` by `reno` so that the scenario parses (the kernel runs the
/// named one; docs/emulation.md). SCTP flows are left alone: their `cc` is refused as before.
pub(crate) fn take_kernel_only(value: &mut toml::Value) -> Vec<Option<String>> {
    let Some(flows) = value.get_mut("flow").and_then(|f| f.as_array_mut()) else {
        return Vec::new();
    };
    flows
        .iter_mut()
        .map(|flow| {
            let tcp = flow
                .get("protocol")
                .is_none_or(|p| p.as_str() == Some("tcp"));
            let name = match flow.get("cc") {
                Some(toml::Value::String(s)) => Some(s.clone()),
                Some(toml::Value::Table(t)) => {
                    t.get("algo").and_then(|a| a.as_str()).map(str::to_string)
                }
                _ => None,
            };
            match name {
                Some(n) if tcp && !CONGESTION_CONTROLS.contains(&n.as_str()) => {
                    flow.as_table_mut()?
                        .insert("cc".into(), toml::Value::String(RENO.into()));
                    Some(n)
                }
                _ => None,
            }
        })
        .collect()
}
