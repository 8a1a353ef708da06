//! Profiles (`tcp.profile = "linux"`, `"ns2"`, `"rfc"`): data tables of defaults
//! (`profiles/NAME.toml`) applied in one place, before the scenario is read: each fills the
//! keys of a flow that the file leaves out (explicit keys win) and says, key by key, where each
//! value came from (`spikelab validate` prints the notes).

use super::*;
use spikelab_tcp::ns2::Ns2LinuxAgent;

/// Names accepted in `profile = "..."`.
pub const PROFILES: &[&str] = &["linux", "ns2", "rfc"];

/// A profile's data table (`profiles/NAME.toml`): the flow-level keys it fills (`cc`) and
/// its `[tcp]` table, the keys it fills in `[flow.tcp]`. The `rfc` profile is the defaults: the
/// name only says so.
fn profile_tables(name: &str) -> Option<(toml::Table, toml::Table)> {
    let text = match name {
        "linux" => include_str!("profiles/linux.toml"),
        "ns2" => include_str!("profiles/ns2.toml"),
        "rfc" => "",
        _ => return None,
    };
    let mut flow: toml::Table = toml::from_str(text).expect("valid profile");
    let tcp = match flow.remove("tcp") {
        Some(toml::Value::Table(t)) => t,
        _ => toml::Table::new(),
    };
    Some((tcp, flow))
}

/// `tcpTick_` of ns-2.35's `Agent/TCP/Linux` once `select_ca` has installed a module
/// (`LinuxTcpAgent::install_congestion_control`: `1/JIFFY_RATIO` s).
const NS2_LINUX_TICK: &str = "1ms";

/// ns-2's `window_` default, packets.
const NS2_WINDOW_PACKETS: i64 = 20;

/// One key a profile resolved: its value from the profile, or the file's value that won.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProfileNote {
    pub flow: usize,
    pub profile: String,
    /// Dotted key inside the flow (`tcp.variant`, `tcp.rto.min`, `cc`).
    pub key: String,
    /// The profile's value, as TOML.
    pub profile_value: String,
    /// The file's value (as TOML) when the file sets the key itself: it wins.
    pub file_value: Option<String>,
    /// Why the profile's value was not applied although the file leaves the key out (it
    /// conflicts with a key the file sets: RACK and PRR need SACK recovery).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_applied: Option<String>,
}

/// Fills the keys of each flow's `tcp.profile` that the file leaves out (explicit keys win) and
/// says, key by key, where each value came from.
pub(super) fn apply_profiles(root: &mut toml::Value) -> Result<Vec<ProfileNote>> {
    let mut notes = Vec::new();
    let Some(flows) = root.get_mut("flow").and_then(|f| f.as_array_mut()) else {
        return Ok(notes);
    };
    for (i, flow) in flows.iter_mut().enumerate() {
        let Some(p) = flow.get("tcp").and_then(|t| t.get("profile")) else {
            continue;
        };
        let field = format!("flow[{i}].tcp.profile");
        let name = p
            .as_str()
            .ok_or_else(|| ScenarioError::new(&field, "must be a string"))?
            .to_string();
        let Some((tcp_defaults, flow_defaults)) = profile_tables(&name) else {
            return Err(ScenarioError::new(
                field,
                format!("unknown profile {name:?} (known: {})", PROFILES.join(", ")),
            ));
        };
        let Some(flow) = flow.as_table_mut() else {
            continue;
        };
        let mut flow_notes = Vec::new();
        let mut note = |key: String, profile_value: &toml::Value, file: Option<&toml::Value>| {
            flow_notes.push(ProfileNote {
                flow: i,
                profile: name.clone(),
                key,
                profile_value: show(profile_value),
                file_value: file.map(show),
                not_applied: None,
            })
        };
        merge_missing(flow, &flow_defaults, "", &mut note);
        if name == "ns2" {
            ns2_computed_keys(flow, &mut note);
        }
        // CUBIC and Hybla under ns2 run in Agent/TCP/Linux (Reno with ns2_agent = "linux"),
        // whose install_congestion_control sets tcpTick_ to 1 ms (1/JIFFY_RATIO): the
        // profile's tick for them.
        let algo = match flow.get("cc") {
            Some(toml::Value::String(a)) => Some(a.as_str()),
            Some(toml::Value::Table(t)) => t.get("algo").and_then(|a| a.as_str()),
            _ => None,
        };
        let asks_linux = flow
            .get("tcp")
            .and_then(|t| t.get("ns2_agent"))
            .is_some_and(|a| a.as_str() == Some("linux"));
        let linux_agent = name == "ns2" && (asks_linux || algo.is_some_and(Ns2LinuxAgent::runs));
        if let Some(tcp) = flow.get_mut("tcp").and_then(|t| t.as_table_mut()) {
            merge_missing(tcp, &tcp_defaults, "tcp.", &mut note);
            if linux_agent {
                let tick = toml::Value::String(NS2_LINUX_TICK.into());
                for n in &mut flow_notes {
                    if n.key == "tcp.rto.granularity" && n.file_value.is_none() {
                        n.profile_value = show(&tick);
                        if let Some(rto) = tcp.get_mut("rto").and_then(|r| r.as_table_mut()) {
                            rto.insert("granularity".into(), tick.clone());
                        }
                    }
                }
            }
            // Keys the profile filled that need what the file has turned off: not applied.
            let is = |tcp: &toml::Table, k: &str, v: toml::Value| tcp.get(k) == Some(&v);
            let sack_variant = is(tcp, "variant", "sack".into());
            let sack = is(tcp, "sack", true.into());
            // What the key needs and what the file set instead, in the file's words.
            let variant = tcp.get("variant").map(show).unwrap_or_default();
            for n in &mut flow_notes {
                let (needs, off) = match n.key.as_str() {
                    "tcp.rack" | "tcp.prr" if !(sack_variant && sack) => (
                        "variant = \"sack\" and sack = true",
                        match (sack_variant, sack) {
                            (false, false) => format!("variant = {variant} and sack = false"),
                            (false, true) => format!("variant = {variant}"),
                            _ => "sack = false".to_string(),
                        },
                    ),
                    "tcp.tlp" if !sack => ("sack = true", "sack = false".to_string()),
                    _ => continue,
                };
                if n.file_value.is_none() {
                    let k = n.key.trim_start_matches("tcp.");
                    tcp.insert(k.to_string(), false.into());
                    n.not_applied = Some(format!("needs {needs}; the file sets {off}"));
                }
            }
        }
        notes.extend(flow_notes);
    }
    Ok(notes)
}

/// The `ns2` profile's keys that depend on others: `window_` is 20 packets of the flow's `mss`
/// (unless the file gives `rwnd` or `tcp.rwnd`), and the sink sends SACK blocks exactly when the
/// agent is Sack1.
fn ns2_computed_keys(
    flow: &mut toml::Table,
    note: &mut impl FnMut(String, &toml::Value, Option<&toml::Value>),
) {
    let flow_rwnd = flow.get("rwnd").cloned();
    let Some(tcp) = flow.get_mut("tcp").and_then(|t| t.as_table_mut()) else {
        return;
    };
    let mss = tcp.get("mss").and_then(|m| m.as_integer()).unwrap_or(1000);
    let rwnd = toml::Value::Integer(NS2_WINDOW_PACKETS * mss);
    match (tcp.get("rwnd").cloned(), flow_rwnd) {
        (None, None) => {
            note("tcp.rwnd".into(), &rwnd, None);
            tcp.insert("rwnd".into(), rwnd);
        }
        (file, flow) => note("tcp.rwnd".into(), &rwnd, file.or(flow).as_ref()),
    }
    let sack = toml::Value::Boolean(tcp.get("variant").and_then(|v| v.as_str()) == Some("sack"));
    match tcp.get("sack").cloned() {
        None => {
            note("tcp.sack".into(), &sack, None);
            tcp.insert("sack".into(), sack);
        }
        Some(file) => note("tcp.sack".into(), &sack, Some(&file)),
    }
}

/// A TOML value as written in a file (inline tables for tables).
fn show(v: &toml::Value) -> String {
    match v {
        toml::Value::Table(t) => {
            let inner: Vec<String> = t
                .iter()
                .map(|(k, v)| format!("{k} = {}", show(v)))
                .collect();
            format!("{{ {} }}", inner.join(", "))
        }
        v => v.to_string(),
    }
}

fn merge_missing(
    into: &mut toml::Table,
    defaults: &toml::Table,
    prefix: &str,
    note: &mut impl FnMut(String, &toml::Value, Option<&toml::Value>),
) {
    for (k, v) in defaults {
        let key = format!("{prefix}{k}");
        match (into.get_mut(k), v) {
            (None, toml::Value::Table(dsub)) if k != "cc" => {
                let mut sub = toml::Table::new();
                merge_missing(&mut sub, dsub, &format!("{key}."), note);
                into.insert(k.clone(), toml::Value::Table(sub));
            }
            (None, _) => {
                note(key, v, None);
                into.insert(k.clone(), v.clone());
            }
            (Some(toml::Value::Table(sub)), toml::Value::Table(dsub)) if k != "cc" => {
                merge_missing(sub, dsub, &format!("{key}."), note)
            }
            (Some(file), _) => note(key, v, Some(file)),
        }
    }
}
