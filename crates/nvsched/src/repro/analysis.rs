//! What each kind of experiment measures in a run, what it derives across runs, and how
//! a claim is judged.

use super::manifest::{Claim, Manifest, Variant};
use super::Verdict;
use crate::metrics::{distribution_error, fairness_factor, mean_adjacent_ratio};
use nvsched_report::{JobStats, RunReport};
use nvsched_workload::JobFile;
use serde_json::{json, Value};
use std::collections::BTreeMap;

type Metrics = BTreeMap<String, f64>;

fn bw(j: &JobStats, dir: usize) -> f64 {
    if j.runtime.0 == 0 {
        0.0
    } else {
        j.dirs[dir].io_bytes as f64 / j.runtime.as_secs_f64()
    }
}

/// The value a job gave `key` (a bare flag reads as "1").
fn option<'a>(j: &'a JobStats, key: &str) -> Option<&'a str> {
    j.job_options.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_deref().unwrap_or("1"))
}

/// Per-run metrics (and extra data for plots) of one kind of experiment.
pub fn metrics(kind: &str, variant: &Variant, _jobs: &JobFile, report: &RunReport) -> Result<(Metrics, Value), String> {
    let jobs = &report.jobs;
    let mut m = Metrics::new();
    let mut extra = Value::Null;
    match kind {
        "k2" => {
            let dir = match variant.vars.get("DIR").map(String::as_str) {
                Some("write") => 1,
                _ => 0,
            };
            let rt = jobs.first().ok_or("no jobs")?;
            let h = &rt.dirs[dir].clat_hist;
            m.insert("rt_p999_us".into(), h.percentile(99.9) as f64 / 1e3);
            m.insert("rt_p99_us".into(), h.percentile(99.0) as f64 / 1e3);
            m.insert("rt_mean_us".into(), rt.dirs[dir].clat.mean() / 1e3);
            m.insert("total_bw_mbps".into(), jobs.iter().map(|j| bw(j, dir)).sum::<f64>() / 1e6);
            // the RT job's latency CDF as a step curve (a vertical rise at each histogram
            // bin), thinned to steps of at least 0.5% so it stays small
            let total = h.total().max(1) as f64;
            let mut acc = 0u64;
            let mut cdf: Vec<(f64, f64)> = Vec::new();
            let mut shown = 0.0;
            let bins: Vec<(u64, u64)> = h.bins().collect();
            for (i, &(v, c)) in bins.iter().enumerate() {
                acc += c;
                let f = acc as f64 / total;
                if f - shown >= 0.005 || i + 1 == bins.len() {
                    let x = v as f64 / 1e3;
                    cdf.push((x, shown));
                    cdf.push((x, f));
                    shown = f;
                }
            }
            extra = json!({ "rt_cdf": cdf });
        }
        "prio-nice" => {
            let mut reads: Vec<(i64, f64)> = Vec::new();
            let mut writes: Vec<(i64, f64)> = Vec::new();
            for j in jobs {
                let nice: i64 = option(j, "nice").and_then(|v| v.parse().ok()).unwrap_or(0);
                let runtime = j.runtime.as_secs_f64();
                match option(j, "rw") {
                    Some(rw) if rw.contains("write") => writes.push((nice, runtime)),
                    _ => reads.push((nice, runtime)),
                }
            }
            for (name, list) in [("read", reads), ("write", writes)] {
                if list.is_empty() {
                    continue;
                }
                let by_nice = mean_runtime_per_nice(list);
                let times: Vec<f64> = by_nice.iter().map(|(_, t)| *t).collect();
                let ordered =
                    times.windows(2).filter(|w| w[1] >= w[0]).count() as f64 / (times.len() - 1).max(1) as f64;
                m.insert(format!("{name}_adjacent_ratio"), mean_adjacent_ratio(&times).unwrap_or(1.0));
                m.insert(format!("{name}_ordered_fraction"), ordered);
                m.insert(format!("{name}_mean_runtime_s"), times.iter().sum::<f64>() / times.len() as f64);
                m.insert(format!("{name}_span_ratio"), times.last().unwrap_or(&1.0) / times.first().unwrap_or(&1.0));
                extra[format!("{name}_runtimes")] = json!(by_nice);
            }
        }
        "tabs" => {
            let (mut rb, mut wb, mut nr, mut nw) = (0.0, 0.0, 0, 0);
            for j in jobs {
                if option(j, "sync").is_some() {
                    wb += bw(j, 1);
                    nw += 1;
                } else {
                    rb += bw(j, 0);
                    nr += 1;
                }
            }
            m.insert("read_bw_mbps".into(), rb / 1e6);
            m.insert("fua_bw_mbps".into(), wb / 1e6);
            m.insert("readers".into(), f64::from(nr));
            m.insert("writers".into(), f64::from(nw));
            if nr > 0 {
                m.insert("read_bw_per_job_mbps".into(), rb / 1e6 / f64::from(nr));
            }
            if nw > 0 {
                m.insert("fua_bw_per_job_mbps".into(), wb / 1e6 / f64::from(nw));
            }
        }
        "mts" => {
            let tenants: Vec<(f64, f64)> = jobs
                .iter()
                .map(|j| {
                    (option(j, "cgroup_weight").and_then(|w| w.parse().ok()).unwrap_or(100.0), bw(j, 0) + bw(j, 1))
                })
                .collect();
            m.insert("distribution_error".into(), distribution_error(&tenants).unwrap_or(f64::NAN));
            m.insert("total_bw_mbps".into(), tenants.iter().map(|t| t.1).sum::<f64>() / 1e6);
            extra = json!({ "tenants": tenants });
        }
        "veloces" => {
            let iops: f64 = jobs
                .iter()
                .map(|j| j.dirs.iter().map(|d| d.total_ios as f64).sum::<f64>() / j.runtime.as_secs_f64())
                .sum();
            m.insert("total_iops".into(), iops);
        }
        other => return Err(format!("unknown experiment kind '{other}'")),
    }
    Ok((m, extra))
}

fn cell(cells: &BTreeMap<String, f64>, key: &str) -> Option<f64> {
    cells.get(key).copied().filter(|v| v.is_finite())
}

/// Runtimes (nice, seconds) of processes, as the mean runtime per nice value in nice
/// order (the crowd run has up to 64 processes at one nice value).
fn mean_runtime_per_nice(mut list: Vec<(i64, f64)>) -> Vec<(i64, f64)> {
    list.sort_by_key(|(n, _)| *n);
    let mut sums: Vec<(i64, f64, u32)> = Vec::new();
    for (n, t) in list {
        match sums.last_mut() {
            Some((ln, sum, count)) if *ln == n => {
                *sum += t;
                *count += 1;
            }
            _ => sums.push((n, t, 1)),
        }
    }
    sums.iter().map(|&(n, sum, count)| (n, sum / f64::from(count))).collect()
}

/// Values computed across cells (policies, variants, drive states), stored as extra cells.
pub fn derive(m: &Manifest, cells: &mut BTreeMap<String, f64>) {
    match m.kind.as_str() {
        "k2" => {
            derive_k2(m, cells);
            derive_k2_state_changes(m, cells);
        }
        "tabs" => derive_tabs(m, cells),
        "veloces" => {
            for v in &m.variants {
                for s in &m.states {
                    let best_other = m
                        .policies_of(v)
                        .iter()
                        .filter(|p| *p != "veloces")
                        .filter_map(|p| cell(cells, &format!("{}/{}/{p}/total_iops", v.name, s.name)))
                        .fold(0.0, f64::max);
                    if let Some(vel) = cell(cells, &format!("{}/{}/veloces/total_iops", v.name, s.name)) {
                        cells.insert(
                            format!("{}/{}/derived/veloces_gain_over_best", v.name, s.name),
                            vel / best_other - 1.0,
                        );
                    }
                }
            }
        }
        _ => {}
    }
}

/// The paper's guideline (Electronics 2021, Section 5): O1 = the largest bound whose RT
/// p99.9 is at most alpha of none's; O2 = the smallest bound whose total bandwidth is at
/// least beta of none's.
pub fn k2_choices(rows: &[(u32, f64, f64)], none: (f64, f64), alpha: f64, beta: f64) -> (Option<u32>, Option<u32>) {
    let o1 = rows.iter().filter(|(_, p, _)| *p <= alpha * none.0).map(|(b, _, _)| *b).max();
    let o2 = rows.iter().filter(|(_, _, bw)| *bw >= beta * none.1).map(|(b, _, _)| *b).min();
    (o1, o2)
}

fn k2_bound(policy: &str) -> Option<u32> {
    policy.strip_prefix("k2:bound=").and_then(|b| b.parse().ok())
}

fn derive_k2(m: &Manifest, cells: &mut BTreeMap<String, f64>) {
    for v in &m.variants {
        for s in &m.states {
            let base = format!("{}/{}", v.name, s.name);
            let (Some(none_p), Some(none_bw)) =
                (cell(cells, &format!("{base}/none/rt_p999_us")), cell(cells, &format!("{base}/none/total_bw_mbps")))
            else {
                continue;
            };
            let rows: Vec<(u32, f64, f64)> = m
                .policies_of(v)
                .iter()
                .filter_map(|p| {
                    let b = k2_bound(p)?;
                    Some((
                        b,
                        cell(cells, &format!("{base}/{p}/rt_p999_us"))?,
                        cell(cells, &format!("{base}/{p}/total_bw_mbps"))?,
                    ))
                })
                .collect();
            let (o1, o2) = k2_choices(&rows, (none_p, none_bw), 0.5, 0.5);
            if let Some(b) = o1 {
                cells.insert(format!("{base}/tune/o1_bound"), f64::from(b));
            }
            if let Some(b) = o2 {
                cells.insert(format!("{base}/tune/o2_bound"), f64::from(b));
            }
            let ge2: Vec<&(u32, f64, f64)> = rows.iter().filter(|r| r.0 >= 2).collect();
            if !ge2.is_empty() {
                let min_bw = ge2.iter().map(|r| r.2).fold(f64::INFINITY, f64::min);
                let max_bw = ge2.iter().map(|r| r.2).fold(0.0, f64::max);
                cells.insert(format!("{base}/derived/min_bw_fraction_bound_ge2"), min_bw / none_bw);
                cells.insert(format!("{base}/derived/bw_spread_bound_ge2"), max_bw / min_bw);
            }
            if let Some(k1) = cell(cells, &format!("{base}/k2:bound=1/rt_p999_us")) {
                cells.insert(format!("{base}/derived/p999_factor_none_over_k2_1"), none_p / k1);
            }
            if let Some(k1) = cell(cells, &format!("{base}/k2:bound=1/total_bw_mbps")) {
                cells.insert(format!("{base}/derived/bw_factor_none_over_k2_1"), none_bw / k1);
            }
        }
    }
}

/// How far each drive state after the first moves a variant's results from the first
/// state's, over all policies: the largest factor (>= 1, either direction) between the two
/// states' total bandwidths and between their RT p99.9s. "Behaves as on the partially
/// occupied drive" must hold at every bound, not only under `none`.
fn derive_k2_state_changes(m: &Manifest, cells: &mut BTreeMap<String, f64>) {
    let Some(reference) = m.states.first() else { return };
    for v in &m.variants {
        for s in m.states.iter().skip(1) {
            for metric in ["total_bw_mbps", "rt_p999_us"] {
                let factors = m.policies_of(v).iter().filter_map(|p| {
                    let here = cell(cells, &format!("{}/{}/{p}/{metric}", v.name, s.name))?;
                    let there = cell(cells, &format!("{}/{}/{p}/{metric}", v.name, reference.name))?;
                    (here > 0.0 && there > 0.0).then(|| (here / there).max(there / here))
                });
                if let Some(largest) = factors.reduce(f64::max) {
                    cells.insert(
                        format!("{}/{}/derived/{metric}_max_factor_vs_{}", v.name, s.name, reference.name),
                        largest,
                    );
                }
            }
        }
    }
}

fn derive_tabs(m: &Manifest, cells: &mut BTreeMap<String, f64>) {
    for s in &m.states {
        for p in &m.policies {
            // per-job bandwidth alone, measured in the 1r and 1w variants under `none`
            let alone_r = cell(cells, &format!("1r/{}/none/read_bw_per_job_mbps", s.name));
            let alone_w = cell(cells, &format!("1w/{}/none/fua_bw_per_job_mbps", s.name));
            let (Some(ar), Some(aw)) = (alone_r, alone_w) else { continue };
            for v in &m.variants {
                let base = format!("{}/{}/{p}", v.name, s.name);
                let get = |k: &str| cell(cells, &format!("{base}/{k}"));
                let counts = (get("read_bw_mbps"), get("fua_bw_mbps"), get("readers"), get("writers"));
                let per_job = (get("read_bw_per_job_mbps"), get("fua_bw_per_job_mbps"));
                if let (Some(r), Some(w), Some(nr), Some(nw)) = counts {
                    if let Some(f) = fairness_factor(r, w, nr as usize, nw as usize, ar, aw) {
                        cells.insert(format!("{base}/fairness"), f);
                    }
                }
                // what each job keeps of the bandwidth it gets alone: who is hurt most
                if let (Some(r), Some(w)) = per_job {
                    cells.insert(format!("{base}/read_share_of_alone"), r / ar);
                    cells.insert(format!("{base}/fua_share_of_alone"), w / aw);
                }
            }
        }
        let mut gains = Vec::new();
        for v in &m.variants {
            let f = |p: &str| cell(cells, &format!("{}/{}/{p}/fairness", v.name, s.name));
            if let (Some(t), Some(n)) = (f("tabs"), f("none")) {
                cells.insert(format!("{}/{}/derived/fairness_gain", v.name, s.name), t / n);
                gains.push(t / n);
            }
        }
        // "about 4x fairer" in general: the geometric mean of the gains over the mixes
        if !gains.is_empty() {
            let mean = (gains.iter().map(|g| g.ln()).sum::<f64>() / gains.len() as f64).exp();
            cells.insert(format!("mixes/{}/derived/mean_fairness_gain", s.name), mean);
        }
    }
}

/// Judges one claim against the cells.
pub fn judge(c: &Claim, cells: &BTreeMap<String, f64>) -> Verdict {
    let a = cell(cells, &c.a);
    let b = c.b.as_deref().and_then(|k| cell(cells, k));
    let mut v = Verdict {
        id: c.id.clone(),
        text: c.text.clone(),
        nvsched: None,
        paper: c.paper,
        holds: None,
        detail: String::new(),
        repetitions_holding: None,
    };
    let missing = |what: &str| format!("no value for {what}");
    match c.kind.as_str() {
        "factor" => match (a, b) {
            (Some(a), Some(b)) if b != 0.0 => {
                let f = a / b;
                v.nvsched = Some(f);
                let p = c.paper.unwrap_or(1.0);
                let tol = c.tolerance.unwrap_or(0.4);
                v.holds = Some((f / p - 1.0).abs() <= tol);
                v.detail = format!("{a:.4} / {b:.4} = {f:.2}x vs paper {p:.2}x (+-{:.0}%)", tol * 100.0);
            }
            _ => v.detail = missing(&format!("{} or {}", c.a, c.b.clone().unwrap_or_default())),
        },
        "less" | "greater" => match (a, b) {
            (Some(a), Some(b)) => {
                v.nvsched = Some(a / b);
                v.holds = Some(if c.kind == "less" { a < b } else { a > b });
                v.detail = format!("{a:.4} vs {b:.4}");
            }
            _ => v.detail = missing(&format!("{} or {}", c.a, c.b.clone().unwrap_or_default())),
        },
        "at_least" | "at_most" => match (a, b) {
            (Some(a), Some(b)) => {
                let p = c.paper.unwrap_or(1.0);
                v.nvsched = Some(a / b);
                v.holds = Some(if c.kind == "at_least" { a >= p * b } else { a <= p * b });
                v.detail =
                    format!("{a:.4} / {b:.4} = {:.3} ({} {p})", a / b, if c.kind == "at_least" { ">=" } else { "<=" });
            }
            _ => v.detail = missing(&format!("{} or {}", c.a, c.b.clone().unwrap_or_default())),
        },
        "between" => match a {
            Some(a) => {
                v.nvsched = Some(a);
                let (lo, hi) = (c.lo.unwrap_or(f64::NEG_INFINITY), c.hi.unwrap_or(f64::INFINITY));
                v.holds = Some(a >= lo && a <= hi);
                v.detail = format!("{a:.4} in [{lo}, {hi}]");
            }
            None => v.detail = missing(&c.a),
        },
        "choice" => match a {
            Some(a) => {
                v.nvsched = Some(a);
                v.holds = c.paper.map(|p| (a - p).abs() < 1e-9);
                v.detail = format!("chose {a} (paper {})", c.paper.map_or("?".into(), |p| p.to_string()));
            }
            None => v.detail = missing(&c.a),
        },
        other => v.detail = format!("unknown claim kind '{other}'"),
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtimes_are_averaged_per_nice_value() {
        // every process counts alike (a running pairwise average gave the last one half)
        let by_nice = mean_runtime_per_nice(vec![(0, 4.0), (-15, 1.0), (-15, 2.0), (-15, 6.0)]);
        assert_eq!(by_nice, vec![(-15, 3.0), (0, 4.0)]);
    }

    #[test]
    fn k2_guideline_choices() {
        // bound, p99.9, bw; none: p99.9 1000, bw 700
        let rows = [
            (1, 300.0, 70.0),
            (2, 350.0, 150.0),
            (4, 420.0, 300.0),
            (8, 480.0, 360.0),
            (16, 700.0, 600.0),
            (32, 900.0, 690.0),
        ];
        assert_eq!(k2_choices(&rows, (1000.0, 700.0), 0.5, 0.5), (Some(8), Some(8)));
        assert_eq!(k2_choices(&rows, (1000.0, 700.0), 0.25, 0.9), (None, Some(32)));
    }

    #[test]
    fn claims_are_judged() {
        let cells: BTreeMap<String, f64> =
            [("a".to_string(), 30.0), ("b".to_string(), 10.0), ("c".to_string(), 8.0)].into_iter().collect();
        let claim = |kind: &str, paper: Option<f64>| Claim {
            id: "x".into(),
            text: String::new(),
            kind: kind.into(),
            a: "a".into(),
            b: Some("b".into()),
            paper,
            tolerance: None,
            lo: Some(20.0),
            hi: Some(40.0),
        };
        assert_eq!(judge(&claim("factor", Some(3.3)), &cells).holds, Some(true));
        assert_eq!(judge(&claim("factor", Some(6.0)), &cells).holds, Some(false));
        assert_eq!(judge(&claim("less", None), &cells).holds, Some(false));
        assert_eq!(judge(&claim("at_least", Some(2.9)), &cells).holds, Some(true));
        assert_eq!(judge(&claim("between", None), &cells).holds, Some(true));
        assert_eq!(judge(&claim("choice", Some(30.0)), &cells).holds, Some(true));
        let mut missing = claim("less", None);
        missing.b = Some("nope".into());
        assert_eq!(judge(&missing, &cells).holds, None);
    }

    /// A manifest with these policies, variants and drive states, for the derivations.
    fn manifest(kind: &str, policies: &[&str], variants: &[&str], states: &[&str]) -> Manifest {
        let mut text = format!(
            "name = 'x'\ntitle = 'x'\npaper = 'x'\nkind = '{kind}'\ndevice = 'x'\njob = 'x.fio'\n\
             policies = {policies:?}\nfull = {{ repetitions = 1 }}\nquick = {{ repetitions = 1 }}\n"
        );
        for v in variants {
            text += &format!("[[variants]]\nname = '{v}'\n");
        }
        for s in states {
            text +=
                &format!("[[states]]\nname = '{s}'\nprecondition = 'clean'\nruntime = '1s'\nquick_runtime = '1s'\n");
        }
        toml::from_str(&text).unwrap()
    }

    #[test]
    fn a_drive_state_change_is_the_largest_over_all_policies_in_either_direction() {
        let m = manifest("k2", &["none", "k2:bound=1", "k2:bound=2"], &["read"], &["partial", "full"]);
        let mut cells: BTreeMap<String, f64> = [
            // bandwidth: unchanged under none, halved at bound 1, 10% up at bound 2
            ("read/partial/none/total_bw_mbps", 700.0),
            ("read/full/none/total_bw_mbps", 700.0),
            ("read/partial/k2:bound=1/total_bw_mbps", 80.0),
            ("read/full/k2:bound=1/total_bw_mbps", 40.0),
            ("read/partial/k2:bound=2/total_bw_mbps", 100.0),
            ("read/full/k2:bound=2/total_bw_mbps", 110.0),
            // tail: 3x longer under none, and bound 2 missing on the full drive
            ("read/partial/none/rt_p999_us", 600.0),
            ("read/full/none/rt_p999_us", 1800.0),
            ("read/partial/k2:bound=2/rt_p999_us", 200.0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        derive_k2_state_changes(&m, &mut cells);
        assert_eq!(cell(&cells, "read/full/derived/total_bw_mbps_max_factor_vs_partial"), Some(2.0));
        assert_eq!(cell(&cells, "read/full/derived/rt_p999_us_max_factor_vs_partial"), Some(3.0));
        assert!(!cells.keys().any(|k| k.starts_with("read/partial/derived")), "the reference state has no change");
    }

    #[test]
    fn tabs_gain_is_averaged_over_the_mixes_and_shares_are_of_the_bandwidth_alone() {
        let m = manifest("tabs", &["none", "tabs"], &["1r", "1w", "1w1r", "1w2r"], &["s"]);
        let mut cells: BTreeMap<String, f64> = BTreeMap::new();
        let mut put = |k: &str, v: f64| cells.insert(k.to_string(), v);
        put("1r/s/none/read_bw_per_job_mbps", 60.0);
        put("1w/s/none/fua_bw_per_job_mbps", 10.0);
        // (variant, policy, read MB/s, FUA MB/s, readers, writers)
        for (v, p, r, w, nr, nw) in [
            ("1w1r", "none", 30.0, 10.0, 1.0, 1.0),
            ("1w1r", "tabs", 45.0, 7.5, 1.0, 1.0),
            ("1w2r", "none", 60.0, 10.0, 2.0, 1.0),
            ("1w2r", "tabs", 80.0, 10.0 / 3.0, 2.0, 1.0),
        ] {
            put(&format!("{v}/s/{p}/read_bw_mbps"), r);
            put(&format!("{v}/s/{p}/fua_bw_mbps"), w);
            put(&format!("{v}/s/{p}/readers"), nr);
            put(&format!("{v}/s/{p}/writers"), nw);
            put(&format!("{v}/s/{p}/read_bw_per_job_mbps"), r / nr);
            put(&format!("{v}/s/{p}/fua_bw_per_job_mbps"), w / nw);
        }
        derive_tabs(&m, &mut cells);
        let near = |k: &str, want: f64| {
            let got = cell(&cells, k).unwrap_or(f64::NAN);
            assert!((got - want).abs() < 1e-9, "{k}: {got} vs {want}");
        };
        // 1w1r under none: the reader keeps half of its 60 MB/s, the writer all of its 10
        near("1w1r/s/none/read_share_of_alone", 0.5);
        near("1w1r/s/none/fua_share_of_alone", 1.0);
        // fair shares: 1w1r 30 / 5 MB/s, 1w2r 80 / 3.33 MB/s; fairness under none 0.5 and
        // 0.75 / 3 = 0.25, under tabs 1 in both
        near("1w1r/s/derived/fairness_gain", 2.0);
        near("1w2r/s/derived/fairness_gain", 4.0);
        near("mixes/s/derived/mean_fairness_gain", 8f64.sqrt());
    }
}
