//! What every stage's configuration shares: the trait a stage type's schema implements
//! ([`StageSchema`]), what resolving and building are given, and the readers of its values
//! (delay and loss profiles, rate schedules, trace files, named presets). Errors name the field
//! by its path in the scenario, one line ([`ConfigError`]).

use serde::{Deserialize, Serialize};
pub use spikelab_core::config::{check, num, probability, ConfigError};
use spikelab_core::units::Rate;
use spikelab_core::{Rng, SimDuration, SimTime};
use std::path::{Path, PathBuf};

use crate::{Profile, ProfileRow, Stage, StageConfig};

pub type Result<T> = std::result::Result<T, ConfigError>;

/// A stage type's configuration as a scenario gives it: its fields, their defaults and checks,
/// and the stage it builds. One per stage type, beside the model; the registry in `lib.rs`
/// makes it a variant of [`StageConfig`].
pub trait StageSchema: Sized {
    /// The stage's `type` in a scenario.
    const TYPE: &'static str;
    /// Its fields, in the order an error lists them.
    const FIELDS: &'static [&'static str];

    /// Checks the fields and fills in the defaults (the resolved scenario lists them); errors
    /// name `{at}.FIELD`.
    fn resolve(&mut self, at: &str, ctx: &ResolveCtx) -> Result<()>;

    /// Checks what depends on the other stages of the path (`ctx.stages`, this one at
    /// `ctx.index`), once every stage is resolved.
    fn check_in_path(&self, _at: &str, _ctx: &PathCtx) -> Result<()> {
        Ok(())
    }

    /// The stage, from the resolved configuration.
    fn build(&self, ctx: &PathCtx) -> Stage;

    /// What to say when `field`, one of this type's, is given to a stage of type `on` that
    /// does not have it (`None`: the usual "not a field of" message).
    fn misplaced(_field: &str, _on: &str) -> Option<String> {
        None
    }
}

/// What resolving a stage's configuration may read: trace files name paths relative to the
/// scenario's directory.
pub struct ResolveCtx<'a> {
    pub base_dir: &'a Path,
}

/// A stage among its path's: for the checks that look at the stages after it and for
/// building it with its own random stream.
pub struct PathCtx<'a> {
    /// The path's name.
    pub path: &'a str,
    /// The path's stages, in order.
    pub stages: &'a [&'a StageConfig],
    /// This stage's index.
    pub index: usize,
    /// The run's seed.
    pub seed: u64,
}

impl PathCtx<'_> {
    /// The random stream of stage `index` of the path, `path/<path>/stage/<index>`: the
    /// simulator and the emulator draw the same numbers for a seed.
    pub fn rng_of(&self, index: usize) -> Rng {
        Rng::stream(self.seed, &format!("path/{}/stage/{index}", self.path))
    }

    /// This stage's random stream.
    pub fn rng(&self) -> Rng {
        self.rng_of(self.index)
    }

    /// The stages after this one, with their indexes.
    pub fn later(&self) -> impl Iterator<Item = (usize, &StageConfig)> {
        self.stages
            .iter()
            .enumerate()
            .skip(self.index + 1)
            .map(|(i, s)| (i, *s))
    }
}

/// Exactly one of the fields `one_of` is among those `set` (the stage's source: a rate stage's
/// `rate`, `schedule`, ...): else the error "a `kind` stage needs exactly one of ...", naming
/// the stage `at`, or with none set and `none_field`, `{at}.{none_field}`.
pub fn exactly_one(
    set: &[&str],
    one_of: &[&str],
    (at, kind): (&str, &str),
    none_field: Option<&str>,
) -> Result<()> {
    let n = one_of.iter().filter(|f| set.contains(f)).count();
    let field = match none_field {
        Some(f) if n == 0 => format!("{at}.{f}"),
        _ => at.to_string(),
    };
    check(
        n == 1,
        field,
        format!("a {kind} stage needs exactly one of {}", one_of.join(", ")),
    )
}

/// A configuration table whose fields may each be left out: every field is an `Option`, read
/// with serde's `default` and written back only when set, so a resolved scenario lists what was
/// given and the defaults filled in. Fields in brackets before them are required (a preset's
/// `[name: String]`); fields under `computed` are worked out when the scenario is resolved,
/// never read or written. The struct's own attributes (derives, `serde`) are given as written.
#[macro_export]
macro_rules! optional_fields {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( [ $( $(#[$rmeta:meta])* $rfield:ident: $rty:ty ),* $(,)? ] )?
            $( $(#[$fmeta:meta])* $field:ident: $ty:ty, )*
        }
        $( computed {
            $( $(#[$cmeta:meta])* $cfield:ident: $cty:ty, )*
        } )?
    ) => {
        $(#[$meta])*
        pub struct $name {
            $($(
                $(#[$rmeta])*
                pub $rfield: $rty,
            )*)?
            $(
                $(#[$fmeta])*
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $field: Option<$ty>,
            )*
            $($(
                $(#[$cmeta])*
                #[serde(skip)]
                pub $cfield: Option<$cty>,
            )*)?
        }

        impl $name {
            /// The optional fields that are set, in declaration order.
            #[allow(dead_code)]
            pub fn set_fields(&self) -> Vec<&'static str> {
                let mut set = Vec::new();
                $( if self.$field.is_some() {
                    set.push(stringify!($field));
                } )*
                set
            }
        }
    };
}

/// What a stage type's schema uses (`use crate::config::prelude::*;`).
pub(crate) mod prelude {
    pub use super::{
        check, exactly_one, num, probability, ConfigError, PathCtx, ResolveCtx, Result, StageSchema,
    };
    pub use crate::optional_fields;
    pub use crate::{Stage, StageConfig};
    pub use serde::{Deserialize, Serialize};
    pub use spikelab_core::units::{Bytes, Duration, Rate};
}

/// A preset's knobs table, each with its `name` (stage and path presets alike).
pub trait PresetKnobs: Default + Serialize + for<'de> Deserialize<'de> {
    fn name(&self) -> &str;
    fn set_name(&mut self, name: String);
}

/// A `preset` given by name (`preset = "NAME"`) or as a table with knobs (`preset = { name =
/// "NAME", ... }`), written back the way it came.
#[derive(Clone, Debug, PartialEq)]
pub struct Named<T> {
    pub table: T,
    /// Given as a bare name.
    pub named: bool,
}

impl<T: PresetKnobs> Serialize for Named<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        if self.named {
            s.serialize_str(self.table.name())
        } else {
            self.table.serialize(s)
        }
    }
}

impl<'de, T: PresetKnobs> Deserialize<'de> for Named<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::{self, MapAccess, Visitor};
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: PresetKnobs> Visitor<'de> for V<T> {
            type Value = Named<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a preset name or a table with `name`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Named<T>, E> {
                let mut table = T::default();
                table.set_name(v.to_string());
                Ok(Named { table, named: true })
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<Named<T>, A::Error> {
                let table = T::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Named {
                    table,
                    named: false,
                })
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// One cell of a rate stage's `schedule` row: a number (ms, or bits per second) or a rate
/// with a unit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ScheduleCell {
    Num(f64),
    Text(String),
}

pub(crate) fn resolve_path(base_dir: &Path, file: &str) -> PathBuf {
    let p = PathBuf::from(file);
    if p.is_absolute() {
        p
    } else {
        base_dir.join(p)
    }
}

/// The largest trace file read: 256 MiB (millions of rows).
pub const MAX_TRACE_FILE_BYTES: u64 = 256 << 20;

/// The header of a delay stage's trace.
pub const DELAY_TRACE_HEADER: &str = "time_ms,delay_ms,loss";
/// The header of a rate stage's trace.
pub const RATE_TRACE_HEADER: &str = "time_ms,rate_bps";

/// At most 80 characters of a line quoted in an error (a file of one 20 MB line must not
/// make a 20 MB message), with `…` where it was cut.
fn clipped(line: &str) -> String {
    match line.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

/// An error about "row I" of rows read from `path` restated as the file's line (`lines[I]`,
/// from 1), where the user can find it.
pub(crate) fn at_lines<T>(r: Result<T>, path: &Path, lines: &[usize]) -> Result<T> {
    r.map_err(|mut e| {
        // A value's error names its row as an index of the field (`FIELD[I]`, profile_rows).
        let indexed = e
            .field
            .strip_suffix(']')
            .and_then(|f| f.rsplit_once('['))
            .and_then(|(f, i)| Some((f.to_string(), lines.get(i.parse::<usize>().ok()?)?)));
        if let Some((field, line)) = indexed {
            e.message = format!("{} line {line}: {}", path.display(), e.message);
            e.field = field;
            return e;
        }
        let row = e
            .message
            .strip_prefix("row ")
            .and_then(|rest| rest.split_once(": "))
            .and_then(|(i, msg)| Some((lines.get(i.parse::<usize>().ok()?)?, msg)));
        if let Some((line, msg)) = row {
            e.message = format!("{} line {line}: {msg}", path.display());
        }
        e
    })
}

/// Reads a CSV file of numbers whose first line is `header` (blank lines and `#` comments
/// skipped), one row per line with as many numbers as the header has names; with each row's
/// line number in the file (from 1).
pub fn read_csv_lines(
    path: &Path,
    field: &str,
    header_want: &str,
) -> Result<(Vec<Vec<f64>>, Vec<usize>)> {
    let ncols = header_want.split(',').count();
    use std::io::Read;
    let shown = path.display();
    let cannot = |e: std::io::Error| ConfigError::new(field, format!("cannot read {shown}: {e}"));
    let meta = std::fs::metadata(path).map_err(cannot)?;
    check(
        meta.is_file(),
        field,
        format!("{shown} is not a regular file"),
    )?;
    check(
        meta.len() <= MAX_TRACE_FILE_BYTES,
        field,
        format!(
            "{shown} is {} bytes; trace files are limited to {} MiB",
            meta.len(),
            MAX_TRACE_FILE_BYTES >> 20
        ),
    )?;
    let mut raw = Vec::new();
    std::fs::File::open(path)
        .map_err(cannot)?
        .take(MAX_TRACE_FILE_BYTES + 1)
        .read_to_end(&mut raw)
        .map_err(cannot)?;
    check(
        raw.len() as u64 <= MAX_TRACE_FILE_BYTES,
        field,
        format!(
            "{shown} grew beyond {} MiB while being read",
            MAX_TRACE_FILE_BYTES >> 20
        ),
    )?;
    let text = String::from_utf8(raw)
        .map_err(|_| ConfigError::new(field, format!("{shown} is not UTF-8 text")))?;
    let mut rows = Vec::new();
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let header = lines
        .next()
        .map(|(_, l)| l.replace(' ', ""))
        .unwrap_or_default();
    check(
        header == header_want,
        field,
        format!(
            "{}: the first line must be the header {header_want}, got {header:?}",
            path.display()
        ),
    )?;
    let mut numbers = Vec::new();
    for (no, line) in lines {
        let vals: std::result::Result<Vec<f64>, _> =
            line.split(',').map(|c| c.trim().parse::<f64>()).collect();
        match vals {
            Ok(v) if v.len() == ncols => {
                rows.push(v);
                numbers.push(no + 1);
            }
            _ => {
                return Err(ConfigError::new(
                    field,
                    format!(
                        "{} line {}: expected {} numbers, got {:?}",
                        path.display(),
                        no + 1,
                        if ncols == 3 { "three" } else { "two" },
                        clipped(line)
                    ),
                ))
            }
        }
    }
    Ok((rows, numbers))
}

fn profile_rows(rows: &[Vec<f64>], field: &str, with_delay: bool) -> Result<Vec<ProfileRow>> {
    let arity = if with_delay { 3 } else { 2 };
    let shape = if with_delay {
        "[time_ms, delay_ms, loss]"
    } else {
        "[time_ms, loss]"
    };
    let mut out = Vec::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        check(
            r.len() == arity,
            format!("{field}[{i}]"),
            format!("a row is {shape}, got {} values", r.len()),
        )?;
        let t = r[0];
        let (d, loss) = if with_delay {
            (r[1], r[2])
        } else {
            (0.0, r[1])
        };
        let max_ms = spikelab_core::units::MAX_DURATION_S * 1e3;
        check(
            !t.is_nan() && t >= 0.0,
            format!("{field}[{i}]"),
            format!("time must be >= 0, got {t}"),
        )?;
        check(
            t <= max_ms,
            format!("{field}[{i}]"),
            format!(
                "time must be at most 1e12 ms (about 31 years), got {}",
                num(t)
            ),
        )?;
        check(
            !d.is_nan() && d >= 0.0,
            format!("{field}[{i}]"),
            format!("delay must be >= 0, got {d}"),
        )?;
        check(
            d <= max_ms,
            format!("{field}[{i}]"),
            format!(
                "delay must be at most 1e12 ms (about 31 years), got {}",
                num(d)
            ),
        )?;
        out.push(ProfileRow {
            t: SimTime::from_secs_f64(t / 1000.0),
            delay: SimDuration::from_secs_f64(d / 1000.0),
            loss,
        });
    }
    Profile::new(out.clone()).map_err(|e| ConfigError::new(field, e.to_string()))?;
    Ok(out)
}

pub fn delay_profile(rows: &[Vec<f64>], field: &str) -> Result<Profile> {
    Ok(Profile::new(profile_rows(rows, field, true)?).expect("validated"))
}

pub fn loss_profile(rows: &[Vec<f64>], field: &str) -> Result<Profile> {
    Ok(Profile::new(profile_rows(rows, field, false)?).expect("validated"))
}

/// The points of a rate schedule (`[[time_ms, rate], ...]`, the rate a number of bits per
/// second or a string with a unit; `0` allowed except in the last row, which holds forever).
pub fn schedule_points(rows: &[Vec<ScheduleCell>], field: &str) -> Result<Vec<(SimTime, u64)>> {
    check(
        !rows.is_empty(),
        field,
        "a rate schedule needs at least one row [time_ms, rate]",
    )?;
    let max_ms = spikelab_core::units::MAX_DURATION_S * 1e3;
    let mut out: Vec<(SimTime, u64)> = Vec::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        let at = |m: String| ConfigError::new(field, format!("row {i}: {m}"));
        if r.len() != 2 {
            return Err(at(format!(
                "a row is [time_ms, rate], got {} values",
                r.len()
            )));
        }
        let t = match &r[0] {
            ScheduleCell::Num(t) => *t,
            ScheduleCell::Text(x) => {
                return Err(at(format!("time must be a number of ms, got {x:?}")))
            }
        };
        if t.is_nan() || t < 0.0 || t > max_ms {
            return Err(at(format!("time must be in [0, 1e12] ms, got {}", num(t))));
        }
        let bps = match &r[1] {
            ScheduleCell::Num(v) => {
                if v.is_nan()
                    || *v < 0.0
                    || *v > spikelab_core::units::MAX_RATE_BPS
                    || v.fract() != 0.0
                {
                    return Err(at(format!(
                        "rate must be a whole number of bits per second in [0, 1e13], got {}",
                        num(*v)
                    )));
                }
                *v as u64
            }
            ScheduleCell::Text(x) => {
                if x.trim()
                    .trim_end_matches(|c: char| c.is_alphabetic() || c == '/')
                    == "0"
                {
                    0
                } else {
                    Rate::parse(x).map_err(|e| at(format!("rate: {e}")))?.0
                }
            }
        };
        let t = SimTime::from_secs_f64(t / 1000.0);
        if let Some(prev) = out.last() {
            if t < prev.0 {
                return Err(at("times must be non-decreasing".into()));
            }
        }
        // As in a delay profile: a step is two rows, the rate before and the rate after; a
        // third row at that time would never apply.
        if out.len() >= 2 && out[out.len() - 2].0 == t {
            return Err(at(
                "at most two rows may share one time (a step has a before and an after)".into(),
            ));
        }
        out.push((t, bps));
    }
    check(
        out.last().is_some_and(|p| p.1 > 0),
        field,
        format!(
            "row {}: the last rate holds forever and must be > 0",
            rows.len() - 1
        ),
    )?;
    Ok(out)
}
