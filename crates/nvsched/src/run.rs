//! `nvsched run`: job file + policy + device → simulated run → fio-style report.

use nvsched_core::{Nanos, TenantTree};
use nvsched_policy::BuiltPolicy;
use nvsched_report::{DiskUtil, JobStats, RunReport};
use nvsched_sim::{simulate, EngineCounters, Observer, SimInput, SimOutcome};
use nvsched_ssd::{load_profile, DeviceProfile, DriveStates, ModelConfig, Precondition};
use nvsched_workload::jobfile::{Environment, HostEnvironment, JobFileError};
use nvsched_workload::{JobFile, JobSpec, ReplayStats, UnifiedRw};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// Profile `name` (shipped or a TOML file) with `overrides` applied in order, in drive
/// state `state` (clean, partial:FRACTION or full; None: the profile's own).
pub fn load_device(
    name: &str,
    mut overrides: Vec<(String, String)>,
    state: Option<String>,
) -> Result<DeviceProfile, String> {
    let base = load_profile(name, &overrides).map_err(|e| e.to_string())?;
    let Some(state) = state else { return Ok(base) };
    Precondition::parse(&state)?;
    match base.model {
        ModelConfig::Nand(_) => {
            overrides.push(("nand.precondition".into(), state));
            load_profile(name, &overrides).map_err(|e| e.to_string())
        }
        ModelConfig::Simple(_) if state == "clean" => Ok(base),
        ModelConfig::Simple(_) => {
            Err(format!("device '{}' is the simple model, which has no drive state ({state})", base.name))
        }
    }
}

/// The time of day written into reports: `SOURCE_DATE_EPOCH` when set (for byte-identical
/// reports across runs), else now.
pub fn timestamp_ms() -> u64 {
    if let Some(secs) = std::env::var("SOURCE_DATE_EPOCH").ok().and_then(|s| s.parse::<u64>().ok()) {
        return secs * 1000;
    }
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// The version the reports carry where fio prints its own (`fio-3.33`).
pub fn report_version() -> String {
    format!("nvsched-{}", crate::VERSION)
}

/// Job-file variables (`${NAME}`) from `vars` first, then from the process environment.
struct VarsThenHost<'a>(&'a [(String, String)]);

impl Environment for VarsThenHost<'_> {
    fn var(&self, name: &str) -> Option<String> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).or_else(|| HostEnvironment.var(name))
    }
    fn keyword(&self, name: &str) -> Option<u64> {
        HostEnvironment.keyword(name)
    }
}

/// Job text (variables from `vars`, then the environment) and the device it runs on
/// (`state` over the job file's `precondition=`), as the language bindings give them.
pub fn load_job_text(
    text: &str,
    source: &str,
    vars: &[(String, String)],
    device: &str,
    overrides: Vec<(String, String)>,
    state: Option<String>,
) -> Result<(JobFile, DeviceProfile), String> {
    let jobs = parse_job_text(text, source, vars)?;
    let from_jobs = jobs.precondition().map_err(|e| e.to_string())?;
    let profile = load_device(device, overrides, state.or(from_jobs))?;
    Ok((jobs, profile))
}

/// The policy to run: the one the user gave (`given`, named `given_as` in messages, e.g.
/// `--sched`), else the job file's `ioscheduler=`, else `none`, and the warnings to print:
/// the user's policy overriding a different `ioscheduler=`, and the policy's own about the
/// jobs' cgroups ([`cgroup_warnings`]). An `ioscheduler=` nvsched cannot build is an error
/// at its line.
pub fn choose_policy(
    given: Option<&str>,
    given_as: &str,
    jobs: &JobFile,
) -> Result<(BuiltPolicy, Vec<String>), String> {
    let from_jobs = jobs.ioscheduler().map_err(|e| e.to_string())?;
    let Some(spec) = given else {
        let policy = match from_jobs {
            Some((spec, at)) => nvsched_policy::build(&spec)
                .map_err(|e| JobFileError::new(&at, Some("ioscheduler"), e.to_string()).to_string())?,
            None => nvsched_policy::build("none").expect("the none policy builds"),
        };
        let warnings = cgroup_warnings(&policy, jobs);
        return Ok((policy, warnings));
    };
    let policy = nvsched_policy::build(spec).map_err(|e| format!("{given_as}: {e}"))?;
    let overridden = from_jobs
        .filter(|(theirs, _)| nvsched_policy::build(theirs).map_or(true, |p| p.spec != policy.spec))
        .map(|(theirs, at)| format!("{at}: {given_as} {} overrides the job file's ioscheduler={theirs}", policy.spec));
    let warnings = overridden.into_iter().chain(cgroup_warnings(&policy, jobs)).collect();
    Ok((policy, warnings))
}

/// The policy's warnings when the jobs' cgroups leave it nothing to do (a protected
/// cgroup no job is in; weights with no cgroups) or are nested where it keeps them flat,
/// for every engine and `sweep`.
pub fn cgroup_warnings(policy: &BuiltPolicy, jobs: &JobFile) -> Vec<String> {
    policy.check_cgroups(&nvsched_workload::tenant_tree(&jobs.jobs))
}

/// How a language binding picks the policy once the jobs are read: from them (their
/// `ioscheduler=`) and its own arguments, with the warnings to pass on. It may build
/// a policy from outside the registry, such as one written in Python.
pub type ChoosePolicy<'a> = Box<dyn FnOnce(&JobFile) -> Result<(BuiltPolicy, Vec<String>), String> + Send + 'a>;

/// The registry's policy `sched` (as `--sched` takes it), else the job file's
/// `ioscheduler=`, else `none`, for [`simulate_job_text`] and [`run_device_job_text`].
pub fn choose_by_spec(sched: Option<String>) -> ChoosePolicy<'static> {
    Box::new(move |jobs| choose_policy(sched.as_deref(), "sched", jobs))
}

fn parse_job_text(text: &str, source: &str, vars: &[(String, String)]) -> Result<JobFile, String> {
    nvsched_workload::parse_job_str(text, std::path::Path::new(source), &VarsThenHost(vars), Default::default())
        .map_err(|e| e.to_string())
}

/// One simulated run from fio job text, as the language bindings call it: `source` names
/// the text in error messages, `vars` sets job-file variables; `choose` picks the policy
/// ([`choose_by_spec`]); `state`, when given, overrides the job file's `precondition=`.
/// Returns the fio-compatible JSON report and the warnings the command line would print
/// (options ignored, `sched` overriding the job file's `ioscheduler=`, hooks not run).
#[allow(clippy::too_many_arguments)]
pub fn simulate_job_text(
    text: &str,
    source: &str,
    vars: &[(String, String)],
    choose: ChoosePolicy<'_>,
    device: &str,
    overrides: Vec<(String, String)>,
    state: Option<String>,
    seed: u64,
    timestamp_ms: u64,
) -> Result<(String, Vec<String>), String> {
    let (jobs, profile) = load_job_text(text, source, vars, device, overrides, state)?;
    let (policy, override_warning) = choose(&jobs)?;
    let page_cache = profile.host.page_cache.size_bytes > 0;
    let warnings =
        jobs.warnings.iter().cloned().chain(override_warning).chain(jobs.simulation_warnings(page_cache)).collect();
    let spec = RunSpec { jobs: &jobs, policy, profile: &profile, seed, drive_states: None };
    let (report, _) = run_sim(spec, &mut StopOnSignal, timestamp_ms)?;
    Ok((report.render(nvsched_report::Format::Json), warnings))
}

/// What to run.
pub struct RunSpec<'a> {
    pub jobs: &'a JobFile,
    pub policy: BuiltPolicy,
    pub profile: &'a DeviceProfile,
    pub seed: u64,
    /// Preconditioned drive states shared by the runs of a sweep (None: build afresh).
    pub drive_states: Option<&'a DriveStates>,
}

/// Ends a simulation early on a signal, where one is set to stop the runs (`nvsched run`'s
/// Ctrl-C, the Python bindings' `InterruptGuard`); elsewhere a signal kills as usual.
pub struct StopOnSignal;

impl Observer for StopOnSignal {
    fn stop_requested(&mut self) -> bool {
        nvsched_uring::interrupted()
    }
}

/// One run of several (a sweep's, a reproduction's, a tuner's), its report with
/// time-of-day fields at 0: a signal that cuts it short makes it an error, so nothing
/// counts or caches part of a run.
pub fn run_sim_whole(spec: RunSpec<'_>) -> Result<(RunReport, SimOutcome), String> {
    // the runs queued behind the one the signal cut short do not start
    if nvsched_uring::interrupted() {
        return Err(RUNS_STOPPED.into());
    }
    let (report, outcome) = run_sim(spec, &mut StopOnSignal, 0).map_err(|e| match nvsched_uring::interrupted() {
        // while preparing the drive
        true => RUNS_STOPPED.to_string(),
        false => e,
    })?;
    if outcome.interrupted {
        return Err(RUNS_STOPPED.into());
    }
    Ok((report, outcome))
}

/// The error of a run of several that a signal cut short, simulated or real.
pub const RUNS_STOPPED: &str = "interrupted; the runs stop here";

/// Simulates and builds the report. `timestamp_ms` is the wall-clock time to print in
/// the time-of-day fields (the only fields that differ between identical runs).
pub fn run_sim(
    spec: RunSpec<'_>,
    observer: &mut dyn Observer,
    timestamp_ms: u64,
) -> Result<(RunReport, SimOutcome), String> {
    let policy_spec = spec.policy.spec.clone();
    let policy_id = spec.policy.info.id;
    let given = spec.policy.params.given.clone();
    let host_cost = spec.policy.host_cost;
    let mut watch = |done| {
        observer.on_preparing(done);
        !observer.stop_requested()
    };
    let device = spec.profile.build_with(spec.seed, spec.drive_states, &mut watch).map_err(|e| e.to_string())?;
    let outcome = simulate(
        SimInput {
            jobs: &spec.jobs.jobs,
            device,
            host: spec.profile.host.clone(),
            scheduler: spec.policy.scheduler,
            host_cost,
            seed: spec.seed,
            clock_ms: timestamp_ms,
        },
        observer,
    )
    .map_err(|e| e.to_string())?;
    let clones: Vec<(u32, usize, &JobStats)> =
        outcome.clones.iter().map(|c| (c.reporting_group, c.job_index, &c.stats)).collect();
    let entries = reporting_entries(spec.jobs, &clones);
    let mut nvsched = Map::new();
    nvsched.insert("version".into(), json!(crate::VERSION));
    nvsched.insert("engine".into(), json!("sim"));
    nvsched.insert("seed".into(), json!(spec.seed));
    nvsched.insert("simulated_time_ns".into(), json!(outcome.end.0));
    if outcome.interrupted {
        // a signal ended the run early: the figures cover what ran until then
        nvsched.insert("interrupted".into(), json!(true));
    }
    nvsched.insert("policy".into(), policy_value(&policy_spec, policy_id, &given, host_cost, &outcome.policy));
    let p = spec.profile;
    nvsched.insert(
        "device".into(),
        json!({
            "profile": p.name,
            "model": p.model_name(),
            "capacity_bytes": p.capacity_bytes,
            "queue_depth": p.queue_depth,
            "overrides": Value::Object(p.overrides.iter().map(|(k, v)| (k.clone(), json!(v))).collect()),
            "host": {
                "submit_ns": p.host.submit_ns,
                "complete_ns": p.host.complete_ns,
                "nr_requests": p.host.nr_requests,
                "max_merge_bytes": p.host.max_merge_bytes,
                "cpus": p.host.cpus,
                "submit_cpu_ns": p.host.submit_cpu_ns,
                "complete_cpu_ns": p.host.complete_cpu_ns,
            },
            "precondition": p.precondition(),
            "counters": outcome.device,
        }),
    );
    let cache = &p.host.page_cache;
    if cache.size_bytes > 0 {
        nvsched["device"]["host"]["page_cache"] = json!({
            "size_bytes": cache.size_bytes,
            "dirty_background_percent": cache.dirty_background_percent,
            "dirty_percent": cache.dirty_percent,
            "dirty_expire_ms": cache.dirty_expire_ms,
            "writeback_interval_ms": cache.writeback_interval_ms,
            "writeback_depth": cache.writeback_depth,
            "readahead_bytes": cache.readahead_bytes,
            "copy_ns_per_kib": cache.copy_ns_per_kib,
        });
    }
    let e = &outcome.engine;
    let mut counters = json!({
        "events": e.events,
        "requests": e.requests,
        "plug_merges": e.plug_merges,
        "sched_merges": e.sched_merges,
        "max_device_inflight": e.max_device_inflight,
        "mean_in_system": if outcome.end.0 > 0 { e.in_system_integral / outcome.end.0 as f64 } else { 0.0 },
        // reads of pages without data, answered with zeros and no I/O (buffered or direct)
        "read_pages_zeroed": e.read_pages_zeroed,
    });
    if cache.size_bytes > 0 {
        counters["page_cache"] = page_cache_counters(e).into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    }
    nvsched.insert("engine_counters".into(), counters);
    let by_tenant: Vec<(u32, &JobStats)> = outcome.clones.iter().map(|c| (c.tenant, &c.stats)).collect();
    nvsched.insert("tenants".into(), tenants_of(&outcome.tenants, &by_tenant));
    nvsched.insert(
        "jobs".into(),
        Value::Array(entries.iter().map(|j| json!({ "jobname": j.name, "series": series_value(j) })).collect()),
    );
    nvsched.insert(
        "device_series".into(),
        json!({ "window_s": 1, "read_bytes": outcome.device_series[0], "write_bytes": outcome.device_series[1] }),
    );
    if !spec.jobs.warnings.is_empty() {
        nvsched.insert("warnings".into(), json!(spec.jobs.warnings));
    }
    let replays: Vec<_> = outcome.clones.iter().map(|c| (c.job_index, c.clone, c.replay.as_ref())).collect();
    let (replay, replay_lines) = replay_report(spec.jobs, &replays);
    if let Some(r) = replay {
        nvsched.insert("replay".into(), r);
    }
    let mut summary_extra = summary_lines(spec.profile, &policy_spec, spec.seed, &outcome);
    summary_extra.extend(replay_lines);
    let version = report_version();
    let report = RunReport {
        header: nvsched_report::normal::run_header(&spec.jobs.jobs, &version),
        version,
        timestamp_ms,
        global_options: spec.jobs.global_options.clone(),
        jobs: entries,
        disk_util: vec![disk_util(spec.profile, &outcome)],
        nvsched: Value::Object(nvsched),
        summary_extra,
        elapsed: outcome.end,
    };
    Ok((report, outcome))
}

/// A `--status-interval` dump: the report of every clone's statistics so far, `elapsed`
/// into the run, as fio prints it at each interval (no header, disk statistics or
/// nvsched section).
pub fn status_report(jobs: &JobFile, clones: &[nvsched_report::CloneStatus], elapsed: Nanos) -> RunReport {
    let clones: Vec<(u32, usize, &JobStats)> = clones.iter().map(|(g, j, s)| (*g, *j, s)).collect();
    RunReport {
        header: String::new(),
        version: report_version(),
        timestamp_ms: timestamp_ms(),
        global_options: jobs.global_options.clone(),
        jobs: reporting_entries(jobs, &clones),
        disk_util: Vec::new(),
        nvsched: Value::Null,
        summary_extra: Vec::new(),
        elapsed,
    }
}

/// fio's `Laying out IO file` lines after its header: each clone, for the files it is
/// the first to name that were laid out for the run (fio 3.33: `a: Laying out IO files (2
/// files / total 3MiB)`).
pub fn layout_lines(jobs: &[JobSpec], targets: &[nvsched_uring::TargetInfo]) -> String {
    let mut counted: Vec<&Path> = Vec::new();
    let mut out = String::new();
    for spec in jobs {
        for (clone, files) in (0..spec.numjobs).map(|c| (c, spec.files_per_clone())) {
            let (mut count, mut bytes) = (0u32, 0u64);
            for filenum in 0..files {
                let name = spec.file_name_of(clone, filenum);
                let laid_out = targets.iter().find(|t| t.laid_out && t.path == Path::new(&name));
                if let Some(t) = laid_out.filter(|t| !counted.contains(&t.path.as_path())) {
                    counted.push(&t.path);
                    count += 1;
                    bytes += t.size;
                }
            }
            let (s, total) = if count > 1 { ("s", "total ") } else { ("", "") };
            if count > 0 {
                out.push_str(&format!(
                    "{}: Laying out IO file{s} ({count} file{s} / {total}{}MiB)\n",
                    spec.name,
                    bytes >> 20
                ));
            }
        }
    }
    out
}

/// fio's reporting entries (`__show_run_stats`): a clone joins the entry before it when
/// its job has `group_reporting` and the previous clone (with statistics) is of the same
/// group; otherwise it starts an entry. So a job without `group_reporting` stands alone
/// even in a group whose other jobs report together, and, as in fio, `group_reporting`
/// jobs right after it in its group join its entry. A job with `stats=0` has none.
/// `clones` holds (reporting group, job index, statistics) in run order.
pub fn reporting_entries(jobs: &JobFile, clones: &[(u32, usize, &JobStats)]) -> Vec<JobStats> {
    let mut entries: Vec<JobStats> = Vec::new();
    let mut previous_group: Option<u32> = None;
    for &(group, job, stats) in clones {
        let spec = &jobs.jobs[job];
        if !spec.stats {
            continue; // `stats=0`
        }
        let mut stats = stats.clone();
        match spec.unified_rw_reporting {
            UnifiedRw::None => {}
            UnifiedRw::Mixed => stats.unify_directions(),
            UnifiedRw::Both => stats.also_mixed = true,
        }
        match entries.last_mut() {
            Some(entry) if spec.group_reporting && previous_group == Some(group) => entry.merge(&stats),
            _ => entries.push(stats),
        }
        previous_group = Some(group);
    }
    entries
}

/// (name, weight, bytes, bytes/s) per tenant, from per-clone (tenant id, statistics).
/// Each cgroup's weight and what its jobs and those of the cgroups below it moved (as
/// cgroup v2's io.stat counts); `parent` only for a cgroup below another one,
/// `io_latency_target_us` only for one with a target (`cgroup_io_latency`).
fn tenants_of(tree: &TenantTree, clones: &[(u32, &JobStats)]) -> Value {
    let mut out = Vec::new();
    for (id, node) in tree.cgroups() {
        let members: Vec<&JobStats> = clones.iter().filter(|c| tree.path_to(c.0).contains(&id)).map(|c| c.1).collect();
        let bytes: u64 = members.iter().map(|s| s.dirs.iter().map(|d| d.io_bytes).sum::<u64>()).sum();
        let runtime = members.iter().map(|s| s.runtime).max().unwrap_or(Nanos::ZERO);
        let bw = if runtime.0 > 0 { bytes as f64 / runtime.as_secs_f64() } else { 0.0 };
        let mut entry = json!({ "name": node.name, "weight": node.weight, "io_bytes": bytes, "bw_bytes": bw });
        if let Some(parent) = tree.node(node.parent).filter(|_| node.parent != 0) {
            entry["parent"] = json!(parent.name);
        }
        if let Some(target) = tree.latency_target(id) {
            entry["io_latency_target_us"] = json!(target.0 as f64 / 1e3);
        }
        out.push(entry);
    }
    Value::Array(out)
}

fn policy_value(
    spec: &str,
    id: &str,
    given: &[(String, String)],
    cost: nvsched_policy::HostCost,
    report: &nvsched_policy::PolicyReport,
) -> Value {
    json!({
        "spec": spec,
        "id": id,
        "params": Value::Object(given.iter().map(|(k, v)| (k.clone(), json!(v))).collect()),
        "host_cost_ns": { "dispatch": cost.dispatch.0, "complete": cost.complete.0 },
        "counters": Value::Object(report.counters.iter().map(|(k, v)| (k.clone(), json!(v))).collect()),
        "series": report.series,
    })
}

fn series_value(j: &JobStats) -> Value {
    let dir = |d: usize| json!({ "bw_bytes": j.dirs[d].series.bytes, "iops": j.dirs[d].series.ios });
    json!({ "window_s": 1, "read": dir(0), "write": dir(1), "trim": dir(2) })
}

fn disk_util(p: &DeviceProfile, o: &SimOutcome) -> DiskUtil {
    let e = &o.engine;
    DiskUtil {
        name: p.name.clone(),
        read_ios: e.device_commands[0],
        write_ios: e.device_commands[1],
        read_merges: e.merges_by_dir[0],
        write_merges: e.merges_by_dir[1],
        read_ticks_ms: e.device_ticks[0].0 / 1_000_000,
        write_ticks_ms: e.device_ticks[1].0 / 1_000_000,
        in_queue_ms: (e.in_system_integral / 1e6) as u64,
        util_pct: if o.end.0 > 0 { 100.0 * e.device_busy.as_secs_f64() / o.end.as_secs_f64() } else { 0.0 },
    }
}

/// What the page cache did, by the names the JSON report gives them.
fn page_cache_counters(e: &EngineCounters) -> [(&'static str, u64); 10] {
    [
        ("read_hits", e.cache_read_hits),
        ("read_waits", e.cache_read_waits),
        ("read_waits_evicted", e.cache_read_waits_evicted),
        ("read_misses", e.cache_read_misses),
        ("readahead_requests", e.readahead_requests),
        ("partial_page_reads", e.partial_page_reads),
        ("partial_pages_zeroed", e.partial_pages_zeroed),
        ("writeback_requests", e.writeback_requests),
        ("writeback_bytes", e.writeback_bytes),
        ("throttled_writes", e.throttled_writes),
    ]
}

fn summary_lines(p: &DeviceProfile, policy: &str, seed: u64, o: &SimOutcome) -> Vec<String> {
    let mut lines = vec![format!(
        "nvsched: policy {policy} on {} ({} model), seed {seed}, {} simulated, {} events",
        p.name,
        p.model_name(),
        o.end,
        o.engine.events
    )];
    let d = &o.device;
    let util: Vec<String> = d.unit_utilization.iter().map(|u| format!("{:.0}", u * 100.0)).collect();
    // with nothing written, write amplification is undefined rather than 0
    let wa = if d.host_pages_written == 0 { "n/a".to_string() } else { format!("{:.2}", d.write_amplification) };
    lines.push(format!(
        "  device: write amplification {wa}, GC runs {}, pages moved {}, erases {}, SLC writes {}, folds {}, reads behind program {}, unit utilisation % [{}]",
        d.gc_runs,
        d.gc_pages_moved,
        d.erases,
        d.slc_writes,
        d.slc_folds,
        d.reads_behind_program,
        util.join(" ")
    ));
    // reads of what was never written measure the drive's "no data" answer, not its flash:
    // say so when that is a notable share, as it is for a read job on a clean drive
    let pages_read = d.host_read_bytes.div_ceil(nvsched_ssd::nand::config::LPN_BYTES);
    if let Some(unmapped) = d.extra("unmapped_reads").filter(|&n| n > 0.0 && n >= 0.1 * pages_read as f64) {
        lines.push(format!(
            "  note: {:.0}% of the pages read ({unmapped} of {pages_read}) hold no data on the drive, so their reads return without touching the flash, as a real drive answers them; --precondition partial:F or full (or writing them first) gives them data",
            100.0 * unmapped / pages_read as f64
        ));
    }
    if o.engine.read_pages_zeroed > 0 {
        lines.push(format!(
            "  files: {} pages read as zeros without I/O (allocated by fio, not yet written)",
            o.engine.read_pages_zeroed
        ));
    }
    if p.host.page_cache.size_bytes > 0 {
        let c: Vec<String> = page_cache_counters(&o.engine).iter().map(|(k, v)| format!("{k}={v}")).collect();
        lines.push(format!("  page cache: {}", c.join(", ")));
    }
    if !o.policy.counters.is_empty() {
        let c: Vec<String> = o.policy.counters.iter().map(|(k, v)| format!("{k}={}", trim_number(*v))).collect();
        lines.push(format!("  policy: {}", c.join(", ")));
    }
    lines
}

/// The `replay` section of the JSON and a summary line per clone that replays a trace:
/// what was issued, what was left out and why, and how late requests went out.
/// `clones` holds (job index, clone, its replay) in run order.
fn replay_report(jobs: &JobFile, clones: &[(usize, u32, Option<&ReplayStats>)]) -> (Option<Value>, Vec<String>) {
    let mut entries = Vec::new();
    let mut lines = Vec::new();
    for &(job_index, clone, stats) in clones {
        let (Some(r), Some(t)) = (stats, jobs.jobs[job_index].trace()) else { continue };
        let spec = &jobs.jobs[job_index];
        entries.push(json!({
            "jobname": spec.name,
            "clone": clone,
            "trace": t.path.display().to_string(),
            "format": t.format.name(),
            "devices": t.devices,
            "records": r.records,
            "issued": r.issued,
            "skipped": r.skipped,
            "dropped_outside": r.dropped,
            "wrapped_outside": r.wrapped,
            "lag_max_us": r.lag_max.0 as f64 / 1e3,
            "lag_mean_us": r.lag_mean().0 as f64 / 1e3,
            "late_1ms": r.late_ios,
        }));
        let mut left_out = Vec::new();
        if r.skipped > 0 {
            left_out.push(format!("{} skipped (replay_skip)", r.skipped));
        }
        if r.dropped > 0 {
            left_out.push(format!(
                "{} beyond their device's part of the file dropped (replay_outside=wrap folds them in)",
                r.dropped
            ));
        }
        if r.wrapped > 0 {
            left_out.push(format!("{} beyond their device's part wrapped", r.wrapped));
        }
        let not_reached = r.records - r.issued - r.skipped - r.dropped;
        if not_reached > 0 {
            left_out.push(format!("{not_reached} not reached (the run stopped first)"));
        }
        lines.push(format!(
            "  replay: {} clone {clone}: {} ({}, {} device{}): {} of {} records issued{}; lag behind the trace's times: mean {:.1} us, max {:.1} us, {} requests 1 ms or more late",
            spec.name,
            t.path.display(),
            t.format.name(),
            t.devices.len(),
            if t.devices.len() == 1 { "" } else { "s" },
            r.issued,
            r.records,
            if left_out.is_empty() { String::new() } else { format!(" ({})", left_out.join(", ")) },
            r.lag_mean().0 as f64 / 1e3,
            r.lag_max.0 as f64 / 1e3,
            r.late_ios
        ));
    }
    ((!entries.is_empty()).then(|| Value::Array(entries)), lines)
}

fn trim_number(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.4}")
    }
}

/// Runs a job file on real files or devices through io_uring and builds the report.
pub fn run_uring(
    jobs: &JobFile,
    policy: BuiltPolicy,
    opts: &nvsched_uring::UringOptions,
    timestamp_ms: u64,
) -> Result<(RunReport, nvsched_uring::UringOutcome), String> {
    run_uring_with_status(jobs, policy, opts, timestamp_ms, None)
}

/// One run on real files or devices (io_uring) from fio job text, as the language
/// bindings call it (see [`simulate_job_text`]): the same safety rules as `nvsched run
/// --engine uring`, `allow_destructive` its flag. Returns fio's JSON report and the
/// warnings the command line would print, the first I/O errors among them; a verify
/// failure is an error.
pub fn run_device_job_text(
    text: &str,
    source: &str,
    vars: &[(String, String)],
    choose: ChoosePolicy<'_>,
    allow_destructive: bool,
    seed: u64,
    timestamp_ms: u64,
) -> Result<(String, Vec<String>), String> {
    let jobs = parse_job_text(text, source, vars)?;
    let (policy, override_warning) = choose(&jobs)?;
    let opts = uring_options(allow_destructive, seed)?;
    let (report, outcome) = run_uring(&jobs, policy, &opts, timestamp_ms)?;
    if !outcome.verify_errors.is_empty() {
        let first: Vec<&str> = outcome.verify_errors.iter().take(5).map(String::as_str).collect();
        return Err(format!("verify failed: {} bad block(s): {}", outcome.verify_errors.len(), first.join("; ")));
    }
    let io_errors = outcome.io_errors.iter().take(10).map(|e| format!("I/O error: {e}"));
    let warnings = jobs
        .warnings
        .iter()
        .cloned()
        .chain(override_warning)
        .chain(jobs.real_device_warnings())
        .chain(io_errors)
        .collect();
    Ok((report.render(nvsched_report::Format::Json), warnings))
}

/// One run of a sweep: a policy spec, a seed and the job file's variables.
pub type SweepTask = (String, u64, Vec<(String, String)>);

/// A sweep of fio job text on real files or devices, as the language bindings call it:
/// each (policy spec, seed, variables) of `tasks` once, one run at a time (seeds
/// outermost), on `filename` where given (every job's filename), else on the jobs' own
/// files; files the first run creates are removed at the end. Returns fio's JSON report
/// of each task, in the order of `tasks`, and the warnings (the jobs', and a kernel
/// scheduler below the policy), each once.
pub fn sweep_device_job_text(
    text: &str,
    source: &str,
    tasks: &[SweepTask],
    filename: Option<&Path>,
    allow_destructive: bool,
    timestamp_ms: u64,
) -> Result<(Vec<String>, Vec<String>), String> {
    let mut parsed: Vec<(&[(String, String)], JobFile)> = Vec::new();
    let mut warnings: Vec<String> = Vec::new();
    for (_, _, vars) in tasks {
        if parsed.iter().any(|(v, _)| *v == vars.as_slice()) {
            continue;
        }
        let jobs = parse_job_text(text, source, vars)?;
        let jobs = match filename {
            Some(path) => crate::realdev::retarget(&jobs, path),
            None => jobs,
        };
        for w in device_warnings(&jobs) {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
        parsed.push((vars, jobs));
    }
    let jobs_of = |vars: &[(String, String)]| &parsed.iter().find(|(v, _)| *v == vars).expect("parsed above").1;
    let mut device = crate::batch::DeviceRuns::new(&uring_options(allow_destructive, 0)?);
    let runs: Vec<(&str, u64)> = tasks.iter().map(|(spec, seed, _)| (spec.as_str(), *seed)).collect();
    let mut reports: Vec<Option<String>> = tasks.iter().map(|_| None).collect();
    for i in crate::batch::interleaved(&runs) {
        let (spec, seed, vars) = &tasks[i];
        let report = device
            .run(jobs_of(vars), spec, *seed, timestamp_ms)
            .map_err(|e| crate::batch::run_error(spec, *seed, e))?;
        reports[i] = Some(report.render(nvsched_report::Format::Json));
    }
    Ok((reports.into_iter().map(|r| r.expect("every task ran")).collect(), warnings))
}

/// `tune`'s sweep of fio job text on real files or devices, as the language bindings call
/// it: `none` and each (spec, K2 bound) of `configs` once per seed, one run at a time
/// (seeds outermost), on `filename` where given (every job's filename), else on the jobs'
/// own files; files the first run creates are removed at the end. Returns the rows (the
/// configurations in order, seeds innermost; the p99.9 is `latency_job`'s, else the
/// real-time job's) and the warnings (the jobs', and a kernel scheduler below the policy).
#[allow(clippy::too_many_arguments)]
pub fn tune_device_job_text(
    text: &str,
    source: &str,
    vars: &[(String, String)],
    filename: Option<&Path>,
    allow_destructive: bool,
    configs: &[(String, Option<u32>)],
    seeds: &[u64],
    latency_job: Option<&str>,
) -> Result<(Vec<crate::tune::Row>, Vec<String>), String> {
    let jobs = parse_job_text(text, source, vars)?;
    let jobs = match filename {
        Some(path) => crate::realdev::retarget(&jobs, path),
        None => jobs,
    };
    let (rt, _) = crate::tune::check_jobs(&jobs, source, latency_job)?;
    let opts = uring_options(allow_destructive, 0)?;
    let target = crate::batch::Target::Device(&opts);
    Ok((crate::tune::sweep(&jobs, target, seeds, configs, rt, false)?, device_warnings(&jobs)))
}

/// The warnings of runs of `jobs` on real devices: the jobs' own, and a kernel scheduler
/// below the policy.
fn device_warnings(jobs: &JobFile) -> Vec<String> {
    let files: Vec<String> =
        jobs.jobs.iter().flat_map(|spec| spec.clone_files().map(|(c, f)| spec.file_name_of(c, f))).collect();
    jobs.warnings
        .iter()
        .cloned()
        .chain(jobs.real_device_warnings())
        .chain(crate::realdev::kernel_scheduler_warnings(files.iter().map(Path::new)))
        .collect()
}

/// io_uring's options for a run on real devices with the default engine settings, once
/// io_uring is known to be available.
pub fn uring_options(allow_destructive: bool, seed: u64) -> Result<nvsched_uring::UringOptions, String> {
    nvsched_uring::available()?;
    Ok(nvsched_uring::UringOptions {
        safety: nvsched_uring::targets::Safety { allow_destructive, ..Default::default() },
        seed,
        ..nvsched_uring::UringOptions::default()
    })
}

/// [`run_uring`] with `--status-interval` dumps.
pub fn run_uring_with_status(
    jobs: &JobFile,
    policy: BuiltPolicy,
    opts: &nvsched_uring::UringOptions,
    timestamp_ms: u64,
    status: Option<nvsched_uring::StatusHook>,
) -> Result<(RunReport, nvsched_uring::UringOutcome), String> {
    let policy_spec = policy.spec.clone();
    let policy_id = policy.info.id;
    let given = policy.params.given.clone();
    let host_cost = policy.host_cost;
    let outcome = nvsched_uring::run_with_status(&jobs.jobs, policy.scheduler, opts, status)?;
    let clones: Vec<(u32, usize, &JobStats)> =
        outcome.clones.iter().map(|c| (c.reporting_group, c.job_index, &c.stats)).collect();
    let entries = reporting_entries(jobs, &clones);
    let by_tenant: Vec<(u32, &JobStats)> = outcome.clones.iter().map(|c| (c.tenant, &c.stats)).collect();
    let mut nvsched = Map::new();
    nvsched.insert("version".into(), json!(crate::VERSION));
    nvsched.insert("engine".into(), json!("uring"));
    nvsched.insert("kernel".into(), json!(outcome.kernel));
    nvsched.insert("seed".into(), json!(opts.seed));
    if outcome.interrupted {
        // a signal ended the run early: the figures cover what ran until then
        nvsched.insert("interrupted".into(), json!(true));
    }
    nvsched.insert("policy".into(), policy_value(&policy_spec, policy_id, &given, host_cost, &outcome.policy));
    nvsched.insert(
        "targets".into(),
        Value::Array(
            outcome
                .targets
                .iter()
                .map(|t| {
                    json!({
                        "path": t.path.display().to_string(),
                        "kind": if t.block_device { "block device" } else { "file" },
                        "created_by_nvsched": t.created,
                        "kept": t.created && t.kept,
                        "size_bytes": t.size,
                        "kernel_scheduler": t.kernel_scheduler,
                    })
                })
                .collect(),
        ),
    );
    nvsched.insert(
        "engine_counters".into(),
        json!({
            "requests": outcome.requests,
            "max_in_ring": outcome.max_in_ring,
            "completion_waits": outcome.waits,
            "ring_entries": opts.ring_entries,
            "sqthread_poll": outcome.sq_polled,
            "forced_async": outcome.forced_async,
            "cpu_user_s": outcome.cpu_user.as_secs_f64(),
            "cpu_sys_s": outcome.cpu_sys.as_secs_f64(),
            "cpu_per_io_us": outcome.cpu_per_io().as_secs_f64() * 1e6,
            "policy_per_io_us": outcome.policy_per_io().as_secs_f64() * 1e6,
            "io_errors": outcome.io_errors,
            "verified_blocks": outcome.verified_blocks,
            "verify_unsettled_writes": outcome.verify_unsettled,
            "verify_errors": outcome.verify_errors,
        }),
    );
    nvsched.insert("tenants".into(), tenants_of(&outcome.tenants, &by_tenant));
    nvsched.insert(
        "jobs".into(),
        Value::Array(entries.iter().map(|j| json!({ "jobname": j.name, "series": series_value(j) })).collect()),
    );
    let mut summary = vec![format!(
        "nvsched: policy {policy_spec} on {} via io_uring{} (kernel {}), {} requests, at most {} in the ring, {:.2} us CPU per I/O ({:.2} us of it in the policy)",
        outcome.targets.iter().map(|t| t.path.display().to_string()).collect::<Vec<_>>().join(", "),
        if outcome.sq_polled { " with submission polling" } else { "" },
        outcome.kernel,
        outcome.requests,
        outcome.max_in_ring,
        outcome.cpu_per_io().as_secs_f64() * 1e6,
        outcome.policy_per_io().as_secs_f64() * 1e6
    )];
    if outcome.verified_blocks > 0 || !outcome.verify_errors.is_empty() {
        summary.push(format!(
            "  verify: {} blocks checked, {} errors",
            outcome.verified_blocks,
            outcome.verify_errors.len()
        ));
    }
    let kept: Vec<String> =
        outcome.targets.iter().filter(|t| t.created && t.kept).map(|t| t.path.display().to_string()).collect();
    if !kept.is_empty() {
        summary.push(format!("  kept the files it laid out: {}", kept.join(", ")));
    }
    if outcome.verify_unsettled > 0 {
        summary.push(format!(
            "  verify: {} writes not checked: a write overlapping them in part was in flight with them, so either may have landed last (serialize_overlap=1 keeps such writes apart)",
            outcome.verify_unsettled
        ));
    }
    let replays: Vec<_> = outcome.clones.iter().map(|c| (c.job_index, c.clone, c.replay.as_ref())).collect();
    let (replay, replay_lines) = replay_report(jobs, &replays);
    if let Some(r) = replay {
        nvsched.insert("replay".into(), r);
    }
    summary.extend(replay_lines);
    let version = report_version();
    let header = nvsched_report::normal::run_header(&jobs.jobs, &version) + &layout_lines(&jobs.jobs, &outcome.targets);
    let report = RunReport {
        header,
        version,
        timestamp_ms,
        global_options: jobs.global_options.clone(),
        jobs: entries,
        disk_util: outcome.disk_util.clone(),
        nvsched: Value::Object(nvsched),
        summary_extra: summary,
        elapsed: outcome.end,
    };
    Ok((report, outcome))
}
