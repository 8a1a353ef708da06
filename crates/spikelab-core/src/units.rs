//! Scenario value types with units: durations, bit rates, byte counts.
//!
//! Each accepts a number (seconds, bits per second, bytes) or a string with a unit, and
//! serialises back to a string the parser accepts, so a resolved scenario can be run again.

use crate::SimDuration;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What a unit value was written as: a plain number or a string with a unit.
enum NumOrStr {
    Int(i64),
    Float(f64),
    Str(String),
}

struct NumOrStrVisitor;

impl serde::de::Visitor<'_> for NumOrStrVisitor {
    type Value = NumOrStr;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a number or a string with a unit")
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<NumOrStr, E> {
        Ok(NumOrStr::Int(v))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<NumOrStr, E> {
        Ok(match i64::try_from(v) {
            Ok(i) => NumOrStr::Int(i),
            Err(_) => NumOrStr::Float(v as f64),
        })
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<NumOrStr, E> {
        Ok(NumOrStr::Float(v))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<NumOrStr, E> {
        Ok(NumOrStr::Str(v.to_string()))
    }
}

impl<'de> Deserialize<'de> for NumOrStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NumOrStrVisitor)
    }
}

/// `Deserialize` from a plain number (`$from_number`, in the type's base unit) or a string with a
/// unit (`parse`); the error names the value as the user wrote it.
macro_rules! units_deserialize {
    ($ty:ident, $from_number:ident) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let r = match NumOrStr::deserialize(d)? {
                    NumOrStr::Int(i) => $ty::$from_number(i as f64, &i.to_string()),
                    NumOrStr::Float(x) => $ty::$from_number(x, &x.to_string()),
                    NumOrStr::Str(s) => $ty::parse(&s),
                };
                r.map_err(serde::de::Error::custom)
            }
        }
    };
}

/// Whether a value in the type's base unit is whole (within what a decimal written in the file
/// and scaled by its unit can carry: "0.1s" is 100000000 ns, "0.4ns" is not whole).
fn whole(v: f64) -> bool {
    (v - v.round()).abs() <= 1e-6 * v.abs().max(1.0)
}

/// The longest duration a scenario may give: 10^9 s (about 31.7 years). Simulated time is a
/// count of nanoseconds in 64 bits; this keeps every sum of scenario times far from overflow.
pub const MAX_DURATION_S: f64 = 1e9;
/// The highest bit rate: 10 Tbit/s.
pub const MAX_RATE_BPS: f64 = 1e13;
/// The largest byte count: 10^15 bytes (1 PB).
pub const MAX_BYTES: f64 = 1e15;

fn split_unit(s: &str) -> (&str, &str) {
    let s = s.trim();
    let idx = s
        .find(|c: char| {
            !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')
        })
        .unwrap_or(s.len());
    // "1e3ms": an 'e' followed by a letter belongs to the unit, not the exponent.
    let (num, unit) = s.split_at(idx);
    (num.trim(), unit.trim())
}

fn parse_number(num: &str, original: &str) -> Result<f64, String> {
    num.parse::<f64>()
        .map_err(|_| format!("expected a number with a unit, got {original:?}"))
}

/// A non-negative duration: a number of seconds or a string like `"40ms"`, `"1.5s"`, `"200us"`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Duration(pub SimDuration);

impl Duration {
    pub fn is_zero(&self) -> bool {
        self.0 == SimDuration::ZERO
    }
    pub fn parse(s: &str) -> Result<Duration, String> {
        let (num, unit) = split_unit(s);
        let v = parse_number(num, s)?;
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" | "" => 1.0,
            "min" => 60.0,
            "h" => 3600.0,
            _ => {
                return Err(format!(
                    "unknown time unit {unit:?} in {s:?} (use ns, us, ms, s, min, h)"
                ))
            }
        };
        Self::from_secs(v * scale, s)
    }
    fn from_secs(v: f64, shown: &str) -> Result<Duration, String> {
        if v.is_nan() {
            return Err(format!("must be a number, got {shown}"));
        }
        if v < 0.0 {
            return Err(format!("must not be negative, got {shown}"));
        }
        if v > MAX_DURATION_S {
            return Err(format!(
                "must be at most 1e9 s (about 31 years), got {shown}"
            ));
        }
        let ns = v * 1e9;
        if !whole(ns) {
            return Err(format!(
                "must be a whole number of nanoseconds (the simulator's clock), got {shown}"
            ));
        }
        Ok(Duration(SimDuration(ns.round() as u64)))
    }
    pub fn as_sim(self) -> SimDuration {
        self.0
    }
}

impl Default for Duration {
    fn default() -> Self {
        Duration(SimDuration::ZERO)
    }
}

impl std::fmt::Display for Duration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ns = self.0.as_nanos();
        if ns.is_multiple_of(1_000_000_000) {
            write!(f, "{}s", ns / 1_000_000_000)
        } else if ns.is_multiple_of(1_000_000) {
            write!(f, "{}ms", ns / 1_000_000)
        } else if ns.is_multiple_of(1_000) {
            write!(f, "{}us", ns / 1_000)
        } else {
            write!(f, "{ns}ns")
        }
    }
}

units_deserialize!(Duration, from_secs);
impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

/// The word a [`DurationOr`] accepts instead of a duration, and what it stands for.
pub trait Keyword: Copy + std::fmt::Debug + PartialEq + Eq + Default {
    const WORD: &'static str;
    const MEANING: &'static str;
}

/// `"rto"` (`quickack_idle`): the receiver's own RTO, as Linux has it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Rto;
impl Keyword for Rto {
    const WORD: &'static str = "rto";
    const MEANING: &'static str = "the receiver's own RTO";
}

/// `"ato"` (`delack_timeout`): Linux's adaptive delayed-ACK timeout.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Ato;
impl Keyword for Ato {
    const WORD: &'static str = "ato";
    const MEANING: &'static str = "Linux's adaptive delayed-ACK timeout";
}

/// A duration, or the keyword `K` stands for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DurationOr<K: Keyword> {
    Word(K),
    Fixed(Duration),
}

pub type DurationOrRto = DurationOr<Rto>;
pub type DurationOrAto = DurationOr<Ato>;

impl<K: Keyword> DurationOr<K> {
    pub fn is_word(&self) -> bool {
        matches!(self, DurationOr::Word(_))
    }

    /// The fixed duration, or `otherwise` for the keyword.
    pub fn fixed_or(&self, otherwise: SimDuration) -> SimDuration {
        match self {
            DurationOr::Fixed(d) => d.0,
            DurationOr::Word(_) => otherwise,
        }
    }
}

impl<'de, K: Keyword> Deserialize<'de> for DurationOr<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = match NumOrStr::deserialize(d)? {
            NumOrStr::Str(s) if s.trim() == K::WORD => Ok(DurationOr::Word(K::default())),
            NumOrStr::Str(s) => Duration::parse(&s)
                .map(DurationOr::Fixed)
                .map_err(|e| format!("{e}; or \"{}\" for {}", K::WORD, K::MEANING)),
            NumOrStr::Int(i) => {
                Duration::from_secs(i as f64, &i.to_string()).map(DurationOr::Fixed)
            }
            NumOrStr::Float(x) => Duration::from_secs(x, &x.to_string()).map(DurationOr::Fixed),
        };
        r.map_err(serde::de::Error::custom)
    }
}

impl<K: Keyword> Serialize for DurationOr<K> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            DurationOr::Word(_) => s.serialize_str(K::WORD),
            DurationOr::Fixed(d) => d.serialize(s),
        }
    }
}

/// A positive bit rate: bits per second, or a string like `"10Mbps"`, `"64kbps"`, `"1Gbps"`,
/// `"10Tbps"` (the highest).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Rate(pub u64);

impl Rate {
    pub fn parse(s: &str) -> Result<Rate, String> {
        let (num, unit) = split_unit(s);
        let v = parse_number(num, s)?;
        let scale = match unit {
            "bps" | "bit/s" | "" => 1.0,
            "kbps" | "Kbps" | "kbit/s" => 1e3,
            "Mbps" | "mbps" | "Mbit/s" => 1e6,
            "Gbps" | "gbps" | "Gbit/s" => 1e9,
            "Tbps" | "tbps" | "Tbit/s" => 1e12,
            _ => {
                return Err(format!(
                    "unknown rate unit {unit:?} in {s:?} (use bps, kbps, Mbps, Gbps, Tbps)"
                ))
            }
        };
        Self::from_bps(v * scale, s)
    }
    fn from_bps(v: f64, shown: &str) -> Result<Rate, String> {
        if v.is_nan() || v < 1.0 {
            return Err(format!(
                "must be a positive rate of at least 1 bps, got {shown}"
            ));
        }
        if v > MAX_RATE_BPS {
            return Err(format!("must be at most 10 Tbps, got {shown}"));
        }
        if !whole(v) {
            return Err(format!(
                "must be a whole number of bits per second, got {shown}"
            ));
        }
        Ok(Rate(v.round() as u64))
    }
}
impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}bps", self.0)
    }
}
units_deserialize!(Rate, from_bps);
impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

/// A byte count: an integer, or a string like `"64KiB"`, `"1MB"` (KB = 1000, KiB = 1024).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Bytes(pub u64);

impl Bytes {
    pub fn parse(s: &str) -> Result<Bytes, String> {
        let (num, unit) = split_unit(s);
        let v = parse_number(num, s)?;
        let scale = match unit {
            "B" | "" => 1.0,
            "KB" | "kB" => 1e3,
            "MB" => 1e6,
            "GB" => 1e9,
            "KiB" => 1024.0,
            "MiB" => 1024.0 * 1024.0,
            "GiB" => 1024.0 * 1024.0 * 1024.0,
            _ => {
                return Err(format!(
                    "unknown size unit {unit:?} in {s:?} (use B, KB, MB, GB, KiB, MiB, GiB)"
                ))
            }
        };
        Self::from_f64(v * scale, s)
    }
    fn from_f64(v: f64, shown: &str) -> Result<Bytes, String> {
        if v.is_nan() {
            return Err(format!("must be a number, got {shown}"));
        }
        if v < 0.0 {
            return Err(format!("must not be negative, got {shown}"));
        }
        if v > MAX_BYTES {
            return Err(format!("must be at most 1e15 bytes, got {shown}"));
        }
        if !whole(v) {
            return Err(format!("must be a whole number of bytes, got {shown}"));
        }
        Ok(Bytes(v.round() as u64))
    }
}
units_deserialize!(Bytes, from_f64);
impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_parse() {
        assert_eq!(
            Duration::parse("40ms").unwrap().0,
            SimDuration::from_millis(40)
        );
        assert_eq!(
            Duration::parse("1.5s").unwrap().0,
            SimDuration::from_millis(1500)
        );
        assert_eq!(
            Duration::parse("250us").unwrap().0,
            SimDuration::from_micros(250)
        );
        assert!(Duration::parse("-1")
            .unwrap_err()
            .contains("must not be negative"));
        assert!(Duration::parse("3 fortnights").is_err());
        // No silent clamping: values beyond the bounds are errors.
        assert!(Duration::parse("1e10s").unwrap_err().contains("at most"));
        assert!(Duration::from_secs(f64::INFINITY, "inf")
            .unwrap_err()
            .contains("at most"));
        assert!(Duration::from_secs(f64::NAN, "nan")
            .unwrap_err()
            .contains("must be a number"));
        assert!(Rate::parse("1e14bps").unwrap_err().contains("at most"));
        assert!(Bytes::parse("2e15").unwrap_err().contains("at most"));
        // Whole units only: nothing is rounded silently.
        assert!(Bytes::from_f64(1.5, "1.5")
            .unwrap_err()
            .contains("whole number of bytes"));
        assert_eq!(Bytes::parse("1.5KB").unwrap().0, 1500);
        assert!(Rate::from_bps(1.5, "1.5")
            .unwrap_err()
            .contains("whole number"));
        assert_eq!(Rate::parse("1.5Mbps").unwrap().0, 1_500_000);
        assert!(Duration::parse("0.4ns")
            .unwrap_err()
            .contains("whole number"));
        assert_eq!(
            Duration::parse("0.1s").unwrap().0,
            SimDuration::from_millis(100)
        );
        assert_eq!(Duration::parse("1.1ms").unwrap().0, SimDuration(1_100_000));
        assert_eq!(Rate::parse("10Mbps").unwrap().0, 10_000_000);
        assert_eq!(Rate::parse("64kbps").unwrap().0, 64_000);
        // Up to the documented bound, in its own unit too.
        assert_eq!(Rate::parse("10Tbps").unwrap().0, 10_000_000_000_000);
        assert_eq!(Rate::parse("1.5 Tbit/s").unwrap().0, 1_500_000_000_000);
        assert!(Rate::parse("11Tbps")
            .unwrap_err()
            .contains("at most 10 Tbps"));
        assert!(Rate::parse("-5Mbps").unwrap_err().contains("positive"));
        assert_eq!(Bytes::parse("64KiB").unwrap().0, 65_536);
        assert_eq!(Bytes::parse("1MB").unwrap().0, 1_000_000);
        assert_eq!(
            Duration(SimDuration::from_millis(1500)).to_string(),
            "1500ms"
        );
    }
}
