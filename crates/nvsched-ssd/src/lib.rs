//! Device models for nvsched. A model has no clock of its own: the engine tells it that a
//! command arrives at `now` (arrivals come in time order) and it answers when the command
//! completes, booking its internal resources (units, dies, channels, buffers) on
//! timelines. It knows nothing about host scheduling.

pub mod nand;
mod profile;
mod simple;

pub use nand::config::{GcPolicy, NandConfig};
pub use nand::{DriveStates, NandDevice, Precondition, Watch};
pub use profile::{
    builtin_profiles, is_builtin_profile, load_profile, load_profile_and_text, parse_profile, profile_text, Datasheet,
    DeviceProfile, HostPath, ModelConfig, PageCacheConfig, ProfileError,
};
pub use simple::{SimpleConfig, SimpleDevice};

use nvsched_core::{Nanos, Op};
use serde::Serialize;

/// One command as the device sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Command {
    pub op: Op,
    pub offset_bytes: u64,
    pub len_bytes: u32,
    /// Force unit access: complete only once on stable media.
    pub fua: bool,
}

/// A device model.
pub trait Device: Send {
    /// A command arrives at `now` (never earlier than the previous arrival); returns its
    /// completion time.
    fn submit(&mut self, cmd: &Command, now: Nanos) -> Nanos;
    /// A hint that a command for `offset_bytes` will arrive later: a model may bring
    /// what it will look up into the host's cache. Only the simulation's speed depends on
    /// it, never its results.
    #[inline]
    fn prefetch(&self, _offset_bytes: u64) {}
    /// Before the run: the byte ranges `(start, len)` that hold no data yet get it, as a
    /// sequential write leaves them (fio laying out its files before the jobs start);
    /// the counters stay at zero. A model without a mapping has nothing to do.
    fn lay_out(&mut self, _ranges_bytes: &[(u64, u64)]) {}
    /// Commands the device accepts at once (NVMe submission queue depth, SATA NCQ 32).
    fn queue_depth(&self) -> u32;
    fn capacity_bytes(&self) -> u64;
    /// Counters since the start, with utilisation computed over `[0, now]`.
    fn counters(&self, now: Nanos) -> DeviceCounters;
}

/// What a device did, for the results' `nvsched.device` section.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct DeviceCounters {
    pub model: String,
    pub host_read_bytes: u64,
    pub host_write_bytes: u64,
    pub host_pages_written: u64,
    pub nand_pages_written: u64,
    pub write_amplification: f64,
    pub gc_runs: u64,
    pub gc_pages_moved: u64,
    pub erases: u64,
    pub slc_writes: u64,
    pub slc_folds: u64,
    pub buffer_read_hits: u64,
    pub reads_behind_program: u64,
    pub flushes: u64,
    pub discards: u64,
    /// Busy fraction of each parallel unit (die) over the run.
    pub unit_utilization: Vec<f64>,
    /// Extra model-specific numbers.
    pub extra: Vec<(String, f64)>,
    /// Per-second activity inside the device.
    pub series: Vec<DeviceSeries>,
}

impl DeviceCounters {
    pub fn extra(&self, name: &str) -> Option<f64> {
        self.extra.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

/// One per-second series of device activity.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct DeviceSeries {
    pub name: String,
    pub window_s: u32,
    pub values: Vec<f64>,
}

impl DeviceSeries {
    pub fn per_second(name: &str, values: &[f64]) -> DeviceSeries {
        DeviceSeries { name: name.into(), window_s: 1, values: values.to_vec() }
    }
}
