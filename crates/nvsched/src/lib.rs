//! The nvsched facade: run a job file through an engine and assemble the report. The
//! `nvsched` binary is a thin clap layer over this.

pub mod batch;
pub mod calibration;
pub mod figures;
pub mod iocost_model;
pub mod metrics;
pub mod profile_fit;
pub mod progress;
pub mod realdev;
pub mod repro;
pub mod run;
pub mod sweep;
pub mod tune;

pub use nvsched_policy as policy;
pub use nvsched_report as report;
pub use nvsched_sim as sim;
pub use nvsched_ssd as ssd;
pub use nvsched_uring as uring;
pub use nvsched_workload as workload;

/// nvsched's version, written into reports.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A path of the project (`experiments`, `examples/k2-mix.fio`): in the working directory
/// where it is there, else beside the binary's sources, so the commands that default to
/// the project's files work from any directory.
pub fn project_path(relative: &str) -> std::path::PathBuf {
    let here = std::path::PathBuf::from(relative);
    if here.exists() {
        return here;
    }
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(relative)
}
