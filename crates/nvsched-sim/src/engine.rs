//! The simulation loop: job drivers issue requests through the host submission path, the
//! policy orders and admits them, the device model serves them, completions return
//! through the host completion path to the policy and the jobs.

use crate::events::{EventKind, EventQueue, Lane};
use crate::layout::{self, PlacedFile};
use crate::nodata::{NoDataPages, PastEnd};
use crate::pagecache::{self, first_readahead_window, next_readahead_window, Chunk, PageCache, PAGE_BYTES};
use nvsched_core::{IoPrio, LogClock, Nanos, Op, TenantTree};
use nvsched_policy::{Completion, DeviceView, HostCost, Inserted, PolicyReport, Request, RequestId, Scheduler};
use nvsched_report::{CompletedIo, JobRecorder, JobStats};
use nvsched_ssd::{Command, Device, DeviceCounters, HostPath, PageCacheConfig};
use nvsched_workload::file_setup::{regular_files_of, Opened, UnlinkedFiles};
use nvsched_workload::steadystate::SteadyStates;
use nvsched_workload::{clone_seed, exit_targets, per_prio_reporting, reporting_groups, wait_for_targets, Tenants};
use nvsched_workload::{ExitWhat, FileLocks, FlowGroups, IoUnit, JobDriver, JobSpec, Poll, ReplayStats, SyncRange};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;

/// How often the observer hears of a run's progress, and may stop it.
pub const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_millis(20);

/// Hooks into a running simulation (tests, progress display, tracing).
pub trait Observer {
    /// After each dispatch; `device_inflight` includes the request just dispatched.
    fn on_dispatch(&mut self, _now: Nanos, _rq: &Request, _device_inflight: u32) {}
    /// Each request as its job sees it complete, with its total latency; with a page
    /// cache, also each writeback request (its `job` is one past the last clone's) and
    /// each read-ahead (its reader's `job`).
    fn on_complete(&mut self, _now: Nanos, _rq: &Request, _latency: Nanos) {}
    /// Every [`PROGRESS_EVERY`] of wall-clock time or so.
    fn on_progress(&mut self, _now: Nanos) {}
    /// Before the run, while the drive is brought to its starting state (a large drive's
    /// full state takes up to a minute): the fraction done, every so often, 1.0 last.
    /// [`Observer::stop_requested`] is asked after each; true abandons the run.
    fn on_preparing(&mut self, _done: f64) {}
    /// Asked with each [`Observer::on_progress`]: true ends the run early, as a signal
    /// ends fio's (Ctrl-C): no job issues any more, what is in flight completes, jobs
    /// that would start later end at once, and [`SimOutcome::interrupted`] says so.
    fn stop_requested(&mut self) -> bool {
        false
    }
    /// How often, in simulated time, to call [`Observer::on_status`] (`--status-interval`).
    fn status_every(&self) -> Option<Nanos> {
        None
    }
    /// Every clone's statistics so far, at each `status_every`: (reporting group, job
    /// index, statistics).
    fn on_status(&mut self, _now: Nanos, _clones: Vec<nvsched_report::CloneStatus>) {}
}

/// An observer that does nothing.
pub struct NoObserver;
impl Observer for NoObserver {}

/// Everything a simulation needs.
pub struct SimInput<'a> {
    pub jobs: &'a [JobSpec],
    pub device: Box<dyn Device>,
    pub host: HostPath,
    pub scheduler: Box<dyn Scheduler>,
    pub host_cost: HostCost,
    /// Mixed into every job's seed (`--seed`).
    pub seed: u64,
    /// The Unix time, in milliseconds, the simulated run starts at (the report's time of
    /// day): `log_unix_epoch` logs count from it.
    pub clock_ms: u64,
}

/// A failure to set up or finish a simulation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimError(pub String);

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for SimError {}

/// One job clone's results.
#[derive(Clone, Debug)]
pub struct CloneResult {
    /// Index of the job section.
    pub job_index: usize,
    pub clone: u32,
    pub stats: JobStats,
    pub reporting_group: u32,
    pub started_at: Nanos,
    pub finished_at: Nanos,
    pub prio: IoPrio,
    pub tenant: u32,
    /// How its trace replay went, for a clone that replays one (`read_iolog`).
    pub replay: Option<ReplayStats>,
}

/// Counters of the engine itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EngineCounters {
    pub events: u64,
    /// Requests the jobs issued (before merging).
    pub requests: u64,
    /// Requests the jobs saw complete.
    pub completed: u64,
    pub plug_merges: u64,
    pub sched_merges: u64,
    pub max_device_inflight: u32,
    /// Time integral of requests in the system (issued, not yet seen complete), ns·req.
    pub in_system_integral: f64,
    /// Sum of total latencies of all requests, ns.
    pub latency_sum: f64,
    /// Device commands per direction (read, write, trim, flush).
    pub device_commands: [u64; 4],
    pub merges_by_dir: [u64; 3],
    /// Time with at least one command at the device.
    pub device_busy: Nanos,
    /// Sum of device service times (dispatch → device done) per direction.
    pub device_ticks: [Nanos; 3],
    /// Host CPU time used (with a CPU model).
    pub cpu_busy: Nanos,
    /// With a page cache: buffered reads served from it, those that waited for a read
    /// already on its way (a read-ahead), and those that went to the device; read-ahead
    /// requests sent ahead of the reader.
    pub cache_read_hits: u64,
    pub cache_read_waits: u64,
    pub cache_read_misses: u64,
    pub readahead_requests: u64,
    /// Reads that waited for pages on their way and went to the device after all,
    /// because the pages were evicted before the read was woken.
    pub cache_read_waits_evicted: u64,
    /// Pages read because a buffered write covered them only in part.
    pub partial_page_reads: u64,
    /// Pages a buffered write covered only in part that it filled with zeros instead,
    /// as they held no data yet (a file fio lays out without data).
    pub partial_pages_zeroed: u64,
    /// Pages reads found holding no data (of a file fio only allocated, that nothing
    /// wrote yet), which came back as zeros without I/O: buffered ones fill the cache.
    pub read_pages_zeroed: u64,
    /// Writeback requests and bytes, and buffered writes that waited for writeback
    /// (the dirty limit).
    pub writeback_requests: u64,
    pub writeback_bytes: u64,
    pub throttled_writes: u64,
}

/// The outcome of a simulation.
pub struct SimOutcome {
    pub clones: Vec<CloneResult>,
    pub end: Nanos,
    pub device: DeviceCounters,
    pub policy: PolicyReport,
    /// The policy's registry id.
    pub policy_id: &'static str,
    pub engine: EngineCounters,
    pub files: Vec<PlacedFile>,
    /// The cgroups by tenant id; tenant 0 is "no cgroup".
    pub tenants: TenantTree,
    /// Per-second device-wide bandwidth (bytes) by direction: read, write.
    pub device_series: [Vec<u64>; 2],
    /// Wall-clock time of the event loop alone (device construction excluded); for
    /// benchmarks, never part of a report.
    pub loop_wall: std::time::Duration,
    /// The observer stopped the run early ([`Observer::stop_requested`]): the figures
    /// cover what ran until then.
    pub interrupted: bool,
}

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RqState {
    Free,
    Submitting,
    Queued,
    Merged,
    Dispatched,
}

/// What a request does to the page cache when it lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CacheEffect {
    None,
    /// A buffered read's miss (with its read-ahead): the pages become cached.
    Fill {
        offset_bytes: u64,
        len_bytes: u32,
    },
    /// A read the engine sends to fill the cache, which no job waits for as such: an
    /// asynchronous read-ahead, or the pages a buffered write covers only in part.
    OwnRead {
        offset_bytes: u64,
        len_bytes: u32,
    },
    /// The flusher's write; `background` for one the flusher started on its own (not
    /// an fsync or a sync_file_range).
    Writeback {
        chunk: Chunk,
        seq: u64,
        background: bool,
    },
    /// A job's read past the end of a file made anew: it gets nothing, without reaching
    /// the device.
    PastEnd(PastEnd),
}

#[derive(Clone, Copy)]
struct RqRecord {
    rq: Request,
    job: u32,
    /// The op, offset and size the job issued (the request may grow by merging, and a
    /// front merge moves its start).
    op: Op,
    offset_bytes: u64,
    len: u32,
    /// Which of the job clone's files (for error messages).
    file: u16,
    created: Nanos,
    inserted: Nanos,
    dispatched: Nanos,
    merged_next: u32,
    generation: u32,
    state: RqState,
    cache: CacheEffect,
}

struct JobSlot {
    driver: JobDriver,
    /// Statistics and log files.
    rec: JobRecorder,
    job_index: usize,
    reporting_group: u32,
    prio: IoPrio,
    nice: i8,
    tenant: u32,
    tenant_weight: u32,
    write_sync: bool,
    wake_at: Option<Nanos>,
    waiting_tag: bool,
    /// Held back by flow control, in `flow_held`.
    flow_held: bool,
    done: bool,
    completed_now: u32,
    /// Goes through the page cache (`direct=0` with one configured).
    buffered: bool,
    /// Where each of its files lies on the device: (start, length) in bytes.
    file_ranges: Vec<(u64, u64)>,
    /// Where a sequential buffered read would start next (read-ahead).
    next_seq_read: u64,
    /// Read-ahead: the byte a sequential read reaches to start the next window, where
    /// that window starts, and the size of the last one.
    ra_marker: Option<u64>,
    ra_next: u64,
    ra_window_bytes: u64,
}

impl JobSlot {
    /// Where the clone comes among fio's threads (JobSpec::clones_in_fio_order): the order
    /// fio reports them in.
    fn fio_thread_order(&self) -> (usize, u32) {
        (self.job_index, self.driver.spec.fio_thread_position(self.driver.clone_index))
    }
}

impl Buffered {
    /// Whether a writeback `wait` waits for is still in flight.
    fn writing_back(&self, wait: &SyncWait) -> bool {
        let Some((start, len)) = wait.range else {
            return self.outstanding.first().is_some_and(|&seq| seq <= wait.upto);
        };
        let from = start.saturating_sub(u64::from(self.max_chunk_bytes));
        self.outstanding_at
            .range((from, 0)..(start + len, 0))
            .any(|(&(offset, seq), &len_bytes)| seq <= wait.upto && offset + u64::from(len_bytes) > start)
    }

    /// Copying `len_bytes` between the cache and the application.
    fn copy_time(&self, len_bytes: u64) -> Nanos {
        Nanos(self.cfg.copy_ns_per_kib * len_bytes / 1024)
    }
}

/// A sync waiting for writeback.
struct SyncWait {
    slot: u32,
    /// It waits until every writeback up to this sequence number over its range (device
    /// bytes: start, length; none: anywhere) has landed: an fsync's file, a
    /// sync_file_range's range.
    upto: u64,
    range: Option<(u64, u64)>,
    then: AfterSync,
}

/// What a sync does once the writeback it waits for has landed.
#[derive(Clone, Copy)]
enum AfterSync {
    /// An fsync: its flush goes to the device.
    Flush,
    /// A sync_file_range after `wait_before`: it writes (and maybe waits again).
    Write(SyncRange),
    /// A sync_file_range after `wait_after`: it completes.
    Complete,
}

/// The page cache and the flusher's state.
struct Buffered {
    cache: PageCache,
    cfg: PageCacheConfig,
    /// The job id the flusher's requests carry (one past the last clone's).
    flusher_job: u32,
    /// Background writeback requests in flight.
    background_inflight: u32,
    next_seq: u64,
    /// Writeback requests in flight, by sequence number.
    outstanding: BTreeSet<u64>,
    /// Their lengths by (offset, sequence number), for the syncs that wait on a range.
    outstanding_at: BTreeMap<(u64, u64), u32>,
    /// The most bytes one writeback request writes (`host.max_merge_bytes`).
    max_chunk_bytes: u32,
    /// Buffered writes waiting for the dirty pages to drop below the limit, in order.
    throttled: VecDeque<u32>,
    /// Buffered reads waiting for pages another read is bringing.
    waiting_reads: Vec<u32>,
    /// Buffered writes waiting for the pages they cover in part to be read.
    waiting_writes: Vec<u32>,
    /// fsyncs (and sync_file_ranges) waiting for every writeback up to a sequence
    /// number to land; then an fsync's flush goes to the device.
    fsyncs: Vec<SyncWait>,
    timer: Option<Nanos>,
    /// A timer tick found pages dirty for too long and they are not all written yet.
    expiring: bool,
}

/// A simulation in progress.
pub struct Simulation<'o> {
    now: Nanos,
    events: EventQueue,
    jobs: Vec<JobSlot>,
    phases: Vec<Vec<u32>>,
    phase: usize,
    /// For each job of the job file, its clones (engine indices), and the job it waits
    /// for (`wait_for`).
    clones_of: Vec<Vec<u32>>,
    waits_for: Vec<Option<usize>>,
    /// Jobs of the running phase that wait for another job to finish before they start.
    waiting: Vec<u32>,
    rqs: Vec<RqRecord>,
    free: Vec<u32>,
    sched: Box<dyn Scheduler>,
    cost: HostCost,
    device: Box<dyn Device>,
    host: HostPath,
    queue_depth: u32,
    tags_used: u32,
    tag_waiters: VecDeque<u32>,
    /// Jobs held back by flow control, until a job of a flow group issues or finishes.
    flow_held: Vec<u32>,
    device_inflight: u32,
    policy_wake: Option<Nanos>,
    /// The policy named a wakeup already past and dispatched nothing; it was given one
    /// retry a nanosecond later. Another such wakeup is ignored until it dispatches (each
    /// arrival and completion still asks it), so a policy that misreports its next
    /// wakeup cannot spin the clock one nanosecond at a time.
    past_wakeup_retried: bool,
    batch: Vec<IoUnit>,
    touched: Vec<u32>,
    /// `steadystate` detection per job or group, and the jobs it has just stopped.
    steady: SteadyStates,
    steady_stopped: Vec<u32>,
    in_system: u64,
    last_change: Nanos,
    device_busy_since: Option<Nanos>,
    /// When each host CPU is free (empty: no CPU contention model).
    cpu_free: Vec<Nanos>,
    counters: EngineCounters,
    device_series: [Vec<u64>; 2],
    files: Vec<PlacedFile>,
    tenants: TenantTree,
    observer: &'o mut dyn Observer,
    /// When the observer's next status is due.
    status_clock: Option<nvsched_report::StatusClock>,
    /// The page cache, when the host has one.
    buffered: Option<Box<Buffered>>,
    /// The pages of files fio only allocated that nothing has written yet.
    no_data: NoDataPages,
    /// The files jobs with `unlink=1` removed when they finished.
    unlinked: UnlinkedFiles,
    /// The observer asked the run to stop: running jobs were stopped, later ones end
    /// as they start.
    interrupted: bool,
}

impl<'o> Simulation<'o> {
    pub fn new(input: SimInput<'_>, observer: &'o mut dyn Observer) -> Result<Simulation<'o>, SimError> {
        let capacity = input.device.capacity_bytes();
        let (files, regions) = layout::place(input.jobs, capacity).map_err(SimError)?;
        let file_index: HashMap<String, usize> = files.iter().enumerate().map(|(k, f)| (f.name.clone(), k)).collect();
        let mut tenants = Tenants::default();
        let mut jobs = Vec::new();
        let mut phases: Vec<Vec<u32>> = vec![Vec::new()];
        let groups = reporting_groups(input.jobs);
        let per_prio = per_prio_reporting(input.jobs);
        let mut ordinal = 0u64;
        let mut flows = FlowGroups::default();
        let mut locks = FileLocks::default();
        for (job_index, spec) in input.jobs.iter().enumerate() {
            if job_index > 0 && spec.stonewall {
                phases.push(Vec::new());
            }
            let reporting_group = groups[job_index];
            let (tenant, tenant_weight) = tenants.tenant_of(spec);
            let spec_arc = Arc::new(spec.clone());
            let first_thread = ordinal + 1;
            for clone in 0..spec.numjobs {
                ordinal += 1;
                let seed = clone_seed(spec, ordinal, input.seed);
                // fio numbers log files by thread
                let thread_number = first_thread + u64::from(spec.fio_thread_position(clone));
                let clone_regions = &regions[job_index][clone as usize];
                let mut driver = JobDriver::new(spec_arc.clone(), clone, clone_regions, seed).map_err(SimError)?;
                flows.attach(&mut driver);
                locks.attach(&mut driver);
                let mut rec = JobRecorder::for_job(spec, reporting_group, thread_number as u32, per_prio[job_index])
                    .map_err(SimError)?;
                // the report's time of day on the Unix and real-time clocks; a simulation has
                // no other clock, so those count from the run's start (with a warning)
                rec.set_log_clock(spec, |clock| match clock {
                    LogClock::Unix | LogClock::Id(0) => input.clock_ms,
                    LogClock::Id(_) => 0,
                });
                // where each of the clone's files lies (a file not placed: the whole device)
                let file_ranges: Vec<(u64, u64)> = (0..spec.files_per_clone())
                    .map(|k| {
                        let name = spec.file_name_of(clone, k);
                        file_index.get(&name).map_or((0, capacity), |&k| (files[k].start, files[k].len))
                    })
                    .collect();
                let file_starts: Vec<u64> = file_ranges.iter().map(|&(start, _)| start).collect();
                rec.open_outputs(spec, clone, &file_starts).map_err(SimError)?;
                let prio = spec.ioprio();
                phases.last_mut().expect("one phase").push(jobs.len() as u32);
                jobs.push(JobSlot {
                    driver,
                    rec,
                    job_index,
                    reporting_group,
                    prio,
                    nice: spec.nice,
                    tenant,
                    tenant_weight,
                    write_sync: spec.direct || spec.writes_fua(),
                    wake_at: None,
                    waiting_tag: false,
                    flow_held: false,
                    done: false,
                    completed_now: 0,
                    // O_SYNC writes go through to the device: simulated as direct ones
                    buffered: input.host.page_cache.size_bytes > 0 && !spec.direct && !spec.writes_fua(),
                    next_seq_read: file_ranges.first().map_or(0, |r| r.0),
                    ra_marker: None,
                    ra_next: 0,
                    ra_window_bytes: 0,
                    file_ranges,
                });
            }
        }
        let steady = SteadyStates::new(jobs.iter().map(|j| (&*j.driver.spec, j.reporting_group))).map_err(SimError)?;
        let mut clones_of = vec![Vec::new(); input.jobs.len()];
        for (k, job) in jobs.iter().enumerate() {
            clones_of[job.job_index].push(k as u32);
        }
        let data_at_start = layout::data_at_start(input.jobs, &files, capacity);
        let mut device = input.device;
        device.lay_out(&laid_out_files(&files, &data_at_start));
        let no_data = NoDataPages::new(&unwritten_files(&files, &data_at_start));
        let queue_depth = device.queue_depth().max(1);
        let buffered = jobs.iter().any(|j| j.buffered).then(|| {
            let mut cache = PageCache::new(&input.host.page_cache);
            let files: Vec<(u64, u64)> =
                jobs.iter().filter(|j| j.buffered).flat_map(|j| j.file_ranges.iter().copied()).collect();
            cache.set_files(&files);
            Box::new(Buffered {
                cache,
                cfg: input.host.page_cache.clone(),
                flusher_job: jobs.len() as u32,
                background_inflight: 0,
                next_seq: 1,
                outstanding: BTreeSet::new(),
                outstanding_at: BTreeMap::new(),
                max_chunk_bytes: input.host.max_merge_bytes,
                throttled: VecDeque::new(),
                waiting_reads: Vec::new(),
                waiting_writes: Vec::new(),
                fsyncs: Vec::new(),
                timer: None,
                expiring: false,
            })
        });
        let cpu_free = vec![Nanos::ZERO; input.host.cpus as usize];
        Ok(Simulation {
            now: Nanos::ZERO,
            events: EventQueue::default(),
            clones_of,
            waits_for: wait_for_targets(input.jobs),
            waiting: Vec::new(),
            jobs,
            phases,
            phase: 0,
            rqs: Vec::with_capacity(1024),
            free: Vec::new(),
            sched: {
                let mut sched = input.scheduler;
                sched.set_tenants(&tenants.tree);
                sched
            },
            cost: input.host_cost,
            device,
            host: input.host,
            queue_depth,
            tags_used: 0,
            tag_waiters: VecDeque::new(),
            flow_held: Vec::new(),
            device_inflight: 0,
            policy_wake: None,
            past_wakeup_retried: false,
            batch: Vec::with_capacity(64),
            touched: Vec::new(),
            steady,
            steady_stopped: Vec::new(),
            in_system: 0,
            last_change: Nanos::ZERO,
            device_busy_since: None,
            cpu_free,
            counters: EngineCounters::default(),
            device_series: [Vec::new(), Vec::new()],
            files,
            tenants: tenants.tree,
            status_clock: observer.status_every().and_then(nvsched_report::StatusClock::new),
            observer,
            buffered,
            no_data,
            unlinked: UnlinkedFiles::default(),
            interrupted: false,
        })
    }

    /// Runs to the end: every job finished and every request completed.
    pub fn run(mut self) -> Result<SimOutcome, SimError> {
        let wall = std::time::Instant::now();
        // the observer hears of progress (and may stop the run) every PROGRESS_EVERY of
        // wall-clock time, looked at every 64 events: a fixed count of events would
        // be milliseconds here and seconds with a slow policy (one written in Python)
        let mut next_progress = wall;
        self.start_phase(0);
        while let Some(ev) = self.events.pop() {
            debug_assert!(ev.at >= self.now, "event in the past");
            // a timer that no longer matters (superseded, its job finished, as one stopped
            // by exitall, or all work done: a policy's periodic timer, the flusher's) must
            // not move the clock past the run's end
            match ev.kind {
                EventKind::JobWake(j) => {
                    let job = &self.jobs[j as usize];
                    if job.done || job.wake_at != Some(ev.at) {
                        continue;
                    }
                }
                EventKind::PolicyWake if self.policy_wake != Some(ev.at) || self.all_done() => continue,
                EventKind::WritebackTimer if self.all_done() => continue,
                _ => {}
            }
            self.now = ev.at;
            match ev.kind {
                EventKind::JobWake(j) => {
                    self.jobs[j as usize].wake_at = None;
                    self.poll_job(j);
                }
                EventKind::FlowWake(j) => self.poll_job(j),
                EventKind::Insert(slot) => self.on_insert(slot),
                EventKind::DeviceArrive(slot) => self.on_device_arrive(slot),
                EventKind::DeviceDone(slot) => self.on_device_done(slot),
                EventKind::Complete(slot) => self.on_complete(slot),
                EventKind::PolicyWake => {
                    self.policy_wake = None;
                    self.kick();
                }
                EventKind::CacheDone(slot) => {
                    self.finish_request(slot);
                    self.after_completions();
                }
                EventKind::WritebackTimer => self.on_writeback_timer(),
            }
            if self.events.processed() & 0x3f == 0 {
                let wall_now = std::time::Instant::now();
                if wall_now >= next_progress {
                    next_progress = wall_now + PROGRESS_EVERY;
                    self.observer.on_progress(self.now);
                    if !self.interrupted && self.observer.stop_requested() {
                        self.interrupt();
                    }
                }
            }
            if self.status_clock.is_some_and(|c| c.is_due(self.now)) {
                self.status();
            }
        }
        if self.phase < self.phases.len() || self.in_system > 0 {
            return Err(self.stall_error());
        }
        self.finish(wall.elapsed())
    }

    /// The observer asked to stop: as fio on SIGINT, the running clones issue no more and
    /// finish with what they have in flight; those that start later end at once.
    #[cold]
    fn interrupt(&mut self) {
        self.interrupted = true;
        let running: Vec<u32> =
            (0..self.jobs.len() as u32).filter(|&j| self.jobs[j as usize].driver.started_at().is_some()).collect();
        self.stop_jobs(&running);
    }

    /// Every job has finished, and nothing waits in the policy.
    fn all_done(&self) -> bool {
        self.phase >= self.phases.len() && self.in_system == 0 && self.sched.queued() == 0
    }

    /// Hands the observer every clone's statistics so far; the next status is due an
    /// interval after the one just passed.
    #[cold]
    fn status(&mut self) {
        let now = self.now;
        let mut in_order: Vec<&JobSlot> = self.jobs.iter().collect();
        in_order.sort_by_key(|j| j.fio_thread_order());
        let clones =
            in_order.iter().map(|j| (j.reporting_group, j.job_index, j.rec.snapshot(&j.driver, now))).collect();
        self.observer.on_status(now, clones);
        if let Some(clock) = &mut self.status_clock {
            clock.advance(now);
        }
    }

    fn stall_error(&self) -> SimError {
        let waiting: Vec<String> = self
            .jobs
            .iter()
            .filter(|j| !j.done)
            .map(|j| format!("{} ({} in flight)", j.rec.stats.name, j.driver.inflight()))
            .collect();
        let timer = match self.sched.next_wakeup() {
            Some(t) if t <= self.now => format!(
                "its next wakeup ({t}) is already past, yet it dispatches nothing (a policy that waits for a time must return that time from next_wakeup)"
            ),
            _ => "no timer set".to_string(),
        };
        SimError(format!(
            "simulation stalled at {}: policy '{}' holds {} request(s) with {} at the device and {timer}; unfinished jobs: {}",
            self.now,
            self.sched.id(),
            self.sched.queued(),
            self.device_inflight,
            waiting.join(", ")
        ))
    }

    fn start_phase(&mut self, phase: usize) {
        self.phase = phase;
        if phase >= self.phases.len() {
            return;
        }
        // the phase's clones start as `wait_for` lets them (the last phase's are all done)
        self.waiting = self.phases[phase].clone();
        self.start_waiters();
    }

    /// Whether job clone `j` may start: every clone of the job it waits for has finished.
    fn may_start(&self, j: u32) -> bool {
        match self.waits_for[self.jobs[j as usize].job_index] {
            Some(waitee) => self.clones_of[waitee].iter().all(|&k| self.jobs[k as usize].done),
            None => true,
        }
    }

    /// The waiting clones whose `wait_for` job has finished (all, without one) start now.
    fn start_waiters(&mut self) {
        let (ready, waiting): (Vec<u32>, Vec<u32>) =
            std::mem::take(&mut self.waiting).into_iter().partition(|&j| self.may_start(j));
        self.waiting = waiting;
        for &j in &ready {
            self.jobs[j as usize].driver.start(self.now);
            if self.interrupted {
                self.jobs[j as usize].driver.terminate(self.now);
            }
            self.open_files(j);
        }
        for &j in &ready {
            self.poll_job(j);
        }
    }

    /// Job clone `j` opens its files as it starts: one that an earlier job removed
    /// (`unlink=1`) is made anew, without data, by a job that writes; any other job fails.
    fn open_files(&mut self, j: u32) {
        let job = &mut self.jobs[j as usize];
        match self.unlinked.open(&job.driver.spec, job.driver.clone_index) {
            Opened::Missing(name) => job.rec.failed_to_open(&mut job.driver, self.now, &name),
            Opened::Files { recreated } => {
                for name in recreated {
                    let Some(f) = self.files.iter().find(|f| f.name == name) else { continue };
                    self.no_data.emptied(f.start, f.len);
                    // the old file's cached pages went with it
                    if let Some(b) = &mut self.buffered {
                        b.cache.discard(&mut self.no_data, f.start, f.len);
                    }
                }
            }
        }
    }

    /// Clone `j` finished: a file of its that is removed (`unlink=1`, by this job or an
    /// earlier one) and that no other running clone has open is evicted, as Linux evicts
    /// a deleted file once the last process closes it: its cached pages go, dirty ones
    /// without being written back (what is under writeback lands).
    fn evict_unlinked(&mut self, j: u32) {
        let (spec, clone) = (self.jobs[j as usize].driver.spec.clone(), self.jobs[j as usize].driver.clone_index);
        for name in regular_files_of(&spec, clone).filter(|name| self.unlinked.is_removed(name)) {
            let open_elsewhere = self.jobs.iter().enumerate().any(|(k, other)| {
                let d = &other.driver;
                k != j as usize
                    && !other.done
                    && d.started_at().is_some()
                    && regular_files_of(&d.spec, d.clone_index).any(|n| n == name)
            });
            let Some(f) = self.files.iter().find(|f| f.name == name).filter(|_| !open_elsewhere) else { continue };
            let b = self.buffered.as_mut().expect("a page cache");
            b.cache.discard(&mut self.no_data, f.start, f.len);
        }
    }

    fn check_phase_done(&mut self) {
        while self.phase < self.phases.len() && self.phases[self.phase].iter().all(|&j| self.jobs[j as usize].done) {
            self.start_phase(self.phase + 1);
        }
    }

    /// Runs `cost` of host CPU work ready at `ready` on the first free CPU; returns when
    /// it ends. Without a CPU model the cost is a pure delay.
    #[inline]
    fn cpu(&mut self, ready: Nanos, cost: Nanos) -> Nanos {
        if self.cpu_free.is_empty() {
            return ready + cost;
        }
        let (i, free) = self.cpu_free.iter().enumerate().min_by_key(|(_, f)| **f).map(|(i, f)| (i, *f)).expect("cpus");
        let end = free.max(ready) + cost;
        self.cpu_free[i] = end;
        self.counters.cpu_busy += cost;
        end
    }

    /// Schedules an event a constant delay after CPU work ended at `at - delay`. With one
    /// CPU such events come in time order (the CPU is first come, first served), so they
    /// take a FIFO lane; with several CPUs work can end out of order, so the heap.
    #[inline]
    fn push_after_cpu(&mut self, lane: Lane, at: Nanos, kind: EventKind) {
        if self.cpu_free.len() == 1 {
            self.events.push_lane(lane, at, kind);
        } else {
            self.events.push(at, kind);
        }
    }

    #[inline]
    fn note_in_system(&mut self, delta: i64) {
        self.counters.in_system_integral += self.in_system as f64 * (self.now - self.last_change).0 as f64;
        self.last_change = self.now;
        self.in_system = (self.in_system as i64 + delta) as u64;
    }

    fn poll_job(&mut self, j: u32) {
        loop {
            let job = &mut self.jobs[j as usize];
            if job.done {
                return;
            }
            let free_tags = self.host.nr_requests.saturating_sub(self.tags_used);
            if free_tags == 0 {
                if !job.waiting_tag {
                    job.waiting_tag = true;
                    self.tag_waiters.push_back(j);
                }
                return;
            }
            self.batch.clear();
            match job.driver.poll_at_most(self.now, &mut self.batch, free_tags) {
                Poll::Ready => {
                    self.issue_batch(j);
                    if !self.flow_held.is_empty() && self.jobs[j as usize].driver.in_flow() {
                        self.release_flow();
                    }
                }
                Poll::WaitUntil(t) => {
                    self.wake_job_at(j, t);
                    return;
                }
                Poll::Held(until) => {
                    if until < Nanos::MAX {
                        self.wake_job_at(j, until);
                    }
                    let job = &mut self.jobs[j as usize];
                    if !job.flow_held {
                        job.flow_held = true;
                        self.flow_held.push(j);
                    }
                    return;
                }
                Poll::Blocked => return,
                Poll::Finished => {
                    job.done = true;
                    if !self.flow_held.is_empty() && job.driver.in_flow() {
                        self.release_flow();
                    }
                    let job = &mut self.jobs[j as usize];
                    let end = job.driver.finished_at().unwrap_or(self.now);
                    job.rec.stopped(&job.driver, end);
                    self.unlinked.finished(&job.driver.spec, job.driver.clone_index);
                    if self.buffered.is_some() {
                        self.evict_unlinked(j);
                    }
                    let job = &mut self.jobs[j as usize];
                    if let Some(what) = job.driver.spec.exit_on_finish(job.rec.stats.error.is_some()) {
                        self.exit_others(j, what);
                    }
                    if !self.waiting.is_empty() {
                        self.start_waiters();
                    }
                    self.check_phase_done();
                    return;
                }
            }
        }
    }

    /// Job `j` polls again at `t` (or earlier, if it already has an earlier wake-up).
    fn wake_job_at(&mut self, j: u32, t: Nanos) {
        let job = &mut self.jobs[j as usize];
        if job.wake_at.is_none_or(|w| t < w) {
            job.wake_at = Some(t);
            self.events.push(t, EventKind::JobWake(j));
        }
    }

    /// A job of a flow group issued or finished, or a `lockfile` lock came back: the held
    /// jobs look again, after what runs now (fio's held jobs spin on the group's counts).
    fn release_flow(&mut self) {
        for j in std::mem::take(&mut self.flow_held) {
            self.jobs[j as usize].flow_held = false;
            self.events.push(self.now, EventKind::FlowWake(j));
        }
    }

    /// `exitall` or `exitall_on_error`: job `j` finished, so the jobs `what` names stop
    /// issuing.
    fn exit_others(&mut self, j: u32, what: ExitWhat) {
        let group_of = |k: u32| self.jobs[k as usize].reporting_group;
        let targets = exit_targets(what, j, self.jobs.len() as u32, group_of, &self.phases[self.phase]);
        self.stop_jobs(&targets);
    }

    /// Jobs `ks` issue no more (`exitall`, steady state reached); what they have out
    /// completes.
    fn stop_jobs(&mut self, ks: &[u32]) {
        for &k in ks {
            if !self.jobs[k as usize].done {
                self.jobs[k as usize].driver.terminate(self.now);
                self.poll_job(k);
            }
        }
    }

    fn alloc_slot(&mut self) -> u32 {
        match self.free.pop() {
            Some(s) => s,
            None => {
                self.rqs.push(RqRecord {
                    rq: Request::read(0, 0),
                    job: 0,
                    op: Op::Read,
                    offset_bytes: 0,
                    len: 0,
                    file: 0,
                    created: Nanos::ZERO,
                    inserted: Nanos::ZERO,
                    dispatched: Nanos::ZERO,
                    merged_next: NONE,
                    generation: 0,
                    state: RqState::Free,
                    cache: CacheEffect::None,
                });
                (self.rqs.len() - 1) as u32
            }
        }
    }

    fn issue_batch(&mut self, j: u32) {
        let n = self.batch.len() as u32;
        let submit_at = self.now + self.host.submit();
        let submit_cpu = Nanos(self.host.submit_cpu_ns);
        let job = &mut self.jobs[j as usize];
        job.rec.stats.record_submit_batch(n);
        let depth_after = job.driver.inflight();
        let (nice, tenant, weight, write_sync) = (job.nice, job.tenant, job.tenant_weight, job.write_sync);
        let fua = job.driver.fua();
        let buffered = job.buffered;
        for i in 0..n {
            let job = &mut self.jobs[j as usize];
            if job.driver.counts_depth(self.batch[i as usize].op) {
                job.rec.stats.record_issue_depth(depth_after - (n - 1 - i));
            }
        }
        let mut parent = NONE;
        for i in 0..self.batch.len() {
            let unit = self.batch[i];
            self.jobs[j as usize].rec.on_issue(self.now, &unit);
            self.device.prefetch(unit.offset_bytes);
            let slot = self.alloc_slot();
            let rec = &mut self.rqs[slot as usize];
            rec.generation = rec.generation.wrapping_add(1);
            let id = RequestId(u64::from(slot) | (u64::from(rec.generation) << 32));
            rec.rq = Request {
                id,
                op: unit.op,
                offset_bytes: unit.offset_bytes,
                len_bytes: unit.len_bytes,
                sync: unit.op != Op::Write || write_sync,
                fua: fua && unit.op == Op::Write,
                prio: unit.prio,
                nice,
                job: j,
                tenant,
                tenant_weight: weight,
                submit_time: submit_at,
            };
            rec.job = j;
            rec.op = unit.op;
            rec.offset_bytes = unit.offset_bytes;
            rec.len = unit.len_bytes;
            rec.file = unit.file;
            rec.created = self.now;
            rec.merged_next = NONE;
            rec.state = RqState::Submitting;
            rec.cache = CacheEffect::None;
            self.counters.requests += 1;
            self.note_in_system(1);
            if unit.op == Op::Flush && !unit.sync_range.is_fsync() {
                self.sync_file_range(slot, &unit, buffered);
                continue;
            }
            let past_end = (unit.op == Op::Read)
                .then(|| self.no_data.read_past_end(unit.offset_bytes, u64::from(unit.len_bytes)))
                .flatten();
            if let Some(past_end) = past_end {
                let submitted = self.now + self.host.submit();
                self.rqs[slot as usize].cache = CacheEffect::PastEnd(past_end);
                self.rqs[slot as usize].inserted = submitted;
                self.events.push(submitted, EventKind::CacheDone(slot));
                continue;
            }
            if buffered {
                if self.through_cache(j, slot, &unit) {
                    self.tags_used += 1;
                    self.schedule_insert(slot, submit_cpu);
                }
                continue;
            }
            if !self.no_data.is_empty() && self.direct_without_data(slot, &unit) {
                continue;
            }
            self.tags_used += 1;
            if parent != NONE {
                let p = self.rqs[parent as usize].rq;
                if p.can_back_merge(&self.rqs[slot as usize].rq, self.host.max_merge_bytes) {
                    self.rqs[parent as usize].rq.len_bytes += unit.len_bytes;
                    self.link_merged(parent, slot);
                    self.tags_used -= 1;
                    self.counters.plug_merges += 1;
                    self.counters.merges_by_dir[unit.op.index().min(2)] += 1;
                    continue;
                }
                self.schedule_insert(parent, submit_cpu);
            }
            parent = slot;
        }
        if parent != NONE {
            self.schedule_insert(parent, submit_cpu);
        }
    }

    /// A direct request meets the pages that hold no data: a write or a trim changes
    /// which do; a read of such pages alone completes with zeros without reaching the
    /// policy or the device, as Linux reads unwritten extents (returns whether it did).
    fn direct_without_data(&mut self, slot: u32, unit: &IoUnit) -> bool {
        let (offset, len) = (unit.offset_bytes, u64::from(unit.len_bytes));
        match unit.op {
            Op::Write => self.no_data.written(offset, len),
            Op::Discard => self.no_data.trimmed(offset, len),
            Op::Read if self.no_data.holds_no_data_in(offset, len) => {
                let submitted = self.now + self.host.submit();
                self.rqs[slot as usize].inserted = submitted;
                self.counters.read_pages_zeroed += pagecache::pages(offset, len).count() as u64;
                self.events.push(submitted, EventKind::CacheDone(slot));
                return true;
            }
            _ => {}
        }
        false
    }

    /// The submission path of one request: CPU time (with a CPU model), then latency.
    fn schedule_insert(&mut self, slot: u32, submit_cpu: Nanos) {
        if self.cpu_free.is_empty() {
            let at = self.now + self.host.submit();
            self.events.push_lane(Lane::Submit, at, EventKind::Insert(slot));
        } else {
            let at = self.cpu(self.now, submit_cpu) + self.host.submit();
            self.push_after_cpu(Lane::Submit, at, EventKind::Insert(slot));
        }
    }

    /// Appends `child` (and whatever was merged into it) to `parent`'s merge chain.
    fn link_merged(&mut self, parent: u32, child: u32) {
        let mut tail = child;
        while self.rqs[tail as usize].merged_next != NONE {
            tail = self.rqs[tail as usize].merged_next;
        }
        self.rqs[tail as usize].merged_next = self.rqs[parent as usize].merged_next;
        self.rqs[parent as usize].merged_next = child;
        self.rqs[child as usize].state = RqState::Merged;
    }

    fn slot_of(&self, id: RequestId) -> u32 {
        let slot = id.0 as u32;
        debug_assert_eq!(self.rqs[slot as usize].generation, (id.0 >> 32) as u32, "stale request id");
        slot
    }

    fn on_insert(&mut self, slot: u32) {
        // the request and whatever the plug merged into it reach the scheduler now
        let mut s = slot;
        while s != NONE {
            self.rqs[s as usize].inserted = self.now;
            s = self.rqs[s as usize].merged_next;
        }
        let rq = self.rqs[slot as usize].rq;
        match self.sched.insert(rq, self.now) {
            Inserted::Queued => self.rqs[slot as usize].state = RqState::Queued,
            Inserted::MergedInto(parent_id) => {
                let parent = self.slot_of(parent_id);
                assert!(
                    self.rqs[parent as usize].state == RqState::Queued,
                    "policy '{}' merged into a request that is not queued",
                    self.sched.id()
                );
                self.link_merged(parent, slot);
                self.tags_used -= 1;
                self.counters.sched_merges += 1;
                self.counters.merges_by_dir[rq.op.index().min(2)] += 1;
                self.wake_tag_waiters();
            }
        }
        self.kick();
    }

    /// Dispatches until the policy holds back or the device queue is full.
    fn kick(&mut self) {
        let mut dispatched = false;
        while self.device_inflight < self.queue_depth {
            let view = DeviceView { inflight: self.device_inflight, queue_depth: self.queue_depth };
            let Some(rq) = self.sched.dispatch(self.now, view) else { break };
            let slot = self.slot_of(rq.id);
            let rec = &mut self.rqs[slot as usize];
            debug_assert_eq!(
                rec.state,
                RqState::Queued,
                "policy '{}' dispatched a request it does not hold",
                self.sched.id()
            );
            rec.rq = rq;
            rec.dispatched = self.now;
            rec.state = RqState::Dispatched;
            dispatched = true;
            if self.device_inflight == 0 {
                self.device_busy_since = Some(self.now);
            }
            self.device_inflight += 1;
            self.counters.max_device_inflight = self.counters.max_device_inflight.max(self.device_inflight);
            self.observer.on_dispatch(self.now, &rq, self.device_inflight);
            if self.cpu_free.is_empty() {
                self.events.push_lane(Lane::Dispatch, self.now + self.cost.dispatch, EventKind::DeviceArrive(slot));
            } else {
                let at = self.cpu(self.now, self.cost.dispatch);
                self.push_after_cpu(Lane::Dispatch, at, EventKind::DeviceArrive(slot));
            }
        }
        // with the device queue full, the next completion kicks again: a timer would only
        // spin (a deadline already past re-arms it every nanosecond until then)
        if self.device_inflight >= self.queue_depth {
            return;
        }
        if dispatched {
            self.past_wakeup_retried = false;
        }
        if let Some(t) = self.sched.next_wakeup() {
            if t <= self.now && !dispatched {
                if self.past_wakeup_retried {
                    return;
                }
                self.past_wakeup_retried = true;
            }
            let t = t.max(self.now + Nanos(1));
            if self.policy_wake.is_none_or(|w| t < w) {
                self.policy_wake = Some(t);
                self.events.push(t, EventKind::PolicyWake);
            }
        }
    }

    fn on_device_arrive(&mut self, slot: u32) {
        let rq = self.rqs[slot as usize].rq;
        let cmd = Command { op: rq.op, offset_bytes: rq.offset_bytes, len_bytes: rq.len_bytes, fua: rq.fua };
        let done = self.device.submit(&cmd, self.now);
        debug_assert!(done >= self.now, "device completed in the past");
        self.counters.device_commands[rq.op.index()] += 1;
        if rq.op != Op::Flush {
            self.counters.device_ticks[rq.op.index()] += done - self.rqs[slot as usize].dispatched;
        }
        if rq.op.is_data() {
            let sec = (done.0 / 1_000_000_000) as usize;
            let series = &mut self.device_series[rq.op.index()];
            if series.len() <= sec {
                series.resize(sec + 1, 0);
            }
            series[sec] += u64::from(rq.len_bytes);
        }
        if self.cpu_free.is_empty() {
            self.events.push(done + self.host.complete() + self.cost.complete, EventKind::Complete(slot));
        } else {
            self.events.push(done, EventKind::DeviceDone(slot));
        }
    }

    /// With a CPU model: the completion is processed on a host CPU.
    fn on_device_done(&mut self, slot: u32) {
        let end = self.cpu(self.now, Nanos(self.host.complete_cpu_ns) + self.cost.complete);
        self.push_after_cpu(Lane::Complete, end + self.host.complete(), EventKind::Complete(slot));
    }

    fn on_complete(&mut self, slot: u32) {
        self.device_inflight -= 1;
        if self.device_inflight == 0 {
            if let Some(since) = self.device_busy_since.take() {
                self.counters.device_busy += self.now - since;
            }
        }
        let rec = self.rqs[slot as usize];
        self.sched.complete(&Completion {
            rq: &rec.rq,
            dispatched_at: rec.dispatched,
            now: self.now,
            dispatched_by_policy: true,
        });
        self.tags_used -= 1;
        let mut s = slot;
        while s != NONE {
            let next = self.rqs[s as usize].merged_next;
            self.finish_request(s);
            s = next;
        }
        if self.buffered.is_some() {
            self.after_cache_io();
        }
        self.kick();
        self.after_completions();
    }

    /// The jobs whose requests just completed reap them and issue again.
    fn after_completions(&mut self) {
        let touched = std::mem::take(&mut self.touched);
        for &j in &touched {
            let job = &mut self.jobs[j as usize];
            let n = std::mem::take(&mut job.completed_now);
            job.rec.reaped(&job.driver, n);
        }
        // jobs already waiting for a tag get the freed ones first; a job whose request
        // just completed queues behind them (otherwise the first nr_requests worth of
        // jobs would keep all tags for good)
        self.wake_tag_waiters();
        for &j in &touched {
            self.poll_job(j);
        }
        // a completion gave a `lockfile` lock back: the clones waiting for one look again
        // (after the clone that gave it back, which queues behind them)
        if !self.flow_held.is_empty() && touched.iter().any(|&j| self.jobs[j as usize].driver.locks_files()) {
            self.release_flow();
        }
        self.touched = touched;
        self.touched.clear();
        if !self.steady_stopped.is_empty() {
            let stopped = std::mem::take(&mut self.steady_stopped);
            self.stop_jobs(&stopped);
        }
    }

    fn finish_request(&mut self, slot: u32) {
        let rec = self.rqs[slot as usize];
        match rec.cache {
            CacheEffect::None | CacheEffect::PastEnd(_) => {}
            CacheEffect::Fill { offset_bytes, len_bytes } => {
                let b = self.buffered.as_mut().expect("a page cache");
                b.cache.fill(offset_bytes, u64::from(len_bytes));
            }
            CacheEffect::OwnRead { offset_bytes, len_bytes } => {
                let b = self.buffered.as_mut().expect("a page cache");
                b.cache.fill(offset_bytes, u64::from(len_bytes));
                self.finish_own_request(slot);
                return;
            }
            CacheEffect::Writeback { chunk, seq, background } => {
                let b = self.buffered.as_mut().expect("a page cache");
                b.cache.written_back(&chunk);
                b.outstanding.remove(&seq);
                b.outstanding_at.remove(&(chunk.offset_bytes, seq));
                if background {
                    b.background_inflight -= 1;
                }
                self.finish_own_request(slot);
                return;
            }
        }
        let now = self.now;
        self.note_in_system(-1);
        self.counters.completed += 1;
        debug_assert!(rec.state != RqState::Free, "request completed twice");
        let latency = now - rec.created;
        self.counters.latency_sum += latency.0 as f64;
        let job = &mut self.jobs[rec.job as usize];
        if job.completed_now == 0 {
            self.touched.push(rec.job);
        }
        job.completed_now += 1;
        let io = CompletedIo {
            op: rec.op,
            len_bytes: rec.len,
            offset_bytes: rec.offset_bytes,
            file: rec.file,
            prio: rec.rq.prio,
            created: rec.created,
            inserted: rec.inserted,
        };
        match rec.cache {
            CacheEffect::PastEnd(p) => job.rec.complete_past_end(&mut job.driver, &io, now, p.straddles),
            _ => job.rec.complete(&mut job.driver, &io, now),
        }
        if let Some(stop) = self.steady.on_complete(rec.job, &job.driver, rec.op, rec.len, now) {
            self.steady_stopped.extend_from_slice(stop);
        }
        self.finish_own_request(slot);
    }

    /// Shows the observer a request that landed as it was issued (a merge may have
    /// grown it, or moved its start), and frees its slot. A request the engine sent for
    /// the page cache (writeback, read-ahead) ends here directly: no job sees it.
    fn finish_own_request(&mut self, slot: u32) {
        let rec = self.rqs[slot as usize];
        let mut as_issued = rec.rq;
        (as_issued.op, as_issued.offset_bytes, as_issued.len_bytes) = (rec.op, rec.offset_bytes, rec.len);
        self.observer.on_complete(self.now, &as_issued, self.now - rec.created);
        let r = &mut self.rqs[slot as usize];
        r.state = RqState::Free;
        r.merged_next = NONE;
        self.free.push(slot);
    }

    /// A buffered job's request meets the page cache; returns whether it goes on to the
    /// device (a read miss, with its read-ahead; a trim; an fsync's flush once its
    /// writeback has landed).
    fn through_cache(&mut self, j: u32, slot: u32, unit: &IoUnit) -> bool {
        let now = self.now;
        let submitted = now + self.host.submit();
        let (offset, len) = (unit.offset_bytes, unit.len_bytes);
        let b = self.buffered.as_mut().expect("a page cache");
        let copy = b.copy_time(u64::from(len));
        let job = &mut self.jobs[j as usize];
        let file = job.file_ranges.get(usize::from(unit.file)).copied();
        match unit.op {
            Op::Read => {
                let end = offset + u64::from(len);
                let sequential = offset == job.next_seq_read;
                job.next_seq_read = end;
                let file_end = file.map_or(u64::MAX, |(start, flen)| start + flen);
                let max_window = u64::from(b.cfg.readahead_bytes);
                let window = |from: u64, size: u64| file_end.saturating_sub(from).min(size) as u32;
                // a sequential reader reaching the marker sends the next, larger, window
                // ahead (Linux's asynchronous read-ahead), so it seldom waits for the device
                if sequential && job.ra_marker.is_some_and(|m| (offset..end).contains(&m)) {
                    job.ra_window_bytes = next_readahead_window(job.ra_window_bytes, max_window);
                    let (start, ahead) = (job.ra_next, window(job.ra_next, job.ra_window_bytes));
                    job.ra_marker = (ahead > 0).then_some(start);
                    job.ra_next = start + u64::from(ahead);
                    if ahead > 0 && !b.cache.holds_or_reads(start, u64::from(ahead)) {
                        self.counters.readahead_requests += 1;
                        self.own_read(j, start, ahead);
                    }
                }
                let b = self.buffered.as_mut().expect("a page cache");
                if b.cache.holds(offset, u64::from(len)) {
                    b.cache.touch(offset, u64::from(len));
                    self.counters.cache_read_hits += 1;
                    self.events.push(submitted + copy, EventKind::CacheDone(slot));
                    return false;
                }
                if b.cache.holds_or_reads(offset, u64::from(len)) {
                    b.waiting_reads.push(slot);
                    self.counters.cache_read_waits += 1;
                    return false;
                }
                if self.no_data.holds_no_data_in(offset, u64::from(len)) {
                    // nothing to read: the pages are zeros, as Linux makes them
                    b.cache.fill(offset, u64::from(len));
                    self.counters.read_pages_zeroed += pagecache::pages(offset, u64::from(len)).count() as u64;
                    self.events.push(submitted + copy, EventKind::CacheDone(slot));
                    return false;
                }
                self.counters.cache_read_misses += 1;
                let mut fill_end = end;
                if sequential {
                    // read ahead, within the file: the reader waits for this window, and
                    // its next read (the marker) sends the one after
                    let job = &mut self.jobs[j as usize];
                    job.ra_window_bytes = first_readahead_window(u64::from(len), max_window);
                    fill_end = fill_end.max(offset + u64::from(window(offset, job.ra_window_bytes)));
                    job.ra_marker = Some(end).filter(|&m| m < fill_end);
                    job.ra_next = fill_end;
                }
                self.fill_from_device(slot, offset, fill_end);
                true
            }
            Op::Write => {
                if self.read_partial_pages(slot) {
                    self.buffer_write(slot, submitted);
                } else {
                    self.buffered.as_mut().expect("a page cache").waiting_writes.push(slot);
                }
                false
            }
            Op::Discard => {
                b.cache.discard(&mut self.no_data, offset, u64::from(len));
                true
            }
            Op::Flush => {
                // fsync: write back the file's dirty pages, wait for them, then flush
                self.write_back_range(file, true, j);
                let b = self.buffered.as_mut().expect("a page cache");
                let wait = SyncWait { slot, upto: b.next_seq - 1, range: file, then: AfterSync::Flush };
                if !b.writing_back(&wait) {
                    return true;
                }
                b.fsyncs.push(wait);
                false
            }
        }
    }

    /// Writes back the dirty pages of a device byte range (`None`: all) for job `caller`,
    /// as sync requests (an fsync's, or a sync_file_range with all three flags) or async
    /// ones.
    fn write_back_range(&mut self, range: Option<(u64, u64)>, sync: bool, caller: u32) {
        let max = self.host.max_merge_bytes;
        while let Some(chunk) = self.buffered.as_mut().and_then(|b| b.cache.next_chunk(range, Nanos::MAX, max)) {
            self.submit_writeback(chunk, sync, Some(caller));
        }
    }

    /// `sync_file_range` never reaches the device (no flush). Through the page cache it
    /// waits for the range's writeback in flight (`wait_before`), writes back the range's
    /// dirty pages (`write`) and waits for that (`wait_after`). Without the cache there is
    /// nothing to write: the system call only.
    fn sync_file_range(&mut self, slot: u32, unit: &IoUnit, buffered: bool) {
        let done_at = self.now + self.host.submit();
        let Some(b) = self.buffered.as_mut().filter(|_| buffered) else {
            self.events.push(done_at, EventKind::CacheDone(slot));
            return;
        };
        let range = (unit.offset_bytes, u64::from(unit.len_bytes));
        if unit.sync_range.waits_before() {
            let wait =
                SyncWait { slot, upto: b.next_seq - 1, range: Some(range), then: AfterSync::Write(unit.sync_range) };
            if b.writing_back(&wait) {
                b.fsyncs.push(wait);
                return;
            }
        }
        self.sync_range_write(slot, range, unit.sync_range, done_at);
    }

    /// `sync_file_range` after its `wait_before`: writes back the range (`write`), waits
    /// for that (`wait_after`), and completes, at `done_at` at the earliest.
    fn sync_range_write(&mut self, slot: u32, range: (u64, u64), flags: SyncRange, done_at: Nanos) {
        if flags.writes() && range.1 > 0 {
            let caller = self.rqs[slot as usize].job;
            self.write_back_range(Some(range), flags.is_data_sync(), caller);
        }
        let b = self.buffered.as_mut().expect("a page cache");
        let wait = SyncWait { slot, upto: b.next_seq - 1, range: Some(range), then: AfterSync::Complete };
        if flags.waits_after() && b.writing_back(&wait) {
            b.fsyncs.push(wait);
        } else {
            self.events.push(done_at, EventKind::CacheDone(slot));
        }
        self.start_writeback();
    }

    /// Whether the pages buffered write `slot` covers only in part are cached; those that
    /// are not, and are not on their way, are read first (as the kernel's `write_begin`
    /// does), at the writer's priority.
    fn read_partial_pages(&mut self, slot: u32) -> bool {
        let rec = &self.rqs[slot as usize];
        let (job, offset, len) = (rec.job, rec.offset_bytes, u64::from(rec.len));
        let b = self.buffered.as_mut().expect("a page cache");
        let missing = b.cache.partial_pages_missing(&self.no_data, offset, len);
        for page in missing.into_iter().flatten() {
            let b = self.buffered.as_mut().expect("a page cache");
            if !b.cache.holds_or_reads(page, PAGE_BYTES) {
                self.counters.partial_page_reads += 1;
                self.own_read(job, page, PAGE_BYTES as u32);
            }
        }
        missing == [None, None]
    }

    /// Buffered write `slot` copies into the cache from `start` on, or waits while too
    /// much of the cache is dirty (behind the writes already waiting).
    fn buffer_write(&mut self, slot: u32, start: Nanos) {
        let rec = &self.rqs[slot as usize];
        let (offset, len) = (rec.offset_bytes, u64::from(rec.len));
        let b = self.buffered.as_mut().expect("a page cache");
        if b.throttled.is_empty() && !b.cache.must_wait_to_dirty(offset, len) {
            self.copy_in(slot, start);
        } else {
            b.throttled.push_back(slot);
            self.counters.throttled_writes += 1;
        }
        self.start_writeback();
    }

    /// Buffered write `slot` dirties its pages now; it returns once copied, after `start`.
    fn copy_in(&mut self, slot: u32, start: Nanos) {
        let rec = &self.rqs[slot as usize];
        let (job, offset, len) = (rec.job, rec.offset_bytes, u64::from(rec.len));
        let b = self.buffered.as_mut().expect("a page cache");
        let zeroed = b.cache.dirty(&mut self.no_data, offset, len, job, self.now);
        self.counters.partial_pages_zeroed += u64::from(zeroed);
        self.events.push(start + b.copy_time(len), EventKind::CacheDone(slot));
    }

    /// Background writeback: above the background threshold or with writers waiting,
    /// and after each timer tick until the pages dirty for too long are written
    /// (`expiring`), the flusher writes runs of dirty pages, a few at a time; the timer
    /// ticks while pages are dirty.
    fn start_writeback(&mut self) {
        if self.phase >= self.phases.len() {
            return; // the run is over: what is dirty stays in memory, as after fio exits
        }
        let max = self.host.max_merge_bytes;
        let now = self.now;
        loop {
            let b = self.buffered.as_mut().expect("a page cache");
            if b.background_inflight >= b.cfg.writeback_depth {
                break;
            }
            let urgent = b.cache.over_background() || !b.throttled.is_empty();
            let expired = now.0.checked_sub(b.cfg.dirty_expire_ms * 1_000_000).map(Nanos);
            let dirtied_by = match (urgent, b.expiring, expired) {
                (true, _, _) => Nanos::MAX,
                (false, true, Some(t)) => t,
                _ => break,
            };
            let Some(chunk) = b.cache.next_chunk(None, dirtied_by, max) else {
                b.expiring = false;
                break;
            };
            b.background_inflight += 1;
            self.submit_writeback(chunk, false, None);
        }
        let b = self.buffered.as_mut().expect("a page cache");
        if b.timer.is_none() && b.cache.dirty_pages() > 0 {
            let at = now + Nanos(b.cfg.writeback_interval_ms * 1_000_000);
            b.timer = Some(at);
            self.events.push(at, EventKind::WritebackTimer);
        }
    }

    fn on_writeback_timer(&mut self) {
        let b = self.buffered.as_mut().expect("a page cache");
        b.timer = None;
        b.expiring = true;
        self.start_writeback();
    }

    /// A write of `chunk` back to the device, charged to the tenant that dirtied it. The
    /// flusher's own (no `caller`) is async and best effort, nice 0; one an fsync or a
    /// sync_file_range starts carries its caller's priority, as the kernel gives a bio
    /// the submitting task's.
    fn submit_writeback(&mut self, chunk: Chunk, sync: bool, caller: Option<u32>) {
        let dirtier = &self.jobs[chunk.dirtier as usize];
        let (tenant, tenant_weight) = (dirtier.tenant, dirtier.tenant_weight);
        let (prio, nice) =
            caller.map_or((IoPrio::default(), 0), |j| (self.jobs[j as usize].prio, self.jobs[j as usize].nice));
        let background = caller.is_none();
        let b = self.buffered.as_mut().expect("a page cache");
        let seq = b.next_seq;
        b.next_seq += 1;
        b.outstanding.insert(seq);
        b.outstanding_at.insert((chunk.offset_bytes, seq), chunk.len_bytes);
        let rq = Request {
            id: RequestId(0),
            op: Op::Write,
            offset_bytes: chunk.offset_bytes,
            len_bytes: chunk.len_bytes,
            sync,
            fua: false,
            prio,
            nice,
            job: b.flusher_job,
            tenant,
            tenant_weight,
            submit_time: Nanos::ZERO,
        };
        self.counters.writeback_requests += 1;
        self.counters.writeback_bytes += u64::from(chunk.len_bytes);
        self.submit_own_request(rq, CacheEffect::Writeback { chunk, seq, background });
    }

    /// Buffered read `slot` goes to the device for the pages of `[start, end)`, whole
    /// pages as the device reads them, and fills the cache with them on its way back.
    fn fill_from_device(&mut self, slot: u32, start: u64, end: u64) {
        let b = self.buffered.as_mut().expect("a page cache");
        let fill_start = start - start % PAGE_BYTES;
        let fill = (end.next_multiple_of(PAGE_BYTES) - fill_start) as u32;
        b.cache.start_read(fill_start, u64::from(fill));
        let rec = &mut self.rqs[slot as usize];
        (rec.rq.offset_bytes, rec.rq.len_bytes) = (fill_start, fill);
        rec.cache = CacheEffect::Fill { offset_bytes: fill_start, len_bytes: fill };
    }

    /// Job `j` reads pages into the cache (ahead of its reads, or before it writes part
    /// of them): a read at its own priority and tenant that completes none of its I/O as
    /// such.
    fn own_read(&mut self, j: u32, offset_bytes: u64, len_bytes: u32) {
        let job = &self.jobs[j as usize];
        let rq = Request {
            id: RequestId(0),
            op: Op::Read,
            offset_bytes,
            len_bytes,
            sync: true,
            fua: false,
            prio: job.prio,
            nice: job.nice,
            job: j,
            tenant: job.tenant,
            tenant_weight: job.tenant_weight,
            submit_time: Nanos::ZERO,
        };
        let b = self.buffered.as_mut().expect("a page cache");
        b.cache.start_read(offset_bytes, u64::from(len_bytes));
        self.submit_own_request(rq, CacheEffect::OwnRead { offset_bytes, len_bytes });
    }

    /// Sends a request of the engine's own (writeback, read-ahead) down the submission
    /// path; `rq`'s id and submit time are filled in here.
    fn submit_own_request(&mut self, mut rq: Request, effect: CacheEffect) {
        let slot = self.alloc_slot();
        let rec = &mut self.rqs[slot as usize];
        rec.generation = rec.generation.wrapping_add(1);
        rq.id = RequestId(u64::from(slot) | (u64::from(rec.generation) << 32));
        rq.submit_time = self.now + self.host.submit();
        rec.rq = rq;
        rec.job = rq.job;
        rec.op = rq.op;
        rec.offset_bytes = rq.offset_bytes;
        rec.len = rq.len_bytes;
        rec.file = 0;
        rec.created = self.now;
        rec.merged_next = NONE;
        rec.state = RqState::Submitting;
        rec.cache = effect;
        self.tags_used += 1;
        self.schedule_insert(slot, Nanos(self.host.submit_cpu_ns));
    }

    /// Reads and writeback landed: reads waiting for pages now cached return, waiting
    /// writers dirty their pages while under the limit, fsyncs whose writeback has all
    /// landed send their flush, and the flusher goes on.
    fn after_cache_io(&mut self) {
        let now = self.now;
        let b = self.buffered.as_mut().expect("a page cache");
        if !b.waiting_reads.is_empty() {
            let rqs = &self.rqs;
            let range = |s: u32| (rqs[s as usize].offset_bytes, u64::from(rqs[s as usize].len));
            let (ready, waiting): (Vec<u32>, Vec<u32>) =
                std::mem::take(&mut b.waiting_reads).into_iter().partition(|&s| b.cache.holds(range(s).0, range(s).1));
            // pages a read waited for may have been evicted between their arrival and
            // this wake-up (their read landed with others): the read goes to the device
            let (waiting, evicted): (Vec<u32>, Vec<u32>) =
                waiting.into_iter().partition(|&s| b.cache.holds_or_reads(range(s).0, range(s).1));
            b.waiting_reads = waiting;
            for slot in ready {
                let (offset, len) = range(slot);
                b.cache.touch(offset, len);
                self.events.push(now + b.copy_time(len), EventKind::CacheDone(slot));
            }
            let evicted: Vec<(u32, (u64, u64))> = evicted.into_iter().map(|s| (s, range(s))).collect();
            let submit_cpu = Nanos(self.host.submit_cpu_ns);
            for (slot, (offset, len)) in evicted {
                self.counters.cache_read_waits_evicted += 1;
                self.fill_from_device(slot, offset, offset + len);
                self.tags_used += 1;
                self.schedule_insert(slot, submit_cpu);
            }
        }
        let b = self.buffered.as_mut().expect("a page cache");
        if !b.waiting_writes.is_empty() {
            // a page read for a write may have been evicted before it was written: it is
            // read again
            for slot in std::mem::take(&mut b.waiting_writes) {
                if self.read_partial_pages(slot) {
                    self.buffer_write(slot, now);
                } else {
                    self.buffered.as_mut().expect("a page cache").waiting_writes.push(slot);
                }
            }
        }
        loop {
            let b = self.buffered.as_mut().expect("a page cache");
            let Some(&slot) = b.throttled.front() else { break };
            let rec = &self.rqs[slot as usize];
            let (offset, len) = (rec.offset_bytes, u64::from(rec.len));
            if b.cache.must_wait_to_dirty(offset, len) {
                break;
            }
            b.throttled.pop_front();
            self.copy_in(slot, now);
        }
        let b = self.buffered.as_mut().expect("a page cache");
        if b.fsyncs.iter().any(|w| !b.writing_back(w)) {
            let (waiting, ready): (Vec<_>, Vec<_>) =
                std::mem::take(&mut b.fsyncs).into_iter().partition(|w| b.writing_back(w));
            b.fsyncs = waiting;
            let submit_cpu = Nanos(self.host.submit_cpu_ns);
            for wait in ready {
                match wait.then {
                    AfterSync::Flush => {
                        self.tags_used += 1;
                        self.schedule_insert(wait.slot, submit_cpu);
                    }
                    AfterSync::Write(flags) => {
                        let range = wait.range.expect("a sync_file_range has its range");
                        self.sync_range_write(wait.slot, range, flags, now);
                    }
                    AfterSync::Complete => self.events.push(now, EventKind::CacheDone(wait.slot)),
                }
            }
        }
        self.start_writeback();
    }

    fn wake_tag_waiters(&mut self) {
        while self.tags_used < self.host.nr_requests {
            let Some(j) = self.tag_waiters.pop_front() else { return };
            self.jobs[j as usize].waiting_tag = false;
            self.poll_job(j);
        }
    }

    fn finish(mut self, loop_wall: std::time::Duration) -> Result<SimOutcome, SimError> {
        self.note_in_system(0);
        self.counters.events = self.events.processed();
        let end = self.now;
        for (k, j) in self.jobs.iter_mut().enumerate() {
            j.rec.finish(&j.driver, end, self.steady.report(k as u32)).map_err(SimError)?;
        }
        // reported in fio's order; the engine keeps the job file's, which sets the order
        // of simultaneous events
        self.jobs.sort_by_key(JobSlot::fio_thread_order);
        let clones = self
            .jobs
            .into_iter()
            .map(|j| CloneResult {
                job_index: j.job_index,
                clone: j.driver.clone_index,
                reporting_group: j.reporting_group,
                started_at: j.driver.started_at().unwrap_or(Nanos::ZERO),
                finished_at: j.driver.finished_at().unwrap_or(end),
                prio: j.prio,
                tenant: j.tenant,
                replay: j.driver.replay_stats().cloned(),
                stats: j.rec.stats,
            })
            .collect();
        Ok(SimOutcome {
            clones,
            end,
            device: self.device.counters(end),
            policy: self.sched.report(),
            policy_id: self.sched.id(),
            engine: self.counters,
            files: self.files,
            tenants: self.tenants,
            device_series: self.device_series,
            loop_wall,
            interrupted: self.interrupted,
        })
    }
}

/// The byte ranges of the files that hold data when the jobs start (`layout::data_at_start`).
fn laid_out_files(files: &[PlacedFile], data_at_start: &[Option<u64>]) -> Vec<(u64, u64)> {
    files.iter().zip(data_at_start).filter_map(|(f, bytes)| Some((f.start, (*bytes)?))).collect()
}

/// The regular files that hold no data when the jobs start (`layout::data_at_start`).
fn unwritten_files(files: &[PlacedFile], data_at_start: &[Option<u64>]) -> Vec<(u64, u64)> {
    files
        .iter()
        .zip(data_at_start)
        .filter(|(f, bytes)| bytes.is_none() && !layout::is_device_path(&f.name))
        .map(|(f, _)| (f.start, f.len))
        .collect()
}

/// Builds and runs a simulation.
pub fn simulate(input: SimInput<'_>, observer: &mut dyn Observer) -> Result<SimOutcome, SimError> {
    Simulation::new(input, observer)?.run()
}
