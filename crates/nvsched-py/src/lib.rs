//! `nvsched._native`: the Rust side of the `nvsched` Python package. It is kept to plain
//! strings and numbers in and JSON text out; `python/nvsched/__init__.py` gives it a
//! Pythonic face (paths or job text, dicts back, sweeps on Ray).

mod py_policy;

use nvsched::policy::{BuiltPolicy, Params, COMMON_PARAMS, POLICIES};
use nvsched::run::ChoosePolicy;
use nvsched::ssd::builtin_profiles;
use nvsched::tune::Center;
use nvsched::workload::JobFile;
use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use serde_json::json;
use std::path::Path;

/// How a run picks its policy: `sched` (a registry spec, else the job file's
/// `ioscheduler=`), or the Python object `policy` (see `py_policy`), whose first error
/// is kept in the returned slot.
fn choose(
    py: Python<'_>,
    sched: Option<String>,
    policy: Option<Py<PyAny>>,
) -> PyResult<(ChoosePolicy<'static>, Option<py_policy::PolicyError>)> {
    let Some(obj) = policy else { return Ok((nvsched::run::choose_by_spec(sched), None)) };
    let error = py_policy::PolicyError::default();
    let (scheduler, name, host_cost) = py_policy::PyPolicy::new(py, obj, error.clone())?;
    let built = BuiltPolicy {
        scheduler: Box::new(scheduler),
        host_cost,
        info: &py_policy::INFO,
        params: Params::parse(py_policy::INFO.id, &[], "").map_err(|e| PyValueError::new_err(e.0))?,
        spec: format!("python:{name}"),
    };
    let choose: ChoosePolicy<'static> = Box::new(move |jobs: &JobFile| {
        let theirs = jobs.ioscheduler().map_err(|e| e.to_string())?;
        let warning = theirs.map(|(spec, at)| {
            format!("{at}: the policy object ({}) overrides the job file's ioscheduler={spec}", built.spec)
        });
        Ok((built, warning.into_iter().collect()))
    });
    Ok((choose, Some(error)))
}

/// Runs `work` detached from Python (other threads run meanwhile), where Ctrl-C (SIGINT)
/// or SIGTERM stops its runs as on the command line: simulations end, a real run finishes
/// what it has in flight and removes the files it created. Python's handlers cannot run
/// until native code returns, so they are set aside meanwhile. Then SIGINT raises
/// KeyboardInterrupt, and SIGTERM is raised again for Python's own disposition (by
/// default the process ends, after the clean-up). An error of `work` raises ValueError.
fn native<T: Send>(py: Python<'_>, work: impl FnOnce() -> Result<T, String> + Send) -> PyResult<T> {
    let (result, signal) = py.detach(move || {
        let guard = nvsched::uring::InterruptGuard::new();
        let result = work();
        (result, guard.signal())
    });
    match signal {
        Some(nvsched::uring::StopSignal::Interrupt) => return Err(PyKeyboardInterrupt::new_err(())),
        // the guard raised it again: a handler of Python's runs now
        Some(nvsched::uring::StopSignal::Terminate) => py.check_signals()?,
        None => {}
    }
    result.map_err(PyValueError::new_err)
}

/// Runs `run` with the policy `sched` or `policy` chooses, detached from Python (other
/// threads run meanwhile; a Python policy takes the GIL for each call). A Python policy's
/// own error explains a stalled or failed run best; otherwise the run's error is a
/// ValueError.
fn run_with_policy(
    py: Python<'_>,
    sched: Option<String>,
    policy: Option<Py<PyAny>>,
    run: impl FnOnce(ChoosePolicy<'static>) -> Result<(String, Vec<String>), String> + Send,
) -> PyResult<(String, Vec<String>)> {
    let (choose, error) = choose(py, sched, policy)?;
    let result = native(py, move || run(choose));
    if let Some((what, original)) = error.and_then(|e| e.lock().expect("policy error lock").take()) {
        return Err(py_policy::raised(py, &what, original));
    }
    result
}

/// Simulates fio job text; returns fio's JSON report as text. Raises ValueError with the
/// parser's, profile's or policy's message (file, line and option) on bad input. With
/// `policy` (a Python object), that object schedules instead of `sched`.
#[pyfunction]
#[pyo3(signature = (job_text, source, vars, sched, policy, device, device_set, precondition, seed, timestamp_ms))]
#[allow(clippy::too_many_arguments)]
fn simulate_json(
    py: Python<'_>,
    job_text: String,
    source: String,
    vars: Vec<(String, String)>,
    sched: Option<String>,
    policy: Option<Py<PyAny>>,
    device: String,
    device_set: Vec<(String, String)>,
    precondition: Option<String>,
    seed: u64,
    timestamp_ms: u64,
) -> PyResult<(String, Vec<String>)> {
    run_with_policy(py, sched, policy, move |choose| {
        nvsched::run::simulate_job_text(
            &job_text,
            &source,
            &vars,
            choose,
            &device,
            device_set,
            precondition,
            seed,
            timestamp_ms,
        )
    })
}

/// Runs fio job text on real files or devices through io_uring, as `nvsched run --engine
/// uring` does (its safety rules; `allow_destructive` its flag); returns fio's JSON report
/// as text.
#[pyfunction]
#[pyo3(signature = (job_text, source, vars, sched, policy, allow_destructive, seed, timestamp_ms))]
#[allow(clippy::too_many_arguments)]
fn device_json(
    py: Python<'_>,
    job_text: String,
    source: String,
    vars: Vec<(String, String)>,
    sched: Option<String>,
    policy: Option<Py<PyAny>>,
    allow_destructive: bool,
    seed: u64,
    timestamp_ms: u64,
) -> PyResult<(String, Vec<String>)> {
    run_with_policy(py, sched, policy, move |choose| {
        nvsched::run::run_device_job_text(&job_text, &source, &vars, choose, allow_destructive, seed, timestamp_ms)
    })
}

/// The policies with their parameters, as JSON text.
#[pyfunction]
fn policies_json() -> String {
    let param = |p: &nvsched::policy::ParamSpec| json!({ "name": p.name, "default": p.default, "accepted": p.accepted(), "help": p.help });
    let list: Vec<_> = POLICIES
        .iter()
        .map(|info| {
            json!({
                "id": info.id,
                "summary": info.summary,
                "source": info.source,
                "notes": info.notes,
                "example": info.example,
                "host_cost_ns": { "dispatch": info.host_cost.dispatch.0, "complete": info.host_cost.complete.0 },
                "params": info.params.iter().map(param).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "policies": list, "common_params": COMMON_PARAMS.iter().map(param).collect::<Vec<_>>() }).to_string()
}

/// (job text, job file path, device profile, device overrides in order, the seeds of the
/// mode's repetitions).
type Cell = (String, String, String, Vec<(String, String)>, Vec<u64>);

/// One (variant, drive state) of a reproduction, as `nvsched repro` runs it.
#[pyfunction]
#[pyo3(signature = (name, variant, state, quick, device=None))]
fn experiment_cell(
    name: &str,
    variant: &str,
    state: Option<&str>,
    quick: bool,
    device: Option<String>,
) -> PyResult<Cell> {
    let on = nvsched::repro::OnDevice { profile: device, set: Vec::new() };
    let (manifest, setup) = nvsched::repro::cell(name, variant, state, quick, &on).map_err(PyValueError::new_err)?;
    Ok((setup.job_text, setup.job_path.display().to_string(), manifest.device, setup.overrides, setup.seeds))
}

/// Fixes the build part of reproduction cache keys (see `nvsched.repro`); false if fixed.
#[pyfunction]
fn set_build_fingerprint(build: &str) -> bool {
    nvsched::repro::set_build_fingerprint(build)
}

/// The runs of a reproduction as JSON text: index, variant, state, policy, rep, seed,
/// cache key and whether `out` already holds its result.
#[pyfunction]
#[pyo3(signature = (name, quick, out, device=None, device_set=Vec::new()))]
fn repro_plan(
    name: &str,
    quick: bool,
    out: &str,
    device: Option<String>,
    device_set: Vec<(String, String)>,
) -> PyResult<String> {
    let on = nvsched::repro::OnDevice { profile: device, set: device_set };
    let runs = nvsched::repro::plan_runs(name, quick, &on, Path::new(out)).map_err(PyValueError::new_err)?;
    let list: Vec<_> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            json!({ "index": i, "variant": r.key.variant, "state": r.key.state, "policy": r.key.policy,
                    "rep": r.key.rep, "seed": r.seed, "hash": r.hash, "cached": r.cached })
        })
        .collect();
    Ok(serde_json::Value::Array(list).to_string())
}

/// Simulates runs `indices` of a reproduction's plan (runs in one drive state share its
/// preconditioning); returns their cache entries (JSON text) in order.
#[pyfunction]
#[pyo3(signature = (name, quick, indices, device=None, device_set=Vec::new()))]
fn repro_simulate(
    py: Python<'_>,
    name: String,
    quick: bool,
    indices: Vec<usize>,
    device: Option<String>,
    device_set: Vec<(String, String)>,
) -> PyResult<Vec<String>> {
    let on = nvsched::repro::OnDevice { profile: device, set: device_set };
    native(py, move || nvsched::repro::simulate_planned(&name, quick, &on, &indices))
}

/// `repro`'s warning when the drive states of experiment `name` (on `device`) may not
/// fit in the memory available with `parallel` runs at a time; None when they fit.
#[pyfunction]
#[pyo3(signature = (name, parallel, device=None, device_set=Vec::new()))]
fn repro_memory_warning(
    name: &str,
    parallel: usize,
    device: Option<String>,
    device_set: Vec<(String, String)>,
) -> PyResult<Option<String>> {
    let on = nvsched::repro::OnDevice { profile: device, set: device_set };
    nvsched::repro::memory_warning(name, &on, parallel.max(1)).map_err(PyValueError::new_err)
}

/// Stores a cache entry from `repro_simulate` in `out`.
#[pyfunction]
fn repro_store(out: &str, hash: &str, entry: &str) -> PyResult<()> {
    nvsched::repro::store_planned(Path::new(out), hash, entry).map_err(PyValueError::new_err)
}

/// Assembles a reproduction from `out`'s cache (simulating what is missing), writes its
/// table, results.json, report.md and plots there; returns (console table, claims JSON).
#[pyfunction]
#[pyo3(signature = (name, quick, out, plots, device=None, device_set=Vec::new()))]
fn repro_report(
    py: Python<'_>,
    name: String,
    quick: bool,
    out: String,
    plots: bool,
    device: Option<String>,
    device_set: Vec<(String, String)>,
) -> PyResult<(String, String)> {
    let device = nvsched::repro::OnDevice { profile: device, set: device_set };
    native(py, move || {
        let opts = nvsched::repro::Options { quick, out: out.into(), force: false, progress: false, plots, device };
        let outcome = nvsched::repro::run(&name, &opts)?;
        let claims: Vec<_> = outcome.verdicts.iter().map(nvsched::repro::claim_json).collect();
        Ok((nvsched::repro::console_table(&outcome), serde_json::Value::Array(claims).to_string()))
    })
}

/// (policy spec, K2's bound in `tune k2`'s sweep (else None), the latency-critical job's
/// p99.9 in us, total bandwidth in MB/s).
type TuneRow = (String, Option<u32>, f64, f64);

/// One row of a tuning sweep: with `policy`, that spec (`tune POLICY --param`), else
/// `none` (bound None) or K2 at `bound` (`tune k2`); the p99.9 is `latency_job`'s, else
/// the real-time job's.
#[pyfunction]
#[pyo3(signature = (job_text, source, vars, device, device_set, precondition, seed, bound, policy=None, latency_job=None))]
#[allow(clippy::too_many_arguments)]
fn tune_measure(
    py: Python<'_>,
    job_text: String,
    source: String,
    vars: Vec<(String, String)>,
    device: String,
    device_set: Vec<(String, String)>,
    precondition: Option<String>,
    seed: u64,
    bound: Option<u32>,
    policy: Option<String>,
    latency_job: Option<String>,
) -> PyResult<TuneRow> {
    native(py, move || {
        let (jobs, profile) =
            nvsched::run::load_job_text(&job_text, &source, &vars, &device, device_set, precondition)?;
        let (rt, _) = nvsched::tune::check_jobs(&jobs, &source, latency_job.as_deref())?;
        let spec = spec_of(bound, policy);
        let row = nvsched::tune::measure_policy(&jobs, &profile, seed, &spec, rt, None)?;
        Ok((row.policy, bound, row.rt_p999_us, row.total_bw_mbps))
    })
}

/// A sweep on real files or devices through io_uring (`nvsched sweep --filename PATH`,
/// else `--engine uring`): each (policy spec, seed, variables) of `tasks` once, one run at
/// a time, seeds outermost; returns fio's JSON report of each task, in task order, and
/// the warnings.
#[pyfunction]
#[pyo3(signature = (job_text, source, tasks, filename, allow_destructive, timestamp_ms))]
fn sweep_device(
    py: Python<'_>,
    job_text: String,
    source: String,
    tasks: Vec<nvsched::run::SweepTask>,
    filename: Option<String>,
    allow_destructive: bool,
    timestamp_ms: u64,
) -> PyResult<(Vec<String>, Vec<String>)> {
    native(py, move || {
        nvsched::run::sweep_device_job_text(
            &job_text,
            &source,
            &tasks,
            filename.as_deref().map(std::path::Path::new),
            allow_destructive,
            timestamp_ms,
        )
    })
}

/// `tune`'s sweep on real files or devices through io_uring (`nvsched tune ... --filename
/// PATH`, else `--engine uring`): `none` and each (K2 bound, policy spec) of `configs`
/// once per seed, one run at a time; returns the rows (configurations in order, seeds
/// innermost) and the warnings.
#[pyfunction]
#[pyo3(signature = (job_text, source, vars, configs, seeds, latency_job=None, filename=None, allow_destructive=false))]
#[allow(clippy::too_many_arguments)]
fn tune_device(
    py: Python<'_>,
    job_text: String,
    source: String,
    vars: Vec<(String, String)>,
    configs: Vec<(Option<u32>, Option<String>)>,
    seeds: Vec<u64>,
    latency_job: Option<String>,
    filename: Option<String>,
    allow_destructive: bool,
) -> PyResult<(Vec<TuneRow>, Vec<String>)> {
    let specs: Vec<(String, Option<u32>)> = configs
        .into_iter()
        .map(|(bound, policy)| (spec_of(bound, policy.clone()), bound.filter(|_| policy.is_none())))
        .filter(|(spec, _)| spec != nvsched::tune::REFERENCE)
        .collect();
    native(py, move || {
        let (rows, warnings) = nvsched::run::tune_device_job_text(
            &job_text,
            &source,
            &vars,
            filename.as_deref().map(std::path::Path::new),
            allow_destructive,
            &specs,
            &seeds,
            latency_job.as_deref(),
        )?;
        Ok((rows.into_iter().map(|r| (r.policy, r.bound, r.rt_p999_us, r.total_bw_mbps)).collect(), warnings))
    })
}

/// A tuning configuration's policy spec: `policy` (`tune POLICY --param`), else K2 at
/// `bound`, else `none` (the reference).
fn spec_of(bound: Option<u32>, policy: Option<String>) -> String {
    match (policy, bound) {
        (Some(spec), _) => spec,
        (None, Some(b)) => format!("k2:bound={b}"),
        (None, None) => nvsched::tune::REFERENCE.to_string(),
    }
}

fn tune_rows(rows: Vec<TuneRow>) -> Vec<nvsched::tune::Row> {
    rows.into_iter()
        .map(|(policy, bound, rt_p999_us, total_bw_mbps)| nvsched::tune::Row {
            policy,
            bound,
            rt_p999_us,
            total_bw_mbps,
        })
        .collect()
}

/// The objective and the center (`mean` or `median`) of the tuning rules' arguments.
fn objective_and_center(objective: &str, center: &str) -> PyResult<(nvsched::tune::Objective, Center)> {
    let objective = nvsched::tune::Objective::parse(objective).map_err(PyValueError::new_err)?;
    let center = Center::from_name(center)
        .ok_or_else(|| PyValueError::new_err(format!("center: '{center}': expected mean or median")))?;
    Ok((objective, center))
}

/// The K2 analysis' rule on measured rows, over each bound's runs' `center`: (chosen
/// bound, the sentence explaining it, the table).
#[pyfunction]
#[pyo3(signature = (rows, objective, center="mean"))]
fn tune_choose(rows: Vec<TuneRow>, objective: &str, center: &str) -> PyResult<(Option<u32>, String, String)> {
    let (objective, center) = objective_and_center(objective, center)?;
    let rows = tune_rows(rows);
    let (chosen, why) = nvsched::tune::choose(&rows, objective, center);
    let table = nvsched::tune::table(&rows, chosen.map(|b| format!("k2:bound={b}")).as_deref(), None, center);
    Ok((chosen, why, table))
}

/// `tune POLICY --param`'s rule on measured rows, over each setting's runs' `center`:
/// (chosen spec, the sentence explaining it, the table, its tail column named after
/// `latency_job`).
#[pyfunction]
#[pyo3(signature = (rows, objective, latency_job=None, center="mean"))]
fn tune_choose_setting(
    rows: Vec<TuneRow>,
    objective: &str,
    latency_job: Option<String>,
    center: &str,
) -> PyResult<(Option<String>, String, String)> {
    let (objective, center) = objective_and_center(objective, center)?;
    let rows = tune_rows(rows);
    let (chosen, why) = nvsched::tune::choose_setting(&rows, objective, nvsched::tune::SETTINGS, center);
    let table = nvsched::tune::table(&rows, chosen.as_deref(), latency_job.as_deref(), center);
    Ok((chosen, why, table))
}

/// The policy specs `tune POLICY --param NAME=V1,V2,...` runs, each checked.
#[pyfunction]
fn tune_grid(policy: &str, params: Vec<String>) -> PyResult<Vec<String>> {
    nvsched::tune::grid(policy, &params).map_err(PyValueError::new_err)
}

/// A fitted io.cost model: [(coefficient, value)], the `--sched` value, the
/// `io.cost.model` line, the table.
type IocostModel = (Vec<(String, u64)>, String, String, String);

/// io.cost's cost model for the job's drive, as `nvsched tune iocost` measures it.
#[pyfunction]
#[pyo3(signature = (job_text, source, vars, device, device_set, precondition, seconds, numjobs))]
#[allow(clippy::too_many_arguments)]
fn tune_iocost(
    py: Python<'_>,
    job_text: String,
    source: String,
    vars: Vec<(String, String)>,
    device: String,
    device_set: Vec<(String, String)>,
    precondition: Option<String>,
    seconds: u32,
    numjobs: u32,
) -> PyResult<IocostModel> {
    check_run_shape(seconds, numjobs)?;
    native(py, move || {
        let (_, profile) = nvsched::run::load_job_text(&job_text, &source, &vars, &device, device_set, precondition)?;
        nvsched::iocost_model::measure(&profile, seconds, numjobs, false)
    })
    .map(|model| iocost_model_tuple(&model))
}

/// `tune_iocost`'s runs last a second at least, with one job at least.
fn check_run_shape(seconds: u32, numjobs: u32) -> PyResult<()> {
    if seconds == 0 || numjobs == 0 {
        return Err(PyValueError::new_err("seconds and numjobs must be at least 1"));
    }
    Ok(())
}

fn iocost_model_tuple(model: &[nvsched::iocost_model::Coefficient]) -> IocostModel {
    (
        model.iter().map(|c| (c.name.to_string(), c.value)).collect(),
        nvsched::iocost_model::sched_spec(model),
        nvsched::iocost_model::model_line(model),
        nvsched::iocost_model::table(model),
    )
}

/// `tune_iocost` on a real file or block device (`nvsched tune iocost --filename`): the
/// model, and whether writes were measured.
#[pyfunction]
fn tune_iocost_device(
    py: Python<'_>,
    path: String,
    size: String,
    seconds: u32,
    numjobs: u32,
    allow_destructive: bool,
) -> PyResult<(IocostModel, bool)> {
    check_run_shape(seconds, numjobs)?;
    let size_bytes =
        nvsched::iocost_model::real_size_bytes(&size).map_err(|e| PyValueError::new_err(format!("size: {e}")))?;
    native(py, move || {
        let path = std::path::Path::new(&path);
        nvsched::realdev::on_target(path, size_bytes, allow_destructive, |writes, opts| {
            nvsched::iocost_model::measure_real(path, size_bytes, seconds, numjobs, writes, opts, false)
                .map(|model| (iocost_model_tuple(&model), writes))
        })
    })
}

/// The experiments directory reproductions are read from (`NVSCHED_EXPERIMENTS`, else
/// `./experiments`, else the source tree's).
#[pyfunction]
fn experiments_dir() -> String {
    nvsched::repro::experiments_dir().display().to_string()
}

/// (reproduction, results directory) pairs for `name` (`all`: every one), as `nvsched
/// repro` lays them out.
#[pyfunction]
#[pyo3(signature = (name, out=None))]
fn repro_targets(name: &str, out: Option<String>) -> PyResult<Vec<(String, String)>> {
    let targets =
        nvsched::repro::targets(name, out.as_deref().map(std::path::Path::new)).map_err(PyValueError::new_err)?;
    Ok(targets.into_iter().map(|(n, dir)| (n, dir.display().to_string())).collect())
}

/// Names of the reproductions in the experiments directory.
#[pyfunction]
fn experiments() -> PyResult<Vec<String>> {
    nvsched::repro::list().map_err(PyValueError::new_err)
}

/// Names of the shipped device profiles.
#[pyfunction]
fn devices() -> Vec<String> {
    builtin_profiles().into_iter().map(|p| p.name).collect()
}

/// The current time for reports (`SOURCE_DATE_EPOCH` when set), in milliseconds.
#[pyfunction]
fn timestamp_ms() -> u64 {
    nvsched::run::timestamp_ms()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulate_json, m)?)?;
    m.add_function(wrap_pyfunction!(device_json, m)?)?;
    m.add_function(wrap_pyfunction!(policies_json, m)?)?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_cell, m)?)?;
    m.add_function(wrap_pyfunction!(experiments_dir, m)?)?;
    m.add_function(wrap_pyfunction!(experiments, m)?)?;
    m.add_function(wrap_pyfunction!(repro_targets, m)?)?;
    m.add_function(wrap_pyfunction!(set_build_fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(tune_measure, m)?)?;
    m.add_function(wrap_pyfunction!(tune_device, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_device, m)?)?;
    m.add_function(wrap_pyfunction!(tune_choose, m)?)?;
    m.add_function(wrap_pyfunction!(tune_choose_setting, m)?)?;
    m.add_function(wrap_pyfunction!(tune_grid, m)?)?;
    m.add_function(wrap_pyfunction!(tune_iocost, m)?)?;
    m.add_function(wrap_pyfunction!(tune_iocost_device, m)?)?;
    m.add_function(wrap_pyfunction!(repro_plan, m)?)?;
    m.add_function(wrap_pyfunction!(repro_simulate, m)?)?;
    m.add_function(wrap_pyfunction!(repro_store, m)?)?;
    m.add_function(wrap_pyfunction!(repro_memory_warning, m)?)?;
    m.add_function(wrap_pyfunction!(repro_report, m)?)?;
    m.add_function(wrap_pyfunction!(timestamp_ms, m)?)?;
    m.add_class::<py_policy::PyRequest>()?;
    m.add("__version__", nvsched::VERSION)?;
    Ok(())
}
