//! `nvsched calibrate` and `nvsched compare`: measure a real device the way profiles are
//! calibrated, fit a simulator profile to it, and put the simulator's prediction for a
//! job file next to what the device does.

use crate::run::{run_sim_whole, run_uring, RunSpec};
use nvsched_report::{JobStats, RunReport};
use nvsched_ssd::{Datasheet, DeviceProfile};
use nvsched_uring::UringOptions;
use nvsched_workload::jobfile::HostEnvironment;
use nvsched_workload::{parse_job_str, JobFile, ParseOptions};
use std::fmt::Write;
use std::path::Path;

/// What calibration measured.
#[derive(Clone, Debug, Default)]
pub struct Measurements {
    pub qd1_read_us: f64,
    pub qd1_write_us: Option<f64>,
    /// (queue depth, IOPS, mean latency us) for 4 KiB random reads.
    pub qd_curve: Vec<(u32, f64, f64)>,
    pub rand_read_iops: f64,
    pub rand_write_iops: Option<f64>,
    pub seq_read_mbps: f64,
    pub seq_write_mbps: Option<f64>,
    /// Per-second sequential write bandwidth (MB/s) over the allowed size.
    pub write_series_mbps: Vec<f64>,
}

/// Below this share of the first second's rate, the sequential write's last whole second
/// shows a write-cache cliff.
const CLIFF_SHARE: f64 = 0.7;

impl Measurements {
    /// The sequential write's rates (MB/s) in its first and its last whole second, when
    /// writes were measured over 4 s or more.
    fn write_ends_mbps(&self) -> Option<(f64, f64)> {
        let n = self.write_series_mbps.len();
        (n >= 4).then(|| (self.write_series_mbps[0], self.write_series_mbps[n - 2]))
    }

    /// [`Measurements::write_ends_mbps`] when they show a write-cache cliff.
    fn write_cliff_mbps(&self) -> Option<(f64, f64)> {
        self.write_ends_mbps().filter(|(early, late)| *late < CLIFF_SHARE * early)
    }
}

fn jobs_for(text: &str) -> Result<JobFile, String> {
    parse_job_str(text, Path::new("calibrate.fio"), &HostEnvironment, ParseOptions::default())
        .map_err(|e| e.to_string())
}

/// Runs `measure` on the real file or block device `path`, giving it whether it may write
/// (to a file nvsched creates, or when the user allows it) and the engine's options. A
/// file that does not exist yet is laid out first (written whole, so reads reach the
/// device) and removed afterwards, whatever `measure` returns.
pub fn on_target<T>(
    path: &Path,
    size_bytes: u64,
    allow_destructive: bool,
    measure: impl FnOnce(bool, &UringOptions) -> Result<T, String>,
) -> Result<T, String> {
    nvsched_uring::available()?;
    nvsched_uring::targets::check_kind(path)?;
    let exists = path.exists();
    let writes = allow_destructive || !exists;
    let opts = UringOptions {
        safety: nvsched_uring::targets::Safety { allow_destructive: writes, ..Default::default() },
        keep_files: true,
        ..UringOptions::default()
    };
    if !exists {
        nvsched_uring::targets::layout(path, size_bytes)?;
    }
    let result = measure(writes, &opts);
    if !exists {
        let _ = std::fs::remove_file(path);
    }
    result
}

/// One run of `text` under `none` through io_uring; an I/O error fails it.
pub(crate) fn device_run(text: &str, opts: &UringOptions) -> Result<RunReport, String> {
    let jobs = jobs_for(text)?;
    let policy = nvsched_policy::build("none").map_err(|e| e.to_string())?;
    let (report, outcome) = run_uring(&jobs, policy, opts, 0)?;
    if let Some(e) = outcome.io_errors.first() {
        return Err(format!("I/O error during the measurement: {e}"));
    }
    if outcome.interrupted {
        return Err("interrupted during the measurement".into());
    }
    Ok(report)
}

fn iops(jobs: &[JobStats]) -> f64 {
    jobs.iter().map(|j| j.total_ios() as f64 / j.runtime.as_secs_f64().max(1e-9)).sum()
}

fn mbps(jobs: &[JobStats]) -> f64 {
    jobs.iter()
        .map(|j| j.dirs.iter().map(|d| d.io_bytes).sum::<u64>() as f64 / j.runtime.as_secs_f64().max(1e-9))
        .sum::<f64>()
        / 1e6
}

fn mean_clat_us(j: &JobStats, dir: usize) -> f64 {
    j.dirs[dir].lat.mean() / 1e3
}

/// Measures the device behind `path` within `size` bytes; writes only if `writes`.
pub fn measure(
    path: &Path,
    size: u64,
    seconds: u32,
    writes: bool,
    opts: &UringOptions,
) -> Result<Measurements, String> {
    let head = format!("[global]\nfilename={}\nsize={size}\ndirect=1\nruntime={seconds}\ntime_based\n", path.display());
    let mut m = Measurements::default();
    let r = device_run(&format!("{head}[qd1-read]\nioengine=psync\nrw=randread\nbs=4k\n"), opts)?;
    m.qd1_read_us = mean_clat_us(&r.jobs[0], 0);
    for qd in [1u32, 2, 4, 8, 16, 32, 64] {
        let r = device_run(&format!("{head}[qd{qd}]\nioengine=io_uring\niodepth={qd}\nrw=randread\nbs=4k\n"), opts)?;
        m.qd_curve.push((qd, iops(&r.jobs), mean_clat_us(&r.jobs[0], 0)));
    }
    let r = device_run(
        &format!("{head}group_reporting\n[rr]\nioengine=io_uring\niodepth=32\nnumjobs=4\nrw=randread\nbs=4k\n"),
        opts,
    )?;
    m.rand_read_iops = iops(&r.jobs);
    let r = device_run(&format!("{head}[sr]\nioengine=io_uring\niodepth=32\nrw=read\nbs=128k\n"), opts)?;
    m.seq_read_mbps = mbps(&r.jobs);
    if writes {
        let r = device_run(&format!("{head}[qd1-write]\nioengine=psync\nrw=randwrite\nbs=4k\n"), opts)?;
        m.qd1_write_us = Some(mean_clat_us(&r.jobs[0], 1));
        let r = device_run(
            &format!("{head}group_reporting\n[rw]\nioengine=io_uring\niodepth=32\nnumjobs=4\nrw=randwrite\nbs=4k\n"),
            opts,
        )?;
        m.rand_write_iops = Some(iops(&r.jobs));
        let r = device_run(&format!("{head}[sw]\nioengine=io_uring\niodepth=32\nrw=write\nbs=128k\n"), opts)?;
        m.seq_write_mbps = Some(mbps(&r.jobs));
        m.write_series_mbps = r.jobs[0].dirs[1].series.bytes.iter().map(|&b| b as f64 / 1e6).collect();
    }
    Ok(m)
}

/// The fitted profile: the simple model (parallel units with fixed service times) with
/// the measured QD1 latencies and the parallelism that reproduces the QD32 x 4 IOPS.
pub fn fit_profile(name: &str, m: &Measurements, capacity: u64) -> String {
    const SUBMIT_NS: f64 = 2_000.0;
    const COMPLETE_NS: f64 = 3_000.0;
    let read_ns = ((m.qd1_read_us * 1e3) - SUBMIT_NS - COMPLETE_NS).max(1_000.0);
    let write_ns = m.qd1_write_us.map_or(read_ns / 4.0, |w| ((w * 1e3) - SUBMIT_NS - COMPLETE_NS).max(1_000.0));
    let units = ((m.rand_read_iops * read_ns / 1e9).round() as u32).clamp(1, 4096);
    let mut s = String::new();
    let _ = writeln!(s, "# {name} — fitted by `nvsched calibrate` from measurements of the real device:");
    let _ = writeln!(s, "#   QD1 random 4 KiB read: {:.1} us mean", m.qd1_read_us);
    if let Some(w) = m.qd1_write_us {
        let _ = writeln!(s, "#   QD1 random 4 KiB write: {w:.1} us mean");
    }
    let _ = writeln!(
        s,
        "#   random 4 KiB read QD32 x 4: {:.0} IOPS; sequential 128 KiB read QD32: {:.0} MB/s",
        m.rand_read_iops, m.seq_read_mbps
    );
    if let (Some(w), Some(sw)) = (m.rand_write_iops, m.seq_write_mbps) {
        let _ =
            writeln!(s, "#   random 4 KiB write QD32 x 4: {w:.0} IOPS; sequential 128 KiB write QD32: {sw:.0} MB/s");
    }
    let curve: Vec<String> = m.qd_curve.iter().map(|(q, i, l)| format!("QD{q} {i:.0} IOPS / {l:.0} us")).collect();
    let _ = writeln!(s, "#   latency vs queue depth: {}", curve.join(", "));
    let _ = writeln!(s, "# Model: {units} parallel units with the QD1 service times less a 5 us host path; the");
    let _ = writeln!(s, "# simple model has no write cache or garbage collection.");
    let _ = writeln!(s, "name = \"{name}\"");
    let _ = writeln!(s, "description = \"fitted to a real device by nvsched calibrate\"");
    let _ = writeln!(s, "capacity_bytes = {}", capacity.max(1 << 20));
    let _ = writeln!(s, "queue_depth = 1023\n\n[host]\nsubmit_ns = {SUBMIT_NS:.0}\ncomplete_ns = {COMPLETE_NS:.0}\nnr_requests = 1023\n");
    let _ =
        writeln!(s, "[simple]\nunits = {units}\nstripe_bytes = 4096\nread_ns = {read_ns:.0}\nwrite_ns = {write_ns:.0}");
    s
}

/// The measured figures as a datasheet for `calibrate --like` to fit a flash profile to:
/// writes not measured (on a device only read) keep `template`'s figures; the sequential
/// rate after the SLC cache is the one after a cliff within the measured size, and absent
/// (not fitted) without one; random writes count as on a clean drive.
pub fn measured_datasheet(m: &Measurements, template: Option<&Datasheet>) -> Result<Datasheet, String> {
    let writes = (m.qd1_write_us, m.rand_write_iops, m.seq_write_mbps);
    let (qd1_write_us, rand_write_iops, seq_write_mbps) = match (writes, template) {
        ((Some(a), Some(b), Some(c)), _) => (Some(a), b, c),
        (_, Some(t)) => (None, t.rand_write_iops, t.seq_write_mbps),
        (_, None) => {
            return Err("writes were not measured, and the profile has no [datasheet] to take them from".into())
        }
    };
    // a write-cache cliff within the measured size: the rates before and after it
    let cliff = m.write_cliff_mbps();
    let datasheet = Datasheet {
        seq_read_mbps: m.seq_read_mbps,
        seq_write_mbps: cliff.map_or(seq_write_mbps, |(early, _)| early),
        seq_write_after_cache_mbps: cliff.map(|(_, late)| late),
        rand_read_iops: m.rand_read_iops,
        rand_write_iops,
        rand_write_after_cache_iops: None,
        rand_write_state: "clean".into(),
        qd1_read_iops: 1e6 / m.qd1_read_us,
        qd1_write_iops: qd1_write_us.map(|us| 1e6 / us).or(template.and_then(|t| t.qd1_write_iops)),
    };
    // a device that completed nothing in a measurement leaves nothing to fit
    datasheet.check().map_err(|e| format!("the measurements: {e}"))?;
    Ok(datasheet)
}

pub fn measurements_table(m: &Measurements) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "QD1 random read        {:>10.1} us", m.qd1_read_us);
    if let Some(w) = m.qd1_write_us {
        let _ = writeln!(s, "QD1 random write       {w:>10.1} us");
    }
    for (q, i, l) in &m.qd_curve {
        let _ = writeln!(s, "random read QD{q:<3}      {i:>10.0} IOPS {l:>9.1} us");
    }
    let _ = writeln!(s, "random read QD32 x 4   {:>10.0} IOPS", m.rand_read_iops);
    if let Some(w) = m.rand_write_iops {
        let _ = writeln!(s, "random write QD32 x 4  {w:>10.0} IOPS");
    }
    let _ = writeln!(s, "seq read 128K QD32     {:>10.0} MB/s", m.seq_read_mbps);
    if let Some(w) = m.seq_write_mbps {
        let _ = writeln!(s, "seq write 128K QD32    {w:>10.0} MB/s");
        if let Some((early, late)) = m.write_ends_mbps() {
            let cliff = if m.write_cliff_mbps().is_some() { "a write-cache cliff" } else { "no write-cache cliff" };
            let _ = writeln!(
                s,
                "  per second: first {early:.0} MB/s, last {late:.0} MB/s: {cliff} within the allowed size"
            );
        }
    }
    s
}

/// A warning for each disk on which the kernel runs an I/O scheduler of its own (not
/// `none`) under `path` (or, for a file not made yet, its directory): its device, and
/// where that is a device-mapper, md or loop device, the disks below it. Every request
/// nvsched's policy dispatches passes through such a scheduler too, so the figures
/// include its queueing.
pub fn kernel_scheduler_warning(path: &Path) -> Vec<String> {
    let Some(held_by) = (if path.exists() { Some(path) } else { path.parent().filter(|p| !p.as_os_str().is_empty()) })
    else {
        return Vec::new();
    };
    let stack = nvsched_uring::targets::kernel_schedulers_at(held_by);
    scheduler_warnings(&stack)
}

/// The warnings for the schedulers of a device stack (top first): one per disk that runs
/// anything but `none`, naming the disk as /sys/block lists it.
fn scheduler_warnings(stack: &[(std::path::PathBuf, String)]) -> Vec<String> {
    stack
        .iter()
        .filter(|(_, name)| name != "none")
        .filter_map(|(file, name)| {
            // .../block/vda/queue/scheduler: the disk's name
            let disk = file.parent()?.parent()?.file_name()?.to_string_lossy().into_owned();
            Some(format!(
                "the kernel's {name} scheduler runs on {disk} below the policy, so the figures include its queueing; \
                 `echo none > /sys/block/{disk}/queue/scheduler` (as root) leaves the policy alone in front of the device"
            ))
        })
        .collect()
}

/// [`kernel_scheduler_warning`] for each of `paths`, once per disk.
pub fn kernel_scheduler_warnings<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Vec<String> {
    let mut warnings: Vec<String> = Vec::new();
    for w in paths.into_iter().flat_map(kernel_scheduler_warning) {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    warnings
}

/// The job file with every job on `path` alone: its filename replaced, and the other
/// files it named (`filename=a:b`, `opendir`) and its `directory` gone.
pub fn retarget(jobs: &JobFile, path: &Path) -> JobFile {
    let mut j = jobs.clone();
    for spec in &mut j.jobs {
        spec.filename = Some(path.display().to_string());
        spec.more_filenames.clear();
        spec.directory.clear();
    }
    j
}

/// Runs `jobs` on the device and in simulation under the policy `sched` (`ID:k=v,...`);
/// returns both reports.
pub fn compare(
    jobs: &JobFile,
    path: &Path,
    profile: &DeviceProfile,
    sched: &str,
    opts: &UringOptions,
) -> Result<(RunReport, RunReport), String> {
    let real_jobs = retarget(jobs, path);
    let policy = nvsched_policy::build(sched).map_err(|e| e.to_string())?;
    let (real, outcome) = run_uring(&real_jobs, policy, opts, 0)?;
    if outcome.interrupted {
        return Err("interrupted on the device; nothing to compare".into());
    }
    let sim_jobs = retarget(jobs, Path::new("/dev/nvme0n1"));
    let policy = nvsched_policy::build(sched).map_err(|e| e.to_string())?;
    let (sim, _) = run_sim_whole(RunSpec { jobs: &sim_jobs, policy, profile, seed: opts.seed, drive_states: None })?;
    Ok((real, sim))
}

pub fn comparison_table(real: &RunReport, sim: &RunReport) -> String {
    let mut s = format!(
        "{:<16} {:>6} {:>12} {:>12} {:>10} {:>10} {:>10} {:>10}\n",
        "job", "dir", "IOPS real", "IOPS sim", "p50 real", "p50 sim", "p99 real", "p99 sim"
    );
    for (r, m) in real.jobs.iter().zip(&sim.jobs) {
        for (d, name) in [(0, "read"), (1, "write")] {
            if r.dirs[d].total_ios == 0 && m.dirs[d].total_ios == 0 {
                continue;
            }
            let io = |j: &JobStats| j.dirs[d].total_ios as f64 / j.runtime.as_secs_f64().max(1e-9);
            let p = |j: &JobStats, q: f64| j.dirs[d].clat_hist.percentile(q) as f64 / 1e3;
            let _ = writeln!(
                s,
                "{:<16} {:>6} {:>12.0} {:>12.0} {:>8.0}us {:>8.0}us {:>8.0}us {:>8.0}us",
                r.name,
                name,
                io(r),
                io(m),
                p(r, 50.0),
                p(m, 50.0),
                p(r, 99.0),
                p(m, 99.0)
            );
        }
    }
    s
}
