//! SCTP flows: `protocol = "sctp"` and the destinations' paths. The `[flow.sctp]` table's
//! knobs, their defaults and checks are spikelab-sctp's ([`spikelab_sctp::schema`]); this
//! module re-exports them.

use serde::{Deserialize, Serialize};
pub use spikelab_sctp::{SctpSpec, SCTP_PROFILES};

/// A flow's transport protocol.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    #[default]
    Tcp,
    Sctp,
}

impl Protocol {
    pub fn is_tcp(&self) -> bool {
        *self == Protocol::Tcp
    }
}

/// One destination of an SCTP association: the path its packets take to the peer and the path
/// the peer's replies take back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DestPaths {
    pub fwd: String,
    pub rev: String,
}
