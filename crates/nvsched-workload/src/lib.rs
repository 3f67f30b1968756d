//! Workloads for nvsched: fio job files ([`spec`], [`jobfile`], [`units`]), what each
//! job issues and when ([`gen`], [`driver`], [`flow`], [`latency_target`],
//! [`steadystate`]), and what its writes carry ([`buffers`]). Knows nothing about engines
//! or devices.

pub mod buffers;
pub mod driver;
pub mod errors;
pub mod file_setup;
pub mod filelock;
pub mod flow;
pub mod gen;
pub mod jobfile;
pub mod latency_target;
pub mod randmap;
pub mod spec;
pub mod steadystate;
pub mod tenants;
pub mod trace;
pub mod units;
pub mod written;

pub use buffers::{BufferFiller, BufferSpec};
pub use driver::{Completed, Failure, JobDriver, Poll, ReplayStats};
pub use filelock::{FileLocks, LockMode};
pub use flow::FlowGroups;
pub use gen::{IoGenerator, IoUnit, Region, SyncRange};
pub use jobfile::{command_line_options, Environment, HostEnvironment, JobFileError, Location, RawOption};
pub use spec::{find_option, why_not_an_option};
pub use spec::{
    parse_job_file, parse_job_file_with, parse_job_str, parse_job_str_with, BlockSizes, Distribution, EngineKind,
    ExitWhat, FileService, FileSize, JobFile, JobSpec, OptionLines, ParseOptions, Pattern, RateProcess, SyncMode,
    ThinktimeCounts, UnifiedRw, VerifyFormat, DEFAULT_PERCENTILES, OPTIONS,
};
pub use tenants::{
    clone_seed, exit_targets, per_prio_reporting, reporting_groups, tenant_tree, wait_for_targets, Tenants,
};
pub use units::{KbBase, SizeOrPercent};
