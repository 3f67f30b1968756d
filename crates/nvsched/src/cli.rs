//! The command line's shape: every command and flag (clap), their value parsers, and
//! `run`'s reading of a fio command line.

use super::*;

/// Design, compare and tune host I/O schedulers for NVMe SSDs.
///
/// nvsched runs fio job files, and the block traces they replay (read_iolog=), against a
/// simulated NVMe SSD (or, with --engine uring, a real device) through a pluggable host
/// I/O scheduler and reports like fio (normal, json, json+, terse); it reproduces the
/// papers' experiments (repro), tunes K2's bound and other policies' parameters (tune)
/// and fits profiles to real devices (calibrate, compare).
#[derive(Parser)]
#[command(name = "nvsched", version, propagate_version = true, args_override_self = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Run the jobs of a fio job file through a policy on a simulated (or real) device.
    Run(RunArgs),
    /// List the scheduling policies, their parameters and defaults, or explain one.
    Policies(PoliciesArgs),
    /// List the fio job-file options nvsched takes, or explain one (as fio --cmdhelp).
    Options(OptionsArgs),
    /// List the shipped device profiles; --verify checks them against their datasheets.
    Devices(DevicesArgs),
    /// Measure simulator speed: simulated requests per wall-clock second.
    Bench(BenchArgs),
    /// Re-run a paper's experiment (experiments/NAME) and compare with its claims.
    ///
    /// Prints the table next to the paper's values and every claim as agrees or DISAGREES,
    /// judged on the means over the repetitions and, with several (the full mode), on
    /// each repetition alone too. Writes results.json, report.md and figures to --out;
    /// runs are cached by content in OUT/cache, so a re-run simulates only what changed.
    Repro(ReproArgs),
    /// Run a job file under several policies and compare them, job by job.
    ///
    /// Prints, per policy, each job's bandwidth, IOPS and completion latency (mean, p99,
    /// p99.9) and the total bandwidth; over several seeds the means (on a real device, the
    /// medians), with each p99.9's range. With --objective it also chooses one of the
    /// policies and says why. Simulated runs go in parallel; with --filename or --engine
    /// uring they run on the real file or device, one at a time.
    Sweep(SweepArgs),
    /// Choose policy parameters: K2's bound for an objective (by the K2 analysis' rules),
    /// any policy's parameters for the same objectives (--param), or io.cost's cost model
    /// for the simulated drive (as the kernel's iocost_coef_gen.py).
    ///
    /// `tune k2 --objective ...` sweeps none and K2's bounds on a job file and applies
    /// O1 or O2. `tune POLICY --param NAME=V1,V2,... --objective ...` runs none and every
    /// combination of the values given and picks on the measurements: for O1 the most
    /// bandwidth among the settings whose p99.9 is within ALPHA of none's, for O2 the
    /// lowest p99.9 among those with at least BETA of none's bandwidth. The p99.9 is the
    /// real-time job's (prioclass=1), or --job's. `tune iocost` (without --param) runs the
    /// six measurements of the kernel's tools/cgroup/iocost_coef_gen.py (sequential
    /// bandwidth, sequential and random 4 KiB IOPS, for reads and writes) on the job
    /// file's device and drive state and prints the model as `--sched iocost:...` and as
    /// an io.cost.model line.
    Tune(TuneArgs),
    /// Measure a real device (io_uring) and write a simulator profile fitted to it; or
    /// (--fit) fit a flash profile's timings to its datasheet figures.
    Calibrate(CalibrateArgs),
    /// Run a job file on a real device and in simulation, side by side.
    Compare(CompareArgs),
    /// Summarize a block trace as read_iolog reads it: directions, sizes, devices, pace.
    Trace(TraceArgs),
}

#[derive(Args)]
pub(crate) struct OptionsArgs {
    /// One option (or alias) to explain; all of them if left out.
    pub(crate) name: Option<String>,
}

#[derive(Args)]
pub(crate) struct PoliciesArgs {
    /// One policy (or alias, e.g. `deadline`) to explain; all of them if left out.
    pub(crate) id: Option<String>,
}

pub(crate) const DEFAULT_PROFILE: &str = "970evoplus-250g";

#[derive(Args)]
pub(crate) struct DeviceArgs {
    /// Device profile: a shipped name (see `nvsched devices`) or a TOML file [default:
    /// 970evoplus-250g]. For `sweep` and `tune --experiment`: the cell runs on it instead
    /// of the experiment's own drive, without the manifest's device_set (as `repro
    /// --device`).
    #[arg(long, value_name = "PROFILE")]
    pub(crate) device: Option<String>,
    /// Override a profile field, e.g. `--device-set host.submit_ns=1500` (repeatable).
    #[arg(long = "device-set", value_name = "KEY=VALUE")]
    pub(crate) device_set: Vec<String>,
    /// Drive state before the run: clean, partial:FRACTION or full (overrides the job
    /// file's `precondition=` and the profile's default).
    #[arg(long, value_name = "STATE")]
    pub(crate) precondition: Option<String>,
    /// Simulate Linux's page cache for buffered jobs (`direct=0`, fio's default), of this
    /// size, e.g. `1g`: writes return once copied and are written back in the
    /// background, cached reads skip the device. Its other knobs are
    /// `--device-set host.page_cache.KEY=VALUE` (docs/job-files.md). Default: no page
    /// cache, and buffered I/O is simulated as direct I/O.
    #[arg(long = "page-cache", value_name = "SIZE", value_parser = parse_cache_size)]
    pub(crate) page_cache: Option<u64>,
}

/// Job options the command line sets in every job.
#[derive(Args, Clone, Default)]
pub(crate) struct JobSetArgs {
    /// Set a job option in every job, after the job file's own options, so it wins over
    /// the file's `[global]` and job values, e.g. `--job-set size=1g --job-set runtime=5`
    /// (repeatable; `${VAR}`s expand as in the file).
    #[arg(long = "job-set", value_name = "KEY=VALUE")]
    pub(crate) job_set: Vec<String>,
}

/// `--page-cache`'s size, in fio's units (`512m`, `4g`; a bare number is bytes).
pub(crate) fn parse_cache_size(raw: &str) -> Result<u64, String> {
    let bytes = nvsched_workload::units::parse_size(raw, nvsched_workload::units::KbBase::Binary)?;
    if bytes < 1 << 20 {
        return Err(format!("'{raw}' is under 1 MiB; the page cache needs at least that"));
    }
    Ok(bytes)
}

impl DeviceArgs {
    /// The profile with overrides; `from_jobs` is the job file's `precondition=`.
    pub(crate) fn load(&self, from_jobs: Option<String>) -> Result<DeviceProfile, String> {
        self.load_over(self.device.as_deref().unwrap_or(DEFAULT_PROFILE), Vec::new(), from_jobs)
    }

    /// Profile `name` with `overrides` (e.g. a manifest's), then the user's
    /// `--device-set` and the drive state (`--precondition`, else `from_jobs`) on top.
    pub(crate) fn load_over(
        &self,
        name: &str,
        mut overrides: Vec<(String, String)>,
        from_jobs: Option<String>,
    ) -> Result<DeviceProfile, String> {
        if let Some(bytes) = self.page_cache {
            overrides.push(("host.page_cache.size_bytes".into(), bytes.to_string()));
        }
        overrides.extend(device_set_pairs(&self.device_set)?);
        nvsched::run::load_device(name, overrides, self.precondition.clone().or(from_jobs))
    }
}

/// `--device-set KEY=VALUE` arguments as (key, value) pairs.
pub(crate) fn device_set_pairs(args: &[String]) -> Result<Vec<(String, String)>, String> {
    args.iter()
        .map(|kv| {
            let (k, v) = kv.split_once('=').ok_or_else(|| format!("--device-set '{kv}': expected KEY=VALUE"))?;
            Ok((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

#[derive(Args)]
pub(crate) struct RunArgs {
    /// fio job file (a job with read_iolog=TRACE replays a block trace); or none, and the
    /// jobs as fio's command-line options after `--`.
    pub(crate) jobfile: Option<PathBuf>,
    /// Jobs as on fio's command line, after `--`: `--name=NAME` starts a job, and options
    /// before the first `--name` apply to every job, e.g.
    /// `nvsched run -- --rw=randread --size=1g --name=a --iodepth=32`. The `--` may be
    /// left out: fio's job options are told from run's own flags by name.
    #[arg(last = true, value_name = "--OPTION[=VALUE]")]
    pub(crate) job_options: Vec<String>,
    /// Run only the job sections of this name (repeatable), as fio's --section; the
    /// `[global]` sections still apply.
    #[arg(long, value_name = "NAME")]
    pub(crate) section: Vec<String>,
    /// Check the jobs (every option, file and trace they name) and exit without running
    /// them.
    #[arg(long)]
    pub(crate) parse_only: bool,
    /// Write each job's merge_blktrace_file (its blktraces merged) and exit without
    /// running the jobs, as fio's --merge-blktrace-only.
    #[arg(long)]
    pub(crate) merge_blktrace_only: bool,
    /// Scheduling policy and parameters: ID or ID:key=value,... (see `nvsched policies`);
    /// default: the job file's `ioscheduler=`, else none.
    #[arg(long, value_name = "SPEC", visible_alias = "policy")]
    pub(crate) sched: Option<String>,
    #[command(flatten)]
    pub(crate) device: DeviceArgs,
    #[command(flatten)]
    pub(crate) job_set: JobSetArgs,
    /// Seed mixed into every job's random generators.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// normal, json, json+ or terse; several separated by commas, printed in fio's order
    /// (terse, JSON, normal) whatever the order given.
    #[arg(long = "output-format", default_value = "normal", value_name = "FORMAT")]
    pub(crate) output_format: String,
    /// Write the report to this file instead of standard output: a regular file is replaced atomically (through a link, its target), a character device or pipe such as /dev/null is written to; a directory or block device is refused before the run.
    #[arg(long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Write figures (PNG and SVG) of the per-second bandwidth of each job, the policy's
    /// time series (e.g. k2-adaptive's bound) and, in simulation, the device's activity
    /// into DIR.
    #[arg(long, value_name = "DIR")]
    pub(crate) plot: Option<PathBuf>,
    /// Turn unknown or unsupported job options into warnings.
    #[arg(long)]
    pub(crate) ignore_unsupported: bool,
    /// No progress indicator.
    #[arg(long, short)]
    pub(crate) quiet: bool,
    /// Refuse jobs that write or trim, as fio's --readonly does (a safety check for real
    /// devices; it applies in simulation too); a replay leaves out its trace's writes and
    /// trims instead, as fio skips them (and a blktrace's flushes, which carry the write bit).
    #[arg(long)]
    pub(crate) readonly: bool,
    /// fio's --minimal: the same as --output-format=terse.
    #[arg(long)]
    pub(crate) minimal: bool,
    /// fio's --eta: accepted and ignored (nvsched shows its own progress; -q hides it).
    #[arg(long, value_name = "WHEN", value_parser = ["always", "never", "auto"])]
    pub(crate) eta: Option<String>,
    /// sim: the simulated device; uring: real I/O on the jobs' files or devices.
    #[arg(long, default_value = "sim", value_parser = ["sim", "uring"])]
    pub(crate) engine: String,
    /// uring: allow writing to block devices and to files nvsched did not create, and removing such files (unlink=1).
    #[arg(long)]
    pub(crate) allow_destructive: bool,
    /// uring: keep the files nvsched created.
    #[arg(long)]
    pub(crate) keep_files: bool,
    /// uring, for testing error handling: every Nth request fails with ERRNO (default 5,
    /// EIO) instead of its result.
    #[arg(long, value_name = "N[:ERRNO]", value_parser = parse_inject_errors, hide = true)]
    pub(crate) inject_errors: Option<(u64, i32)>,
    /// uring: busy-poll for completions instead of sleeping.
    #[arg(long)]
    pub(crate) poll: bool,
    /// uring: overwrite existing files or devices with random data before the jobs start,
    /// so reads are not served from holes or unmapped blocks (needs --allow-destructive;
    /// the files nvsched creates get random data when a job reads them, as fio lays them
    /// out, and with --prefill always).
    #[arg(long)]
    pub(crate) prefill: bool,
    /// uring: ring size (the most requests at the device at once).
    #[arg(long, default_value_t = 256)]
    pub(crate) ring_entries: u32,
    /// Print the report of every job so far (from its start, in the output formats, without
    /// the header) every TIME of the run, as fio's --status-interval: simulated time in
    /// simulation, wall-clock time on real devices. Seconds unless a unit is given
    /// (500ms, 2s, 1m); at least 1ms. The dumps go where the report goes: standard output,
    /// or the --output file, rewritten with everything so far at each dump.
    #[arg(long, value_name = "TIME", value_parser = parse_status_interval)]
    pub(crate) status_interval: Option<Nanos>,
}

/// `--status-interval TIME`: seconds by default, as fio reads it, and at least 1 ms.
pub(crate) fn parse_status_interval(v: &str) -> Result<Nanos, String> {
    let every = nvsched_workload::units::parse_time(v, Nanos::from_secs(1))?;
    if every < Nanos::from_ms(1) {
        return Err(format!("'{v}' is too small: the status interval is at least 1ms"));
    }
    Ok(every)
}

#[derive(Args)]
pub(crate) struct TraceArgs {
    /// The trace (any format read_iolog takes).
    pub(crate) file: PathBuf,
    /// Its format, as trace_format takes it (default: told from the file).
    #[arg(long, default_value = "auto", value_name = "FORMAT")]
    pub(crate) format: String,
    /// Print the summary as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Also write the trace as fio's version 3 iolog, which fio's read_iolog replays: its
    /// requests at their times (µs), each trace device as a file named by --file.
    #[arg(long, value_name = "PATH")]
    pub(crate) to_iolog: Option<PathBuf>,
    /// With --to-iolog: the file each trace device becomes, in the order `nvsched trace`
    /// lists them; one name puts them all in one file (default: trace-dev-N).
    #[arg(long = "file", value_name = "NAME")]
    pub(crate) files: Vec<String>,
    /// With --to-iolog: overwrite PATH if it exists.
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Args)]
pub(crate) struct DevicesArgs {
    /// Simulate each profile's datasheet workloads and compare with the cited figures.
    #[arg(long)]
    pub(crate) verify: bool,
    /// Only these profiles (with --verify): shipped names or TOML files.
    pub(crate) names: Vec<String>,
    /// With --verify: shrink full-drive runs by this factor (same over-provisioning).
    #[arg(long, default_value_t = 1)]
    pub(crate) scale_full: u32,
}

#[derive(Args)]
pub(crate) struct ReproArgs {
    /// Experiment name: a directory of experiments/ (or of $NVSCHED_EXPERIMENTS) with a manifest.toml; shipped: k2-analysis, prio-nice, veloces, tabs, mts. Or `all`.
    pub(crate) name: String,
    /// Shorter runs and one repetition (for CI and a first look).
    #[arg(long)]
    pub(crate) quick: bool,
    /// Output directory (default results/NAME).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Ignore cached runs.
    #[arg(long)]
    pub(crate) force: bool,
    /// No PNG/SVG figures.
    #[arg(long)]
    pub(crate) no_plots: bool,
    /// Worker threads (default: all cores).
    #[arg(long, short)]
    pub(crate) jobs: Option<usize>,
    /// No progress bar.
    #[arg(long, short)]
    pub(crate) quiet: bool,
    /// Run the experiment on this drive instead: a shipped profile or a TOML file of the
    /// flash model (the drive states need its FTL). The manifest's drive settings (its
    /// device_set outside host.*) are dropped, as they were chosen for its drive; its host
    /// settings (host.*, the paper's machine) stay. The claims are judged as before.
    #[arg(long, value_name = "PROFILE")]
    pub(crate) device: Option<String>,
    /// Override a profile field for every run, e.g. `--device-set host.cpus=2`
    /// (repeatable; on top of the manifest's settings, or of --device's profile).
    #[arg(long = "device-set", value_name = "KEY=VALUE")]
    pub(crate) device_set: Vec<String>,
}

#[derive(Args)]
pub(crate) struct SweepArgs {
    /// fio job file.
    #[arg(required_unless_present = "experiment")]
    pub(crate) jobfile: Option<PathBuf>,
    /// A policy to compare, ID or ID:key=value,... (repeatable; default: none,
    /// mq-deadline, kyber and bfq, Linux's blk-mq schedulers).
    #[arg(long, value_name = "SPEC", visible_alias = "policy")]
    pub(crate) sched: Vec<String>,
    /// Also choose one of the policies, as `tune POLICY --param` chooses a setting:
    /// latency:ALPHA% (the most bandwidth among those whose p99.9 of the real-time job,
    /// else the first, is within ALPHA of none's) or bandwidth:BETA% (the lowest such
    /// p99.9 among those with at least BETA of none's bandwidth); none runs too, as the
    /// reference, when --sched leaves it out.
    #[arg(long)]
    pub(crate) objective: Option<String>,
    #[command(flatten)]
    pub(crate) setup: SweepSetup,
    /// normal (a table) or json.
    #[arg(long, default_value = "normal", value_parser = ["normal", "json"])]
    pub(crate) output_format: String,
    /// Write the table or JSON to this file (atomically) instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Write a figure (PNG and SVG) into DIR: the real-time job's p99.9 (else the first
    /// job's) against total bandwidth, per policy, and with --objective its limit.
    #[arg(long, value_name = "DIR")]
    pub(crate) plot: Option<PathBuf>,
    /// Run on this real file or block device through io_uring instead of simulating:
    /// every job's filename becomes PATH, the runs go one at a time (seeds outermost, so
    /// the policies alternate), and a file nvsched creates is removed at the end.
    #[arg(long, value_name = "PATH")]
    pub(crate) filename: Option<PathBuf>,
    /// sim (the simulated drive) or uring (the job file's own files or devices, through
    /// io_uring, as --filename runs them) [default: sim; uring with --filename].
    #[arg(long, value_parser = ["sim", "uring"])]
    pub(crate) engine: Option<String>,
    /// On a real device: let jobs write to an existing file or a block device (destroys
    /// its data).
    #[arg(long)]
    pub(crate) allow_destructive: bool,
    /// No progress bar.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

#[derive(Args)]
pub(crate) struct TuneArgs {
    /// The policy to tune: `k2` (its bound), `iocost` (its cost model), or with --param
    /// any policy, as ID or ID:key=value,... (parameters kept fixed).
    pub(crate) policy: String,
    /// k2 and --param: latency:ALPHA% (O1: RT p99.9 within ALPHA of none's, most
    /// bandwidth) or bandwidth:BETA% (O2: bandwidth at least BETA of none's, lowest RT tail).
    #[arg(long)]
    pub(crate) objective: Option<String>,
    /// k2 and --param: job file with a latency-critical job (the real-time one,
    /// prioclass=1, or --job) and background jobs [default: examples/k2-mix.fio]; iocost:
    /// the job file whose device and drive state to measure [default:
    /// examples/iocost-weights.fio] (from the working directory or the source tree).
    pub(crate) jobfile: Option<PathBuf>,
    /// k2: bounds to sweep [default: 1,2,4,8,16,32,64].
    #[arg(long, value_delimiter = ',', conflicts_with = "param")]
    pub(crate) bounds: Option<Vec<u32>>,
    /// A parameter of POLICY and the values to try, e.g. `read_lat=250us,500us,1ms`; a value
    /// may be a range: `LO..HI` doubles from LO up to HI (`read_lat=250us..2ms`), `LO..HI/N`
    /// takes N even steps (`target=100us..1ms/4`) (repeatable: every combination runs, 256
    /// at most).
    #[arg(long, value_name = "NAME=V1,V2,...")]
    pub(crate) param: Vec<String>,
    /// k2 and --param: the job whose p99.9 the objective is about (its first clone)
    /// [default: the first real-time job, prioclass=1].
    #[arg(long, value_name = "NAME")]
    pub(crate) job: Option<String>,
    /// k2 and --param: normal (the table and the choice) or json (every setting's means
    /// and ranges, the limit, the choice and why).
    #[arg(long, default_value = "normal", value_parser = ["normal", "json"])]
    pub(crate) output_format: String,
    /// k2 and --param: write the table or JSON to this file (atomically) instead of
    /// standard output.
    #[arg(long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// k2 and --param: write a figure (PNG and SVG) into DIR: each setting's p99.9 against
    /// total bandwidth, with none, the choice and the objective's limit (a dashed line).
    #[arg(long, value_name = "DIR")]
    pub(crate) plot: Option<PathBuf>,
    /// iocost: seconds per measurement, simulated or on the device with --filename (the
    /// kernel script's --duration).
    #[arg(long, default_value_t = 120)]
    pub(crate) seconds: u32,
    /// iocost: parallel jobs per measurement (the kernel script's --numjobs).
    #[arg(long, default_value_t = 1)]
    pub(crate) numjobs: u32,
    /// Run on this real file or block device through io_uring instead of simulating. k2
    /// and --param: every job's filename becomes PATH and the runs go one at a time
    /// (seeds outermost, so the settings alternate); iocost: its six measurements, as the
    /// kernel's script makes them (no job file). A file nvsched creates is removed at the
    /// end; writes on an existing one need --allow-destructive.
    #[arg(long, value_name = "PATH", conflicts_with = "experiment")]
    pub(crate) filename: Option<PathBuf>,
    /// k2 and --param: sim (the simulated drive) or uring (the job file's own files or
    /// devices, through io_uring, as --filename runs them) [default: sim; uring with
    /// --filename].
    #[arg(long, value_parser = ["sim", "uring"])]
    pub(crate) engine: Option<String>,
    /// iocost with --filename: bytes of it to use (the script's test file is 16 GiB)
    /// [default: 16g].
    #[arg(long, requires = "filename")]
    pub(crate) size: Option<String>,
    /// On a real device: let the runs write to an existing file or a block device
    /// (destroys its data).
    #[arg(long)]
    pub(crate) allow_destructive: bool,
    #[command(flatten)]
    pub(crate) setup: SweepSetup,
    /// No progress bar.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

/// What the runs of `tune` and `sweep` share: a reproduction's cell or the job file's
/// device, and the seeds.
#[derive(Args)]
pub(crate) struct SweepSetup {
    /// Run on a cell of a reproduction instead of a job file: its job file, device
    /// profile and overrides, e.g. `k2-analysis:randread` or `k2-analysis:read:full`
    /// (default state: the first one).
    #[arg(long, value_name = "NAME:VARIANT[:STATE]", conflicts_with = "jobfile")]
    pub(crate) experiment: Option<String>,
    /// With --experiment: the paper's runtime (the full mode) instead of the quick one.
    #[arg(long, requires = "experiment")]
    pub(crate) full: bool,
    #[command(flatten)]
    pub(crate) device: DeviceArgs,
    #[command(flatten)]
    pub(crate) job_set: JobSetArgs,
    /// Seed of every run [default: 0; with --experiment, the reproduction's own seeds, one
    /// per repetition of the mode: 1, 2, ...]
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Run every configuration once per seed (N, N-M or a comma list of them): the table
    /// shows each figure's center over the seeds (--center) and each p99.9's range, and
    /// tune chooses on the centers.
    #[arg(long, value_name = "LIST", conflicts_with = "seed", value_parser = parse_seeds)]
    pub(crate) seeds: Option<Seeds>,
    /// How each setting's runs over the seeds make one figure in the table, the choice and
    /// the JSON: mean or median [default: mean in simulation, as a reproduction averages
    /// its repetitions; median on a real device, which one run's outlier does not move].
    #[arg(long, value_name = "mean|median", value_parser = parse_center)]
    pub(crate) center: Option<Center>,
}

impl SweepSetup {
    /// The options that describe the simulated drive, which a run on a real device
    /// (`--filename`, `--engine uring`) cannot use: an error naming the first one given.
    pub(crate) fn check_real_device(&self) -> Result<(), String> {
        let d = &self.device;
        let given = [
            ("--experiment", self.experiment.is_some()),
            ("--device", d.device.is_some()),
            ("--device-set", !d.device_set.is_empty()),
            ("--precondition", d.precondition.is_some()),
            ("--page-cache", d.page_cache.is_some()),
        ];
        match given.iter().find(|(_, set)| *set) {
            Some((flag, _)) => Err(format!("{flag} describes the simulated drive; these runs are on a real one")),
            None => Ok(()),
        }
    }

    /// The jobs (of the cell, else of `jobfile`), the device profile, a name for
    /// messages, and the seeds to run.
    pub(crate) fn load(
        &self,
        jobfile: &Path,
    ) -> Result<(nvsched_workload::JobFile, DeviceProfile, String, Vec<u64>), String> {
        let (jobs, profile, source, default_seeds) = match &self.experiment {
            Some(cell) => {
                let (jobs, profile, seeds) = experiment_cell(cell, !self.full, &self.device, &self.job_set)?;
                (jobs, profile, cell.clone(), seeds)
            }
            None => {
                let jobs = load_jobs(jobfile, false, &self.job_set)?;
                let profile = self.device.load(jobs.precondition().map_err(|e| e.to_string())?)?;
                (jobs, profile, jobfile.display().to_string(), vec![0])
            }
        };
        let seeds = self.seeds.clone().map(|s| s.0).or(self.seed.map(|s| vec![s])).unwrap_or(default_seeds);
        Ok((jobs, profile, source, seeds))
    }
}

pub(crate) fn parse_center(name: &str) -> Result<Center, String> {
    Center::from_name(name).ok_or_else(|| format!("'{name}': expected mean or median"))
}

/// Seeds given as `N`, `N-M` or a comma list of them.
#[derive(Clone, Debug)]
pub(crate) struct Seeds(Vec<u64>);

pub(crate) fn parse_seeds(spec: &str) -> Result<Seeds, String> {
    let bad = || format!("'{spec}': expected N, N-M or a comma list of them (e.g. 1-5 or 1,4,9)");
    let mut seeds = Vec::new();
    for part in spec.split(',') {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let (lo, hi): (u64, u64) = (lo.trim().parse().map_err(|_| bad())?, hi.trim().parse().map_err(|_| bad())?);
        if lo > hi || hi - lo >= 1000 {
            return Err(format!("'{spec}': a range goes from low to high, 1000 seeds at most"));
        }
        seeds.extend(lo..=hi);
    }
    Ok(Seeds(seeds))
}

#[derive(Args)]
pub(crate) struct CalibrateArgs {
    /// File or block device to measure (a new file is created and removed afterwards).
    #[arg(long, required_unless_present = "fit")]
    pub(crate) filename: Option<PathBuf>,
    /// Instead of measuring a device: fit a flash profile's timings to the figures of its
    /// own [datasheet] section, by simulating them. A shipped profile, or a TOML file: copy
    /// a shipped one, put your drive's datasheet figures in, and fit it.
    #[arg(long, value_name = "PROFILE", conflicts_with_all = ["filename", "size", "seconds", "allow_destructive"])]
    pub(crate) fit: Option<String>,
    /// With --filename: fit this flash profile's timings to the measured figures instead
    /// of writing the simple model (its geometry and caches stay; figures not measured,
    /// writes on a device only read, keep the profile's datasheet values).
    #[arg(long, value_name = "PROFILE", conflicts_with = "fit")]
    pub(crate) like: Option<String>,
    /// With --fit or --like: at most this many rounds of simulated measurements [default: 8].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub(crate) rounds: Option<u32>,
    /// Bytes of it to use.
    #[arg(long, default_value = "1g")]
    pub(crate) size: String,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 3)]
    pub(crate) seconds: u32,
    /// Also measure writes on an existing file or a block device (destroys its data).
    #[arg(long)]
    pub(crate) allow_destructive: bool,
    /// Where to write the fitted profile.
    #[arg(long, default_value = CALIBRATED)]
    pub(crate) output: PathBuf,
}

#[derive(Args)]
pub(crate) struct CompareArgs {
    /// fio job file (its filenames are replaced by --filename on the device).
    pub(crate) jobfile: PathBuf,
    /// File or block device to run on.
    #[arg(long)]
    pub(crate) filename: PathBuf,
    /// Simulator profile (e.g. the output of `nvsched calibrate`).
    #[arg(long, default_value = CALIBRATED)]
    pub(crate) device: String,
    /// Scheduling policy for both runs, ID or ID:key=value,... (see `nvsched policies`);
    /// default: the job file's `ioscheduler=`, else none.
    #[arg(long, value_name = "SPEC", visible_alias = "policy")]
    pub(crate) sched: Option<String>,
    /// Allow writes to an existing file or a block device (destroys its data).
    #[arg(long)]
    pub(crate) allow_destructive: bool,
    /// Seed for the jobs' random offsets (same on both sides).
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    #[command(flatten)]
    pub(crate) job_set: JobSetArgs,
}

#[derive(Args)]
pub(crate) struct BenchArgs {
    /// Simulated seconds per benchmark run.
    #[arg(long, default_value_t = 10.0)]
    pub(crate) seconds: f64,
    /// Repetitions; the median is reported.
    #[arg(long, default_value_t = 3)]
    pub(crate) reps: u32,
}

/// The long names of `nvsched run`'s own flags (`engine`, `sched`, ...).
pub(crate) fn run_flags() -> Vec<String> {
    let cli = Cli::command();
    let run = cli.find_subcommand("run").expect("the run command");
    run.get_arguments().filter_map(|a| a.get_long()).map(String::from).collect()
}

/// Lets `nvsched run` take a fio command line as it is (`fio --name=r --rw=randread
/// --size 1g` with `fio` replaced): fio job options that are not `run`'s own flags move
/// after `--`, where `run` reads jobs, and `--key value` becomes `--key=value` for options
/// that take a value (fio's getopt accepts both). Other commands pass unchanged.
pub(crate) fn fio_options_after_dashes(args: Vec<String>) -> Vec<String> {
    if args.get(1).map(String::as_str) != Some("run") {
        return args;
    }
    let own = run_flags();
    let is_run_flag = |key: &str| own.iter().any(|f| f == key);
    let mut kept: Vec<String> = args[..2].to_vec();
    let mut moved: Vec<String> = Vec::new();
    let mut rest = args[2..].iter().peekable();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            moved.extend(rest.by_ref().cloned());
            break;
        }
        let Some(option) = arg.strip_prefix("--") else {
            kept.push(arg.clone());
            continue;
        };
        let key = option.split_once('=').map_or(option, |(k, _)| k);
        // `--name` starts a job; other fio options are in the option table
        let takes_value = match nvsched_workload::find_option(key) {
            _ if is_run_flag(key) => None,
            _ if key == "name" => Some(true),
            found => found.map(|o| o.bare.is_none()),
        };
        let Some(takes_value) = takes_value else {
            kept.push(arg.clone());
            continue;
        };
        match rest.peek() {
            Some(value) if takes_value && !option.contains('=') && !value.starts_with("--") => {
                moved.push(format!("{arg}={value}"));
                rest.next();
            }
            _ => moved.push(arg.clone()),
        }
    }
    if !moved.is_empty() {
        kept.push("--".to_string());
        kept.extend(moved);
    }
    kept
}
