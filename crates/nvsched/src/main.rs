//! The `nvsched` command line.

use clap::{Args, CommandFactory, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use nvsched::batch::Target;
use nvsched::figures::RunSeries;
use nvsched::run::{run_sim, RunSpec};
use nvsched::tune::Center;
use nvsched_core::{Nanos, Op};
use nvsched_policy::{CgroupModel, PolicyInfo, Request, ALIASES, COMMON_PARAMS, POLICIES};
use nvsched_report::{CloneStatus, Format, StatusDump};
use nvsched_sim::Observer;
use nvsched_ssd::{builtin_profiles, load_profile, DeviceProfile};
use nvsched_workload::jobfile::HostEnvironment;
use nvsched_workload::trace::{TraceFormat, BLKTRACE_EVENT_BYTES};
use nvsched_workload::{parse_job_file_with, parse_job_str, parse_job_str_with, JobFile, ParseOptions};
use std::cell::RefCell;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

mod cli;
use cli::*;

/// Where `calibrate` writes its profile and `compare` looks for one by default.
const CALIBRATED: &str = "calibrated.toml";

/// Where `--status-interval` output goes before the final report: standard output, or
/// with `--output FILE` that file, rewritten (atomically) with everything so far at each
/// dump; the final report then follows it there, as fio writes its dumps into its output
/// file. A normal report's header comes first, before the run, and on real devices its
/// `Laying out IO file` lines once the files are ready, before the first dump, as fio
/// prints them.
#[derive(Clone, Default)]
struct StatusSink {
    file: Option<PathBuf>,
    /// What went to the file so far.
    written: Rc<RefCell<String>>,
    /// The part of the normal report's header that already went out (empty without the
    /// normal format).
    header: Rc<RefCell<String>>,
    normal: bool,
}

impl StatusSink {
    /// `None` without `--status-interval`; sends the header out at once.
    fn open(args: &RunArgs, formats: &[Format], jobs: &JobFile) -> Option<StatusSink> {
        args.status_interval?;
        let normal = formats.contains(&Format::Normal);
        let sink = StatusSink { file: args.output.clone(), normal, ..StatusSink::default() };
        if normal {
            sink.emit_header(nvsched_report::normal::run_header(&jobs.jobs, &nvsched::run::report_version()));
        }
        Some(sink)
    }

    fn emit_header(&self, text: String) {
        self.emit(&text);
        self.header.borrow_mut().push_str(&text);
    }

    fn emit(&self, text: &str) {
        match &self.file {
            Some(path) => {
                let mut written = self.written.borrow_mut();
                written.push_str(text);
                if let Err(e) = nvsched_report::write_atomic(path, written.as_bytes()) {
                    eprintln!("nvsched: cannot write '{}': {e}", path.display());
                }
            }
            None => {
                let mut out = std::io::stdout().lock();
                let _ =
                    std::io::Write::write_all(&mut out, text.as_bytes()).and_then(|()| std::io::Write::flush(&mut out));
            }
        }
    }

    /// The dump of the report so far, in `formats`, at each interval.
    fn dumps(&self, jobs: &JobFile, formats: &[Format]) -> StatusDump {
        let (sink, jobs, formats) = (self.clone(), jobs.clone(), formats.to_vec());
        Box::new(move |now, clones| sink.emit(&nvsched::run::status_report(&jobs, &clones, now).render_all(&formats)))
    }

    /// The io_uring status hook: the dumps, and the header's layout lines once the
    /// targets are ready.
    fn uring_hook(&self, jobs: &JobFile, formats: &[Format], every: Nanos) -> nvsched_uring::StatusHook {
        let (sink, specs) = (self.clone(), jobs.jobs.clone());
        let targets_ready: nvsched_uring::TargetsReady = Box::new(move |targets| {
            if sink.normal {
                sink.emit_header(nvsched::run::layout_lines(&specs, targets));
            }
        });
        nvsched_uring::StatusHook { every, dump: self.dumps(jobs, formats), targets_ready: Some(targets_ready) }
    }

    /// The final report's text, less the header that went out already; after what went
    /// to the file.
    fn finish(sink: Option<StatusSink>, report: &mut nvsched_report::RunReport, formats: &[Format]) -> String {
        let Some(sink) = sink else { return report.render_all(formats) };
        if let Some(rest) = report.header.strip_prefix(sink.header.borrow().as_str()) {
            report.header = rest.to_string();
        }
        let before = sink.written.borrow().clone();
        before + &report.render_all(formats)
    }
}

fn main() -> ExitCode {
    // Like other Unix tools, end quietly when the reader goes away (`nvsched options |
    // head`); Rust ignores SIGPIPE, so a print would panic instead.
    // SAFETY: restoring a signal's default disposition before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse_from(fio_options_after_dashes(std::env::args().collect()));
    let result = match cli.command {
        Command::Run(args) => cmd_run(args),
        Command::Policies(args) => print_policies(args.id.as_deref()),
        Command::Options(args) => cmd_options(args),
        Command::Trace(args) => cmd_trace(args),
        Command::Devices(args) => cmd_devices(args),
        Command::Bench(args) => cmd_bench(args),
        Command::Repro(args) => cmd_repro(args),
        Command::Sweep(args) => cmd_sweep(args),
        Command::Tune(args) => cmd_tune(args),
        Command::Calibrate(args) => cmd_calibrate(args),
        Command::Compare(args) => cmd_compare(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("nvsched: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// The run's report formats: `--output-format`, or terse under fio's `--minimal`.
fn output_formats(args: &RunArgs) -> Result<Vec<Format>, String> {
    parse_formats(if args.minimal { "terse" } else { &args.output_format })
}

fn parse_formats(list: &str) -> Result<Vec<Format>, String> {
    list.split(',')
        .map(|f| {
            Format::parse(f.trim())
                .ok_or_else(|| format!("--output-format: '{f}' is not one of normal, json, json+, terse"))
        })
        .collect()
}

/// Progress on stderr for runs over a second, in simulated time, and for the drive's
/// preparation before it when that takes over a second.
struct Progress {
    bar: ProgressBar,
    /// When the run started, or before that its preparation.
    started: Instant,
    shown: bool,
    enabled: bool,
    /// `--status-interval`: how often, and where the statistics so far go.
    status: Option<(Nanos, StatusDump)>,
    /// The drive's starting state (`precondition`), while it is being prepared.
    preparing: Option<(String, Option<ProgressBar>)>,
    /// How long preparing the drive took, once done.
    prepared_in: Option<Duration>,
}

impl Progress {
    fn new(total: Option<Nanos>, enabled: bool) -> Progress {
        let bar = match total {
            Some(t) => {
                let b = ProgressBar::with_draw_target(Some(t.0 / 1_000_000), ProgressDrawTarget::hidden());
                b.set_style(
                    ProgressStyle::with_template("{spinner} simulated {pos}/{len} ms [{bar:30}] {percent}% eta {eta}")
                        .expect("valid template")
                        .progress_chars("=> "),
                );
                b
            }
            None => {
                let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
                b.set_style(ProgressStyle::with_template("{spinner} simulated {pos} ms").expect("valid template"));
                b
            }
        };
        Progress {
            bar,
            started: Instant::now(),
            shown: false,
            enabled,
            status: None,
            preparing: None,
            prepared_in: None,
        }
    }

    /// Names the drive state `on_preparing` shows the preparation of.
    fn preparing(mut self, precondition: &str) -> Progress {
        self.preparing = Some((precondition.to_string(), None));
        self
    }

    /// The wall-clock time the run itself took (after preparing the drive).
    fn run_wall(&self) -> Duration {
        self.started.elapsed()
    }
}

impl Observer for Progress {
    fn on_progress(&mut self, now: Nanos) {
        if !self.enabled {
            return;
        }
        if !self.shown && self.started.elapsed().as_secs_f64() > 1.0 {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
        self.bar.set_position(now.0 / 1_000_000);
    }
    fn on_preparing(&mut self, done: f64) {
        let Some((state, bar)) = &mut self.preparing else { return };
        if done >= 1.0 {
            // the run starts now: its progress and rate leave the preparation out
            if let Some(bar) = bar.take() {
                bar.finish_and_clear();
            }
            self.preparing = None;
            self.prepared_in = Some(self.started.elapsed());
            self.started = Instant::now();
            self.bar.reset();
            return;
        }
        if bar.is_none() && self.enabled && self.started.elapsed().as_secs_f64() > 1.0 {
            let b = ProgressBar::new(1000);
            b.set_style(
                ProgressStyle::with_template(&format!(
                    "{{spinner}} preparing the drive's {state} state [{{bar:30}}] {{percent}}% eta {{eta}}"
                ))
                .expect("valid template")
                .progress_chars("=> "),
            );
            b.enable_steady_tick(Duration::from_millis(100));
            *bar = Some(b);
        }
        if let Some(b) = bar {
            b.set_position((done * 1000.0) as u64);
        }
    }
    fn on_dispatch(&mut self, _: Nanos, _: &Request, _: u32) {}
    fn stop_requested(&mut self) -> bool {
        nvsched::run::StopOnSignal.stop_requested()
    }
    fn status_every(&self) -> Option<Nanos> {
        self.status.as_ref().map(|(every, _)| *every)
    }
    fn on_status(&mut self, now: Nanos, clones: Vec<CloneStatus>) {
        if let Some((_, dump)) = &mut self.status {
            self.bar.suspend(|| dump(now, clones));
        }
    }
}

/// Expected simulated length when every job is time based.
fn expected_length(jobs: &JobFile) -> Option<Nanos> {
    let mut total = Nanos::ZERO;
    let mut phase_max = Nanos::ZERO;
    for (i, j) in jobs.jobs.iter().enumerate() {
        if !j.time_based {
            return None;
        }
        if i > 0 && j.stonewall {
            total += phase_max;
            phase_max = Nanos::ZERO;
        }
        phase_max = phase_max.max(j.ramp_time + j.runtime);
    }
    Some(total + phase_max)
}

fn load_jobs(path: &Path, ignore_unsupported: bool, set: &JobSetArgs) -> Result<JobFile, String> {
    let every_job = set.options()?;
    parse_job_file_with(path, &HostEnvironment, ParseOptions { ignore_unsupported }, &every_job)
        .map_err(|e| e.to_string())
}

impl JobSetArgs {
    /// `--job-set`'s options, read as job-file lines.
    fn options(&self) -> Result<Vec<nvsched_workload::RawOption>, String> {
        nvsched_workload::command_line_options("--job-set", &self.job_set, &HostEnvironment).map_err(|e| e.to_string())
    }
}

/// `run`'s jobs: from the job file, or from fio-style options after `--`; only the
/// sections `--section` names, if it is given.
fn run_jobs(args: &RunArgs) -> Result<JobFile, String> {
    let mut jobs = all_run_jobs(args)?;
    if !args.section.is_empty() {
        let known: Vec<&str> = jobs.jobs.iter().map(|j| j.name.as_str()).collect();
        if let Some(missing) = args.section.iter().find(|s| !known.contains(&s.as_str())) {
            let mut names = known.clone();
            names.dedup();
            return Err(format!(
                "--section {missing}: there is no job section of that name (jobs: {})",
                names.join(", ")
            ));
        }
        jobs.jobs.retain(|j| args.section.contains(&j.name));
    }
    if args.readonly {
        leave_out_replayed_writes(&mut jobs);
        if let Some(j) = jobs.jobs.iter().find(|j| j.writes_data()) {
            return Err(format!("job '{}' ({}) writes or trims, and --readonly forbids that", j.name, j.at));
        }
    }
    Ok(jobs)
}

/// `--merge-blktrace-only`: the jobs' merged blktraces are written, and nothing runs.
fn merge_blktraces_only(args: &RunArgs) -> Result<(), String> {
    let jobs = run_jobs(args)?;
    print_warnings(&jobs.warnings);
    let mut written = 0;
    for spec in &jobs.jobs {
        if let Some(path) = nvsched_report::write_merged_blktrace(spec)? {
            let traces = spec.replay.read_iolog.as_deref().map_or(0, |names| names.split(':').count());
            let events = spec.replay.merged.as_ref().map_or(0, |m| m.len() / BLKTRACE_EVENT_BYTES);
            eprintln!("nvsched: job '{}': {traces} blktraces merged into {path} ({events} events)", spec.name);
            written += 1;
        }
    }
    if written == 0 {
        return Err(
            "--merge-blktrace-only: no job merges blktraces (read_iolog=A:B:... with merge_blktrace_file)".into()
        );
    }
    Ok(())
}

/// `--readonly`: a replay leaves out its trace's writes and trims, as fio 3.33 skips them,
/// where a job that generates writes is refused. An iolog's syncs stay (they write no
/// data); a block-layer capture's flushes go with the writes, as fio skips every blktrace
/// event that carries the write bit, and a flush does (`FWS`).
fn leave_out_replayed_writes(jobs: &mut JobFile) {
    for j in &mut jobs.jobs {
        let Some(trace) = j.trace().cloned() else { continue };
        let count = |op: Op| trace.records.iter().filter(|r| r.op == op && !j.replay.skip[op.index()]).count();
        let captured = matches!(trace.format, TraceFormat::Blktrace | TraceFormat::Blkparse | TraceFormat::Ftrace);
        let mut left_out = vec![Op::Write, Op::Discard];
        if captured {
            left_out.push(Op::Flush);
        }
        let counts: Vec<String> = left_out
            .iter()
            .map(|&op| (op, count(op)))
            .filter(|&(_, n)| n > 0)
            .map(|(op, n)| format!("{n} {}", replayed_kind(op)))
            .collect();
        if !counts.is_empty() {
            jobs.warnings.push(format!(
                "{}: job '{}': --readonly: its trace's {} are left out, as fio skips them{}",
                j.at,
                j.name,
                join_and(&counts),
                if captured && count(Op::Flush) > 0 { " (a captured flush carries the write bit)" } else { "" }
            ));
        }
        for op in left_out {
            j.replay.skip[op.index()] = true;
        }
    }
}

fn replayed_kind(op: Op) -> &'static str {
    match op {
        Op::Read => "reads",
        Op::Write => "writes",
        Op::Discard => "trims",
        Op::Flush => "flushes",
    }
}

/// "a", "a and b", "a, b and c".
fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

fn all_run_jobs(args: &RunArgs) -> Result<JobFile, String> {
    match (&args.jobfile, args.job_options.as_slice()) {
        (Some(path), []) => load_jobs(path, args.ignore_unsupported, &args.job_set),
        (None, []) => Err("no jobs: give a job file, or the jobs as fio's options after -- \
                           (e.g. nvsched run -- --name=r --rw=randread --size=1g)"
            .to_string()),
        (Some(_), options) => Err(format!(
            "give either a job file or jobs as fio's command-line options, not both (options given: {})",
            options.join(" ")
        )),
        (None, options) => {
            // after an explicit --, a flag of run's own would otherwise be read as a job
            // option, and its value as a stray word
            let own = run_flags();
            let is_run_flag = |key: &str| own.iter().any(|f| f == key);
            for (i, arg) in options.iter().enumerate() {
                let key = arg.strip_prefix("--").map(|o| o.split_once('=').map_or(o, |(k, _)| k));
                if let Some(key) = key.filter(|k| is_run_flag(k) && nvsched_workload::find_option(k).is_none()) {
                    return Err(format!(
                        "option {} after --: '--{key}' is a flag of nvsched run, not a fio job option: \
                         put it before the -- (or leave the -- out)",
                        i + 1
                    ));
                }
            }
            let opts = ParseOptions { ignore_unsupported: args.ignore_unsupported };
            let text = command_line_job_text(options)?;
            let every_job = args.job_set.options()?;
            parse_job_str_with(&text, Path::new(COMMAND_LINE), &HostEnvironment, opts, &every_job).map_err(|e| {
                // the text's line N+1 is the N-th option after --
                let e = e.to_string();
                let Some(rest) = e.strip_prefix(&format!("{COMMAND_LINE}:")) else { return e };
                match rest.split_once(':').and_then(|(n, tail)| Some((n.parse::<usize>().ok()?, tail))) {
                    Some((line, tail)) => format!("option {} after --:{tail}", line.saturating_sub(1)),
                    None => e,
                }
            })
        }
    }
}

const COMMAND_LINE: &str = "(command line)";

/// fio's command-line jobs as job-file text, one option per line after `[global]`, so
/// line N+1 is the N-th option: `--name=NAME` opens a job section.
fn command_line_job_text(options: &[String]) -> Result<String, String> {
    let mut text = String::from("[global]\n");
    let mut jobs = 0;
    for (i, arg) in options.iter().enumerate() {
        let Some(option) = arg.strip_prefix("--").filter(|o| !o.is_empty()) else {
            return Err(format!("option {} after --: '{arg}' is not --OPTION[=VALUE]", i + 1));
        };
        if option == "name" || option.starts_with("name=") {
            let name = option.strip_prefix("name=").unwrap_or("").trim();
            if name.is_empty() || name.contains(['[', ']']) {
                return Err(format!("option {} after --: --name needs a job name (without brackets)", i + 1));
            }
            jobs += 1;
            text.push_str(&format!("[{name}]\n"));
        } else {
            text.push_str(option);
            text.push('\n');
        }
    }
    if jobs == 0 {
        return Err("no job among the options after --: start one with --name=NAME, as fio needs".to_string());
    }
    Ok(text)
}

fn cmd_run(args: RunArgs) -> Result<(), String> {
    if args.merge_blktrace_only {
        return merge_blktraces_only(&args);
    }
    if args.parse_only {
        let jobs = run_jobs(&args)?;
        print_warnings(&jobs.warnings);
        let clones: u32 = jobs.jobs.iter().map(|j| j.numjobs).sum();
        eprintln!("nvsched: {} job(s), {clones} clone(s): parsed", jobs.jobs.len());
        return Ok(());
    }
    if args.engine == "uring" {
        return cmd_run_uring(args);
    }
    let uring_only = [
        ("--allow-destructive", args.allow_destructive),
        ("--keep-files", args.keep_files),
        ("--poll", args.poll),
        ("--prefill", args.prefill),
        ("--inject-errors", args.inject_errors.is_some()),
    ];
    if let Some((flag, _)) = uring_only.iter().find(|(_, set)| *set) {
        return Err(format!("{flag} applies to real devices only: add --engine uring"));
    }
    let formats = output_formats(&args)?;
    let jobs = run_jobs(&args)?;
    let profile = args.device.load(jobs.precondition().map_err(|e| e.to_string())?)?;
    let (policy, override_warning) = nvsched::run::choose_policy(args.sched.as_deref(), "--sched", &jobs)?;
    prepare_outputs(&args)?;
    print_warnings(nvsched::repro::run_memory_warning(&profile));
    nvsched_uring::stop_on_interrupt();
    let show = !args.quiet && std::io::stderr().is_terminal();
    let mut progress = Progress::new(expected_length(&jobs), show).preparing(profile.precondition());
    let sink = StatusSink::open(&args, &formats, &jobs);
    progress.status = sink.as_ref().zip(args.status_interval).map(|(s, every)| (every, s.dumps(&jobs, &formats)));
    let (mut report, outcome) = run_sim(
        RunSpec { jobs: &jobs, policy, profile: &profile, seed: args.seed, drive_states: None },
        &mut progress,
        nvsched::run::timestamp_ms(),
    )?;
    progress.bar.finish_and_clear();
    let series = RunSeries { policy_id: outcome.policy_id, policy: &outcome.policy, device: Some(&outcome.device) };
    write_figures(&report, &series, &args)?;
    emit(&StatusSink::finish(sink, &mut report, &formats), &args.output)?;
    if !args.quiet {
        let secs = progress.run_wall().as_secs_f64();
        let prepared = match progress.prepared_in {
            Some(took) if took.as_secs_f64() >= 0.01 => {
                format!(", after {:.2}s preparing the drive's {} state", took.as_secs_f64(), profile.precondition())
            }
            _ => String::new(),
        };
        eprintln!(
            "nvsched: simulated {} in {:.2}s wall ({:.2} M requests/s){prepared}",
            outcome.end,
            secs,
            outcome.engine.requests as f64 / secs / 1e6
        );
    }
    let page_cache = profile.host.page_cache.size_bytes > 0;
    print_warnings(jobs.warnings.iter().chain(&override_warning).chain(&jobs.simulation_warnings(page_cache)));
    if outcome.interrupted {
        return Err(format!("interrupted after {} simulated: the report covers what ran until then", outcome.end));
    }
    failed_jobs(&report)
}

/// `--inject-errors N[:ERRNO]`: every Nth request fails with ERRNO (EIO by default).
fn parse_inject_errors(v: &str) -> Result<(u64, i32), String> {
    let (every, errno) = v.split_once(':').unwrap_or((v, "5"));
    let every: u64 = every.parse().map_err(|_| format!("'{every}' is not a count"))?;
    let errno: i32 = errno.parse().map_err(|_| format!("'{errno}' is not an errno"))?;
    if every == 0 || errno <= 0 {
        return Err("N and ERRNO must be positive".into());
    }
    Ok((every, errno))
}

/// A job that failed (`max_latency`, `latency_target`, `rate_min`, a failed I/O) makes
/// the run fail, after its report is out, as fio exits 1 then; each failure is named
/// with what fio prints for it.
fn failed_jobs(report: &nvsched_report::RunReport) -> Result<(), String> {
    let failed: Vec<&str> = report
        .jobs
        .iter()
        .filter_map(|j| {
            let e = j.error.as_ref()?;
            eprintln!("nvsched: job '{}': {}: err={} ({})", j.name, e.detail, e.errno, e.func);
            Some(j.name.as_str())
        })
        .collect();
    match failed.as_slice() {
        [] => Ok(()),
        names => Err(format!("{} job(s) failed: {}", names.len(), names.join(", "))),
    }
}

fn cmd_repro(args: ReproArgs) -> Result<(), String> {
    nvsched_uring::stop_on_interrupt();
    if let Some(n) = args.jobs {
        rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build_global().map_err(|e| e.to_string())?;
    }
    let device =
        nvsched::repro::OnDevice { profile: args.device.clone(), set: cli::device_set_pairs(&args.device_set)? };
    for (name, out) in nvsched::repro::targets(&args.name, args.out.as_deref())? {
        print_warnings(nvsched::repro::memory_warning(&name, &device, rayon::current_num_threads())?);
        let opts = nvsched::repro::Options {
            quick: args.quick,
            out: out.clone(),
            force: args.force,
            progress: !args.quiet,
            plots: !args.no_plots,
            device: device.clone(),
        };
        let wall = Instant::now();
        let outcome = nvsched::repro::run(&name, &opts)?;
        println!("{}", nvsched::repro::console_table(&outcome));
        let simulated = outcome.runs.iter().filter(|r| !r.cached).count();
        eprintln!(
            "nvsched: {name}: {} runs ({simulated} simulated, {} from cache) in {:.1}s; results in {}",
            outcome.runs.len(),
            outcome.runs.len() - simulated,
            wall.elapsed().as_secs_f64(),
            out.display()
        );
    }
    Ok(())
}

fn cmd_tune(args: TuneArgs) -> Result<(), String> {
    nvsched_uring::stop_on_interrupt();
    let id = args.policy.split(':').next().unwrap_or_default().trim();
    match id {
        _ if !args.param.is_empty() => tune_sweep(args),
        "k2" => tune_sweep(args),
        "iocost" if id == args.policy.trim() => tune_iocost(args),
        _ => Err(format!(
            "tune {}: give --param NAME=V1,V2,... (the values to try); without it tune knows 'k2' (its bound) \
             and 'iocost' (its cost model)",
            args.policy
        )),
    }
}

/// `tune k2` (K2's bound, by the K2 analysis' rules) and `tune POLICY --param ...` (any
/// parameters, by the measurements).
fn tune_sweep(args: TuneArgs) -> Result<(), String> {
    let what = format!("tune {}", args.policy);
    if args.size.is_some() {
        return Err(format!("{what}: --size is tune iocost's; here the job file gives the sizes"));
    }
    let objective =
        args.objective.as_deref().ok_or(format!("{what} needs --objective latency:ALPHA% or bandwidth:BETA%"))?;
    let objective = nvsched::tune::Objective::parse(objective)?;
    let k2_bounds = args.param.is_empty();
    let (configs, sweeping): (Vec<(String, Option<u32>)>, String) = if k2_bounds {
        let bounds = args.bounds.clone().unwrap_or_else(|| vec![1, 2, 4, 8, 16, 32, 64]);
        if bounds.is_empty() || bounds.contains(&0) {
            return Err("--bounds: give bounds >= 1".into());
        }
        let base = nvsched_policy::build(&args.policy).map_err(|e| e.to_string())?;
        if base.params.is_given("bound") {
            return Err(format!("tune k2 sweeps the bound (--bounds): leave it out of '{}'", args.policy));
        }
        (nvsched::tune::k2_configs(&args.policy, &bounds), format!("{} bounds {bounds:?}", args.policy))
    } else {
        let specs = nvsched::tune::grid(&args.policy, &args.param)?;
        let sweeping = format!("{} setting(s) of {}", specs.len(), args.policy);
        (specs.into_iter().map(|spec| (spec, None)).collect(), sweeping)
    };
    let path = args.jobfile.clone().unwrap_or_else(|| nvsched::project_path("examples/k2-mix.fio"));
    let (jobs, profile, source, seeds) = args.setup.load(&path)?;
    let (rt, job) = nvsched::tune::check_jobs(&jobs, &source, args.job.as_deref())?;
    if let Some(path) = &args.output {
        check_directory_of("--output", path)?;
    }
    if let Some(dir) = &args.plot {
        std::fs::create_dir_all(dir).map_err(|e| format!("--plot '{}': {e}", dir.display()))?;
    }
    if let Some((theirs, at)) = jobs.ioscheduler().map_err(|e| e.to_string())? {
        eprintln!("warning: {at}: ioscheduler={theirs} is not used: tune compares none and the settings it tries");
    }
    print_warnings(nvsched::sweep::cgroup_warnings(&[configs[0].0.clone()], &jobs));
    let device =
        RealDevice::of(args.filename.as_deref(), args.engine.as_deref(), args.allow_destructive, &args.setup, &jobs)?;
    let Runs { jobs, target, on, center } = Runs::on(&device, &jobs, &profile, args.setup.center);
    warn_of_memory("tune", &target, (configs.len() + 1) * seeds.len());
    if !args.quiet {
        let over = if seeds.len() > 1 { format!(", {} seeds each", seeds.len()) } else { String::new() };
        eprintln!("nvsched: sweeping none and {sweeping} on {on}{over} ...");
        if let Some(notice) = device.as_ref().and_then(RealDevice::creation_notice) {
            eprintln!("{notice}");
        }
    }
    let rows = nvsched::tune::sweep(jobs, target, &seeds, &configs, rt, !args.quiet)?;
    let (chosen, why) = if k2_bounds {
        let (bound, why) = nvsched::tune::choose(&rows, objective, center);
        (bound.and_then(|b| configs.iter().find(|c| c.1 == Some(b))).map(|c| c.0.clone()), why)
    } else {
        nvsched::tune::choose_setting(&rows, objective, nvsched::tune::SETTINGS, center)
    };
    let setup = nvsched::tune::Setup { policy: &args.policy, objective, job: &job, device: &on, seeds: &seeds, center };
    if let Some(dir) = &args.plot {
        let stem = dir.join("tune");
        nvsched::tune::figure(&rows, &setup, chosen.as_deref()).save(&stem)?;
        if !args.quiet {
            eprintln!("nvsched: wrote {}.png and .svg", stem.display());
        }
    }
    let text = match args.output_format.as_str() {
        "json" => format!("{:#}\n", nvsched::tune::to_json(&rows, &setup, chosen.as_deref(), &why)),
        _ => {
            let use_line = chosen.as_ref().map_or(String::new(), |spec| format!("Use: --sched {spec}\n"));
            let table = nvsched::tune::table(&rows, chosen.as_deref(), args.job.as_deref(), center);
            format!("{table}\n{why}\n{use_line}")
        }
    };
    write_or_print(args.output.as_deref(), &text)
}

fn tune_iocost(args: TuneArgs) -> Result<(), String> {
    if args.objective.is_some()
        || args.job.is_some()
        || args.bounds.is_some()
        || args.output.is_some()
        || args.plot.is_some()
        || args.output_format != "normal"
        || args.engine.is_some()
    {
        return Err("tune iocost measures a cost model and takes no --objective, --job, --bounds, --output, \
                    --output-format, --plot or --engine (with --param it tunes iocost's parameters; --filename \
                    measures a real device)"
            .into());
    }
    if args.allow_destructive && args.filename.is_none() {
        return Err("--allow-destructive is for real devices: add --filename".into());
    }
    if args.seconds == 0 || args.numjobs == 0 {
        return Err("--seconds and --numjobs must be at least 1".into());
    }
    if args.filename.is_some() && args.jobfile.is_some() {
        return Err(
            "tune iocost --filename measures the device as the kernel's script does: it takes no job file".into()
        );
    }
    let model = match &args.filename {
        Some(path) => tune_iocost_real(path, &args)?,
        None => {
            let path = args.jobfile.clone().unwrap_or_else(|| nvsched::project_path("examples/iocost-weights.fio"));
            let (_, profile, _, _) = args.setup.load(&path)?;
            if !args.quiet {
                eprintln!(
                    "nvsched: measuring io.cost's model on {} ({}): 6 runs of {} s ...",
                    profile.name,
                    profile.precondition(),
                    args.seconds
                );
            }
            nvsched::iocost_model::measure(&profile, args.seconds, args.numjobs, !args.quiet)?
        }
    };
    print!("{}", nvsched::iocost_model::table(&model));
    println!("\nio.cost.model (as the kernel's iocost_coef_gen.py would write it for this drive):");
    println!("{}", nvsched::iocost_model::model_line(&model));
    println!(
        "\nAt vrate 100% this model says what the drive does alone. On NVMe nothing else marks \
         the drive busy, so add max=100 (or a latency target, rpct=/rlat=) for the weights to hold."
    );
    println!("Use: --sched {}", nvsched::iocost_model::sched_spec(&model));
    Ok(())
}

fn cmd_sweep(args: SweepArgs) -> Result<(), String> {
    nvsched_uring::stop_on_interrupt();
    let mut policies: Vec<String> = if args.sched.is_empty() {
        ["none", "mq-deadline", "kyber", "bfq"].map(String::from).to_vec()
    } else {
        args.sched.clone()
    };
    let objective = args.objective.as_deref().map(nvsched::tune::Objective::parse).transpose()?;
    if objective.is_some() && !policies.iter().any(|p| p == nvsched::tune::REFERENCE) {
        // the objective's limits are fractions of none's figures
        policies.insert(0, nvsched::tune::REFERENCE.to_string());
    }
    nvsched::sweep::check_policies(&policies)?;
    let jobfile = args.jobfile.as_deref().unwrap_or(Path::new("-"));
    let (jobs, profile, _, seeds) = args.setup.load(jobfile)?;
    if let Some((theirs, at)) = jobs.ioscheduler().map_err(|e| e.to_string())? {
        eprintln!("warning: {at}: ioscheduler={theirs} is not used: sweep runs the policies of --sched");
    }
    print_warnings(nvsched::sweep::cgroup_warnings(&policies, &jobs));
    if let Some(path) = &args.output {
        check_directory_of("--output", path)?;
    }
    if let Some(dir) = &args.plot {
        std::fs::create_dir_all(dir).map_err(|e| format!("--plot '{}': {e}", dir.display()))?;
    }
    let device =
        RealDevice::of(args.filename.as_deref(), args.engine.as_deref(), args.allow_destructive, &args.setup, &jobs)?;
    let Runs { jobs, target, on, center } = Runs::on(&device, &jobs, &profile, args.setup.center);
    warn_of_memory("sweep", &target, policies.len() * seeds.len());
    let show = !args.quiet;
    if show {
        let counted = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        eprintln!(
            "nvsched: {} x {} on {on}, {}",
            counted(policies.len(), "policy", "policies"),
            counted(seeds.len(), "seed", "seeds"),
            counted(policies.len() * seeds.len(), "run", "runs")
        );
        if let Some(notice) = device.as_ref().and_then(RealDevice::creation_notice) {
            eprintln!("{notice}");
        }
    }
    let progress = nvsched::progress::RunProgress::new("sweep", policies.len() * seeds.len(), show);
    let runs = nvsched::sweep::run(jobs, target, &policies, &seeds, &progress)?;
    let summaries = nvsched::sweep::summarize(&runs, center);
    if let (Some(dir), Some(focus)) = (&args.plot, &runs[0].focus) {
        let stem = dir.join("sweep");
        nvsched::sweep::figure(&summaries, focus, objective).save(&stem)?;
        if show {
            eprintln!("nvsched: wrote {}.png and .svg", stem.display());
        }
    }
    let choice = objective.map(|o| nvsched::sweep::choose(&runs, o, center));
    let text = match args.output_format.as_str() {
        "json" => {
            let mut v = nvsched::sweep::to_json(&summaries, &seeds, &on, center);
            if let (Some(objective), Some((chosen, why))) = (&args.objective, &choice) {
                v["nvsched_sweep"]["choice"] = serde_json::json!({
                    "objective": objective, "job": runs[0].focus, "chosen": chosen, "why": why,
                });
            }
            format!("{v:#}\n")
        }
        _ => {
            let mut text = nvsched::sweep::table(&summaries);
            if let Some((chosen, why)) = &choice {
                text += &format!("\n{why}\n");
                if let Some(spec) = chosen {
                    text += &format!("Use: --sched {spec}\n");
                }
            }
            text
        }
    };
    write_or_print(args.output.as_deref(), &text)
}

/// `text` to `path` (atomically), else to standard output.
fn write_or_print(path: Option<&Path>, text: &str) -> Result<(), String> {
    match path {
        Some(path) => {
            nvsched_report::write_atomic(path, text.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))
        }
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

/// The jobs, device and repetitions' seeds of one cell of a reproduction
/// (`NAME:VARIANT[:STATE]`), with the user's `--device-set` applied on top of the
/// manifest's.
fn experiment_cell(
    cell: &str,
    quick: bool,
    device: &DeviceArgs,
    set: &JobSetArgs,
) -> Result<(JobFile, DeviceProfile, Vec<u64>), String> {
    let mut parts = cell.splitn(3, ':');
    let (Some(name), Some(variant)) = (parts.next(), parts.next()) else {
        return Err(format!("--experiment '{cell}': expected NAME:VARIANT[:STATE], e.g. k2-analysis:randread"));
    };
    let on = nvsched::repro::OnDevice { profile: device.device.clone(), set: Vec::new() };
    let (manifest, setup) = nvsched::repro::cell(name, variant, parts.next(), quick, &on)?;
    let every_job = set.options()?;
    let jobs =
        parse_job_str_with(&setup.job_text, &setup.job_path, &HostEnvironment, ParseOptions::default(), &every_job)
            .map_err(|e| e.to_string())?;
    let profile = device.load_over(&manifest.device, setup.overrides, None)?;
    Ok((jobs, profile, setup.seeds))
}

/// Checks before a run, not after it, that its report and figures can be written: the
/// report file's directory must exist, and the figures' directory is created now.
fn prepare_outputs(args: &RunArgs) -> Result<(), String> {
    if let Some(path) = &args.output {
        check_directory_of("--output", path)?;
    }
    if let Some(dir) = &args.plot {
        std::fs::create_dir_all(dir).map_err(|e| format!("--plot '{}': {e}", dir.display()))?;
    }
    Ok(())
}

/// A file can be written only into a directory that exists: said before a long run.
fn check_directory_of(flag: &str, path: &Path) -> Result<(), String> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(format!("{flag} '{}': there is no directory '{}'", path.display(), dir.display()));
    }
    nvsched_report::check_output_path(path).map_err(|e| format!("{flag} '{}': {e}", path.display()))
}

/// Writes a run's figures (`--plot`).
fn write_figures(report: &nvsched_report::RunReport, series: &RunSeries, args: &RunArgs) -> Result<(), String> {
    if let Some(dir) = &args.plot {
        for name in nvsched::figures::run_figures(report, series, dir)? {
            eprintln!("nvsched: wrote {}", dir.join(name).display());
        }
    }
    Ok(())
}

fn emit(text: &str, output: &Option<PathBuf>) -> Result<(), String> {
    match output {
        Some(path) => nvsched_report::write_atomic(path, text.as_bytes())
            .map_err(|e| format!("cannot write '{}': {e}", path.display())),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

/// Prints each warning on standard error.
fn print_warnings<W: std::fmt::Display>(warnings: impl IntoIterator<Item = W>) {
    for w in warnings {
        eprintln!("warning: {w}");
    }
}

fn cmd_run_uring(args: RunArgs) -> Result<(), String> {
    let formats = output_formats(&args)?;
    let jobs = run_jobs(&args)?;
    let (policy, override_warning) = nvsched::run::choose_policy(args.sched.as_deref(), "--sched", &jobs)?;
    nvsched_uring::available()?;
    nvsched_uring::stop_on_interrupt();
    let opts = nvsched_uring::UringOptions {
        ring_entries: args.ring_entries.max(1),
        poll: args.poll,
        safety: nvsched_uring::targets::Safety { allow_destructive: args.allow_destructive, ..Default::default() },
        keep_files: args.keep_files,
        prefill: args.prefill,
        seed: args.seed,
        inject_errors: args.inject_errors,
    };
    prepare_outputs(&args)?;
    let sink = StatusSink::open(&args, &formats, &jobs);
    let status = sink.as_ref().zip(args.status_interval).map(|(s, every)| s.uring_hook(&jobs, &formats, every));
    let (mut report, outcome) =
        nvsched::run::run_uring_with_status(&jobs, policy, &opts, nvsched::run::timestamp_ms(), status)?;
    let series = RunSeries { policy_id: outcome.policy_id, policy: &outcome.policy, device: None };
    write_figures(&report, &series, &args)?;
    emit(&StatusSink::finish(sink, &mut report, &formats), &args.output)?;
    let below = nvsched::realdev::kernel_scheduler_warnings(outcome.targets.iter().map(|t| t.path.as_path()));
    print_warnings(jobs.warnings.iter().chain(&override_warning).chain(&jobs.real_device_warnings()).chain(&below));
    for e in outcome.io_errors.iter().take(10) {
        eprintln!("nvsched: I/O error: {e}");
    }
    for e in outcome.verify_errors.iter().take(20) {
        eprintln!("nvsched: {e}");
    }
    if !outcome.verify_errors.is_empty() {
        return Err(format!("verify failed: {} bad block(s)", outcome.verify_errors.len()));
    }
    if outcome.interrupted {
        return Err(format!("interrupted after {}: the report covers what ran until then", outcome.end));
    }
    // a failed I/O fails its job unless continue_on_error covers it
    failed_jobs(&report)
}

/// `sweep` and `tune` on real devices (`--filename`, `--engine uring`): the jobs, on
/// PATH or on their own files, and io_uring's options.
struct RealDevice {
    /// What the runs are on: PATH, or the job file's files.
    files: Vec<String>,
    jobs: JobFile,
    opts: nvsched_uring::UringOptions,
}

impl RealDevice {
    /// None for the simulator; an error if an option describes the simulated drive.
    fn of(
        path: Option<&Path>,
        engine: Option<&str>,
        allow_destructive: bool,
        setup: &SweepSetup,
        jobs: &JobFile,
    ) -> Result<Option<RealDevice>, String> {
        match (path, engine) {
            (Some(_), Some("sim")) => return Err("--filename runs on a real device: leave out --engine sim".into()),
            (None, None | Some("sim")) if allow_destructive => {
                return Err("--allow-destructive is for real devices: add --filename or --engine uring".into())
            }
            (None, None | Some("sim")) => return Ok(None),
            _ => {}
        }
        setup.check_real_device()?;
        let jobs = match path {
            Some(path) => nvsched::realdev::retarget(jobs, path),
            None => jobs.clone(),
        };
        let mut files: Vec<String> = Vec::new();
        for spec in &jobs.jobs {
            for name in (0..spec.files_per_clone()).map(|f| spec.file_name_of(0, f)) {
                if !files.contains(&name) {
                    files.push(name);
                }
            }
        }
        print_warnings(jobs.real_device_warnings());
        on_real_device(files.iter().map(Path::new));
        Ok(Some(RealDevice { files, jobs, opts: nvsched::run::uring_options(allow_destructive, 0)? }))
    }

    /// How the tables and messages name it.
    fn name(&self) -> String {
        format!("{} (real, io_uring)", self.files.join(", "))
    }

    /// What the first run creates, said before the runs: a large new file takes its
    /// layout's time before that run's I/O starts, and the runs after reuse it.
    fn creation_notice(&self) -> Option<String> {
        // past this, say how to make the files smaller
        const LARGE_BYTES: u64 = 8 << 30;
        // each new file, the most any job needs of it (None: no size), and whether a
        // fill_device job grows it
        let new_files: Vec<(String, Option<u64>, bool)> = self
            .files
            .iter()
            .filter(|name| !nvsched_uring::targets::is_device_node(name) && !Path::new(name).exists())
            .map(|name| {
                let naming: Vec<_> = self
                    .jobs
                    .jobs
                    .iter()
                    .flat_map(|spec| {
                        spec.clone_files()
                            .filter(|&(c, f)| spec.file_name_of(c, f) == *name)
                            .map(move |(c, f)| (spec, c, f))
                    })
                    .collect();
                let bytes = naming.iter().filter_map(|(spec, c, f)| spec.needed_file_bytes(*c, *f, None)).max();
                let fills = naming.iter().any(|(spec, _, _)| spec.fill_device);
                (name.clone(), bytes, fills)
            })
            .collect();
        let listed: Vec<String> = new_files
            .iter()
            .map(|(name, bytes, fills)| match (fills, bytes) {
                (true, None) => format!("'{name}' (growing until its file system is full: fill_device)"),
                (true, Some(b)) => format!("'{name}' (up to {}: fill_device)", bytes_text(*b)),
                (false, b) => format!("'{name}' ({})", bytes_text(b.unwrap_or(0))),
            })
            .collect();
        let large = new_files.iter().any(|(_, bytes, fills)| bytes.map_or(*fills, |b| b > LARGE_BYTES));
        (!new_files.is_empty()).then(|| {
            format!(
                "nvsched: the first run creates {} as fio lays out a job's file; the later runs reuse it, and it is removed at the end{}",
                join_and(&listed),
                if large { " (`--job-set size=SIZE` sets a smaller size for every job)" } else { "" }
            )
        })
    }
}

/// Where the runs of `sweep` and `tune` go, and how their repetitions make one figure.
struct Runs<'a> {
    jobs: &'a JobFile,
    target: Target<'a>,
    /// How the tables and messages name the device.
    on: String,
    /// As `--center` says, else medians on a real device, whose tail changes from run to
    /// run (one outlier would move a mean), and means in simulation.
    center: Center,
}

impl<'a> Runs<'a> {
    /// On `device` where there is one, else on the simulated `profile` with `jobs`; the
    /// center `--center` names, else the target's own.
    fn on(
        device: &'a Option<RealDevice>,
        jobs: &'a JobFile,
        profile: &'a DeviceProfile,
        center: Option<Center>,
    ) -> Runs<'a> {
        let chosen = |default| center.unwrap_or(default);
        match device {
            Some(d) => {
                Runs { jobs: &d.jobs, target: Target::Device(&d.opts), on: d.name(), center: chosen(Center::Median) }
            }
            None => Runs {
                jobs,
                target: Target::Simulated(profile),
                on: profile.name.clone(),
                center: chosen(Center::Mean),
            },
        }
    }
}

/// Before `runs` simulations of a sweep or tuner, a warning when the drive's mapping
/// tables, one shared drive state and a copy per run at a time, may not fit in memory.
fn warn_of_memory(what: &str, target: &nvsched::batch::Target<'_>, runs: usize) {
    if let nvsched::batch::Target::Simulated(profile) = target {
        let parallel = rayon::current_num_threads().min(runs).max(1);
        print_warnings(nvsched::repro::runs_memory_warning(what, profile, parallel, "RAYON_NUM_THREADS=1"));
    }
}

/// Before the real-device commands run on `paths`: a signal stops them gracefully from
/// now on, and a kernel scheduler below the policy gets a warning (one per disk).
fn on_real_device<'a>(paths: impl IntoIterator<Item = &'a Path>) {
    nvsched_uring::stop_on_interrupt();
    print_warnings(nvsched::realdev::kernel_scheduler_warnings(paths));
}

/// `tune iocost --filename`: the six runs on a real file or block device. A file that does
/// not exist yet is laid out (written whole) first, so reads reach the device, and removed
/// at the end; writes on anything else need --allow-destructive.
fn tune_iocost_real(path: &Path, args: &TuneArgs) -> Result<Vec<nvsched::iocost_model::Coefficient>, String> {
    let size = nvsched::iocost_model::real_size_bytes(args.size.as_deref().unwrap_or("16g"))
        .map_err(|e| format!("--size: {e}"))?;
    on_real_device([path]);
    nvsched::realdev::on_target(path, size, args.allow_destructive, |writes, opts| {
        if !writes {
            reads_only(path);
        }
        if !args.quiet {
            let runs = if writes { 6 } else { 3 };
            eprintln!(
                "nvsched: measuring io.cost's model on {} ({size} bytes): {runs} runs of {} s ...",
                path.display(),
                args.seconds
            );
        }
        nvsched::iocost_model::measure_real(path, size, args.seconds, args.numjobs, writes, opts, !args.quiet)
    })
}

fn reads_only(path: &Path) {
    eprintln!("nvsched: '{}' exists: measuring reads only (--allow-destructive to measure writes too)", path.display());
}

fn cmd_calibrate(args: CalibrateArgs) -> Result<(), String> {
    check_directory_of("--output", &args.output)?;
    let rounds = args.rounds.unwrap_or(FIT_ROUNDS);
    if let Some(name) = &args.fit {
        let (profile, text) = nvsched_ssd::load_profile_and_text(name).map_err(|e| e.to_string())?;
        if profile.datasheet.is_none() {
            return Err(format!(
                "{name}: the profile has no [datasheet] section with the figures to fit to (see a shipped profile's, e.g. profiles/970evoplus-250g.toml)"
            ));
        }
        eprintln!("nvsched: fitting {name}'s timings to its datasheet; each round simulates every figure ...");
        return fit_and_write(profile, &text, name, rounds, &args.output);
    }
    if args.rounds.is_some() && args.like.is_none() {
        return Err("--rounds applies to --fit and --like only".into());
    }
    // the template is checked before the device is measured
    let like = args.like.as_deref().map(load_flash_profile).transpose()?;
    let filename = args.filename.as_deref().expect("clap requires --filename without --fit");
    let size = nvsched_workload::units::parse_size(&args.size, nvsched_workload::KbBase::Binary)
        .map_err(|e| format!("--size: {e}"))?;
    on_real_device([filename]);
    let m = nvsched::realdev::on_target(filename, size, args.allow_destructive, |writes, opts| {
        if !writes {
            reads_only(filename);
        }
        eprintln!("nvsched: measuring {} ({} bytes, {} s per measurement) ...", filename.display(), size, args.seconds);
        nvsched::realdev::measure(filename, size, args.seconds, writes, opts)
    })?;
    print!("{}", nvsched::realdev::measurements_table(&m));
    if let Some((mut profile, text)) = like {
        let template = profile.datasheet.clone();
        profile.datasheet = Some(nvsched::realdev::measured_datasheet(&m, template.as_ref())?);
        let source = format!("{} measured on {}", args.like.as_deref().unwrap_or_default(), filename.display());
        eprintln!("\nnvsched: fitting {source}; each round simulates every figure ...");
        return fit_and_write(profile, &text, &source, rounds, &args.output);
    }
    let name = args.output.file_stem().map_or("calibrated".into(), |s| s.to_string_lossy().into_owned());
    let toml = nvsched::realdev::fit_profile(&name, &m, size);
    nvsched_report::write_atomic(&args.output, toml.as_bytes())
        .map_err(|e| format!("{}: {e}", args.output.display()))?;
    println!("\nwrote {} (use: --device {})", args.output.display(), args.output.display());
    Ok(())
}

/// Full-drive figures are measured on a drive this many times smaller (same
/// over-provisioning), as the datasheet test does: each round simulates them again.
const FIT_SCALE_FULL: u32 = 8;

/// Rounds of simulated measurements `calibrate --fit` and `--like` take at most.
const FIT_ROUNDS: u32 = 8;

/// A flash profile to fit (`--like`), with its TOML text: the simple model has no
/// timings to fit.
fn load_flash_profile(name: &str) -> Result<(DeviceProfile, String), String> {
    let (profile, text) = nvsched_ssd::load_profile_and_text(name).map_err(|e| e.to_string())?;
    match profile.model {
        nvsched_ssd::ModelConfig::Nand(_) => Ok((profile, text)),
        nvsched_ssd::ModelConfig::Simple(_) => {
            Err(format!("--like {name}: the simple model has no flash timings to fit; name a flash profile"))
        }
    }
}

/// Fits `profile`'s timings to its datasheet and writes it (its TOML `text` with the
/// fitted fields and the datasheet changed; `name` says where it came from) to `output`.
fn fit_and_write(profile: DeviceProfile, text: &str, name: &str, rounds: u32, output: &Path) -> Result<(), String> {
    nvsched_uring::stop_on_interrupt();
    let fit = nvsched::profile_fit::fit(&profile, rounds, FIT_SCALE_FULL, |round, checks| {
        let worst = checks.iter().max_by(|a, b| a.error().abs().total_cmp(&b.error().abs()));
        if let Some(w) = worst {
            eprintln!("  round {round}: largest error {:+.1}% ({})", w.error() * 100.0, w.name);
        }
    })?;
    println!("{}", nvsched::calibration::table(&format!("{name}: before"), &fit.before));
    println!("{}", nvsched::calibration::table(&format!("{name}: fitted, {} round(s)", fit.rounds), &fit.after));
    if !fit.unfitted.is_empty() {
        println!("not fitted (they follow from the other timings and the geometry): {}\n", fit.unfitted.join(", "));
    }
    let stem = output.file_stem().map_or("fitted".into(), |s| s.to_string_lossy().into_owned());
    let toml = nvsched::profile_fit::fitted_toml(text, &stem, name, &fit)?;
    nvsched_report::write_atomic(output, toml.as_bytes()).map_err(|e| format!("{}: {e}", output.display()))?;
    for (field, value) in &fit.changed {
        println!("  nand.{field} = {value}");
    }
    println!("\nwrote {} (use: --device {})", output.display(), output.display());
    print_warnings(nvsched::profile_fit::far_moves(&profile, &fit));
    Ok(())
}

fn cmd_compare(args: CompareArgs) -> Result<(), String> {
    let jobs = load_jobs(&args.jobfile, false, &args.job_set)?;
    if args.device == CALIBRATED && !Path::new(CALIBRATED).exists() {
        return Err(format!(
            "no {CALIBRATED} here to simulate with: run `nvsched calibrate --filename {}` first to fit one to the device, or pass --device with a shipped profile (`nvsched devices` lists them)",
            args.filename.display()
        ));
    }
    let profile = load_profile(&args.device, &[]).map_err(|e| e.to_string())?;
    let (policy, override_warning) = nvsched::run::choose_policy(args.sched.as_deref(), "--sched", &jobs)?;
    print_warnings(override_warning);
    let opts = nvsched::run::uring_options(args.allow_destructive, args.seed)?;
    on_real_device([args.filename.as_path()]);
    let (real, sim) = nvsched::realdev::compare(&jobs, &args.filename, &profile, &policy.spec, &opts)?;
    println!(
        "{} under {} on {} (real, io_uring) vs {} (simulated)",
        args.jobfile.display(),
        policy.spec,
        args.filename.display(),
        profile.name
    );
    print!("{}", nvsched::realdev::comparison_table(&real, &sim));
    Ok(())
}

fn print_policies(id: Option<&str>) -> Result<(), String> {
    let chosen: Vec<&PolicyInfo> = match id {
        Some(id) => vec![nvsched_policy::find(id).ok_or_else(|| {
            let known: Vec<&str> = POLICIES.iter().map(|p| p.id).collect();
            format!("unknown policy '{id}'; known policies: {}", known.join(", "))
        })?],
        None => POLICIES.to_vec(),
    };
    for info in chosen {
        println!("{}  —  {}", info.id, info.summary);
        let aliases: Vec<&str> = ALIASES.iter().filter(|(_, id)| *id == info.id).map(|(alias, _)| *alias).collect();
        if !aliases.is_empty() {
            println!("    also accepted as: {} (Linux's name)", aliases.join(", "));
        }
        println!("    source: {}", info.source);
        println!("    host cost: {} per dispatch, {} per completion", info.host_cost.dispatch, info.host_cost.complete);
        match info.cgroups {
            CgroupModel::Ignored => {}
            CgroupModel::Flat => println!("    cgroups: each directly below the root (a/b is a sibling of a)"),
            CgroupModel::Nested => println!("    cgroups: nested as their paths say (a/b shares within a)"),
        }
        for p in info.params {
            println!("    {:<16} {} (default {}; {})", p.name, p.help, p.default, p.accepted());
        }
        if !info.notes.is_empty() {
            println!("    notes: {}", info.notes);
        }
        println!("    example: --sched {}", info.example);
        println!();
    }
    println!("Every policy also takes:");
    for p in COMMON_PARAMS {
        println!("    {:<16} {} (default: the policy's own; {})", p.name, p.help, p.accepted());
    }
    println!("\nUse: --sched ID or --sched ID:key=value,key=value (e.g. --sched k2:bound=4)");
    println!(
        "A policy of your own can be tried in Python first: nvsched.run(..., policy=obj) (README: Python and Ray)."
    );
    Ok(())
}

fn cmd_options(args: OptionsArgs) -> Result<(), String> {
    use nvsched::workload::{find_option, why_not_an_option, OPTIONS};
    let show = |o: &nvsched::workload::spec::OptionDef| {
        let aliases = if o.aliases.is_empty() { String::new() } else { format!(" (also {})", o.aliases.join(", ")) };
        println!("{:<22} {}{aliases}", o.name, o.help);
    };
    match args.name {
        Some(name) => match find_option(&name) {
            Some(o) => show(o),
            None => return Err(format!("'{name}' {}", why_not_an_option(&name))),
        },
        None => {
            let mut all: Vec<_> = OPTIONS.iter().collect();
            all.sort_by_key(|o| o.name);
            for o in all {
                show(o);
            }
            println!("\nnvsched reads fio's job-file syntax; anything else is an error naming file, line and option.");
        }
    }
    Ok(())
}

fn cmd_trace(args: TraceArgs) -> Result<(), String> {
    use nvsched::workload::trace::{load_trace, TraceFormat};
    let format = TraceFormat::parse(&args.format).map_err(|e| format!("--format: {e}"))?;
    let trace = load_trace(&args.file, format).map_err(|e| e.to_string())?;
    if let Some(out) = &args.to_iolog {
        write_trace_as_iolog(&trace, out, &args.files, args.force)?;
    }
    let summary = trace.summary();
    if args.json {
        let json = serde_json::json!({
            "trace": args.file.display().to_string(),
            "format": summary.format,
            "records": summary.records,
            "span_ns": summary.span_ns,
            "directions": summary.directions.iter().filter(|d| d.requests > 0).map(|d| serde_json::json!({
                "direction": d.direction,
                "requests": d.requests,
                "bytes": d.bytes,
                "common_sizes": d.common_sizes.iter().map(|(bytes, pct)| serde_json::json!({"bytes": bytes, "pct": pct})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "devices": summary.devices.iter().map(|d| serde_json::json!({
                "name": d.name,
                "requests": d.requests,
                "lowest_bytes": d.lowest_bytes,
                "extent_bytes": d.extent_bytes,
            })).collect::<Vec<_>>(),
            "sequential_pct": summary.sequential_pct,
            "queue_depth": summary.queue_depth,
            "reordered": summary.reordered,
            "realigned": summary.realigned,
            "empty": summary.empty,
            "cut_off_bytes": summary.cut_off_bytes,
        });
        println!("{}", serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?);
        return Ok(());
    }
    print!("{}", trace_summary_text(&args.file.display().to_string(), &summary));
    Ok(())
}

/// `nvsched trace --to-iolog`: the trace's requests as fio's version 3 iolog.
fn write_trace_as_iolog(
    trace: &nvsched::workload::trace::Trace,
    out: &Path,
    names: &[String],
    force: bool,
) -> Result<(), String> {
    use nvsched::report::iolog::IssueLog;
    let devices = trace.devices.len();
    let files: Vec<String> = match names {
        [] => (0..devices).map(|d| format!("trace-dev-{d}")).collect(),
        [one] => vec![one.clone()],
        many if many.len() == devices => many.to_vec(),
        many => {
            return Err(format!(
                "--file: {} names for the trace's {devices} devices (give one, or one per device)",
                many.len()
            ))
        }
    };
    if files.len() > usize::from(u16::MAX) {
        return Err(format!("--to-iolog: the trace has {devices} devices; an iolog here holds at most 65535 files"));
    }
    if out.exists() && !force {
        return Err(format!("--to-iolog: '{}' exists; --force overwrites it", out.display()));
    }
    if std::fs::metadata(out).is_ok_and(|m| !m.is_file()) {
        return Err(format!("--to-iolog: '{}' is not a plain file", out.display()));
    }
    let one_file = files.len() == 1;
    let mut log = IssueLog::create(out, files.into_iter().map(|name| (name, 0)).collect())?;
    for r in &trace.records {
        let file = if one_file { 0 } else { r.device as u16 };
        log.issue(Nanos(r.at_ns), r.op, file, r.offset_bytes, r.len_bytes);
    }
    log.finish(Nanos(trace.records.last().map_or(0, |r| r.at_ns)))
}

/// `nvsched trace`'s readable summary.
fn trace_summary_text(name: &str, s: &nvsched::workload::trace::Summary) -> String {
    use std::fmt::Write;
    let span_s = s.span_ns as f64 / 1e9;
    let per_s = |n: f64| if span_s > 0.0 { n / span_s } else { 0.0 };
    let total_bytes: u64 = s.directions.iter().map(|d| d.bytes).sum();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{name}: {} trace, {} requests over {span_s:.3} s ({:.0} IOPS, {:.1} MB/s)",
        s.format,
        s.records,
        per_s(s.records as f64),
        per_s(total_bytes as f64) / 1e6
    );
    for d in s.directions.iter().filter(|d| d.requests > 0) {
        let share = d.requests as f64 * 100.0 / s.records.max(1) as f64;
        let _ = write!(out, "  {:<6} {:>9} ({share:5.1}%)", d.direction, d.requests);
        if d.bytes > 0 {
            let sizes: Vec<String> =
                d.common_sizes.iter().map(|(b, pct)| format!("{} {pct}%", size_text(*b))).collect();
            let _ = write!(
                out,
                "  {}, mean {}; sizes {}",
                bytes_text(d.bytes),
                bytes_text(d.bytes / d.requests),
                sizes.join(", ")
            );
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "  sequential: {}% of reads and writes start where the one before on their device ended",
        s.sequential_pct
    );
    if let Some(depth) = s.queue_depth {
        let _ = writeln!(
            out,
            "  captured at depth {depth} (queued less merged between completions; a replay without iodepth takes it)"
        );
    }
    let _ = writeln!(out, "  devices: {}", s.devices.len());
    for d in s.devices.iter().take(8) {
        let _ = writeln!(
            out,
            "    {:<12} {:>9} requests, {} to {}",
            d.name,
            d.requests,
            bytes_text(d.lowest_bytes),
            bytes_text(d.extent_bytes)
        );
    }
    if s.devices.len() > 8 {
        let _ = writeln!(out, "    ... and {} more (--json lists them all)", s.devices.len() - 8);
    }
    for (n, what) in [
        (s.reordered, "records earlier than the one before (replayed in file order)"),
        (s.realigned, "records widened to 512-byte sectors"),
        (s.empty, "records of length 0 (left out)"),
        (s.cut_off_bytes, "bytes of an event cut off at the end (left out)"),
    ] {
        if n > 0 {
            let _ = writeln!(out, "  {n} {what}");
        }
    }
    out
}

/// A request size: whole KiB where it is one.
fn size_text(bytes: u32) -> String {
    if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{}KiB", bytes / 1024)
    } else {
        format!("{bytes}B")
    }
}

/// A total or an offset, in the largest binary unit that keeps it at 1 or more.
fn bytes_text(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < units.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes}B")
    } else {
        format!("{value:.1}{}", units[unit])
    }
}

fn cmd_devices(args: DevicesArgs) -> Result<(), String> {
    if !args.verify {
        print_devices();
        return Ok(());
    }
    // every shipped profile with a datasheet, or the named ones (shipped, or TOML files)
    let profiles = match args.names.is_empty() {
        true => builtin_profiles().into_iter().filter(|p| p.datasheet.is_some()).collect(),
        false => args
            .names
            .iter()
            .map(|name| match load_profile(name, &[]) {
                Ok(p) if p.datasheet.is_none() => {
                    Err(format!("{name}: the profile has no [datasheet] section to verify against"))
                }
                loaded => loaded.map_err(|e| e.to_string()),
            })
            .collect::<Result<Vec<_>, String>>()?,
    };
    let mut failed = 0;
    for p in profiles {
        let checks = nvsched::calibration::verify(&p, args.scale_full.max(1))?;
        failed += checks.iter().filter(|c| c.error().abs() > 0.15).count();
        println!("{}", nvsched::calibration::table(&p.name, &checks));
    }
    if failed > 0 {
        return Err(format!("{failed} figure(s) off by more than 15%"));
    }
    Ok(())
}

fn print_devices() {
    for p in builtin_profiles() {
        println!(
            "{:<18} {:<7} {:>8.1} GB  QD {:<5} {}",
            p.name,
            p.model_name(),
            p.capacity_bytes as f64 / 1e9,
            p.queue_depth,
            p.description
        );
    }
    println!("\nUse: --device NAME (or a TOML file), override fields with --device-set key=value");
}

const BENCH_RANDREAD_QD32: &str = "[global]\nfilename=/dev/nvme0n1\nbs=4k\ndirect=1\ntime_based\n\
[randread-qd32]\nioengine=io_uring\niodepth=32\nrw=randread\nruntime=${RUNTIME}\n";

const BENCH_RANDWRITE_QD32: &str = "[global]\nfilename=/dev/nvme0n1\nbs=4k\ndirect=1\ntime_based\n\
[randwrite-qd32]\nioengine=io_uring\niodepth=32\nrw=randwrite\nruntime=${RUNTIME}\n";

fn cmd_bench(args: BenchArgs) -> Result<(), String> {
    let runtime = format!("{}ms", (args.seconds * 1000.0).round() as u64);
    let k2_mix = include_str!("../../../examples/k2-mix.fio").replace("runtime=10", &format!("runtime={runtime}"));
    let randread = BENCH_RANDREAD_QD32.replace("${RUNTIME}", &runtime);
    let randwrite = BENCH_RANDWRITE_QD32.replace("${RUNTIME}", &runtime);
    type Case<'a> = (&'a str, &'a str, &'a str, &'a str, &'a [(&'a str, &'a str)]);
    let cases: [Case; 6] = [
        ("k2-mix, simple-nvme, none", &k2_mix, "none", "simple-nvme", &[]),
        ("4 KiB random read QD32, simple-nvme", &randread, "none", "simple-nvme", &[]),
        (
            "k2-mix, 970evoplus-250g half full, none",
            &k2_mix,
            "none",
            "970evoplus-250g",
            &[("nand.precondition", "partial:0.5")],
        ),
        (
            "k2-mix, 970evoplus-250g half full, k2:bound=4",
            &k2_mix,
            "k2:bound=4",
            "970evoplus-250g",
            &[("nand.precondition", "partial:0.5")],
        ),
        (
            "k2-mix, half full, one host CPU (K2 analysis), none",
            &k2_mix,
            "none",
            "970evoplus-250g",
            &[
                ("nand.precondition", "partial:0.5"),
                ("host.cpus", "1"),
                ("host.submit_cpu_ns", "2500"),
                ("host.complete_cpu_ns", "3000"),
            ],
        ),
        (
            "4 KiB random write QD32, 970evoplus-250g full (GC)",
            &randwrite,
            "none",
            "970evoplus-250g",
            &[("nand.precondition", "full")],
        ),
    ];
    println!(
        "{:<52} {:>9} {:>10} {:>11} {:>12} {:>13}",
        "benchmark", "build s", "run s", "requests", "events", "requests/s"
    );
    for (name, text, sched, device, overrides) in cases {
        let jobs = parse_job_str(text, Path::new("bench.fio"), &HostEnvironment, ParseOptions::default())
            .map_err(|e| e.to_string())?;
        let overrides: Vec<(String, String)> = overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let profile = load_profile(device, &overrides).map_err(|e| e.to_string())?;
        let mut runs = Vec::new();
        let mut builds = Vec::new();
        let mut last = (0, 0);
        for _ in 0..args.reps.max(1) {
            let policy = nvsched_policy::build(sched).map_err(|e| e.to_string())?;
            let t = Instant::now();
            let (_, out) = run_sim(
                RunSpec { jobs: &jobs, policy, profile: &profile, seed: 0, drive_states: None },
                &mut nvsched_sim::NoObserver,
                0,
            )?;
            // device construction (preconditioning) is reported apart from the simulation
            let loop_s = out.loop_wall.as_secs_f64();
            runs.push(loop_s);
            builds.push(t.elapsed().as_secs_f64() - loop_s);
            last = (out.engine.requests, out.engine.events);
        }
        let build = median(&mut builds);
        let run = median(&mut runs).max(1e-9);
        println!("{name:<52} {build:>9.3} {run:>10.3} {:>11} {:>12} {:>13.0}", last.0, last.1, last.0 as f64 / run);
    }
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
