//! Scheduling policies for nvsched.
//!
//! A policy sees [`Request`]s and time, nothing else: it never imports the simulator,
//! the SSD model or io_uring, so the same code runs in both engines. Each policy is one
//! file under [`policies`] with one `impl Scheduler` and its parameters declared next to
//! it; [`registry`] lists them all and builds one from `ID:key=value,...`.

pub mod params;
pub mod policies;
pub mod registry;
mod request;
mod scheduler;

pub use nvsched_core::{IoPrio, Nanos, Op, PrioClass, TenantTree};
pub use params::{ParamError, ParamKind, ParamSpec, Params};
pub use registry::{
    build, find, BuiltPolicy, CgroupModel, PolicyInfo, PolicySpecError, ALIASES, COMMON_PARAMS, POLICIES,
};
pub use request::{MergeSide, Request, RequestId, MAX_MERGE_BYTES};
pub use scheduler::{Completion, DeviceView, HostCost, Inserted, PolicyReport, Scheduler, TimeSeries};
