//! What every congestion control's configuration shares: the traits an algorithm's schema
//! implements ([`CcFields`], written by [`cc_fields!`](crate::cc_fields), and [`CcSchema`]).
//! A scenario gives an algorithm by name (`cc = "NAME"`) or as a table of its parameters
//! (`cc = { algo = "NAME", ... }`); each parameter may be left out for the algorithm's default.
//! Errors name the field by its path in the scenario, one line ([`ConfigError`]).

pub use spikelab_core::config::{check, ConfigError};

use super::CcParams;

pub type Result<T> = std::result::Result<T, ConfigError>;

/// The parameters a scenario may give an algorithm, each optional ([`cc_fields!`](crate::cc_fields)
/// writes this).
pub trait CcFields {
    /// The parameters' names, in the order an error lists them.
    const FIELDS: &'static [&'static str];
    /// The parameters given, in the order of `FIELDS`.
    fn set_fields(&self) -> Vec<&'static str>;
}

/// An algorithm's configuration as a scenario gives it: its parameters, their defaults and
/// checks. One per algorithm, beside the model; the registry in `cc/mod.rs` makes it a variant
/// of [`CcTable`](super::CcTable). It is written back as given (a resolved scenario does not
/// list the defaults).
pub trait CcSchema:
    CcFields + Clone + Default + PartialEq + serde::Serialize + for<'de> serde::Deserialize<'de>
{
    /// The model's parameters.
    type Params: CcParams;

    /// Checks the parameters given (errors name `{at}.FIELD`) and fills in the defaults.
    fn params(&self, at: &str) -> Result<Self::Params>;
}

/// An algorithm's configuration table: every parameter an `Option`, read with serde's
/// `default` and written back only when set; implements [`CcFields`]. The struct's doc comment
/// and its fields' are given as written.
#[macro_export]
macro_rules! cc_fields {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $field:ident: $ty:ty, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $(
                $(#[$fmeta])*
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $field: Option<$ty>,
            )*
        }

        impl $crate::cc::CcFields for $name {
            const FIELDS: &'static [&'static str] = &[$( stringify!($field) ),*];

            #[allow(unused_mut)]
            fn set_fields(&self) -> Vec<&'static str> {
                let mut set = Vec::new();
                $( if self.$field.is_some() {
                    set.push(stringify!($field));
                } )*
                set
            }
        }
    };
}

/// What an algorithm's schema uses (`use crate::cc::schema::prelude::*;`).
pub(crate) mod prelude {
    pub use super::{check, positive_int, CcSchema, ConfigError, Result};
    pub use crate::cc_fields;
    pub use spikelab_core::units::Duration;
}

/// `v` is an integer from 1 to `max`: "must be >= 1" / "must be <= max", naming `field`.
pub fn positive_int(v: i64, field: &str, max: i64) -> Result<()> {
    check(v >= 1, field, format!("must be >= 1, got {v}"))?;
    check(v <= max, field, format!("must be <= {max}, got {v}"))
}
