//! `nvsched repro NAME`: re-runs a paper's experiment from `experiments/NAME/` and puts
//! nvsched's numbers next to the paper's claims, with tables, JSON, a report and plots.

pub mod analysis;
pub mod manifest;
mod output;

use crate::progress::RunProgress;
use crate::run::{run_sim_whole, RunSpec};
pub use manifest::Manifest;
use manifest::{State, Variant};
use nvsched_ssd::{load_profile, DeviceProfile, DriveStates};
use nvsched_workload::jobfile::Environment;
use nvsched_workload::{parse_job_str, ParseOptions};
use rayon::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How to run a reproduction.
#[derive(Clone, Debug)]
pub struct Options {
    pub quick: bool,
    pub out: PathBuf,
    pub force: bool,
    pub progress: bool,
    /// Write plots (PNG and SVG).
    pub plots: bool,
    /// Another drive than the manifest's (`--device`, `--device-set`).
    pub device: OnDevice,
}

/// The experiment on another drive: `profile` (a shipped name or a TOML file) instead of
/// the manifest's device and its settings, and profile fields set on top
/// ([`Manifest::on_device`]). The default is the manifest's own.
#[derive(Clone, Debug, Default)]
pub struct OnDevice {
    pub profile: Option<String>,
    pub set: Vec<(String, String)>,
}

/// Experiment `name`'s manifest, moved to `device`.
fn load_on(name: &str, device: &OnDevice) -> Result<Manifest, String> {
    let mut m = Manifest::load(&experiments_dir().join(name))?;
    m.on_device(device.profile.as_deref(), &device.set)?;
    Ok(m)
}

/// Bytes of mapping tables one copy of a drive state holds per 4 KiB of the drive's
/// capacity (measured on full drives: 0.5 GB for the 250 GB 970 EVO Plus, 7.9 GB for the
/// 3.84 TB enterprise-nvme).
const STATE_BYTES_PER_4K: u64 = 9;

/// Bytes of mapping tables in one copy of a drive state of a `capacity_bytes` drive.
fn state_copy_bytes(capacity_bytes: u64) -> u64 {
    capacity_bytes / 4096 * STATE_BYTES_PER_4K
}

/// A warning before the runs of experiment `name` (on `device`) when their drive states
/// may not fit in the memory the machine has available: every drive state stays built,
/// and each of the `parallel` runs at a time may hold a copy of one. None when they fit,
/// or where the available memory is unknown.
pub fn memory_warning(name: &str, device: &OnDevice, parallel: usize) -> Result<Option<String>, String> {
    check_known(name)?;
    let m = load_on(name, device)?;
    Ok(drive_memory_warning(name, &m.device, &m.profile()?, m.states.len(), parallel, "-j 1"))
}

/// The same warning for `what` (a sweep, a tuner) running `parallel` simulations at a
/// time on `profile`, which share one drive state; `one_at_a_time` says how to run one
/// at a time.
pub fn runs_memory_warning(
    what: &str,
    profile: &DeviceProfile,
    parallel: usize,
    one_at_a_time: &str,
) -> Option<String> {
    drive_memory_warning(what, &profile.name, profile, 1, parallel, one_at_a_time)
}

/// A warning before one run on `profile` when its drive state (anything but a clean
/// drive) may not fit in the memory available.
pub fn run_memory_warning(profile: &DeviceProfile) -> Option<String> {
    run_memory_message(profile, available_memory_bytes()?)
}

fn run_memory_message(profile: &DeviceProfile, available: u64) -> Option<String> {
    if !matches!(profile.model, nvsched_ssd::ModelConfig::Nand(_)) || profile.precondition() == "clean" {
        return None;
    }
    let need = state_copy_bytes(profile.capacity_bytes);
    let gb = |bytes: u64| bytes as f64 / 1e9;
    (need > available).then(|| {
        format!(
            "{}'s {} state holds about {:.1} GB of mapping tables, more than the {:.1} GB of memory available",
            profile.name,
            profile.precondition(),
            gb(need),
            gb(available)
        )
    })
}

/// [`memory_message`] for `states` drive states of `profile` (named `name`) against the
/// memory available; None for the simple model, which has no mapping tables, or where
/// the available memory is unknown.
fn drive_memory_warning(
    what: &str,
    name: &str,
    profile: &DeviceProfile,
    states: usize,
    parallel: usize,
    one_at_a_time: &str,
) -> Option<String> {
    if !matches!(profile.model, nvsched_ssd::ModelConfig::Nand(_)) {
        return None;
    }
    let drive = Drive { name, capacity_bytes: profile.capacity_bytes, states };
    memory_message(what, &drive, parallel, available_memory_bytes()?, one_at_a_time)
}

/// A drive as [`memory_message`] weighs it: its profile's name, capacity and how many
/// drive states the experiment builds on it.
struct Drive<'a> {
    name: &'a str,
    capacity_bytes: u64,
    states: usize,
}

fn memory_message(
    experiment: &str,
    drive: &Drive<'_>,
    parallel: usize,
    available: u64,
    one_at_a_time: &str,
) -> Option<String> {
    let per_copy = state_copy_bytes(drive.capacity_bytes);
    let need = |parallel: usize| per_copy * (drive.states + parallel) as u64;
    if need(parallel) <= available {
        return None;
    }
    let gb = |bytes: u64| bytes as f64 / 1e9;
    let one = if need(1) <= available {
        format!("{one_at_a_time} needs about {:.1} GB", gb(need(1)))
    } else {
        format!("even {one_at_a_time} needs about {:.1} GB", gb(need(1)))
    };
    Some(format!(
        "{experiment} on {}: its runs may need about {:.1} GB of memory ({} drive state(s) of a {:.1} GB drive, \
         {:.1} GB of mapping tables each, and a copy for each of {parallel} runs at a time), more than the {:.1} GB \
         available; {one}",
        drive.name,
        gb(need(parallel)),
        drive.states,
        gb(drive.capacity_bytes),
        gb(per_copy),
        gb(available)
    ))
}

/// `MemAvailable` of /proc/meminfo, in bytes.
fn available_memory_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// What identifies a profile in cache keys: a shipped profile's name, a file's text
/// (however its path is spelled; an edited profile is simulated anew).
fn device_identity(device: &str) -> String {
    match std::fs::read_to_string(device) {
        Ok(text) if !nvsched_ssd::is_builtin_profile(device) => format!("file\n{text}"),
        _ => device.to_string(),
    }
}

/// One simulation of the experiment's matrix.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RunKey {
    pub variant: String,
    pub state: String,
    pub policy: String,
    pub rep: u32,
}

/// Its results (from the simulator or the cache).
#[derive(Clone, Debug)]
pub struct RunResult {
    pub key: RunKey,
    pub seed: u64,
    pub metrics: BTreeMap<String, f64>,
    pub extra: Value,
    pub fio: Value,
    pub cached: bool,
}

/// A finished reproduction: per-cell means and the claims' verdicts.
pub struct Outcome {
    pub manifest: Manifest,
    pub quick: bool,
    pub runs: Vec<RunResult>,
    /// `variant/state/policy/metric` -> mean over repetitions (and derived cells).
    pub cells: BTreeMap<String, f64>,
    pub verdicts: Vec<Verdict>,
}

#[derive(Clone, Debug)]
pub struct Verdict {
    pub id: String,
    pub text: String,
    pub nvsched: Option<f64>,
    pub paper: Option<f64>,
    pub holds: Option<bool>,
    pub detail: String,
    /// With several repetitions: in how many of them, judged alone, the claim holds, and
    /// how many could be judged. The verdict itself is on the means.
    pub repetitions_holding: Option<(usize, usize)>,
}

/// `experiments/`: `NVSCHED_EXPERIMENTS`, else in the working directory, else beside the
/// binary's sources.
pub fn experiments_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("NVSCHED_EXPERIMENTS") {
        return PathBuf::from(dir);
    }
    crate::project_path("experiments")
}

pub fn list() -> Result<Vec<String>, String> {
    let dir = experiments_dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("manifest.toml").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// Fails with the list of known experiments unless `name` is one.
pub fn check_known(name: &str) -> Result<(), String> {
    let known = list()?;
    if known.iter().any(|k| k == name) {
        Ok(())
    } else {
        Err(format!("unknown experiment '{name}'; known: {}", known.join(", ")))
    }
}

/// The reproductions `name` stands for (`all`: every one) with the results directory of
/// each, as `nvsched repro` lays them out: `out` itself for one reproduction, `out/NAME`
/// for each of `all`, `results/NAME` without `out`.
pub fn targets(name: &str, out: Option<&Path>) -> Result<Vec<(String, PathBuf)>, String> {
    let all = name == "all";
    let names = if all {
        list()?
    } else {
        check_known(name).map_err(|e| format!("{e}, all"))?;
        vec![name.to_string()]
    };
    Ok(names
        .into_iter()
        .map(|n| {
            let dir = match out {
                Some(dir) if all => dir.join(&n),
                Some(dir) => dir.to_path_buf(),
                None => Path::new("results").join(&n),
            };
            (n, dir)
        })
        .collect())
}

struct VarEnv(BTreeMap<String, String>);

impl Environment for VarEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }
    fn keyword(&self, name: &str) -> Option<u64> {
        (name == "pagesize").then_some(4096)
    }
}

/// FNV-1a: a stable 64-bit hash for cache keys (the std hasher may change between
/// Rust releases).
fn fnv64(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Identifies the build that simulates, so results cached by another build (whose model
/// or analysis may differ) are not reused: the version plus the executable's size and
/// modification time.
fn build_fingerprint() -> &'static str {
    FINGERPRINT.get_or_init(|| {
        let exe = std::env::current_exe().and_then(std::fs::metadata);
        let stamp = exe
            .ok()
            .and_then(|m| {
                let t = m.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
                Some(format!("{}:{}", m.len(), t.as_nanos()))
            })
            .unwrap_or_default();
        format!("{} {stamp}", crate::VERSION)
    })
}

static FINGERPRINT: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Names the build for cache keys where the executable does not (the Python extension,
/// whose executable is the interpreter). Call before anything is planned; returns false
/// if the fingerprint was already fixed.
pub fn set_build_fingerprint(build: &str) -> bool {
    FINGERPRINT.set(format!("{} {build}", crate::VERSION)).is_ok()
}

struct Planned {
    key: RunKey,
    seed: u64,
    job_text: String,
    overrides: Vec<(String, String)>,
    hash: String,
}

/// One cell of an experiment, ready to simulate: the job text with the manifest's
/// variables expanded and the device overrides (the manifest's plus the drive state).
pub struct CellSetup {
    pub job_path: PathBuf,
    pub job_text: String,
    pub overrides: Vec<(String, String)>,
    /// The seeds of the reproduction's repetitions in this mode (`tune --experiment` runs
    /// the same, so its table matches the reproduction's).
    pub seeds: Vec<u64>,
}

/// The seed of repetition `rep` (0-based): 1, 2, ...
fn rep_seed(rep: u32) -> u64 {
    u64::from(rep) + 1
}

fn cell_setup(m: &Manifest, v: &Variant, s: &State, quick: bool, job_template: &str) -> CellSetup {
    let mode = if quick { &m.quick } else { &m.full };
    let mut vars = mode.vars.clone();
    vars.extend(v.vars.clone());
    vars.extend(s.vars.clone());
    let runtime = if quick { &s.quick_runtime } else { v.full_runtime.get(&s.name).unwrap_or(&s.runtime) };
    vars.insert("RUNTIME".into(), runtime.clone());
    // expand variables now so the cache key sees the real job text
    let job_text = expand_vars(job_template, &VarEnv(vars));
    let mut overrides = m.overrides();
    overrides.push(("nand.precondition".into(), s.precondition.clone()));
    CellSetup { job_path: m.job_path_of(v), job_text, overrides, seeds: (0..mode.repetitions).map(rep_seed).collect() }
}

/// The setup of `variant` in `state` (default: the first state) of experiment `name`, as
/// `repro` would run it (`quick`: the quick mode's runtime and variables), on `device`.
pub fn cell(
    name: &str,
    variant: &str,
    state: Option<&str>,
    quick: bool,
    device: &OnDevice,
) -> Result<(Manifest, CellSetup), String> {
    let m = load_on(name, device)?;
    let names = |items: Vec<&str>| items.join(", ");
    let v = m.variants.iter().find(|v| v.name == variant).ok_or_else(|| {
        format!(
            "experiment '{name}' has no variant '{variant}' (it has: {})",
            names(m.variants.iter().map(|v| v.name.as_str()).collect())
        )
    })?;
    let s = match state {
        None => m.states.first().ok_or_else(|| format!("experiment '{name}' has no drive states"))?,
        Some(state) => m.states.iter().find(|s| s.name == state).ok_or_else(|| {
            format!(
                "experiment '{name}' has no drive state '{state}' (it has: {})",
                names(m.states.iter().map(|s| s.name.as_str()).collect())
            )
        })?,
    };
    let setup = cell_setup(&m, v, s, quick, &job_template(&m, v)?);
    Ok((m, setup))
}

/// The job file of a variant, variables not yet expanded.
fn job_template(m: &Manifest, v: &Variant) -> Result<String, String> {
    let path = m.job_path_of(v);
    std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn plan(m: &Manifest, quick: bool) -> Result<Vec<Planned>, String> {
    let mode = if quick { &m.quick } else { &m.full };
    let device = device_identity(&m.device);
    let mut out = Vec::new();
    for v in &m.variants {
        let template = job_template(m, v)?;
        for s in &m.states {
            let CellSetup { job_text: text, overrides, .. } = cell_setup(m, v, s, quick, &template);
            for policy in m.policies_of(v) {
                for rep in 0..mode.repetitions {
                    let seed = rep_seed(rep);
                    let ov: Vec<String> = overrides.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    let hash = fnv64(&[
                        build_fingerprint(),
                        &m.kind,
                        &text,
                        &device,
                        &ov.join(";"),
                        policy,
                        &seed.to_string(),
                    ]);
                    out.push(Planned {
                        key: RunKey { variant: v.name.clone(), state: s.name.clone(), policy: policy.clone(), rep },
                        seed,
                        job_text: text.clone(),
                        overrides: overrides.clone(),
                        hash: format!("{hash:016x}"),
                    });
                }
            }
        }
    }
    Ok(out)
}

/// `${VAR}` substitution for manifests (the parser would expand them too, but the
/// cache key must see the values).
fn expand_vars(text: &str, env: &VarEnv) -> String {
    let mut out = text.to_string();
    for (k, v) in &env.0 {
        out = out.replace(&format!("${{{k}}}"), v);
    }
    out
}

fn simulate(m: &Manifest, p: &Planned, drive_states: &DriveStates) -> Result<RunResult, String> {
    let variant = m.variants.iter().find(|v| v.name == p.key.variant).expect("planned from the manifest");
    let jobs = parse_job_str(&p.job_text, &m.job_path_of(variant), &VarEnv(BTreeMap::new()), ParseOptions::default())
        .map_err(|e| e.to_string())?;
    let profile = load_profile(&m.device, &p.overrides).map_err(|e| e.to_string())?;
    let policy = nvsched_policy::build(&p.key.policy).map_err(|e| e.to_string())?;
    let (report, _) = run_sim_whole(RunSpec {
        jobs: &jobs,
        policy,
        profile: &profile,
        seed: p.seed,
        drive_states: Some(drive_states),
    })?;
    let (metrics, extra) = analysis::metrics(&m.kind, variant, &jobs, &report)?;
    let fio = nvsched_report::fio_json::report_value(&report, false);
    Ok(RunResult { key: p.key.clone(), seed: p.seed, metrics, extra, fio, cached: false })
}

fn cache_path(out: &Path, hash: &str) -> PathBuf {
    out.join("cache").join(format!("{hash}.json"))
}

fn load_cached(path: &Path, key: &RunKey, seed: u64) -> Option<RunResult> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    let metrics = v["metrics"].as_object()?.iter().filter_map(|(k, x)| Some((k.clone(), x.as_f64()?))).collect();
    Some(RunResult { key: key.clone(), seed, metrics, extra: v["extra"].clone(), fio: v["fio"].clone(), cached: true })
}

fn cache_entry(r: &RunResult) -> Result<String, String> {
    serde_json::to_string(&json!({ "metrics": r.metrics, "extra": r.extra, "fio": r.fio })).map_err(|e| e.to_string())
}

fn store(path: &Path, r: &RunResult) -> Result<(), String> {
    let text = cache_entry(r)?;
    nvsched_report::write_atomic(path, text.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))
}

/// A planned run, for drivers that spread the runs over other processes or machines
/// (the Python package's Ray backend): they simulate with [`simulate_planned`], store with
/// [`store_planned`], and [`run`] then finds every result in the cache.
#[derive(Clone, Debug)]
pub struct PlannedRun {
    pub key: RunKey,
    pub seed: u64,
    /// The cache key: results go to `OUT/cache/HASH.json`.
    pub hash: String,
    /// A usable result is already in the cache.
    pub cached: bool,
}

/// The runs of experiment `name`, in a stable order (an index into it names a run).
pub fn plan_runs(name: &str, quick: bool, device: &OnDevice, out: &Path) -> Result<Vec<PlannedRun>, String> {
    check_known(name)?;
    let m = load_on(name, device)?;
    Ok(plan(&m, quick)?
        .into_iter()
        .map(|p| {
            let cached = load_cached(&cache_path(out, &p.hash), &p.key, p.seed).is_some();
            PlannedRun { key: p.key, seed: p.seed, hash: p.hash, cached }
        })
        .collect())
}

/// Simulates runs `indices` of [`plan_runs`], one after another (runs in one drive state
/// share its preconditioning); returns their cache entries (JSON text) in order.
pub fn simulate_planned(name: &str, quick: bool, device: &OnDevice, indices: &[usize]) -> Result<Vec<String>, String> {
    let m = load_on(name, device)?;
    let planned = plan(&m, quick)?;
    let drive_states = DriveStates::new();
    indices
        .iter()
        .map(|&i| {
            let p = planned.get(i).ok_or_else(|| format!("{name}: no run {i} (the plan has {})", planned.len()))?;
            cache_entry(&simulate(&m, p, &drive_states)?)
        })
        .collect()
}

/// Stores a cache entry made by [`simulate_planned`] (checked to be one) under `hash`.
pub fn store_planned(out: &Path, hash: &str, entry: &str) -> Result<(), String> {
    if hash.len() != 16 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("'{hash}' is not a cache key"));
    }
    let v: Value = serde_json::from_str(entry).map_err(|e| format!("cache entry for {hash}: {e}"))?;
    if !v["metrics"].is_object() {
        return Err(format!("cache entry for {hash}: no metrics"));
    }
    let path = cache_path(out, hash);
    std::fs::create_dir_all(out.join("cache")).map_err(|e| format!("{}: {e}", out.display()))?;
    nvsched_report::write_atomic(&path, entry.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs (or loads) every simulation of the experiment and evaluates its claims.
pub fn run(name: &str, opts: &Options) -> Result<Outcome, String> {
    let m = load_on(name, &opts.device)?;
    let planned = plan(&m, opts.quick)?;
    std::fs::create_dir_all(opts.out.join("cache")).map_err(|e| format!("{}: {e}", opts.out.display()))?;
    let prefix = format!("{name}{}", if opts.quick { " (quick)" } else { "" });
    let progress = RunProgress::new(&prefix, planned.len(), opts.progress);
    // runs in the same drive state start from a copy of one preconditioning
    let drive_states = DriveStates::new();
    let results: Vec<Result<RunResult, String>> = planned
        .par_iter()
        .map(|p| {
            let path = cache_path(&opts.out, &p.hash);
            let r = match (!opts.force).then(|| load_cached(&path, &p.key, p.seed)).flatten() {
                Some(r) => Ok(r),
                None => simulate(&m, p, &drive_states).and_then(|r| store(&path, &r).map(|_| r)),
            };
            progress.inc();
            r.map_err(|e| format!("{} / {} / {} / rep {}: {e}", p.key.variant, p.key.state, p.key.policy, p.key.rep))
        })
        .collect();
    progress.finish();
    if nvsched_uring::interrupted() {
        let kept = results.iter().filter(|r| r.is_ok()).count();
        return Err(format!(
            "{name}: interrupted: {kept} of {} runs are in the cache ({}); the same command goes on from there",
            planned.len(),
            opts.out.join("cache").display()
        ));
    }
    let mut runs = results.into_iter().collect::<Result<Vec<_>, _>>()?;
    runs.sort_by(|a, b| a.key.cmp(&b.key));
    let mut cells = aggregate(&runs);
    analysis::derive(&m, &mut cells);
    let mut verdicts: Vec<Verdict> = m.claims.iter().map(|c| analysis::judge(c, &cells)).collect();
    for (v, holding) in verdicts.iter_mut().zip(holds_per_repetition(&m, &runs)) {
        v.repetitions_holding = holding;
    }
    let outcome = Outcome { manifest: m, quick: opts.quick, runs, cells, verdicts };
    output::write_all(&outcome, opts)?;
    Ok(outcome)
}

/// Each claim judged on every repetition alone: (repetitions where it holds, repetitions
/// where it could be judged), in the manifest's order; None for every claim with one
/// repetition. A claim that agrees on the means but not in most repetitions alone rests
/// on noise.
fn holds_per_repetition(m: &Manifest, runs: &[RunResult]) -> Vec<Option<(usize, usize)>> {
    let reps: std::collections::BTreeSet<u32> = runs.iter().map(|r| r.key.rep).collect();
    if reps.len() < 2 {
        return vec![None; m.claims.len()];
    }
    let mut counts = vec![(0, 0); m.claims.len()];
    for rep in reps {
        let mut cells = aggregate(runs.iter().filter(|r| r.key.rep == rep));
        analysis::derive(m, &mut cells);
        for (count, claim) in counts.iter_mut().zip(&m.claims) {
            if let Some(holds) = analysis::judge(claim, &cells).holds {
                count.0 += usize::from(holds);
                count.1 += 1;
            }
        }
    }
    counts.into_iter().map(Some).collect()
}

/// Mean of each metric over repetitions, per `variant/state/policy/metric`.
fn aggregate<'a>(runs: impl IntoIterator<Item = &'a RunResult>) -> BTreeMap<String, f64> {
    let mut sums: BTreeMap<String, (f64, u32)> = BTreeMap::new();
    for r in runs {
        for (metric, v) in &r.metrics {
            let cell = format!("{}/{}/{}/{}", r.key.variant, r.key.state, r.key.policy, metric);
            let e = sums.entry(cell).or_insert((0.0, 0));
            e.0 += v;
            e.1 += 1;
        }
    }
    sums.into_iter().map(|(k, (s, n))| (k, s / f64::from(n))).collect()
}

pub use output::{claim_json, console_table};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_warning_weighs_every_drive_state_and_a_copy_per_parallel_run() {
        let gb = 1_000_000_000u64;
        // enterprise-nvme's 3.84 TB: 8.4 GB of tables a copy, two states
        let big = Drive { name: "enterprise-nvme", capacity_bytes: 3_840_755_982_336, states: 2 };
        let text = memory_message("k2-analysis", &big, 2, 20 * gb, "-j 1").expect("33.8 GB do not fit in 20");
        assert!(text.starts_with("k2-analysis on enterprise-nvme: its runs may need about 33.8 GB"), "{text}");
        assert!(text.ends_with("more than the 20.0 GB available; even -j 1 needs about 25.3 GB"), "{text}");
        let fits_one = memory_message("k2-analysis", &big, 2, 30 * gb, "-j 1").unwrap();
        assert!(fits_one.ends_with("; -j 1 needs about 25.3 GB"), "{fits_one}");
        assert_eq!(memory_message("k2-analysis", &big, 2, 40 * gb, "-j 1"), None);
        // the 250 GB 970 EVO Plus fits in a few GB
        let small = Drive { name: "970evoplus-250g", capacity_bytes: 250_059_350_016, states: 2 };
        assert_eq!(memory_message("k2-analysis", &small, 2, 4 * gb, "-j 1"), None);
    }

    #[test]
    fn one_run_is_warned_of_a_drive_state_larger_than_the_memory_available() {
        let gb = 1_000_000_000;
        let with = |name: &str, state: &str| {
            nvsched_ssd::load_profile(name, &[("nand.precondition".to_string(), state.to_string())]).unwrap()
        };
        let text = run_memory_message(&with("enterprise-nvme", "full"), 4 * gb).expect("7.9 GB do not fit in 4");
        assert_eq!(
            text,
            "enterprise-nvme's full state holds about 8.4 GB of mapping tables, more than the 4.0 GB of memory available"
        );
        assert_eq!(run_memory_message(&with("enterprise-nvme", "full"), 16 * gb), None);
        assert_eq!(
            run_memory_message(&with("enterprise-nvme", "clean"), gb),
            None,
            "a clean drive's tables stay empty"
        );
        assert_eq!(run_memory_message(&nvsched_ssd::load_profile("simple-nvme", &[]).unwrap(), 1), None);
    }

    fn k2_manifest() -> Manifest {
        Manifest::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/k2-analysis")).unwrap()
    }

    fn runtime_of(plan: &[Planned], variant: &str, state: &str) -> String {
        let p = plan.iter().find(|p| p.key.variant == variant && p.key.state == state).unwrap();
        p.job_text.lines().find(|l| l.starts_with("runtime=")).unwrap().to_string()
    }

    #[test]
    fn a_variant_can_shorten_a_state_in_full_mode() {
        let m = k2_manifest();
        let full = plan(&m, false).unwrap();
        assert_eq!(runtime_of(&full, "randwrite", "full"), "runtime=1000s", "GC runs keep the state's runtime");
        assert_eq!(runtime_of(&full, "randread", "full"), "runtime=100s");
        let quick = plan(&m, true).unwrap();
        assert_eq!(runtime_of(&quick, "randread", "full"), runtime_of(&quick, "randwrite", "full"));
    }

    #[test]
    fn a_cell_carries_the_seeds_and_job_its_runs_are_planned_with() {
        let m = k2_manifest();
        for quick in [true, false] {
            let (_, setup) = cell("k2-analysis", "randread", Some("partial"), quick, &OnDevice::default()).unwrap();
            let plan = plan(&m, quick).unwrap();
            let runs: Vec<&Planned> = plan
                .iter()
                .filter(|p| p.key.variant == "randread" && p.key.state == "partial" && p.key.policy == "none")
                .collect();
            assert_eq!(setup.seeds, runs.iter().map(|p| p.seed).collect::<Vec<_>>(), "quick {quick}");
            assert!(runs.iter().all(|p| p.job_text == setup.job_text));
        }
    }

    #[test]
    fn each_claim_is_also_judged_on_every_repetition_alone() {
        let m: Manifest = toml::from_str(
            "name = 'x'\ntitle = 'x'\npaper = 'x'\nkind = 'x'\ndevice = 'x'\njob = 'x.fio'\n\
             policies = ['a', 'b']\nfull = { repetitions = 3 }\nquick = { repetitions = 1 }\n\
             [[variants]]\nname = 'v'\n\
             [[states]]\nname = 's'\nprecondition = 'clean'\nruntime = '1s'\nquick_runtime = '1s'\n\
             [[claims]]\nid = 'a-faster'\ntext = 'x'\nkind = 'greater'\na = 'v/s/a/bw'\nb = 'v/s/b/bw'\n\
             [[claims]]\nid = 'absent'\ntext = 'x'\nkind = 'greater'\na = 'v/s/a/iops'\nb = 'v/s/b/iops'\n",
        )
        .unwrap();
        // a beats b on the mean (70 vs 60) but in two of the three repetitions only
        let run = |policy: &str, rep: u32, bw: f64| RunResult {
            key: RunKey { variant: "v".into(), state: "s".into(), policy: policy.into(), rep },
            seed: rep_seed(rep),
            metrics: [("bw".to_string(), bw)].into(),
            extra: Value::Null,
            fio: Value::Null,
            cached: false,
        };
        let runs = vec![
            run("a", 0, 100.0),
            run("b", 0, 60.0),
            run("a", 1, 70.0),
            run("b", 1, 60.0),
            run("a", 2, 40.0),
            run("b", 2, 60.0),
        ];
        assert_eq!(
            holds_per_repetition(&m, &runs),
            vec![Some((2, 3)), Some((0, 0))],
            "a claim without values is not judged"
        );
        assert_eq!(holds_per_repetition(&m, &runs[..2]), vec![None, None], "one repetition: nothing to add");
    }

    #[test]
    fn full_runtime_must_name_a_state() {
        let dir = std::env::temp_dir().join(format!("nvsched-manifest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = k2_manifest().dir.join("manifest.toml");
        let text = std::fs::read_to_string(src).unwrap().replacen("{ full = \"100s\" }", "{ ful = \"100s\" }", 1);
        std::fs::write(dir.join("manifest.toml"), text).unwrap();
        let err = Manifest::load(&dir).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(err.contains("variant 'read': full_runtime names state 'ful'"), "{err}");
    }
}
