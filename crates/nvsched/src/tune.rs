//! `nvsched tune`: sweeps a policy's parameter on a workload and picks the setting that
//! serves an objective about one latency-critical job (the real-time job by default) and
//! the total bandwidth, relative to `none`.
//!
//! - `tune k2` sweeps K2's bound and applies the guideline of the K2 analysis
//!   (Electronics 2021, Section 5): for a latency objective O1 the largest bound whose
//!   real-time p99.9 is at most alpha of `none`'s, for a bandwidth objective O2 the
//!   smallest bound whose total bandwidth is at least beta of `none`'s.
//! - `tune POLICY --param NAME=V1,V2,...` sweeps any policy's parameters (a grid of every
//!   combination) and picks on the measurements, since a parameter need not order
//!   latency and bandwidth as K2's bound does: O1 the most bandwidth among the settings
//!   whose p99.9 is at most alpha of `none`'s, O2 the lowest p99.9 among those with at
//!   least beta of `none`'s bandwidth. On a bound whose bandwidth rises and whose tail
//!   grows with it, the two rules agree.
//!
//! Over several seeds a configuration's figures are the means of its runs, as a
//! reproduction averages its repetitions: a 10 s p99.9 rests on a handful of samples and
//! moves with the seed. On a real device they are the medians ([`Center`]), which one
//! run's outlier does not move.

use crate::batch::Target;
use crate::progress::RunProgress;
use crate::repro::analysis::k2_choices;
use crate::run::{run_sim_whole, RunSpec};
use nvsched_core::PrioClass;
use nvsched_report::plots::{Axis, Figure, LabelledPoint, Limit, Panel, PanelKind};
use nvsched_ssd::{DeviceProfile, DriveStates};
use nvsched_workload::JobFile;

/// The policy every sweep runs first: the objectives are fractions of its figures.
pub const REFERENCE: &str = "none";

/// What [`choose_setting`] calls the candidates: a parameter's settings (`tune`), or
/// policies (`sweep --objective`).
pub const SETTINGS: (&str, &str) = ("setting", "settings");
pub const POLICIES: (&str, &str) = ("policy", "policies");

/// The most settings a `--param` grid may hold.
pub const MAX_GRID: usize = 256;

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

    /// The objective's bound on a setting: (p99.9 limit in us, bandwidth floor in MB/s),
    /// one of them, from `none`'s figures.
    fn limits(self, none: &Row) -> (Option<f64>, Option<f64>) {
        match self {
            Objective::Latency(a) => (Some(a * none.rt_p999_us), None),
            Objective::Bandwidth(b) => (None, Some(b * none.total_bw_mbps)),
        }
    }

    /// The limit as a line of a figure whose x axis is total bandwidth and whose y axis
    /// is the p99.9, from `none`'s figures.
    pub fn limit_line(self, none: &Row) -> Limit {
        match self.limits(none) {
            (Some(p999_us), _) => Limit { name: format!("p99.9 limit {p999_us:.0} us"), axis: Axis::Y, value: p999_us },
            (_, Some(bw)) => Limit { name: format!("bandwidth floor {bw:.0} MB/s"), axis: Axis::X, value: bw },
            (None, None) => unreachable!("an objective bounds the p99.9 or the bandwidth"),
        }
    }

    /// As the user wrote it: `latency:29%` (the fraction times 100 is 28.999999999999996).
    fn name(self) -> String {
        let pct = |f: f64| (f * 100.0 * 1e9).round() / 1e9;
        match self {
            Objective::Latency(a) => format!("latency:{}%", pct(a)),
            Objective::Bandwidth(b) => format!("bandwidth:{}%", pct(b)),
        }
    }
}

/// One configuration of the sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The policy spec, `none` for the reference.
    pub policy: String,
    /// K2's bound, in `tune k2`'s sweep.
    pub bound: Option<u32>,
    pub rt_p999_us: f64,
    pub total_bw_mbps: f64,
}

/// The latency-critical job's report entry (its first clone; each clone is its own
/// entry) and name: the job named `job`, else the first job with RT ioprio.
fn rt_entry(jobs: &JobFile, job: Option<&str>) -> Result<(usize, String), String> {
    if jobs.jobs.iter().any(|j| j.group_reporting) {
        return Err("tune needs per-job results: remove group_reporting".into());
    }
    let mut index = 0;
    for j in &jobs.jobs {
        let wanted = match job {
            Some(name) => j.name == name,
            None => j.ioprio().class == PrioClass::RealTime,
        };
        if wanted {
            return Ok((index, j.name.clone()));
        }
        index += j.numjobs as usize;
    }
    Err(match job {
        Some(name) => {
            let names: Vec<&str> = jobs.jobs.iter().map(|j| j.name.as_str()).collect();
            format!("no job named '{name}' (the jobs: {})", names.join(", "))
        }
        None => "no real-time job (prioclass=1) whose tail to protect; name the latency-critical job with --job".into(),
    })
}

/// Checks that `jobs` (read from `source`, which the error names) can be tuned — the
/// latency-critical job (`job`, else the real-time one), per-job results — before a
/// sweep, and returns that job's report entry and name.
pub fn check_jobs(jobs: &JobFile, source: &str, job: Option<&str>) -> Result<(usize, String), String> {
    rt_entry(jobs, job).map_err(|e| format!("{source}: {e}"))
}

/// `spec` (`ID` or `ID:key=value,...`) with `key=value` added.
fn with_param(spec: &str, key: &str, value: impl std::fmt::Display) -> String {
    let sep = if spec.contains(':') { "," } else { ":" };
    format!("{spec}{sep}{key}={value}")
}

/// The configurations of `tune k2`: K2 (with `base`'s other parameters, `k2` for none)
/// at each bound.
pub fn k2_configs(base: &str, bounds: &[u32]) -> Vec<(String, Option<u32>)> {
    bounds.iter().map(|&b| (with_param(base, "bound", b), Some(b))).collect()
}

/// The policy specs of a grid: `base` (`ID` or `ID:key=value,...`) with every combination
/// of the values of `params` (each `NAME=V1,V2,...`; the first parameter varies slowest),
/// each built once to check it.
pub fn grid(base: &str, params: &[String]) -> Result<Vec<String>, String> {
    let id = base.split(':').next().unwrap_or_default().trim();
    if nvsched_policy::find(id).is_none() {
        // the registry's error lists the policies it knows
        nvsched_policy::build(base).map_err(|e| e.to_string())?;
    }
    let mut specs = vec![base.trim().to_string()];
    let mut names: Vec<&str> = Vec::new();
    for param in params {
        let (name, values) = param
            .split_once('=')
            .map(|(n, v)| (n.trim(), v))
            .filter(|(n, _)| !n.is_empty())
            .ok_or_else(|| format!("--param '{param}': expected NAME=V1,V2,... (values to try)"))?;
        if names.contains(&name) {
            return Err(format!("--param {name}: given twice; list all its values in one --param"));
        }
        names.push(name);
        let mut list: Vec<String> = Vec::new();
        for v in values.split(',').map(str::trim) {
            if v.is_empty() {
                return Err(format!("--param '{param}': an empty value"));
            }
            let expanded = match v.split_once("..") {
                Some((lo, hi)) => {
                    let spec = param_spec(id, name).ok_or_else(|| {
                        format!("--param {name}={v}: '{id}' has no parameter '{name}' to take a range of")
                    })?;
                    value_range(spec, lo, hi).map_err(|e| format!("--param {name}={v}: {e}"))?
                }
                None => vec![v.to_string()],
            };
            for value in expanded {
                if !list.contains(&value) {
                    list.push(value);
                }
            }
        }
        if specs.len() * list.len() > MAX_GRID {
            return Err(format!("--param: over {MAX_GRID} settings to try; give fewer values"));
        }
        specs = specs.iter().flat_map(|s| list.iter().map(move |v| with_param(s, name, v))).collect();
    }
    for spec in &specs {
        nvsched_policy::build(spec).map_err(|e| format!("--param: {spec}: {e}"))?;
    }
    Ok(specs)
}

/// Parameter `name` of policy `id` (its own or one every policy takes).
fn param_spec(id: &str, name: &str) -> Option<&'static nvsched_policy::ParamSpec> {
    let own = nvsched_policy::find(id).map_or(&[][..], |info| info.params);
    own.iter().chain(nvsched_policy::COMMON_PARAMS).find(|p| p.name == name)
}

/// The values of a range `LO..HI` (doubling from LO, and HI last) or `LO..HI/N` (N
/// evenly spaced values from LO to HI), written as the parameter takes them.
fn value_range(spec: &nvsched_policy::ParamSpec, lo: &str, hi: &str) -> Result<Vec<String>, String> {
    use nvsched_policy::ParamKind;
    const MAX_VALUES: usize = 64;
    // the last '/' starts the count, unless it is a rate's "/s"
    let (hi, count) = match hi.rsplit_once('/').filter(|(_, n)| *n != "s") {
        Some((hi, n)) => {
            let n: usize = n.trim().parse().map_err(|_| format!("'/{n}': expected a count of values"))?;
            if !(2..=MAX_VALUES).contains(&n) {
                return Err(format!("'/{n}': from 2 to {MAX_VALUES} values"));
            }
            (hi, Some(n))
        }
        None => (hi, None),
    };
    if matches!(spec.kind, ParamKind::Bool | ParamKind::Choice(_)) {
        return Err(format!("{} takes {}, not a range: list the values", spec.name, spec.accepted()));
    }
    let parse = |v: &str| as_number(spec.kind, v);
    let write = |v: f64| written(spec.kind, v);
    let (lo, hi) = (parse(lo)?, parse(hi)?);
    if !(lo.is_finite() && hi.is_finite()) || lo >= hi {
        return Err("a range goes from low to high".into());
    }
    let values: Vec<f64> = match count {
        Some(n) => (0..n).map(|i| lo + (hi - lo) * i as f64 / (n - 1) as f64).collect(),
        None if lo <= 0.0 => return Err("doubling needs a low end above 0; give LO..HI/N for N even steps".into()),
        None => {
            let mut values: Vec<f64> =
                std::iter::successors(Some(lo), |v| Some(v * 2.0)).take_while(|v| *v <= hi).collect();
            if values.last().is_some_and(|last| *last < hi) {
                values.push(hi);
            }
            values
        }
    };
    if values.len() > MAX_VALUES {
        return Err(format!("over {MAX_VALUES} values"));
    }
    let mut written: Vec<String> = values.into_iter().map(write).collect();
    written.dedup();
    Ok(written)
}

/// A numeric parameter's value as one number (a duration in ns, a rate in bytes/s).
fn as_number(kind: nvsched_policy::ParamKind, raw: &str) -> Result<f64, String> {
    use nvsched_policy::params::{parse_duration, parse_rate};
    use nvsched_policy::ParamKind;
    let raw = raw.trim();
    match kind {
        ParamKind::Int { .. } => raw.parse::<i64>().map(|v| v as f64).map_err(|_| format!("'{raw}' is not an integer")),
        ParamKind::Duration { .. } => parse_duration(raw).map(|n| n.0 as f64),
        ParamKind::Rate { .. } => parse_rate(raw),
        _ => raw.parse::<f64>().map_err(|_| format!("'{raw}' is not a number")),
    }
}

/// [`as_number`]'s number written as the parameter takes it.
fn written(kind: nvsched_policy::ParamKind, v: f64) -> String {
    use nvsched_policy::ParamKind;
    match kind {
        ParamKind::Int { .. } => format!("{}", v.round() as i64),
        ParamKind::Duration { .. } => exact_duration(v.round() as u64),
        ParamKind::Rate { .. } => nvsched_policy::params::format_rate(v),
        _ => format!("{v}"),
    }
}

/// A duration in the largest unit that writes it exactly: `250us`, `2ms`, `1500ns`.
fn exact_duration(ns: u64) -> String {
    match ns {
        0 => "0".into(),
        _ if ns.is_multiple_of(1_000_000_000) => format!("{}s", ns / 1_000_000_000),
        _ if ns.is_multiple_of(1_000_000) => format!("{}ms", ns / 1_000_000),
        _ if ns.is_multiple_of(1_000) => format!("{}us", ns / 1_000),
        _ => format!("{ns}ns"),
    }
}

/// Runs `none` and each configuration (a policy spec, with K2's bound where it is one),
/// once per seed (see [`crate::batch::run_each`]): one row per run, seeds innermost;
/// `rt` is the latency-critical job's entry (`check_jobs`). `choose` and `table` take the
/// center (mean or median) of a configuration's rows.
pub fn sweep(
    jobs: &JobFile,
    target: Target<'_>,
    seeds: &[u64],
    configs: &[(String, Option<u32>)],
    rt: usize,
    show_progress: bool,
) -> Result<Vec<Row>, String> {
    let specs: Vec<(&str, Option<u32>)> =
        std::iter::once((REFERENCE, None)).chain(configs.iter().map(|(spec, bound)| (spec.as_str(), *bound))).collect();
    let runs: Vec<(&str, u64)> =
        specs.iter().flat_map(|&(spec, _)| seeds.iter().map(move |&seed| (spec, seed))).collect();
    let progress = RunProgress::new("tune", runs.len(), show_progress);
    let rows = crate::batch::run_each(jobs, target, &runs, &progress, |report| row_of(report, rt))?;
    let bounds = specs.iter().flat_map(|&(_, bound)| seeds.iter().map(move |_| bound));
    Ok(runs
        .iter()
        .zip(bounds)
        .zip(rows)
        .map(|((&(spec, _), bound), row)| Row { policy: spec.to_string(), bound, ..row })
        .collect())
}

/// How one configuration's runs over several seeds make one figure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Center {
    /// The mean, as a reproduction averages its repetitions: simulated runs.
    #[default]
    Mean,
    /// The median, which one run's outlier does not move: runs on a real device, whose
    /// tail changes from run to run.
    Median,
}

impl Center {
    /// The center of `values` (0 for none).
    pub fn of(self, values: &[f64]) -> f64 {
        if values.is_empty() {
            return 0.0;
        }
        match self {
            Center::Mean => values.iter().sum::<f64>() / values.len() as f64,
            Center::Median => {
                let mut sorted = values.to_vec();
                sorted.sort_by(f64::total_cmp);
                let mid = sorted.len() / 2;
                if sorted.len() % 2 == 1 {
                    sorted[mid]
                } else {
                    (sorted[mid - 1] + sorted[mid]) / 2.0
                }
            }
        }
    }

    /// "Means" or "Medians", as the sentences say.
    pub fn plural(self) -> &'static str {
        match self {
            Center::Mean => "Means",
            Center::Median => "Medians",
        }
    }

    /// "mean" or "median", as the JSON says.
    pub fn name(self) -> &'static str {
        match self {
            Center::Mean => "mean",
            Center::Median => "median",
        }
    }

    /// The center [`Center::name`] names.
    pub fn from_name(name: &str) -> Option<Center> {
        [Center::Mean, Center::Median].into_iter().find(|c| c.name() == name)
    }
}

/// One configuration's runs over the seeds.
struct Merged {
    /// The runs' centers (means or medians).
    row: Row,
    /// Each run's p99.9 (us) and total bandwidth (MB/s).
    tails_us: Vec<f64>,
    bws_mbps: Vec<f64>,
}

impl Merged {
    fn runs(&self) -> usize {
        self.tails_us.len()
    }

    /// The lowest and the highest p99.9 of the runs.
    fn p999_range_us(&self) -> (f64, f64) {
        let t = self.tails_us.iter().copied();
        (t.clone().fold(f64::INFINITY, f64::min), t.fold(f64::NEG_INFINITY, f64::max))
    }
}

/// Groups the rows by configuration (policy spec), in the order they first appear.
fn merge(rows: &[Row], center: Center) -> Vec<Merged> {
    let mut policies: Vec<&str> = Vec::new();
    for r in rows {
        if !policies.contains(&r.policy.as_str()) {
            policies.push(&r.policy);
        }
    }
    policies
        .into_iter()
        .map(|policy| {
            let runs: Vec<&Row> = rows.iter().filter(|r| r.policy == policy).collect();
            let tails_us: Vec<f64> = runs.iter().map(|r| r.rt_p999_us).collect();
            let bws_mbps: Vec<f64> = runs.iter().map(|r| r.total_bw_mbps).collect();
            Merged {
                row: Row { rt_p999_us: center.of(&tails_us), total_bw_mbps: center.of(&bws_mbps), ..runs[0].clone() },
                tails_us,
                bws_mbps,
            }
        })
        .collect()
}

/// One simulated run under `spec`: the p99.9 completion latency of report entry `rt`
/// (in its main direction) and the total bandwidth of all jobs.
pub fn measure_policy(
    jobs: &JobFile,
    profile: &DeviceProfile,
    seed: u64,
    spec: &str,
    rt: usize,
    drive_states: Option<&DriveStates>,
) -> Result<Row, String> {
    let policy = nvsched_policy::build(spec).map_err(|e| e.to_string())?;
    let (report, _) = run_sim_whole(RunSpec { jobs, policy, profile, seed, drive_states })?;
    Ok(Row { policy: spec.to_string(), ..row_of(&report, rt)? })
}

/// A run's row (its policy left empty): the p99.9 completion latency of report entry
/// `rt`, in the direction it moved most requests, and the total bandwidth of all jobs.
fn row_of(report: &nvsched_report::RunReport, rt: usize) -> Result<Row, String> {
    let rt_job = report.jobs.get(rt).ok_or("missing the latency-critical job's results")?;
    let dir = if rt_job.dirs[1].total_ios > rt_job.dirs[0].total_ios { 1 } else { 0 };
    let secs = |j: &nvsched_report::JobStats| j.runtime.as_secs_f64().max(1e-9);
    let bw: f64 = report.jobs.iter().map(|j| (j.dirs[0].io_bytes + j.dirs[1].io_bytes) as f64 / secs(j)).sum();
    Ok(Row {
        policy: String::new(),
        bound: None,
        rt_p999_us: rt_job.dirs[dir].clat_hist.percentile(99.9) as f64 / 1e3,
        total_bw_mbps: bw / 1e6,
    })
}

/// Appends "(Means of N seeds.)" to `why` when the configurations ran more than once,
/// and, where the chosen configuration met the objective's limit on its mean but not on
/// every seed, on how many it missed: the choice is then closer than the means say; and
/// where `rule` (the choice on one figure per configuration) picks otherwise on some
/// seed's runs alone, what it picks seed by seed ([`seed_by_seed`]).
fn with_runs(
    merged: &[Merged],
    chosen: Option<&str>,
    objective: Objective,
    center: Center,
    why: String,
    rule: &dyn Fn(&[Row]) -> Option<String>,
) -> String {
    let runs = merged.iter().map(Merged::runs).max().unwrap_or(1);
    if runs < 2 {
        return why;
    }
    let none = merged.iter().find(|m| m.row.policy == REFERENCE);
    let pick = merged.iter().find(|m| Some(m.row.policy.as_str()) == chosen);
    let misses = none.zip(pick).and_then(|(none, pick)| {
        let (what, limit, worst) = match objective.limits(&none.row) {
            (Some(limit), _) => {
                let over: Vec<f64> = pick.tails_us.iter().copied().filter(|p| *p > limit).collect();
                let worst = format!("up to {:.0} us", over.iter().fold(0.0, |a: f64, b| a.max(*b)));
                (over.len(), format!("p99.9 is over the {limit:.0} us limit"), worst)
            }
            (_, Some(floor)) => {
                let under: Vec<f64> = pick.bws_mbps.iter().copied().filter(|bw| *bw < floor).collect();
                let worst = format!("down to {:.0} MB/s", under.iter().fold(f64::INFINITY, |a, b| a.min(*b)));
                (under.len(), format!("bandwidth is under the {floor:.0} MB/s floor"), worst)
            }
            (None, None) => return None,
        };
        (what > 0).then(|| format!(" Its {limit} on {what} of {} seeds ({worst}).", pick.runs()))
    });
    let by_seed = seed_by_seed(merged, chosen, rule).unwrap_or_default();
    format!("{why} ({} of {runs} seeds.){}{by_seed}", center.plural(), misses.unwrap_or_default())
}

/// Where the rule, applied to each seed's runs alone, would choose otherwise than on the
/// centers: " Seed by seed it chooses k2:bound=8 on 2 of 3 seeds, k2:bound=4 on 1." (a
/// choice that rests on one seed's luck shows here). Nothing when every seed agrees with
/// `chosen`, or when the configurations ran different numbers of times.
fn seed_by_seed(merged: &[Merged], chosen: Option<&str>, rule: &dyn Fn(&[Row]) -> Option<String>) -> Option<String> {
    let runs = merged.first()?.runs();
    if runs < 2 || merged.iter().any(|m| m.runs() != runs) {
        return None;
    }
    let mut counts: Vec<(Option<String>, usize)> = Vec::new();
    for seed in 0..runs {
        let rows: Vec<Row> = merged
            .iter()
            .map(|m| Row { rt_p999_us: m.tails_us[seed], total_bw_mbps: m.bws_mbps[seed], ..m.row.clone() })
            .collect();
        let choice = rule(&rows);
        match counts.iter_mut().find(|(c, _)| *c == choice) {
            Some((_, n)) => *n += 1,
            None => counts.push((choice, 1)),
        }
    }
    if counts.len() == 1 && counts[0].0.as_deref() == chosen {
        return None;
    }
    counts.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let parts: Vec<String> = counts
        .iter()
        .enumerate()
        .map(|(i, (choice, n))| {
            let what = choice.as_deref().unwrap_or("nothing");
            if i == 0 {
                format!("{what} on {n} of {runs} seeds")
            } else {
                format!("{what} on {n}")
            }
        })
        .collect();
    Some(format!(" Seed by seed it chooses {}.", parts.join(", ")))
}

/// The K2 analysis' guideline on the bounds' centers over their runs (seeds), and a
/// sentence explaining the choice.
pub fn choose(rows: &[Row], objective: Objective, center: Center) -> (Option<u32>, String) {
    let merged = merge(rows, center);
    let (chosen, why) = choose_on_means(&merged.iter().map(|m| m.row.clone()).collect::<Vec<_>>(), objective);
    let spec = merged.iter().find(|m| chosen.is_some() && m.row.bound == chosen).map(|m| m.row.policy.as_str());
    let rule = |rows: &[Row]| {
        let bound = choose_on_means(rows, objective).0;
        rows.iter().find(|r| bound.is_some() && r.bound == bound).map(|r| r.policy.clone())
    };
    (chosen, with_runs(&merged, spec, objective, center, why, &rule))
}

fn choose_on_means(rows: &[Row], objective: Objective) -> (Option<u32>, String) {
    let Some(none) = rows.iter().find(|r| r.policy == REFERENCE) else {
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

/// `tune POLICY --param ...`'s rule on the configurations' means over their runs: O1 the
/// most bandwidth among the settings whose latency-critical p99.9 is within alpha of
/// `none`'s (the lower tail on a tie), O2 the lowest p99.9 among those that keep beta of
/// `none`'s bandwidth (the more bandwidth on a tie). Returns the chosen spec and a
/// sentence explaining it, which calls the candidates `noun` (singular, plural:
/// [`SETTINGS`], [`POLICIES`]).
pub fn choose_setting(
    rows: &[Row],
    objective: Objective,
    noun: (&str, &str),
    center: Center,
) -> (Option<String>, String) {
    let merged = merge(rows, center);
    let centers: Vec<Row> = merged.iter().map(|m| m.row.clone()).collect();
    let (chosen, why) = setting_on_centers(&centers, objective, noun);
    let references = centers.iter().filter(|r| r.policy == REFERENCE).count();
    if references == 0 || references == centers.len() {
        return (chosen, why); // no reference, or nothing beside it: no choice to qualify
    }
    let rule = |rows: &[Row]| setting_on_centers(rows, objective, noun).0;
    let explained = with_runs(&merged, chosen.as_deref(), objective, center, why, &rule);
    (chosen, explained)
}

/// [`choose_setting`]'s rule on one figure per configuration.
fn setting_on_centers(rows: &[Row], objective: Objective, noun: (&str, &str)) -> (Option<String>, String) {
    let (one, many) = noun;
    let means: Vec<&Row> = rows.iter().collect();
    let Some(none) = means.iter().find(|r| r.policy == REFERENCE) else {
        return (None, "no `none` reference run".into());
    };
    let settings: Vec<&Row> = means.iter().copied().filter(|r| r.policy != REFERENCE).collect();
    let n = settings.len();
    if n == 0 {
        return (None, format!("Nothing to choose: no {one} ran besides none, the reference."));
    }
    // "among the 2 of 5 settings whose ...", "the only one of the 5 settings whose ..."
    let among = |k: usize| match (k, n) {
        (1, 1) => format!("the one {one}"),
        (1, _) => format!("the only one of the {n} {many}"),
        _ => format!("the {k} of {n} {many}"),
    };
    let why = match objective {
        Objective::Latency(a) => {
            let limit = a * none.rt_p999_us;
            let fits: Vec<&Row> = settings.iter().copied().filter(|r| r.rt_p999_us <= limit).collect();
            let best = fits
                .iter()
                .copied()
                .max_by(|x, y| x.total_bw_mbps.total_cmp(&y.total_bw_mbps).then(y.rt_p999_us.total_cmp(&x.rt_p999_us)));
            match best {
                Some(r) => (Some(r.policy.clone()), format!(
                    "O1: {} gives the most bandwidth, {:.0} MB/s ({:.0}% of none's), of {} whose p99.9 stays within {:.0}% of none's (limit {limit:.0} us; none: {:.0} us); its p99.9 is {:.0} us.",
                    r.policy, r.total_bw_mbps, 100.0 * r.total_bw_mbps / none.total_bw_mbps, among(fits.len()), a * 100.0, none.rt_p999_us, r.rt_p999_us
                )),
                None => {
                    let closest = settings.iter().min_by(|x, y| x.rt_p999_us.total_cmp(&y.rt_p999_us));
                    (None, format!(
                        "O1: no {one} keeps the p99.9 within {:.0}% of none's ({:.0} us, limit {limit:.0} us){}.",
                        a * 100.0,
                        none.rt_p999_us,
                        closest.map_or(String::new(), |r| format!("; the lowest is {:.0} us, under {}", r.rt_p999_us, r.policy))
                    ))
                }
            }
        }
        Objective::Bandwidth(b) => {
            let floor = b * none.total_bw_mbps;
            let fits: Vec<&Row> = settings.iter().copied().filter(|r| r.total_bw_mbps >= floor).collect();
            let best = fits
                .iter()
                .copied()
                .min_by(|x, y| x.rt_p999_us.total_cmp(&y.rt_p999_us).then(y.total_bw_mbps.total_cmp(&x.total_bw_mbps)));
            match best {
                Some(r) => (Some(r.policy.clone()), format!(
                    "O2: {} gives the lowest p99.9, {:.0} us (none: {:.0} us), of {} that keep at least {:.0}% of none's bandwidth (floor {floor:.0} MB/s; none: {:.0} MB/s); it keeps {:.0} MB/s.",
                    r.policy, r.rt_p999_us, none.rt_p999_us, among(fits.len()), b * 100.0, none.total_bw_mbps, r.total_bw_mbps
                )),
                None => {
                    let most = settings.iter().max_by(|x, y| x.total_bw_mbps.total_cmp(&y.total_bw_mbps));
                    (None, format!(
                        "O2: no {one} keeps {:.0}% of none's bandwidth ({:.0} MB/s, floor {floor:.0} MB/s){}.",
                        b * 100.0,
                        none.total_bw_mbps,
                        most.map_or(String::new(), |r| format!("; the most is {:.0} MB/s, under {}", r.total_bw_mbps, r.policy))
                    ))
                }
            }
        }
    };
    why
}

/// The sweep as a table: one line per configuration, with the centers of its runs and,
/// over several seeds, the range of the latency-critical job's p99.9 (`job`'s, else the
/// real-time job's); `chosen` (a policy spec) is marked.
pub fn table(rows: &[Row], chosen: Option<&str>, job: Option<&str>, center: Center) -> String {
    let merged = merge(rows, center);
    let spread = merged.iter().any(|m| m.runs() > 1);
    let width = merged.iter().map(|m| m.row.policy.len() + 1).max().unwrap_or(0).max(14);
    let tail = format!("{} p99.9 (us)", job.unwrap_or("RT"));
    let mut s = format!("{:<width$} {:>16} {:>18}", "policy", tail, "total BW (MB/s)");
    if spread {
        s.push_str(&format!(" {:>18}", "p99.9 min-max (us)"));
    }
    s.push('\n');
    for m in &merged {
        let r = &m.row;
        s.push_str(&format!("{:<width$} {:>16.0} {:>18.1}", r.policy, r.rt_p999_us, r.total_bw_mbps));
        if spread {
            let (lo, hi) = m.p999_range_us();
            s.push_str(&format!(" {:>18}", format!("{lo:.0}-{hi:.0}")));
        }
        if r.policy != REFERENCE && Some(r.policy.as_str()) == chosen {
            s.push_str("  <- chosen");
        }
        s.push('\n');
    }
    s
}

/// What a sweep was about, for its JSON and figure.
pub struct Setup<'a> {
    pub policy: &'a str,
    pub objective: Objective,
    /// The latency-critical job's name.
    pub job: &'a str,
    pub device: &'a str,
    pub seeds: &'a [u64],
    pub center: Center,
}

/// The sweep as JSON: each configuration's centers over its runs (`none` first), the
/// objective's limit, the choice and the sentence explaining it.
pub fn to_json(rows: &[Row], setup: &Setup<'_>, chosen: Option<&str>, why: &str) -> serde_json::Value {
    let merged = merge(rows, setup.center);
    let none = merged.iter().find(|m| m.row.policy == REFERENCE).map(|m| &m.row);
    let (p999_limit, bw_floor) = none.map_or((None, None), |n| setup.objective.limits(n));
    let settings: Vec<serde_json::Value> = merged
        .iter()
        .map(|m| {
            let (lo, hi) = m.p999_range_us();
            serde_json::json!({
                "policy": m.row.policy, "bound": m.row.bound, "runs": m.runs(),
                "p999_us": m.row.rt_p999_us, "p999_min_us": lo, "p999_max_us": hi,
                "total_bw_mbps": m.row.total_bw_mbps,
            })
        })
        .collect();
    serde_json::json!({ "nvsched_tune": {
        "policy": setup.policy, "objective": setup.objective.name(), "job": setup.job,
        "device": setup.device, "seeds": setup.seeds, "center": setup.center.name(),
        "p999_limit_us": p999_limit, "bw_floor_mbps": bw_floor,
        "settings": settings, "chosen": chosen, "why": why,
    }})
}

/// The sweep as a figure: each setting's p99.9 against total bandwidth, `none` and the
/// choice as series of their own, the objective's limit as a dashed line.
pub fn figure(rows: &[Row], setup: &Setup<'_>, chosen: Option<&str>) -> Figure {
    let merged = merge(rows, setup.center);
    let point = |r: &Row| {
        let label = r.policy.split_once(':').map_or(r.policy.as_str(), |(_, params)| params).to_string();
        (r.total_bw_mbps, r.rt_p999_us, label)
    };
    let pick = |keep: &dyn Fn(&Row) -> bool| -> Vec<LabelledPoint> {
        merged.iter().map(|m| &m.row).filter(|r| keep(r)).map(point).collect()
    };
    let is_chosen = |r: &Row| Some(r.policy.as_str()) == chosen;
    let mut series = vec![
        ("none".to_string(), pick(&|r| r.policy == REFERENCE)),
        ("settings".to_string(), pick(&|r| r.policy != REFERENCE && !is_chosen(r))),
    ];
    if chosen.is_some() {
        series.push(("chosen".to_string(), pick(&is_chosen)));
    }
    let limit = merged.iter().find(|m| m.row.policy == REFERENCE).map(|m| setup.objective.limit_line(&m.row));
    let tails = merged.iter().map(|m| m.row.rt_p999_us).filter(|t| *t > 0.0);
    let log_y = tails.clone().fold(0.0, f64::max) > 30.0 * tails.fold(f64::INFINITY, f64::min);
    Figure {
        title: format!("tune {}: {}'s p99.9 and total bandwidth", setup.policy, setup.job),
        rows: 1,
        cols: 1,
        panels: vec![Panel {
            title: setup.objective.name(),
            x_label: "total bandwidth (MB/s)".into(),
            y_label: format!("{} p99.9 (us)", setup.job),
            log_x: false,
            log_y,
            kind: PanelKind::Points { series, limit },
        }],
    }
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
        let (b, why) = choose(&rows, Objective::Latency(0.5), Center::Mean);
        assert_eq!(b, Some(8));
        assert!(why.starts_with("O1: bound 8 is the largest"), "{why}");
        let (b, why) = choose(&rows, Objective::Bandwidth(0.9), Center::Mean);
        assert_eq!(b, Some(32));
        assert!(why.contains("smallest"), "{why}");
        assert_eq!(choose(&rows, Objective::Latency(0.1), Center::Mean).0, None);
    }

    #[test]
    fn several_seeds_are_averaged_per_bound() {
        // bound 8 meets the 500 us limit on one seed only; its mean (520 us) does not
        let rows = vec![
            k2_row(None, 1000.0, 600.0),
            k2_row(None, 1000.0, 600.0),
            k2_row(Some(4), 300.0, 200.0),
            k2_row(Some(4), 340.0, 220.0),
            k2_row(Some(8), 440.0, 400.0),
            k2_row(Some(8), 600.0, 380.0),
        ];
        let (b, why) = choose(&rows, Objective::Latency(0.5), Center::Mean);
        assert_eq!(b, Some(4), "{why}");
        assert!(
            why.contains("(320 us)")
                && why.ends_with(
                    "(Means of 2 seeds.) Seed by seed it chooses k2:bound=8 on 1 of 2 seeds, k2:bound=4 on 1."
                ),
            "the first seed alone would choose bound 8: {why}"
        );
        // where every seed alone chooses what the means choose, the sentence says nothing more
        let mut agreeing = rows.clone();
        agreeing[4].rt_p999_us = 560.0;
        let (b, why) = choose(&agreeing, Objective::Latency(0.5), Center::Mean);
        assert!(b == Some(4) && why.ends_with("(Means of 2 seeds.)"), "{why}");
        // bound 8 meets the 500 us limit on its mean (490 us), not on the second seed
        let mut close = rows.clone();
        close[5].rt_p999_us = 540.0;
        let (b, why) = choose(&close, Objective::Latency(0.5), Center::Mean);
        assert_eq!(b, Some(8), "{why}");
        assert!(
            why.ends_with(
                "(Means of 2 seeds.) Its p99.9 is over the 500 us limit on 1 of 2 seeds (up to 540 us). \
                 Seed by seed it chooses k2:bound=8 on 1 of 2 seeds, k2:bound=4 on 1."
            ),
            "{why}"
        );
        let (chosen, why) = choose_setting(&close[..2], Objective::Bandwidth(0.65), POLICIES, Center::Mean);
        assert_eq!((chosen, why.as_str()), (None, "Nothing to choose: no policy ran besides none, the reference."));
        let (_, why) = choose_setting(&close, Objective::Bandwidth(0.65), SETTINGS, Center::Mean);
        assert!(
            why.contains("k2:bound=8")
                && why.ends_with(
                    "under the 390 MB/s floor on 1 of 2 seeds (down to 380 MB/s). \
                     Seed by seed it chooses k2:bound=8 on 1 of 2 seeds, nothing on 1."
                ),
            "{why}"
        );
        assert_eq!(choose(&rows[4..5], Objective::Latency(0.5), Center::Mean).0, None, "no none run");
        let t = table(&rows, Some("k2:bound=4"), None, Center::Mean);
        assert_eq!(t.lines().count(), 4, "one line per configuration:\n{t}");
        assert!(t.contains("p99.9 min-max (us)") && t.contains("440-600"), "{t}");
        assert!(t.lines().nth(2).unwrap().contains("210.0") && t.contains("<- chosen"), "{t}");
        // one seed: the table as before
        assert!(!table(&rows[..1], None, None, Center::Mean).contains("min-max"));
    }

    #[test]
    fn medians_choose_past_one_outlier_run() {
        // bound 8's third run has a 2 ms tail: its mean (940 us) misses the 500 us limit,
        // its median (420 us) does not
        let mut rows = vec![];
        for (p4, p8) in [(300.0, 400.0), (310.0, 420.0), (320.0, 2000.0)] {
            rows.extend([k2_row(None, 1000.0, 600.0), k2_row(Some(4), p4, 200.0), k2_row(Some(8), p8, 400.0)]);
        }
        assert_eq!(choose(&rows, Objective::Latency(0.5), Center::Mean).0, Some(4));
        let (b, why) = choose(&rows, Objective::Latency(0.5), Center::Median);
        assert_eq!(b, Some(8), "{why}");
        assert!(why.contains("(420 us)") && why.contains("(Medians of 3 seeds.) Its p99.9 is over"), "{why}");
        assert!(why.ends_with("Seed by seed it chooses k2:bound=8 on 2 of 3 seeds, k2:bound=4 on 1."), "{why}");
        let (spec, _) = choose_setting(&rows, Objective::Latency(0.5), SETTINGS, Center::Median);
        assert_eq!(spec.as_deref(), Some("k2:bound=8"));
    }

    /// A run of `none` (no bound) or of K2 at `bound`: its p99.9 and bandwidth.
    fn k2_row(bound: Option<u32>, p: f64, bw: f64) -> Row {
        Row {
            policy: bound.map_or("none".into(), |b| format!("k2:bound={b}")),
            bound,
            rt_p999_us: p,
            total_bw_mbps: bw,
        }
    }

    fn setting(policy: &str, p: f64, bw: f64) -> Row {
        Row { policy: policy.into(), bound: None, rt_p999_us: p, total_bw_mbps: bw }
    }

    #[test]
    fn a_grid_is_every_combination_first_parameter_slowest() {
        let specs = grid("kyber", &["read_lat=1ms, 2ms,1ms".into(), "write_lat=5ms,10ms".into()]).unwrap();
        assert_eq!(
            specs,
            [
                "kyber:read_lat=1ms,write_lat=5ms",
                "kyber:read_lat=1ms,write_lat=10ms",
                "kyber:read_lat=2ms,write_lat=5ms",
                "kyber:read_lat=2ms,write_lat=10ms"
            ],
            "a repeated value runs once"
        );
        // fixed parameters stay; a parameter the policy requires may come from --param
        assert_eq!(grid("k2:merge=0", &["bound=2".into()]).unwrap(), ["k2:merge=0,bound=2"]);
        assert_eq!(grid("iolatency", &["target=1ms".into()]).unwrap(), ["iolatency:target=1ms"]);
        for (params, expected) in [
            (vec!["read_lat"], "expected NAME=V1,V2,..."),
            (vec!["=1ms"], "expected NAME=V1,V2,..."),
            (vec!["read_lat=1ms,"], "an empty value"),
            (vec!["read_lat=1ms", "read_lat=2ms"], "given twice"),
            (vec!["nope=1"], "has no parameter 'nope'"),
        ] {
            let params: Vec<String> = params.into_iter().map(String::from).collect();
            let err = grid("kyber", &params).unwrap_err();
            assert!(err.contains(expected), "{params:?}: {err}");
        }
        let many: Vec<String> = ["bound", "budget"]
            .iter()
            .map(|p| format!("{p}={}", (1..=17).map(|v| v.to_string()).collect::<Vec<_>>().join(",")))
            .collect();
        assert!(grid("k2", &many).unwrap_err().contains("over 256 settings"));
        assert!(grid("nope", &[]).unwrap_err().contains("unknown policy 'nope'"));
    }

    /// `LO..HI` doubles from LO and ends at HI; `LO..HI/N` gives N even steps; values are
    /// written as the parameter takes them, and ranges mix with listed values.
    #[test]
    fn a_range_of_values_doubles_or_takes_even_steps() {
        let bounds = |v: &str| grid("k2", &[format!("bound={v}")]).unwrap().join(" ");
        assert_eq!(bounds("1..64"), "k2:bound=1 k2:bound=2 k2:bound=4 k2:bound=8 k2:bound=16 k2:bound=32 k2:bound=64");
        assert_eq!(bounds("4..10"), "k2:bound=4 k2:bound=8 k2:bound=10", "HI ends the doubling");
        assert_eq!(bounds("1..7/4"), "k2:bound=1 k2:bound=3 k2:bound=5 k2:bound=7");
        assert_eq!(bounds("1,2..4,3"), "k2:bound=1 k2:bound=2 k2:bound=4 k2:bound=3", "listed values beside");
        let lat = grid("kyber", &["read_lat=250us..2ms".into()]).unwrap();
        assert_eq!(lat, ["kyber:read_lat=250us", "kyber:read_lat=500us", "kyber:read_lat=1ms", "kyber:read_lat=2ms"]);
        let lat = grid("kyber", &["read_lat=100us..1ms/4".into()]).unwrap();
        assert_eq!(lat[1], "kyber:read_lat=400us");
        assert_eq!(exact_duration(1_500), "1500ns");
        assert_eq!(exact_duration(1_500_000), "1500us");
        // a rate goes back to a rate the parser reads as the same number
        let rates = grid("iocost", &["rbps=1GB/s..3GB/s/3".into()]).unwrap();
        assert_eq!(rates, ["iocost:rbps=1GB/s", "iocost:rbps=2GB/s", "iocost:rbps=3GB/s"]);
        // a parameter every policy takes
        assert_eq!(grid("none", &["dispatch_cost=1us..2us".into()]).unwrap().len(), 2);
        for (param, expected) in [
            ("read_lat=2ms..1ms", "a range goes from low to high"),
            ("read_lat=0..1ms", "doubling needs a low end above 0"),
            ("read_lat=1ms..2ms/1", "from 2 to 64 values"),
            ("read_lat=1ms..2ms/x", "expected a count of values"),
            ("read_lat=1ms..soon", "'soon' is not a duration"),
            ("nope=1..2", "has no parameter 'nope' to take a range of"),
        ] {
            let err = grid("kyber", &[param.to_string()]).unwrap_err();
            assert!(err.contains(expected) && err.starts_with("--param "), "{param}: {err}");
        }
        assert!(grid("k2", &["merge=0..1".into()]).unwrap_err().contains("merge takes 0 or 1, not a range"));
        let err = grid("iocost", &["rpct=1e-30..90".into()]).unwrap_err();
        assert!(err.contains("over 64 values"), "{err}");
    }

    #[test]
    fn a_setting_is_chosen_on_its_measurements_not_its_value() {
        // the largest value within the limit is not the choice where a smaller one gives
        // more bandwidth (the tail need not grow with the value, as K2's bound's does)
        let by_value =
            vec![setting("none", 1000.0, 600.0), setting("p:x=1", 300.0, 550.0), setting("p:x=2", 400.0, 300.0)];
        assert_eq!(
            choose_setting(&by_value, Objective::Latency(0.5), SETTINGS, Center::Mean).0.as_deref(),
            Some("p:x=1")
        );
        let rows = vec![
            setting("none", 1000.0, 600.0),
            setting("p:x=3", 450.0, 500.0),
            setting("p:x=1", 300.0, 200.0),
            setting("p:x=2", 700.0, 590.0),
            setting("p:x=4", 480.0, 550.0),
        ];
        let (chosen, why) = choose_setting(&rows, Objective::Latency(0.5), SETTINGS, Center::Mean);
        assert_eq!(chosen.as_deref(), Some("p:x=4"), "{why}");
        assert!(
            why.starts_with("O1: p:x=4 gives the most bandwidth, 550 MB/s (92% of none's), of the 3 of 4 settings"),
            "{why}"
        );
        let (chosen, why) = choose_setting(&rows, Objective::Bandwidth(0.8), SETTINGS, Center::Mean);
        assert_eq!(chosen.as_deref(), Some("p:x=3"), "{why}");
        assert!(
            why.contains("lowest p99.9, 450 us (none: 1000 us), of the 3 of 4 settings")
                && why.contains("keeps 500 MB/s"),
            "{why}"
        );
        // one fits
        let (chosen, why) = choose_setting(&rows, Objective::Bandwidth(0.95), SETTINGS, Center::Mean);
        assert_eq!(chosen.as_deref(), Some("p:x=2"));
        assert!(why.contains("the only one of the 4 settings"), "{why}");
        // none fits: say which comes closest
        let (chosen, why) = choose_setting(&rows, Objective::Latency(0.2), SETTINGS, Center::Mean);
        assert_eq!(chosen, None);
        assert!(
            why.contains("no setting keeps the p99.9 within 20%") && why.contains("the lowest is 300 us, under p:x=1"),
            "{why}"
        );
        let (chosen, why) = choose_setting(&rows, Objective::Bandwidth(1.0), SETTINGS, Center::Mean);
        assert_eq!(chosen, None);
        assert!(why.contains("the most is 590 MB/s, under p:x=2"), "{why}");
        // a tie on bandwidth goes to the lower tail, on the tail to the more bandwidth
        let tie = vec![setting("none", 1000.0, 600.0), setting("p:x=1", 400.0, 500.0), setting("p:x=2", 300.0, 500.0)];
        assert_eq!(choose_setting(&tie, Objective::Latency(0.5), SETTINGS, Center::Mean).0.as_deref(), Some("p:x=2"));
        let tie = vec![setting("none", 1000.0, 600.0), setting("p:x=1", 300.0, 400.0), setting("p:x=2", 300.0, 500.0)];
        assert_eq!(choose_setting(&tie, Objective::Bandwidth(0.5), SETTINGS, Center::Mean).0.as_deref(), Some("p:x=2"));
        assert_eq!(choose_setting(&rows[1..], Objective::Latency(0.5), SETTINGS, Center::Mean).0, None, "no none run");
        let (_, why) = choose_setting(&rows, Objective::Latency(0.5), POLICIES, Center::Mean);
        assert!(why.contains("of the 3 of 4 policies whose"), "{why}");
        assert!(choose_setting(&rows, Objective::Latency(0.2), POLICIES, Center::Mean).1.contains("no policy keeps"));
        // the table marks the chosen spec and fits the longest name; a named job heads the tail
        let t = table(&rows, Some("p:x=4"), Some("db"), Center::Mean);
        assert!(t.lines().next().unwrap().contains(" db p99.9 (us) "), "{t}");
        assert_eq!(t.lines().filter(|l| l.ends_with("<- chosen")).count(), 1, "{t}");
        assert!(t.lines().find(|l| l.ends_with("<- chosen")).unwrap().starts_with("p:x=4 "), "{t}");
        let long = vec![setting("none", 1.0, 1.0), setting("k2-adaptive:target_p999=300us", 1.0, 1.0)];
        assert!(table(&long, None, None, Center::Mean)
            .lines()
            .all(|l| l.len() == table(&long, None, None, Center::Mean).lines().next().unwrap().len()));
    }

    #[test]
    fn json_and_figure_show_the_limit_and_the_choice() {
        let rows = vec![
            setting("none", 1000.0, 600.0),
            setting("none", 1200.0, 620.0),
            Row { bound: Some(4), ..setting("k2:bound=4", 300.0, 350.0) },
            Row { bound: Some(4), ..setting("k2:bound=4", 500.0, 370.0) },
        ];
        let setup = Setup {
            policy: "k2",
            objective: Objective::Bandwidth(0.5),
            job: "rt",
            device: "d",
            seeds: &[1, 2],
            center: Center::Mean,
        };
        let v = to_json(&rows, &setup, Some("k2:bound=4"), "why");
        let t = &v["nvsched_tune"];
        assert_eq!(t["objective"], "bandwidth:50%");
        assert_eq!(t["center"], "mean");
        for typed in ["latency:29%", "bandwidth:57%", "latency:12.5%"] {
            assert_eq!(Objective::parse(typed).unwrap().name(), typed);
        }
        assert_eq!(t["bw_floor_mbps"], 305.0);
        assert!(t["p999_limit_us"].is_null());
        let s = &t["settings"][1];
        assert_eq!((s["bound"].as_u64(), s["runs"].as_u64()), (Some(4), Some(2)));
        assert_eq!(
            (s["p999_us"].as_f64(), s["p999_min_us"].as_f64(), s["p999_max_us"].as_f64()),
            (Some(400.0), Some(300.0), Some(500.0))
        );
        let f = figure(&rows, &setup, Some("k2:bound=4"));
        assert_eq!(f.panels[0].title, "bandwidth:50%");
        let PanelKind::Points { series, limit } = &f.panels[0].kind else { panic!("a scatter") };
        let floor = Limit { name: "bandwidth floor 305 MB/s".into(), axis: Axis::X, value: 305.0 };
        assert_eq!(limit.as_ref(), Some(&floor), "half of none's mean bandwidth, as a vertical line");
        let names: Vec<(&str, usize)> = series.iter().map(|(n, p)| (n.as_str(), p.len())).collect();
        assert_eq!(names, [("none", 1), ("settings", 0), ("chosen", 1)]);
        assert_eq!(series[2].1[0], (360.0, 400.0, "bound=4".to_string()), "the means, labelled by the parameters");
    }

    #[test]
    fn k2_configs_keep_the_fixed_parameters() {
        assert_eq!(
            k2_configs("k2", &[1, 8]),
            [("k2:bound=1".to_string(), Some(1)), ("k2:bound=8".to_string(), Some(8))]
        );
        assert_eq!(k2_configs("k2:merge=0", &[2]), [("k2:merge=0,bound=2".to_string(), Some(2))]);
    }
}
