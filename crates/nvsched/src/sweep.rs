//! `nvsched sweep`: one workload under several policies (and seeds), side by side — the
//! table a user reads to choose a scheduler. Each (policy, seed) is one run
//! ([`crate::batch::run_each`]: simulations in parallel, sharing the preconditioned drive,
//! or runs on a real device one at a time). Over several seeds a policy's figures are the
//! means of its runs (on a real device the medians), and the table gives each p99.9's
//! range. With an objective, the tuner's rule on the measurements picks one of the
//! policies.

use crate::batch::Target;
use crate::progress::RunProgress;
use crate::tune::{Center, Objective, Row};
use nvsched_core::PrioClass;
use nvsched_report::plots::{Figure, Panel, PanelKind};
use nvsched_report::JobStats;
use nvsched_workload::JobFile;
use serde_json::{json, Value};

/// One direction of one reported job in one run.
#[derive(Clone, Debug, PartialEq)]
pub struct JobLine {
    /// The job's name, with `#k` for the k-th of several entries of one name (clones).
    pub job: String,
    /// read, write or trim.
    pub dir: &'static str,
    pub bw_mbps: f64,
    pub iops: f64,
    pub clat_mean_us: f64,
    pub clat_p99_us: f64,
    pub clat_p999_us: f64,
}

/// One simulation of the sweep.
#[derive(Clone, Debug)]
pub struct Run {
    pub policy: String,
    pub seed: u64,
    pub lines: Vec<JobLine>,
    /// The label of the job whose tail the figure shows (see `focus_entry`).
    pub focus: Option<String>,
    pub total_bw_mbps: f64,
}

/// A policy's runs over the seeds: means, and each p99.9's range.
#[derive(Clone, Debug)]
pub struct PolicySummary {
    pub policy: String,
    pub runs: usize,
    pub lines: Vec<JobLine>,
    pub p999_range_us: Vec<(f64, f64)>,
    pub total_bw_mbps: f64,
}

const DIRS: [&str; 3] = ["read", "write", "trim"];

/// The report entry whose tail a scheduler is chosen for: the first real-time-class
/// job's, else the first (also where `group_reporting` merges jobs into groups). Each
/// clone is an entry of its own; jobs with `stats=0` have none.
fn focus_entry(jobs: &JobFile) -> usize {
    if jobs.jobs.iter().any(|j| j.group_reporting) {
        return 0;
    }
    let mut entry = 0;
    for j in jobs.jobs.iter().filter(|j| j.stats) {
        if j.ioprio().class == PrioClass::RealTime {
            return entry;
        }
        entry += j.numjobs as usize;
    }
    0
}

/// Labels of the report's entries: names, with `#k` where several entries share one.
fn entry_labels(jobs: &[JobStats]) -> Vec<String> {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    jobs.iter()
        .map(|j| {
            let shared = jobs.iter().filter(|o| o.name == j.name).count() > 1;
            let k = match seen.iter_mut().find(|(n, _)| *n == j.name) {
                Some((_, k)) => {
                    *k += 1;
                    *k
                }
                None => {
                    seen.push((&j.name, 0));
                    0
                }
            };
            if shared {
                format!("{}#{k}", j.name)
            } else {
                j.name.clone()
            }
        })
        .collect()
}

/// The lines of one report: every direction of every entry that moved data.
fn lines_of(jobs: &[JobStats]) -> Vec<JobLine> {
    let labels = entry_labels(jobs);
    let mut lines = Vec::new();
    for (j, label) in jobs.iter().zip(labels) {
        let secs = j.runtime.as_secs_f64().max(1e-9);
        for (d, dir) in j.dirs.iter().zip(DIRS) {
            if d.total_ios == 0 {
                continue;
            }
            lines.push(JobLine {
                job: label.clone(),
                dir,
                bw_mbps: d.io_bytes as f64 / secs / 1e6,
                iops: d.total_ios as f64 / secs,
                clat_mean_us: d.clat.mean() / 1e3,
                clat_p99_us: d.clat_hist.percentile(99.0) as f64 / 1e3,
                clat_p999_us: d.clat_hist.percentile(99.9) as f64 / 1e3,
            });
        }
    }
    lines
}

/// Checks every policy spec before any run starts, so a typo in the last one does not
/// cost the others' time.
pub fn check_policies(policies: &[String]) -> Result<(), String> {
    for p in policies {
        nvsched_policy::build(p).map_err(|e| format!("--sched {p}: {e}"))?;
    }
    Ok(())
}

/// Each policy's warnings about the jobs' cgroups (see [`crate::run::cgroup_warnings`]),
/// once per policy; specs that do not build are [`check_policies`]' to report.
pub fn cgroup_warnings(policies: &[String], jobs: &JobFile) -> Vec<String> {
    let mut warnings: Vec<String> = Vec::new();
    for policy in policies.iter().filter_map(|p| nvsched_policy::build(p).ok()) {
        for w in crate::run::cgroup_warnings(&policy, jobs) {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
    }
    warnings
}

/// Runs `jobs` under each policy once per seed (see [`crate::batch::run_each`]); runs in
/// the order (policy, seed).
pub fn run(
    jobs: &JobFile,
    target: Target<'_>,
    policies: &[String],
    seeds: &[u64],
    progress: &RunProgress,
) -> Result<Vec<Run>, String> {
    check_policies(policies)?;
    let configs: Vec<(&str, u64)> = policies.iter().flat_map(|p| seeds.iter().map(move |&s| (p.as_str(), s))).collect();
    let focus = focus_entry(jobs);
    let measured = crate::batch::run_each(jobs, target, &configs, progress, |report| {
        let lines = lines_of(&report.jobs);
        let total_bw_mbps = lines.iter().map(|l| l.bw_mbps).sum();
        Ok((lines, entry_labels(&report.jobs).into_iter().nth(focus), total_bw_mbps))
    })?;
    Ok(configs
        .iter()
        .zip(measured)
        .map(|(&(spec, seed), (lines, focus, total_bw_mbps))| Run {
            policy: spec.to_string(),
            seed,
            lines,
            focus,
            total_bw_mbps,
        })
        .collect())
}

/// `--objective`: the tuner's rule on the measurements ([`crate::tune::choose_setting`])
/// applied to the policies, with `none` as the reference: each run's p99.9 of the focus
/// job (in the direction it moved most requests) and its total bandwidth. Returns the
/// chosen policy and a sentence explaining it.
pub fn choose(runs: &[Run], objective: Objective, center: Center) -> (Option<String>, String) {
    let rows: Vec<Row> = runs
        .iter()
        .filter_map(|r| {
            let line = focus_line(&r.lines, r.focus.as_ref()?)?;
            Some(Row {
                policy: r.policy.clone(),
                bound: None,
                rt_p999_us: line.clat_p999_us,
                total_bw_mbps: r.total_bw_mbps,
            })
        })
        .collect();
    let (chosen, why) = crate::tune::choose_setting(&rows, objective, crate::tune::POLICIES, center);
    let job = runs.first().and_then(|r| r.focus.as_deref()).unwrap_or("-");
    (chosen, format!("{why} (The p99.9 is job {job}'s.)"))
}

/// The focus job's line in the direction it moved the most requests: the one whose
/// p99.9 the choice and the figure use.
fn focus_line<'a>(lines: &'a [JobLine], focus: &str) -> Option<&'a JobLine> {
    lines.iter().filter(|l| l.job == focus).max_by(|a, b| a.iops.total_cmp(&b.iops))
}

/// Each policy's runs merged: means (or medians) over the seeds, in the order of `runs`.
pub fn summarize(runs: &[Run], center: Center) -> Vec<PolicySummary> {
    let mut policies: Vec<&str> = Vec::new();
    for r in runs {
        if !policies.contains(&r.policy.as_str()) {
            policies.push(&r.policy);
        }
    }
    policies
        .into_iter()
        .map(|policy| {
            let mine: Vec<&Run> = runs.iter().filter(|r| r.policy == policy).collect();
            // a line is matched by job and direction, over every run (in the order they
            // first appear): a run where a job moved no data in a direction counts it as
            // zero bandwidth, and leaves the latencies out
            let mut keys: Vec<&JobLine> = Vec::new();
            for l in mine.iter().flat_map(|r| &r.lines) {
                if !keys.iter().any(|k| k.job == l.job && k.dir == l.dir) {
                    keys.push(l);
                }
            }
            let mut lines = Vec::new();
            let mut p999_range_us = Vec::new();
            for l in keys {
                let same: Vec<&JobLine> =
                    mine.iter().filter_map(|r| r.lines.iter().find(|o| o.job == l.job && o.dir == l.dir)).collect();
                let latency = |f: fn(&JobLine) -> f64| center.of(&same.iter().map(|o| f(o)).collect::<Vec<f64>>());
                // a run without the line moved nothing there: zero, as one of the runs
                let rate = |f: fn(&JobLine) -> f64| {
                    let mut v: Vec<f64> = same.iter().map(|o| f(o)).collect();
                    v.resize(mine.len(), 0.0);
                    center.of(&v)
                };
                lines.push(JobLine {
                    job: l.job.clone(),
                    dir: l.dir,
                    bw_mbps: rate(|o| o.bw_mbps),
                    iops: rate(|o| o.iops),
                    clat_mean_us: latency(|o| o.clat_mean_us),
                    clat_p99_us: latency(|o| o.clat_p99_us),
                    clat_p999_us: latency(|o| o.clat_p999_us),
                });
                let tails = same.iter().map(|o| o.clat_p999_us);
                p999_range_us.push((tails.clone().fold(f64::INFINITY, f64::min), tails.fold(0.0, f64::max)));
            }
            PolicySummary {
                policy: policy.to_string(),
                runs: mine.len(),
                lines,
                p999_range_us,
                total_bw_mbps: center.of(&mine.iter().map(|r| r.total_bw_mbps).collect::<Vec<f64>>()),
            }
        })
        .collect()
}

/// The comparison as text: a block per policy, a line per job and direction, then the
/// total bandwidth. Over several seeds the figures are means (or medians) and a column gives the
/// p99.9's range.
pub fn table(summaries: &[PolicySummary]) -> String {
    let spread = summaries.iter().any(|s| s.runs > 1);
    let policy_w = summaries.iter().map(|s| s.policy.len()).max().unwrap_or(6).max(6);
    let job_w = summaries.iter().flat_map(|s| s.lines.iter().map(|l| l.job.len())).max().unwrap_or(3).max(5);
    let mut out = format!(
        "{:<policy_w$}  {:<job_w$}  {:<5} {:>9} {:>9} {:>10} {:>10} {:>11}",
        "policy", "job", "dir", "MB/s", "IOPS", "mean (us)", "p99 (us)", "p99.9 (us)"
    );
    if spread {
        out.push_str(&format!(" {:>17}", "p99.9 range (us)"));
    }
    out.push('\n');
    for s in summaries {
        for (i, (l, range)) in s.lines.iter().zip(&s.p999_range_us).enumerate() {
            let name = if i == 0 { s.policy.as_str() } else { "" };
            out.push_str(&format!(
                "{name:<policy_w$}  {:<job_w$}  {:<5} {:>9.1} {:>9.0} {:>10.1} {:>10.0} {:>11.0}",
                l.job, l.dir, l.bw_mbps, l.iops, l.clat_mean_us, l.clat_p99_us, l.clat_p999_us
            ));
            if spread {
                out.push_str(&format!(" {:>17}", format!("{:.0}-{:.0}", range.0, range.1)));
            }
            out.push('\n');
        }
        let name = if s.lines.is_empty() { s.policy.as_str() } else { "" };
        out.push_str(&format!("{name:<policy_w$}  {:<job_w$}  {:<5} {:>9.1}\n", "total", "", s.total_bw_mbps));
    }
    out
}

/// The comparison as JSON: the same figures as the table, one object per policy.
pub fn to_json(summaries: &[PolicySummary], seeds: &[u64], device: &str, center: Center) -> Value {
    let policies: Vec<Value> = summaries
        .iter()
        .map(|s| {
            let jobs: Vec<Value> = s
                .lines
                .iter()
                .zip(&s.p999_range_us)
                .map(|(l, r)| {
                    json!({
                        "job": l.job, "dir": l.dir, "bw_mbps": l.bw_mbps, "iops": l.iops,
                        "clat_mean_us": l.clat_mean_us, "clat_p99_us": l.clat_p99_us,
                        "clat_p999_us": l.clat_p999_us, "clat_p999_min_us": r.0, "clat_p999_max_us": r.1,
                    })
                })
                .collect();
            json!({ "policy": s.policy, "runs": s.runs, "total_bw_mbps": s.total_bw_mbps, "jobs": jobs })
        })
        .collect();
    json!({ "nvsched_sweep": { "device": device, "seeds": seeds, "center": center.name(), "policies": policies } })
}

/// The figure of the comparison: the focus job's p99.9 against total bandwidth (one
/// labelled point per policy, and the objective's limit where there is one), and the two
/// as bars.
pub fn figure(summaries: &[PolicySummary], focus: &str, objective: Option<Objective>) -> Figure {
    let focus_p999 = |s: &PolicySummary| focus_line(&s.lines, focus).map(|l| l.clat_p999_us);
    let points: Vec<(f64, f64, String)> =
        summaries.iter().filter_map(|s| Some((s.total_bw_mbps, focus_p999(s)?, s.policy.clone()))).collect();
    let limit = summaries.iter().find(|s| s.policy == crate::tune::REFERENCE).and_then(|none| {
        let row = Row {
            policy: none.policy.clone(),
            bound: None,
            rt_p999_us: focus_p999(none)?,
            total_bw_mbps: none.total_bw_mbps,
        };
        Some(objective?.limit_line(&row))
    });
    // a log axis only where the tails span more than a decade and a half
    let tails = points.iter().map(|p| p.1).filter(|t| *t > 0.0);
    let log_tail = tails.clone().fold(0.0, f64::max) > 30.0 * tails.fold(f64::INFINITY, f64::min);
    let panel = |title: String, x_label: &str, y_label: &str, log_y: bool, kind| Panel {
        title,
        x_label: x_label.into(),
        y_label: y_label.into(),
        log_x: false,
        log_y,
        kind,
    };
    Figure {
        title: format!("Policies compared: {focus}'s tail and total bandwidth"),
        rows: 1,
        cols: 3,
        panels: vec![
            panel(
                "Trade-off".into(),
                "total bandwidth (MB/s)",
                &format!("{focus} p99.9 (us)"),
                log_tail,
                PanelKind::Points { series: vec![("policy".into(), points)], limit },
            ),
            panel(
                format!("{focus}: p99.9 completion latency"),
                "p99.9 (us)",
                "",
                false,
                PanelKind::HBars(summaries.iter().filter_map(|s| Some((s.policy.clone(), focus_p999(s)?))).collect()),
            ),
            panel(
                "Total bandwidth".into(),
                "MB/s",
                "",
                false,
                PanelKind::HBars(summaries.iter().map(|s| (s.policy.clone(), s.total_bw_mbps)).collect()),
            ),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(job: &str, p999: f64, bw: f64) -> JobLine {
        JobLine {
            job: job.into(),
            dir: "read",
            bw_mbps: bw,
            iops: bw * 1e6 / 4096.0,
            clat_mean_us: p999 / 2.0,
            clat_p99_us: p999 * 0.8,
            clat_p999_us: p999,
        }
    }

    fn run(policy: &str, seed: u64, lines: Vec<JobLine>) -> Run {
        let total_bw_mbps = lines.iter().map(|l| l.bw_mbps).sum();
        Run { policy: policy.into(), seed, lines, focus: Some("rt".into()), total_bw_mbps }
    }

    #[test]
    fn seeds_are_averaged_per_policy_in_first_seen_order() {
        let runs = vec![
            run("none", 1, vec![line("rt", 700.0, 2.0), line("be", 900.0, 1000.0)]),
            run("none", 2, vec![line("rt", 900.0, 2.0), line("be", 1100.0, 1020.0)]),
            run("k2:bound=4", 1, vec![line("rt", 150.0, 2.0), line("be", 300.0, 280.0)]),
        ];
        let s = summarize(&runs, Center::Mean);
        assert_eq!(s.iter().map(|p| p.policy.as_str()).collect::<Vec<_>>(), ["none", "k2:bound=4"]);
        assert_eq!((s[0].runs, s[1].runs), (2, 1));
        assert_eq!(s[0].lines[0].clat_p999_us, 800.0);
        assert_eq!(s[0].p999_range_us[0], (700.0, 900.0));
        assert_eq!(s[0].lines[1].bw_mbps, 1010.0);
        assert_eq!(s[0].total_bw_mbps, 1012.0);
        let t = table(&s);
        assert!(t.contains("p99.9 range (us)"), "{t}");
        assert!(t.lines().any(|l| l.starts_with("none ") && l.contains("700-900")), "{t}");
        assert!(t.lines().any(|l| l.contains("total") && l.contains("1012.0")), "{t}");
    }

    #[test]
    fn medians_keep_one_outlier_run_out() {
        let runs = vec![
            run("none", 1, vec![line("rt", 700.0, 2.0)]),
            run("none", 2, vec![line("rt", 5000.0, 2.0)]),
            run("none", 3, vec![line("rt", 750.0, 3.0)]),
        ];
        let s = summarize(&runs, Center::Median);
        assert_eq!(s[0].lines[0].clat_p999_us, 750.0, "not the mean, 2150");
        assert_eq!(s[0].p999_range_us[0], (700.0, 5000.0), "the range still shows the outlier");
        assert_eq!(s[0].total_bw_mbps, 2.0);
        assert_eq!(to_json(&s, &[1, 2, 3], "d", Center::Median)["nvsched_sweep"]["center"], "median");
        assert_eq!(Center::Median.of(&[4.0, 1.0, 3.0, 2.0]), 2.5, "an even count: the middle two's mean");
        assert_eq!(Center::Mean.of(&[]), 0.0);
    }

    #[test]
    fn a_direction_missing_from_a_run_counts_as_no_bandwidth() {
        let runs = vec![run("none", 1, vec![line("w", 100.0, 50.0)]), run("none", 2, vec![])];
        let s = summarize(&runs, Center::Mean);
        assert_eq!(s[0].lines[0].bw_mbps, 25.0);
        assert_eq!(s[0].lines[0].clat_p999_us, 100.0, "latencies of the runs that had some");
        // also when the first run is the one without it
        let runs = vec![run("none", 1, vec![]), run("none", 2, vec![line("w", 100.0, 50.0)])];
        assert_eq!(summarize(&runs, Center::Mean)[0].lines[0].bw_mbps, 25.0);
        assert_eq!(summarize(&runs, Center::Median)[0].lines[0].bw_mbps, 25.0, "of 0 and 50");
    }

    #[test]
    fn one_seed_has_no_range_column() {
        let s = summarize(&[run("none", 0, vec![line("rt", 700.0, 2.0)])], Center::Mean);
        assert!(!table(&s).contains("range"));
        let v = to_json(&s, &[0], "970evoplus-250g", Center::Mean);
        assert_eq!(v["nvsched_sweep"]["policies"][0]["jobs"][0]["clat_p999_us"], json!(700.0));
    }
}
