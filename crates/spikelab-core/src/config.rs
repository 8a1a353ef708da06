//! Errors of a model's configuration: every check names the field it concerns by its path in
//! the scenario (`path.fwd.stage[0].p: must be in [0, 1), got 1`), one line.

use std::fmt;

/// A problem with a configuration, with the path of the field it concerns.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    pub field: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

/// `Ok` when `ok`, else the error `field: msg`.
pub fn check(
    ok: bool,
    field: impl Into<String>,
    msg: impl Into<String>,
) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError::new(field, msg))
    }
}

/// `v` is a probability (in [0, 1]).
pub fn probability(v: f64, field: &str) -> Result<(), ConfigError> {
    check(
        (0.0..=1.0).contains(&v),
        field,
        format!("must be a probability in [0, 1], got {v}"),
    )
}

/// A number as a reader would write it: `1e300`, not three hundred digits (nor `1e-300`
/// three hundred zeros).
pub fn num(v: f64) -> String {
    if v.is_finite() && (v.abs() >= 1e15 || (v != 0.0 && v.abs() < 1e-6)) {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}
