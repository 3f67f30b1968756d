//! Checks a simulated device profile against the datasheet figures it cites: the same
//! workloads a datasheet uses (sequential 128 KiB at QD32, random 4 KiB at QD32 x 4
//! jobs, random 4 KiB at QD1), run in the simulator.

use crate::run::{run_sim_whole, RunSpec};
use nvsched_report::JobStats;
use nvsched_ssd::{Datasheet, DeviceProfile, DriveStates, ModelConfig};
use nvsched_workload::jobfile::HostEnvironment;
use nvsched_workload::{parse_job_str, ParseOptions};
use std::path::Path;

/// The figures [`verify`] measures, by name (the fit's knobs answer for them by name).
pub const RANDOM_READ_QD1: &str = "random read QD1";
pub const RANDOM_READ_QD32X4: &str = "random read QD32x4";
pub const SEQ_READ: &str = "sequential read 128K QD32";
pub const SEQ_WRITE: &str = "sequential write 128K QD32";
pub const SEQ_WRITE_AFTER_CACHE: &str = "sequential write after SLC cache";
pub const RANDOM_WRITE_QD32X4: &str = "random write QD32x4";
pub const RANDOM_WRITE_AFTER_CACHE: &str = "random write after SLC cache";
pub const RANDOM_WRITE_QD1: &str = "random write QD1";

/// One checked figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub name: &'static str,
    pub unit: &'static str,
    pub cited: f64,
    pub measured: f64,
    /// The drive state it was measured in.
    pub state: String,
}

impl Check {
    /// measured / cited - 1
    pub fn error(&self) -> f64 {
        self.measured / self.cited - 1.0
    }
}

/// The drive region the read workloads use; preconditioning writes it first.
const READ_REGION: &str = "32g";

/// A one-job fio file (group-reported over `jobs` clones) on the simulated drive.
pub(crate) fn job(name: &str, rw: &str, bs: &str, depth: u32, jobs: u32, runtime: &str, size: Option<&str>) -> String {
    job_on("/dev/nvme0n1", name, rw, bs, depth, jobs, runtime, size)
}

/// [`job`] on `target`, a real file or block device as well as the simulated drive.
#[allow(clippy::too_many_arguments)]
pub(crate) fn job_on(
    target: &str,
    name: &str,
    rw: &str,
    bs: &str,
    depth: u32,
    jobs: u32,
    runtime: &str,
    size: Option<&str>,
) -> String {
    let engine = if depth == 1 { "psync" } else { "io_uring" };
    let size = size.map(|s| format!("size={s}\n")).unwrap_or_default();
    format!(
        "[global]\nfilename={target}\ndirect=1\ntime_based\nruntime={runtime}\ngroup_reporting\n{size}\
         [{name}]\nioengine={engine}\niodepth={depth}\nnumjobs={jobs}\nrw={rw}\nbs={bs}\n"
    )
}

/// `profile` starting from drive state `state` instead (the profile may come from a file,
/// so it is changed rather than loaded again).
pub(crate) fn with_state(profile: &DeviceProfile, state: &str) -> Result<DeviceProfile, String> {
    nvsched_ssd::Precondition::parse(state)?;
    let mut p = profile.clone();
    if let ModelConfig::Nand(c) = &mut p.model {
        c.precondition = state.into();
    }
    set_override(&mut p, "nand.precondition", state.to_string());
    Ok(p)
}

/// Records `key = value` among the profile's overrides (replacing one of the same key),
/// as the reports list them; the caller has set the field itself.
fn set_override(profile: &mut DeviceProfile, key: &str, value: String) {
    profile.overrides.retain(|(k, _)| k != key);
    profile.overrides.push((key.into(), value));
}

/// The first job's results of `text` run under `none` (seed 1); `drive_states` shares
/// preconditioned drives between runs.
pub(crate) fn simulate(
    profile: &DeviceProfile,
    text: &str,
    drive_states: Option<&DriveStates>,
) -> Result<JobStats, String> {
    let jobs = parse_job_str(text, Path::new("calibration.fio"), &HostEnvironment, ParseOptions::default())
        .map_err(|e| e.to_string())?;
    let policy = nvsched_policy::build("none").map_err(|e| e.to_string())?;
    let (report, _) = run_sim_whole(RunSpec { jobs: &jobs, policy, profile, seed: 1, drive_states })?;
    report.jobs.into_iter().next().ok_or_else(|| "no job".into())
}

fn iops(s: &JobStats, dir: usize) -> f64 {
    s.dirs[dir].total_ios as f64 / s.runtime.as_secs_f64()
}

fn mbps(s: &JobStats, dir: usize) -> f64 {
    s.dirs[dir].io_bytes as f64 / s.runtime.as_secs_f64() / 1e6
}

/// Mean of the per-second series over whole seconds `[from, to)`.
fn window_mean(values: &[u64], from: usize, to: usize) -> f64 {
    let w: Vec<f64> = values.iter().skip(from).take(to.saturating_sub(from)).map(|&v| v as f64).collect();
    if w.is_empty() {
        0.0
    } else {
        w.iter().sum::<f64>() / w.len() as f64
    }
}

/// Seconds a write stream at `rate_mbps` needs to fill the SLC cache of a clean drive.
fn cache_fill_seconds(profile: &DeviceProfile, rate_mbps: f64) -> f64 {
    match &profile.model {
        ModelConfig::Nand(c) => (c.slc_static_bytes + c.slc_dynamic_max_bytes) as f64 / (rate_mbps * 1e6),
        ModelConfig::Simple(_) => 0.0,
    }
}

/// The longest write run that measures a figure after the SLC cache, in seconds.
const PAST_CACHE_MAX_S: usize = 60;

/// A write run (`run` for a runtime in seconds) long enough to end past the SLC cache of
/// a clean `profile`: its fill time at the cited rate, plus 3 s. When the simulated drive
/// writes slower than cited in the first second (`first_mbps`), the cache would still be
/// filling at the end, so it runs again, as long as the simulated rate needs. Returns the
/// run, its length and whether it got past the cache within [`PAST_CACHE_MAX_S`].
fn past_the_cache(
    profile: &DeviceProfile,
    cited_mbps: f64,
    first_mbps: impl Fn(&JobStats) -> f64,
    run: impl Fn(usize) -> Result<JobStats, String>,
) -> Result<(JobStats, usize, bool), String> {
    let needs = |mbps: f64| (cache_fill_seconds(profile, mbps) + 3.0).ceil().max(3.0) as usize;
    let runtime = needs(cited_mbps).min(PAST_CACHE_MAX_S);
    let first = run(runtime)?;
    let longer = needs(first_mbps(&first));
    if longer <= runtime {
        return Ok((first, runtime, true));
    }
    let runtime = longer.min(PAST_CACHE_MAX_S);
    Ok((run(runtime)?, runtime, longer <= PAST_CACHE_MAX_S))
}

/// The state an after-cache figure was measured in.
fn cache_state(past_cache: bool) -> String {
    match past_cache {
        true => "clean, cache full".into(),
        false => format!("clean, cache still filling after {PAST_CACHE_MAX_S} s"),
    }
}

/// `profile` with `k` times fewer blocks per die and capacity: the same dies, the same
/// over-provisioning and the same share of blocks GC keeps free, so the same steady state.
fn shrink(profile: &mut DeviceProfile, k: u32) {
    let ModelConfig::Nand(c) = &mut profile.model else { return };
    let hard = (c.gc_hard_free_blocks / k).max(2);
    let soft = (c.gc_soft_free_blocks / k).max(hard + 1);
    let bg = (c.bg_gc_free_blocks / k).max(soft + 1);
    (c.blocks_per_die, c.gc_hard_free_blocks, c.gc_soft_free_blocks, c.bg_gc_free_blocks) =
        (c.blocks_per_die / k, hard, soft, bg);
    let blocks = c.blocks_per_die;
    profile.capacity_bytes = profile.capacity_bytes / u64::from(k) / 4096 * 4096;
    let capacity = profile.capacity_bytes;
    for (key, value) in [
        ("nand.blocks_per_die", blocks.to_string()),
        ("capacity_bytes", capacity.to_string()),
        ("nand.gc_hard_free_blocks", hard.to_string()),
        ("nand.gc_soft_free_blocks", soft.to_string()),
        ("nand.bg_gc_free_blocks", bg.to_string()),
    ] {
        set_override(profile, key, value);
    }
}

/// Runs every datasheet workload on `profile`. `scale_full` shrinks blocks per die by
/// that factor for full-drive figures (same over-provisioning and parallelism, so the
/// same steady state, in a fraction of the memory and time).
pub fn verify(profile: &DeviceProfile, scale_full: u32) -> Result<Vec<Check>, String> {
    let ds: Datasheet =
        profile.datasheet.clone().ok_or_else(|| format!("profile '{}' cites no datasheet", profile.name))?;
    let mut out = Vec::new();
    // Reads need written data in their region; a large drive gets only that region.
    let fraction = (0.5f64).min(64.0 * (1u64 << 30) as f64 / profile.capacity_bytes as f64);
    let filled = with_state(profile, &format!("partial:{fraction}"))?;
    let clean = with_state(profile, "clean")?;
    let region = Some(READ_REGION);

    // (check, unit, cited, job)
    let reads = [
        (RANDOM_READ_QD1, "IOPS", ds.qd1_read_iops, job("qd1-read", "randread", "4k", 1, 1, "1", region)),
        (RANDOM_READ_QD32X4, "IOPS", ds.rand_read_iops, job("rand-read", "randread", "4k", 32, 4, "1", region)),
        (SEQ_READ, "MB/s", ds.seq_read_mbps, job("seq-read", "read", "128k", 32, 1, "1", region)),
    ];
    for (name, unit, cited, job_text) in reads {
        let s = simulate(&filled, &job_text, None)?;
        let measured = if unit == "MB/s" { mbps(&s, 0) } else { iops(&s, 0) };
        out.push(Check { name, unit, cited, measured, state: "region written".into() });
    }

    // Sequential write: the first second is inside any SLC cache; with a cited
    // after-cache figure, run past the cache and average the last two seconds.
    let seq_write =
        |runtime: usize| simulate(&clean, &job("seq-write", "write", "128k", 32, 1, &runtime.to_string(), None), None);
    let (s, runtime, past_cache) = match ds.seq_write_after_cache_mbps {
        Some(_) => {
            past_the_cache(&clean, ds.seq_write_mbps, |s| window_mean(&s.dirs[1].series.bytes, 0, 1) / 1e6, seq_write)?
        }
        None => (seq_write(2)?, 2, true),
    };
    let series = &s.dirs[1].series.bytes;
    out.push(Check {
        name: SEQ_WRITE,
        unit: "MB/s",
        cited: ds.seq_write_mbps,
        measured: window_mean(series, 0, 1) / 1e6,
        state: "clean".into(),
    });
    if let Some(after) = ds.seq_write_after_cache_mbps {
        out.push(Check {
            name: SEQ_WRITE_AFTER_CACHE,
            unit: "MB/s",
            cited: after,
            measured: window_mean(series, runtime - 2, runtime) / 1e6,
            state: cache_state(past_cache),
        });
    }

    // Random write.
    let full_state = ds.rand_write_state == "full";
    let rw_profile = if full_state {
        let mut full = with_state(&clean, "full")?;
        if scale_full > 1 {
            shrink(&mut full, scale_full);
        }
        full
    } else {
        clean.clone()
    };
    let rand_write = |runtime: usize| {
        simulate(&rw_profile, &job("rand-write", "randwrite", "4k", 32, 4, &runtime.to_string(), None), None)
    };
    let (s, runtime, past_cache) = if full_state {
        (rand_write(20)?, 20, true)
    } else if ds.rand_write_after_cache_iops.is_some() {
        let first_mbps = |s: &JobStats| window_mean(&s.dirs[1].series.ios, 0, 1) * 4096.0 / 1e6;
        past_the_cache(&clean, ds.rand_write_iops * 4096.0 / 1e6, first_mbps, rand_write)?
    } else {
        (rand_write(1)?, 1, true)
    };
    let ios = &s.dirs[1].series.ios;
    let (measured, state) = if full_state {
        (
            window_mean(ios, runtime - 5, runtime),
            if scale_full > 1 {
                format!("full, steady state (1/{scale_full} scale)")
            } else {
                "full, steady state".into()
            },
        )
    } else {
        (window_mean(ios, 0, 1), "clean".to_string())
    };
    out.push(Check { name: RANDOM_WRITE_QD32X4, unit: "IOPS", cited: ds.rand_write_iops, measured, state });
    if let Some(after) = ds.rand_write_after_cache_iops {
        out.push(Check {
            name: RANDOM_WRITE_AFTER_CACHE,
            unit: "IOPS",
            cited: after,
            measured: window_mean(ios, runtime - 2, runtime),
            state: cache_state(past_cache),
        });
    }
    if let Some(qd1w) = ds.qd1_write_iops {
        let s = simulate(&clean, &job("qd1-write", "randwrite", "4k", 1, 1, "1", None), None)?;
        out.push(Check {
            name: RANDOM_WRITE_QD1,
            unit: "IOPS",
            cited: qd1w,
            measured: iops(&s, 1),
            state: "clean".into(),
        });
    }
    Ok(out)
}

/// The checks as a table.
pub fn table(profile: &str, checks: &[Check]) -> String {
    let mut s =
        format!("{profile}\n  {:<34} {:>12} {:>12} {:>8}  state\n", "figure", "datasheet", "simulated", "error");
    for c in checks {
        s.push_str(&format!(
            "  {:<34} {:>12} {:>12} {:>+7.1}%  {}\n",
            format!("{} ({})", c.name, c.unit),
            format!("{:.0}", c.cited),
            format!("{:.0}", c.measured),
            c.error() * 100.0,
            c.state
        ));
    }
    s
}
