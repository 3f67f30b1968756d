//! `nvsched tune k2`: sweeps K2's bound on a workload and applies the guideline of the
//! K2 analysis (Electronics 2021, Section 5): for a latency objective O1 the largest
//! bound whose real-time p99.9 is at most alpha of `none`'s, for a bandwidth objective O2
//! the smallest bound whose total bandwidth is at least beta of `none`'s. Over several
//! seeds a configuration's figures are the means of its runs, as a reproduction averages
//! its repetitions: a 10 s p99.9 rests on a handful of samples and moves with the seed.

use crate::progress::RunProgress;
use crate::repro::analysis::k2_choices;
use crate::run::{run_sim, RunSpec};
use nvsched_core::PrioClass;
use nvsched_sim::NoObserver;
use nvsched_ssd::{DeviceProfile, DriveStates};
use nvsched_workload::JobFile;
use rayon::prelude::*;

/// What the bound should serve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Objective {
    /// O1: RT p99.9 at most this fraction of none's, with the most bandwidth.
    Latency(f64),
    /// O2: total bandwidth at least this fraction of none's, with the lowest RT tail.
    Bandwidth(f64),
}

impl Objective {
    pub fn parse(s: &str) -> Result<Objective, String> {
        let (kind, pct) =
            s.split_once(':').ok_or_else(|| format!("objective '{s}': expected latency:ALPHA% or bandwidth:BETA%"))?;
        let value: f64 = pct
            .trim()
            .trim_end_matches('%')
            .parse()
            .map_err(|_| format!("objective '{s}': '{pct}' is not a percentage"))?;
        if !(value > 0.0 && value <= 100.0) {
            return Err(format!("objective '{s}': the percentage must be in (0, 100]"));
        }
        match kind {
            "latency" => Ok(Objective::Latency(value / 100.0)),
            "bandwidth" => Ok(Objective::Bandwidth(value / 100.0)),
            other => Err(format!("objective '{other}': expected latency or bandwidth")),
        }
    }
}

/// One configuration of the sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub policy: String,
    pub bound: Option<u32>,
    pub rt_p999_us: f64,
    pub total_bw_mbps: f64,
}

/// Index of the real-time job's report entry: the first job with RT ioprio (each clone
/// is its own entry).
fn rt_entry(jobs: &JobFile) -> Result<usize, String> {
    if jobs.jobs.iter().any(|j| j.group_reporting) {
        return Err("tune needs per-job results: remove group_reporting".into());
    }
    let mut index = 0;
    for j in &jobs.jobs {
        if j.ioprio().class == PrioClass::RealTime {
            return Ok(index);
        }
        index += j.numjobs as usize;
    }
    Err("no real-time job (prioclass=1) whose tail K2 should protect".into())
}

/// Checks that `jobs` (read from `source`, which the error names) can be tuned — a
/// real-time job, per-job results — before a sweep.
pub fn check_jobs(jobs: &JobFile, source: &str) -> Result<(), String> {
    rt_entry(jobs).map(|_| ()).map_err(|e| format!("{source}: {e}"))
}

/// Runs `none` and K2 at each bound, once per seed (in parallel): one row per run, seeds
/// innermost. `choose` and `table` average the rows of a configuration.
pub fn sweep(
    jobs: &JobFile,
    profile: &DeviceProfile,
    seeds: &[u64],
    bounds: &[u32],
    show_progress: bool,
) -> Result<Vec<Row>, String> {
    let configs: Vec<(Option<u32>, u64)> = std::iter::once(None)
        .chain(bounds.iter().copied().map(Some))
        .flat_map(|bound| seeds.iter().map(move |&seed| (bound, seed)))
        .collect();
    let progress = RunProgress::new("tune", configs.len(), show_progress);
    let drive_states = DriveStates::new();
    let rows = configs
        .par_iter()
        .map(|&(bound, seed)| {
            let row = measure(jobs, profile, seed, bound, Some(&drive_states));
            progress.inc();
            row
        })
        .collect();
    progress.finish();
    rows
}

/// One configuration's runs over the seeds.
struct Merged {
    /// Means over the runs.
    row: Row,
    runs: usize,
    rt_p999_min_us: f64,
    rt_p999_max_us: f64,
}

/// Groups the rows by configuration (bound), in the order they first appear.
fn merge(rows: &[Row]) -> Vec<Merged> {
    let mut bounds: Vec<Option<u32>> = Vec::new();
    for r in rows {
        if !bounds.contains(&r.bound) {
            bounds.push(r.bound);
        }
    }
    bounds
        .into_iter()
        .map(|bound| {
            let runs: Vec<&Row> = rows.iter().filter(|r| r.bound == bound).collect();
            let n = runs.len() as f64;
            let tails = runs.iter().map(|r| r.rt_p999_us);
            Merged {
                row: Row {
                    rt_p999_us: tails.clone().sum::<f64>() / n,
                    total_bw_mbps: runs.iter().map(|r| r.total_bw_mbps).sum::<f64>() / n,
                    ..runs[0].clone()
                },
                runs: runs.len(),
                rt_p999_min_us: tails.clone().fold(f64::INFINITY, f64::min),
                rt_p999_max_us: tails.fold(f64::NEG_INFINITY, f64::max),
            }
        })
        .collect()
}

/// One row of the sweep: K2 at `bound` (`none` for None) simulated, with the real-time
/// job's p99.9 and the total bandwidth. Sweeps spread over other processes (the Python
/// package's Ray backend) measure each row with this.
pub fn measure(
    jobs: &JobFile,
    profile: &DeviceProfile,
    seed: u64,
    bound: Option<u32>,
    drive_states: Option<&DriveStates>,
) -> Result<Row, String> {
    let rt = rt_entry(jobs)?;
    let spec = bound.map_or_else(|| "none".to_string(), |b| format!("k2:bound={b}"));
    let policy = nvsched_policy::build(&spec).map_err(|e| e.to_string())?;
    let (report, _) = run_sim(RunSpec { jobs, policy, profile, seed, drive_states }, &mut NoObserver, 0)?;
    let rt_job = report.jobs.get(rt).ok_or("missing real-time job results")?;
    let dir = if rt_job.dirs[1].total_ios > rt_job.dirs[0].total_ios { 1 } else { 0 };
    let secs = |j: &nvsched_report::JobStats| j.runtime.as_secs_f64().max(1e-9);
    let bw: f64 = report.jobs.iter().map(|j| (j.dirs[0].io_bytes + j.dirs[1].io_bytes) as f64 / secs(j)).sum();
    Ok(Row {
        policy: spec,
        bound,
        rt_p999_us: rt_job.dirs[dir].clat_hist.percentile(99.9) as f64 / 1e3,
        total_bw_mbps: bw / 1e6,
    })
}

/// The guideline's choice on the configurations' means over their runs (seeds), and a
/// sentence explaining it.
pub fn choose(rows: &[Row], objective: Objective) -> (Option<u32>, String) {
    let merged = merge(rows);
    let (chosen, why) = choose_on_means(&merged.iter().map(|m| m.row.clone()).collect::<Vec<_>>(), objective);
    let runs = merged.iter().map(|m| m.runs).max().unwrap_or(1);
    if runs > 1 {
        (chosen, format!("{why} (Means of {runs} seeds.)"))
    } else {
        (chosen, why)
    }
}

fn choose_on_means(rows: &[Row], objective: Objective) -> (Option<u32>, String) {
    let Some(none) = rows.iter().find(|r| r.bound.is_none()) else {
        return (None, "no `none` reference run".into());
    };
    let k2: Vec<(u32, f64, f64)> =
        rows.iter().filter_map(|r| Some((r.bound?, r.rt_p999_us, r.total_bw_mbps))).collect();
    let (alpha, beta) = match objective {
        Objective::Latency(a) => (a, 0.0),
        Objective::Bandwidth(b) => (1.0, b),
    };
    let (o1, o2) = k2_choices(&k2, (none.rt_p999_us, none.total_bw_mbps), alpha, beta);
    match objective {
        Objective::Latency(a) => {
            let limit = a * none.rt_p999_us;
            match o1 {
                Some(b) => {
                    let row = k2.iter().find(|r| r.0 == b).expect("chosen from rows");
                    (Some(b), format!(
                        "O1: bound {b} is the largest whose real-time p99.9 ({:.0} us) stays within {:.0}% of none's ({:.0} us, limit {:.0} us), keeping {:.0} MB/s ({:.0}% of none's bandwidth).",
                        row.1, a * 100.0, none.rt_p999_us, limit, row.2, 100.0 * row.2 / none.total_bw_mbps
                    ))
                }
                None => (None, format!("O1: no bound keeps the real-time p99.9 within {:.0}% of none's ({limit:.0} us); bound 1 is the closest.", a * 100.0)),
            }
        }
        Objective::Bandwidth(b) => {
            let floor = b * none.total_bw_mbps;
            match o2 {
                Some(k) => {
                    let row = k2.iter().find(|r| r.0 == k).expect("chosen from rows");
                    (Some(k), format!(
                        "O2: bound {k} is the smallest that keeps {:.0} MB/s, at least {:.0}% of none's ({:.0} MB/s), with a real-time p99.9 of {:.0} us (none: {:.0} us).",
                        row.2, b * 100.0, none.total_bw_mbps, row.1, none.rt_p999_us
                    ))
                }
                None => (None, format!("O2: no bound reaches {floor:.0} MB/s ({:.0}% of none's).", b * 100.0)),
            }
        }
    }
}

/// The sweep as a table: one line per configuration, with the means over its runs and,
/// over several seeds, the range of the RT p99.9.
pub fn table(rows: &[Row], chosen: Option<u32>) -> String {
    let merged = merge(rows);
    let spread = merged.iter().any(|m| m.runs > 1);
    let mut s = format!("{:<14} {:>16} {:>18}", "policy", "RT p99.9 (us)", "total BW (MB/s)");
    if spread {
        s.push_str(&format!(" {:>18}", "p99.9 min-max (us)"));
    }
    s.push('\n');
    for m in &merged {
        let r = &m.row;
        s.push_str(&format!("{:<14} {:>16.0} {:>18.1}", r.policy, r.rt_p999_us, r.total_bw_mbps));
        if spread {
            s.push_str(&format!(" {:>18}", format!("{:.0}-{:.0}", m.rt_p999_min_us, m.rt_p999_max_us)));
        }
        if r.bound.is_some() && r.bound == chosen {
            s.push_str("  <- chosen");
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_parse() {
        assert_eq!(Objective::parse("latency:50%"), Ok(Objective::Latency(0.5)));
        assert_eq!(Objective::parse("bandwidth:90"), Ok(Objective::Bandwidth(0.9)));
        assert!(Objective::parse("latency:150%").is_err());
        assert!(Objective::parse("speed:50%").is_err());
        assert!(Objective::parse("latency").is_err());
    }

    #[test]
    fn choices_explain_themselves() {
        let rows = vec![
            Row { policy: "none".into(), bound: None, rt_p999_us: 1000.0, total_bw_mbps: 600.0 },
            Row { policy: "k2:bound=1".into(), bound: Some(1), rt_p999_us: 150.0, total_bw_mbps: 60.0 },
            Row { policy: "k2:bound=8".into(), bound: Some(8), rt_p999_us: 400.0, total_bw_mbps: 400.0 },
            Row { policy: "k2:bound=32".into(), bound: Some(32), rt_p999_us: 900.0, total_bw_mbps: 590.0 },
        ];
        let (b, why) = choose(&rows, Objective::Latency(0.5));
        assert_eq!(b, Some(8));
        assert!(why.starts_with("O1: bound 8 is the largest"), "{why}");
        let (b, why) = choose(&rows, Objective::Bandwidth(0.9));
        assert_eq!(b, Some(32));
        assert!(why.contains("smallest"), "{why}");
        assert_eq!(choose(&rows, Objective::Latency(0.1)).0, None);
    }

    #[test]
    fn several_seeds_are_averaged_per_bound() {
        let row = |bound: Option<u32>, p: f64, bw: f64| Row {
            policy: bound.map_or("none".into(), |b| format!("k2:bound={b}")),
            bound,
            rt_p999_us: p,
            total_bw_mbps: bw,
        };
        // bound 8 meets the 500 us limit on one seed only; its mean (520 us) does not
        let rows = vec![
            row(None, 1000.0, 600.0),
            row(None, 1000.0, 600.0),
            row(Some(4), 300.0, 200.0),
            row(Some(4), 340.0, 220.0),
            row(Some(8), 440.0, 400.0),
            row(Some(8), 600.0, 380.0),
        ];
        let (b, why) = choose(&rows, Objective::Latency(0.5));
        assert_eq!(b, Some(4), "{why}");
        assert!(why.contains("(320 us)") && why.ends_with("(Means of 2 seeds.)"), "{why}");
        assert_eq!(choose(&rows[4..5], Objective::Latency(0.5)).0, None, "no none run");
        let t = table(&rows, b);
        assert_eq!(t.lines().count(), 4, "one line per configuration:\n{t}");
        assert!(t.contains("p99.9 min-max (us)") && t.contains("440-600"), "{t}");
        assert!(t.lines().nth(2).unwrap().contains("210.0") && t.contains("<- chosen"), "{t}");
        // one seed: the table as before
        assert!(!table(&rows[..1], None).contains("min-max"));
    }
}
