//! `nvsched tune iocost`: io.cost's linear cost model for a simulated drive, measured the
//! way the kernel's `tools/cgroup/iocost_coef_gen.py` measures a real one: six fio runs,
//! each the only load on the drive, give the sequential bandwidth and the sequential and
//! random 4 KiB IOPS of reads and of writes.
//!
//! The script's sequential runs use 128 MiB blocks at queue depth 1, which the kernel
//! splits into 512 KiB requests (its `max_sectors_kb`), all in flight at once; nvsched
//! runs 512 KiB blocks at queue depth 256, the same requests. The 4 KiB runs use queue
//! depth 64, as the script. Each run covers the script's 16 GiB test file at the start of
//! the drive, in the drive state the job file sets; on a clean drive the reads get that
//! region written first, as the script writes its file before measuring.
//!
//! On a real file or block device ([`measure_real`]) the same six runs go through
//! io_uring, one after the other, as the script runs them.

use crate::calibration::{job, job_on, simulate, with_state};
use crate::progress::RunProgress;
use nvsched_report::JobStats;
use nvsched_ssd::{DeviceProfile, DriveStates};
use nvsched_uring::UringOptions;
use rayon::prelude::*;
use std::path::Path;

/// The script's test file.
const TEST_BYTES: u64 = 16 << 30;
const TEST_SIZE: &str = "16g";

/// One coefficient and the run that measures it.
#[derive(Clone, Debug, PartialEq)]
pub struct Coefficient {
    /// `rbps`, `rseqiops`, ...
    pub name: &'static str,
    pub rw: &'static str,
    pub bs: &'static str,
    pub iodepth: u32,
    /// Bytes per second for `*bps`, 4 KiB I/Os per second for the others.
    pub value: u64,
}

/// The six runs: (name, rw, block size, queue depth).
const RUNS: [(&str, &str, &str, u32); 6] = [
    ("rbps", "read", "512k", 256),
    ("rseqiops", "read", "4k", 64),
    ("rrandiops", "randread", "4k", 64),
    ("wbps", "write", "512k", 256),
    ("wseqiops", "write", "4k", 64),
    ("wrandiops", "randwrite", "4k", 64),
];

/// The profile the reads run on: the drive state as given, or with the test region
/// written where a flash drive is clean.
fn read_profile(profile: &DeviceProfile) -> Result<DeviceProfile, String> {
    if profile.precondition() != "clean" || !matches!(profile.model, nvsched_ssd::ModelConfig::Nand(_)) {
        return Ok(profile.clone());
    }
    let fraction = (TEST_BYTES as f64 / profile.capacity_bytes as f64).min(1.0);
    with_state(profile, &format!("partial:{fraction}"))
}

/// Runs the six measurements (in parallel) on `profile` for `seconds` each with
/// `numjobs` jobs, as the script's `--duration` and `--numjobs`.
pub fn measure(
    profile: &DeviceProfile,
    seconds: u32,
    numjobs: u32,
    show_progress: bool,
) -> Result<Vec<Coefficient>, String> {
    if profile.capacity_bytes < TEST_BYTES {
        return Err(format!(
            "device '{}' holds {} bytes, less than the 16 GiB test region",
            profile.name, profile.capacity_bytes
        ));
    }
    let reads = read_profile(profile)?;
    let progress = RunProgress::new("tune", RUNS.len(), show_progress);
    let drive_states = DriveStates::new();
    let out = RUNS
        .par_iter()
        .map(|&(name, rw, bs, iodepth)| {
            let on = if name.starts_with('r') { &reads } else { profile };
            let text = job("coef", rw, bs, iodepth, numjobs, &seconds.to_string(), Some(TEST_SIZE));
            let s = simulate(on, &text, Some(&drive_states))?;
            progress.inc();
            Ok(coefficient((name, rw, bs, iodepth), &s))
        })
        .collect();
    progress.finish();
    out
}

/// The six runs (the three of reads only, unless `writes`) on the real file or block
/// device `path`, within its first `size_bytes`, one after the other through io_uring.
/// `opts` must allow writing to `path` when `writes`.
pub fn measure_real(
    path: &Path,
    size_bytes: u64,
    seconds: u32,
    numjobs: u32,
    writes: bool,
    opts: &UringOptions,
    show_progress: bool,
) -> Result<Vec<Coefficient>, String> {
    let runs: Vec<_> = RUNS.iter().filter(|r| writes || r.0.starts_with('r')).collect();
    let progress = RunProgress::new("tune", runs.len(), show_progress);
    let mut model = Vec::new();
    let (target, runtime, size) = (path.display().to_string(), seconds.to_string(), size_bytes.to_string());
    for &&(name, rw, bs, iodepth) in &runs {
        let text = job_on(&target, "coef", rw, bs, iodepth, numjobs, &runtime, Some(&size));
        let report = crate::realdev::device_run(&text, opts).map_err(|e| format!("{name} ({rw} {bs}): {e}"))?;
        let s = report.jobs.first().ok_or("the measurement reported no job")?;
        model.push(coefficient((name, rw, bs, iodepth), s));
        progress.inc();
    }
    progress.finish();
    Ok(model)
}

/// The bytes of a real target to measure, from a size as fio writes it (`16g`): 1 MiB at
/// least.
pub fn real_size_bytes(size: &str) -> Result<u64, String> {
    let bytes = nvsched_workload::units::parse_size(size, nvsched_workload::KbBase::Binary)?;
    if bytes < 1 << 20 {
        return Err(format!("'{size}' is less than 1 MiB"));
    }
    Ok(bytes)
}

/// A run's result as its coefficient: bytes per second for `*bps`, else 4 KiB IOPS.
fn coefficient((name, rw, bs, iodepth): (&'static str, &'static str, &'static str, u32), s: &JobStats) -> Coefficient {
    let bytes = (s.dirs[0].io_bytes + s.dirs[1].io_bytes) as f64;
    let bytes_per_sec = bytes / s.runtime.as_secs_f64().max(1e-9);
    let value = if name.ends_with("bps") { bytes_per_sec } else { bytes_per_sec / 4096.0 };
    Coefficient { name, rw, bs, iodepth, value: value.round() as u64 }
}

/// `name=value` for each coefficient, joined by `separator`.
fn assignments(model: &[Coefficient], separator: &str) -> String {
    model.iter().map(|c| format!("{}={}", c.name, c.value)).collect::<Vec<_>>().join(separator)
}

/// The `--sched` value that runs io.cost with this model.
pub fn sched_spec(model: &[Coefficient]) -> String {
    format!("iocost:{}", assignments(model, ","))
}

/// The line for `/sys/fs/cgroup/io.cost.model` (MAJ:MIN is the device's numbers).
pub fn model_line(model: &[Coefficient]) -> String {
    format!("MAJ:MIN ctrl=user model=linear {}", assignments(model, " "))
}

/// The measurements as a table.
pub fn table(model: &[Coefficient]) -> String {
    let mut out = format!("{:<11} {:<24} {:>14}\n", "coefficient", "fio job", "measured");
    for c in model {
        let job = format!("{} {} QD{}", c.rw, c.bs, c.iodepth);
        let shown = if c.name.ends_with("bps") {
            format!("{:.1} MB/s", c.value as f64 / 1e6)
        } else {
            format!("{} IOPS", c.value)
        };
        out.push_str(&format!("{:<11} {:<24} {:>14}\n", c.name, job, shown));
    }
    out
}
