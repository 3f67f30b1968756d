//! The small vocabulary every nvsched crate shares: simulated time ([`Nanos`]), the
//! block operations ([`Op`]), Linux I/O priorities ([`IoPrio`]) and the seedable,
//! platform-independent random generator ([`SimRng`]) used by all generators so a
//! run with the same seed is byte-for-byte reproducible.

mod ioprio;
mod logs;
mod nanos;
mod perm;
pub mod rng;
mod tenants;

pub use ioprio::{IoPrio, PrioClass};
pub use logs::{LogClock, LogRequest};
pub use nanos::Nanos;
pub use perm::Permutation;
pub use rng::SimRng;
pub use tenants::{TenantNode, TenantTree, DEFAULT_WEIGHT};

use serde::Serialize;

/// A block-layer operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Read,
    Write,
    /// Cache flush (fsync/fdatasync reach the device as a flush).
    Flush,
    /// TRIM / deallocate.
    Discard,
}

impl Op {
    /// Index used by per-direction tables: read 0, write 1, discard (fio's "trim") 2,
    /// flush 3.
    pub const fn index(self) -> usize {
        match self {
            Op::Read => 0,
            Op::Write => 1,
            Op::Discard => 2,
            Op::Flush => 3,
        }
    }

    pub const fn is_data(self) -> bool {
        matches!(self, Op::Read | Op::Write)
    }

    /// Index in read/write tables (fio's `read,write` option pairs): read 0, write 1;
    /// `None` for the others.
    pub const fn data_index(self) -> Option<usize> {
        match self {
            Op::Read => Some(0),
            Op::Write => Some(1),
            _ => None,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Flush => "flush",
            Op::Discard => "discard",
        }
    }

    /// fio's name for the direction (its `ddir`), as in iologs and messages: a discard
    /// is a `trim`, a flush a `sync`.
    pub const fn fio_name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Flush => "sync",
            Op::Discard => "trim",
        }
    }
}
