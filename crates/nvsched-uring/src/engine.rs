//! The event loop: one thread, one ring.

use crate::hooks::{self, RunningHook, Stage};
use crate::targets::{self, is_device_node, DiskSample, Fill, Target};
use crate::verify;
use crate::{CloneOutcome, TargetInfo, UringOptions, UringOutcome};
use io_uring::{opcode, squeue, types, IoUring};
use nvsched_core::{LogClock, Nanos, Op};
use nvsched_policy::{Completion, DeviceView, Inserted, Request, RequestId, Scheduler};
use nvsched_report::{CompletedIo, CpuUsage, JobError, JobRecorder};
use nvsched_workload::errors::ErrorKind;
use nvsched_workload::file_setup::{set_up_lens, set_up_regions, FileLens, Opened, UnlinkedFiles};
use nvsched_workload::steadystate::SteadyStates;
use nvsched_workload::written::{WrittenBlocks, TRIM_GENERATION};
use nvsched_workload::{clone_seed, exit_targets, per_prio_reporting, reporting_groups, wait_for_targets, Tenants};
use nvsched_workload::{
    BufferFiller, EngineKind, ExitWhat, FileLocks, FlowGroups, IoUnit, JobDriver, JobSpec, Poll, SyncRange,
};
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::{HashMap, HashSet};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ALIGN: usize = 4096;
const NONE: u32 = u32::MAX;

/// The run's clock: time since `start`.
fn elapsed_since(start: Instant) -> Nanos {
    Nanos(start.elapsed().as_nanos() as u64)
}

/// A page-aligned I/O buffer (O_DIRECT needs alignment).
struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

impl AlignedBuf {
    fn new(len: usize) -> AlignedBuf {
        let len = len.max(ALIGN).div_ceil(ALIGN) * ALIGN;
        let layout = Layout::from_size_align(len, ALIGN).expect("valid layout");
        // SAFETY: non-zero size, valid alignment; freed in Drop with the same layout.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory for I/O buffers");
        AlignedBuf { ptr, len }
    }
    fn slice_mut(&mut self, len: usize) -> &mut [u8] {
        // SAFETY: ptr is valid for self.len bytes, len is checked, and &mut self is unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, len.min(self.len)) }
    }
    fn slice(&self, len: usize) -> &[u8] {
        // SAFETY: as above, shared.
        unsafe { std::slice::from_raw_parts(self.ptr, len.min(self.len)) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, Layout::from_size_align(self.len, ALIGN).expect("valid layout")) }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Free,
    Queued,
    Merged,
    InRing,
}

struct Slot {
    rq: Request,
    clone: u32,
    op: Op,
    len: u32,
    /// Where in its file (`rq.offset_bytes` is in the policy's view, see `TARGET_SHIFT`).
    offset: u64,
    /// Which of its clone's files.
    file: u16,
    /// A flush's `sync_file_range` flags (none: an fsync).
    sync_range: SyncRange,
    created: Nanos,
    inserted: Nanos,
    dispatched: Nanos,
    buf: AlignedBuf,
    merged_next: u32,
    generation: u32,
    /// A verify write's header generation.
    header_generation: u64,
    state: State,
    iov: Vec<libc::iovec>,
    /// The buffer holds its clone's content for reuse (fio fills a job's buffers once
    /// unless `refill_buffers`); false until then, and after a read or a verify write
    /// overwrote it. A slot serves one clone only (`Engine::free`).
    filled: bool,
}

struct CloneState {
    driver: JobDriver,
    /// Statistics and log files.
    rec: JobRecorder,
    /// Its files' indices in `Engine::targets`.
    targets: Vec<usize>,
    job_index: usize,
    reporting_group: u32,
    nice: i8,
    tenant: u32,
    weight: u32,
    write_sync: bool,
    datasync: bool,
    wake_at: Option<Nanos>,
    kick: bool,
    /// Held back by flow control until a clone of a flow group issues or finishes.
    flow_held: bool,
    done: bool,
    /// Writes carry a verify header (`verify`).
    verify: bool,
    /// `verify_fatal` found a bad block: the read-back stops, and no more are reported.
    verify_failed: bool,
    /// A job that only reads, with `verify`: each of its reads is checked as it completes
    /// (fio's inline verify of a read workload).
    check_reads: bool,
    /// `exec_prerun` running: the clone starts when it has succeeded.
    prerun: Option<RunningHook>,
    /// `exec_postrun` running: the clone's I/O is over, but as in fio its job ends only
    /// with the hook, so a later phase or a `wait_for` job waits for it.
    postrun: Option<RunningHook>,
    /// `unlink=1`: the files to remove when the postrun has ended (fio removes them after it).
    unlink_after_postrun: Vec<String>,
    /// `Some(seed)`: the job gives no size and works on a file a fill grows, so its
    /// regions are taken from the file's length when it starts, as fio sizes its files
    /// as each job starts (the seed rebuilds its driver).
    regions_at_start: Option<u64>,
    /// Blocks written with a verify header, and which of those writes raced.
    written: WrittenBlocks,
    next_generation: u64,
    /// What the clone's writes carry (`buffer_pattern`, `zero_buffers`, ...).
    content: BufferFiller,
    completed_now: u32,
    /// `force_async`: every Nth submission goes to the async workers; submissions since
    /// the last one that did.
    force_async: u32,
    since_forced: u32,
    /// `nowait`: RWF_NOWAIT on reads and writes.
    nowait: bool,
}

impl CloneState {
    /// Its job is over for the jobs after it: its I/O and its `exec_postrun` (fio runs the
    /// hook in the job's thread, and a later phase starts when that thread has exited).
    fn ended(&self) -> bool {
        self.done && self.postrun.is_none()
    }
}

/// `unlink=1`: a finished clone's files go from the disk (those still open go on).
fn remove_unlinked(names: Vec<String>) {
    for name in names {
        if Path::new(&name).is_file() {
            let _ = std::fs::remove_file(&name);
        }
    }
}

/// How the kernel completed a request (with the requests merged into it).
#[derive(Clone, Copy, Debug)]
enum Outcome {
    Done,
    Failed(i32),
    /// A read that stopped short at this file offset: the end of its file.
    ReadTo(u64),
}

struct Engine {
    ring: IoUring,
    start: Instant,
    clones: Vec<CloneState>,
    phases: Vec<Vec<u32>>,
    phase: usize,
    /// For each job of the job file, its clones, and the job it waits for (`wait_for`).
    clones_of: Vec<Vec<u32>>,
    waits_for: Vec<Option<usize>>,
    /// Clones of the running phase that wait for another job to finish before they start.
    waiting: Vec<u32>,
    /// `steadystate` detection per job or group.
    steady: SteadyStates,
    /// (fd, path) of each target; the files stay open in the caller, except those the
    /// run made anew (`remade`).
    targets: Vec<(i32, PathBuf)>,
    /// Files that clones made anew after a job removed them (`unlink=1`); their targets
    /// follow the caller's in `targets`.
    remade: Vec<std::fs::File>,
    /// The target a path opens as now, for a path made anew.
    latest_target: HashMap<PathBuf, usize>,
    slots: Vec<Slot>,
    /// Free slots per clone: a clone reuses its own buffers, as fio's io_us belong to a
    /// job, so a buffer filled for reuse stays filled.
    free: Vec<Vec<u32>>,
    sched: Box<dyn Scheduler>,
    /// Wall-clock time spent in the policy's insert, dispatch and complete: its own cost
    /// per I/O, to set beside the simulator's host-cost estimates.
    policy_time: std::time::Duration,
    in_ring: u32,
    max_in_ring: u32,
    /// Submissions flagged IOSQE_ASYNC (`force_async`).
    forced_async: u64,
    ring_entries: u32,
    poll: bool,
    max_bs: usize,
    requests: u64,
    io_errors: Vec<String>,
    /// The first error that stops the run as a clone starts (a prerun that failed or
    /// could not start, a file a fill left empty).
    start_error: Option<String>,
    /// A signal stopped the run ([`crate::stop_on_interrupt`]): clones that start now
    /// end at once, without their prerun.
    interrupted: bool,
    /// Clones whose `exec_prerun` or `exec_postrun` is running (so the loop need not look
    /// at every clone).
    preruns: usize,
    postruns: usize,
    /// What the read-back of verify jobs found wrong, and how many blocks it checked.
    verify_errors: Vec<String>,
    verified_blocks: u64,
    /// `UringOptions::inject_errors`, and the completions counted for it.
    inject_errors: Option<(u64, i32)>,
    completions: u64,
    batch: Vec<IoUnit>,
    waits: u64,
    /// `--status-interval`: when the next status is due, and where it goes.
    status: Option<(nvsched_report::StatusClock, nvsched_report::StatusDump)>,
    /// The files jobs with `unlink=1` removed.
    unlinked: UnlinkedFiles,
}

/// The process's CPU time, context switches and page faults so far (getrusage).
#[derive(Clone, Copy, Debug)]
struct Usage {
    user: Duration,
    sys: Duration,
    /// Context switches, major and minor faults.
    counts: [u64; 3],
}

fn usage() -> Usage {
    // SAFETY: getrusage fills the zeroed struct.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    Usage {
        user: tv(ru.ru_utime),
        sys: tv(ru.ru_stime),
        counts: [ru.ru_nvcsw + ru.ru_nivcsw, ru.ru_majflt, ru.ru_minflt].map(|c| c as u64),
    }
}

/// fio reports each job's CPU from its own thread; here one thread runs every job, so
/// its CPU time, context switches and faults over the jobs' I/O are split among the
/// clones by their share of the requests.
fn attribute_cpu(clones: &mut [CloneState], start: Usage, end: Usage) {
    let requests = |c: &CloneState| c.rec.stats.recorded();
    let total = clones.iter().map(requests).sum::<u64>().max(1) as f64;
    for c in clones {
        let share = requests(c) as f64 / total;
        let time = |a: Duration, b: Duration| Nanos((b.saturating_sub(a).as_nanos() as f64 * share) as u64);
        let count = |k: usize| (end.counts[k].saturating_sub(start.counts[k]) as f64 * share).round() as u64;
        let stats = &mut c.rec.stats;
        stats.cpu = CpuUsage {
            user: time(start.user, end.user),
            sys: time(start.sys, end.sys),
            ctx: count(0),
            majf: count(1),
            minf: count(2),
            runtime: stats.runtime,
        };
    }
}

/// A file or device the jobs work on, before it is opened.
struct Wanted {
    name: String,
    /// Bytes the jobs need it to hold; 0 when none says (it keeps its own size, or a
    /// fill grows it).
    bytes: u64,
    writes: bool,
    /// A `create_only` job lays it out: it stays.
    keep: bool,
    /// A `fill_device` job without a size works on it (and reads it too: [`Fill::LayOut`]).
    fill: Fill,
    /// The first job that gives it no size.
    no_size_from: Option<String>,
    /// `write_hint`, and the job that set it (the hint belongs to the file).
    write_hint: Option<(u64, String)>,
    /// A job wants its cached pages dropped before the run (`invalidate`, on by default).
    invalidate: bool,
    /// The first job that removes it when it finishes (`unlink=1`).
    unlinked_by: Option<String>,
}

/// `--status-interval`: every `every` of the run (wall-clock), every clone's statistics
/// so far go to `dump`, as (reporting group, job index, statistics).
pub struct StatusHook {
    pub every: Nanos,
    pub dump: nvsched_report::StatusDump,
    /// Told the targets once they are ready, before the first I/O and the first dump
    /// (fio prints its `Laying out IO file` lines then).
    pub targets_ready: Option<TargetsReady>,
}

/// [`StatusHook::targets_ready`].
pub type TargetsReady = Box<dyn FnOnce(&[TargetInfo])>;

/// Runs the jobs on real files or devices.
pub fn run(jobs: &[JobSpec], scheduler: Box<dyn Scheduler>, opts: &UringOptions) -> Result<UringOutcome, String> {
    run_with_status(jobs, scheduler, opts, None)
}

/// [`run`], handing `status` the statistics so far at its intervals.
pub fn run_with_status(
    jobs: &[JobSpec],
    scheduler: Box<dyn Scheduler>,
    opts: &UringOptions,
    status: Option<StatusHook>,
) -> Result<UringOutcome, String> {
    // targets: one per distinct file name, sized for every clone using it
    let mut wanted: Vec<Wanted> = Vec::new();
    for spec in jobs {
        let writes = !spec.verify_only
            && !spec.create_only
            && (spec.writes_data() || spec.fsync_every > 0 || spec.fdatasync_every > 0);
        // a fill that reads fills the file system first, as fio does
        let fill = match spec.active_ops().any(|op| op == Op::Read) {
            _ if !spec.fill_device => Fill::No,
            true => Fill::LayOut,
            false => Fill::Grow,
        };
        for (clone, filenum) in spec.clone_files() {
            let name = spec.file_name_of(clone, filenum);
            if !spec.allow_file_create && !Path::new(&name).exists() {
                return Err(format!(
                    "job '{}': '{name}' does not exist, and allow_file_create=0 forbids laying it out",
                    spec.name
                ));
            }
            // an appending job's region starts where the file ends: set_up_lens below
            let need = spec.needed_file_bytes(clone, filenum, None);
            let k = match wanted.iter().position(|w| w.name == name) {
                Some(k) => k,
                None => {
                    wanted.push(Wanted {
                        name,
                        bytes: 0,
                        writes: false,
                        keep: false,
                        fill: Fill::No,
                        no_size_from: None,
                        write_hint: None,
                        invalidate: false,
                        unlinked_by: None,
                    });
                    wanted.len() - 1
                }
            };
            let w = &mut wanted[k];
            w.bytes = w.bytes.max(need.unwrap_or(0));
            w.writes |= writes;
            w.keep |= spec.create_only;
            w.invalidate |= spec.invalidate;
            if spec.unlink && w.unlinked_by.is_none() {
                w.unlinked_by = Some(spec.name.clone());
            }
            if let Some(hint) = spec.write_hint {
                match &w.write_hint {
                    Some((other, job)) if *other != hint => {
                        return Err(format!(
                            "jobs '{job}' and '{}' set different write_hint on '{}'; the hint belongs to the file, so set them alike",
                            spec.name, w.name
                        ))
                    }
                    _ => w.write_hint = Some((hint, spec.name.clone())),
                }
            }
            if need.is_none() {
                w.fill = w.fill.max(fill);
                w.no_size_from.get_or_insert_with(|| spec.name.clone());
            }
        }
    }
    // set up one clone after another, a later clone may lay a file out further
    let set_up = set_up_lens(jobs, |name| match std::fs::metadata(name) {
        Ok(m) if m.is_file() => Some(m.len()),
        Ok(_) => None,
        Err(_) => (!is_device_node(name)).then_some(0),
    });
    for w in wanted.iter_mut() {
        w.bytes = w.bytes.max(set_up.get(&w.name).copied().unwrap_or(0));
    }
    // as fio: a file (or device) that exists keeps its size, and a fill grows one
    let unsized_new_file =
        |w: &&Wanted| w.bytes == 0 && w.fill == Fill::No && !is_device_node(&w.name) && !Path::new(&w.name).exists();
    if let Some(w) = wanted.iter().find(unsized_new_file) {
        return Err(format!(
            "job '{}': set size or filesize for '{}' (or filename=/dev/... for a whole device)",
            w.no_size_from.as_deref().unwrap_or("?"),
            w.name
        ));
    }
    // a new file no job has fio write out first is only allocated (its jobs write it),
    // unless --prefill asks for data everywhere
    let without_data: HashSet<String> = nvsched_workload::file_setup::data_at_start(jobs, |spec, clone, filenum| {
        spec.needed_file_bytes(clone, filenum, None).unwrap_or(0)
    })
    .into_iter()
    .filter_map(|(name, data)| data.is_none().then_some(name))
    .collect();
    for w in wanted.iter_mut().filter(|w| w.fill == Fill::No && !opts.prefill) {
        if without_data.contains(&w.name) {
            w.fill = Fill::Allocate;
        }
    }
    // removing a file is as destructive as writing it
    let removes_existing = |w: &&Wanted| {
        w.unlinked_by.is_some() && Path::new(&w.name).is_file() && !opts.safety.may_destroy(Path::new(&w.name))
    };
    if let Some(w) = wanted.iter().find(removes_existing) {
        return Err(format!(
            "refusing to let job '{}' remove '{}' (unlink=1): nvsched did not create it. Pass --allow-destructive if that is intended",
            w.unlinked_by.as_deref().unwrap_or("?"),
            w.name
        ));
    }
    let mut targets_open = Vec::new();
    for w in &wanted {
        // prefilling writes, so it is subject to the same safety rules as a writing job
        let opened = targets::open(Path::new(&w.name), w.bytes, w.writes || opts.prefill, &opts.safety, w.fill)
            .and_then(|mut t| {
                t.keep = w.keep;
                targets_open.push(t);
                let t = targets_open.last().expect("just pushed");
                if let Some((hint, _)) = w.write_hint {
                    targets::set_write_hint(t, hint)?;
                }
                if opts.prefill && !t.created {
                    let region = if w.bytes == 0 { t.size } else { w.bytes };
                    targets::prefill(&t.path, region)?;
                }
                // as fio: what laying out or prefilling left in the page cache goes, so
                // direct I/O does not have to invalidate it as it runs
                if w.invalidate {
                    targets::drop_cached_pages(t)?;
                }
                Ok(())
            });
        if let Err(e) = opened {
            // what was created, this target included, goes again
            cleanup(&targets_open, opts.keep_files);
            return Err(e);
        }
    }
    let result = run_on(jobs, scheduler, opts, &targets_open, status);
    cleanup(&targets_open, opts.keep_files);
    result
}

/// The length of the open file `fd`.
fn file_len(fd: i32) -> std::io::Result<u64> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat fills the struct `st` has room for, or fails.
    if unsafe { libc::fstat(fd, st.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fstat returned 0, so it filled the struct.
    Ok(unsafe { st.assume_init() }.st_size as u64)
}

/// `clock_gettime(id)` in milliseconds (0 for a clock the kernel does not have).
fn clock_ms(id: i32) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec for the call to fill.
    if unsafe { libc::clock_gettime(id as libc::clockid_t, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

/// Requests to target k carry offsets from `k << TARGET_SHIFT` in the policy's view
/// (256 TiB per target), as the simulator lays files end to end.
const TARGET_SHIFT: u32 = 48;

/// How long the kernel's submission polling thread spins without work before it sleeps.
const SQPOLL_IDLE_MS: u32 = 1000;

/// `sqthread_poll`: `Some(cpu)` when the jobs ask the kernel to poll the submission
/// queue. fio gives each job its own ring; nvsched's one ring serves every job, so
/// the jobs must agree.
fn sq_polling(jobs: &[JobSpec]) -> Result<Option<Option<u32>>, String> {
    let wanted = |j: &JobSpec| j.sqthread_poll.then_some(j.sqthread_poll_cpu);
    let first = &jobs[0];
    match jobs.iter().find(|j| wanted(j) != wanted(first)) {
        Some(other) => Err(format!(
            "jobs '{}' and '{}' differ in sqthread_poll or sqthread_poll_cpu; nvsched runs every job on one io_uring, so set them alike",
            first.name, other.name
        )),
        None => Ok(wanted(first)),
    }
}

fn cleanup(targets: &[Target], keep: bool) {
    if keep {
        return;
    }
    for t in targets.iter().filter(|t| t.created && !t.keep) {
        let _ = std::fs::remove_file(&t.path);
    }
}

fn run_on(
    jobs: &[JobSpec],
    scheduler: Box<dyn Scheduler>,
    opts: &UringOptions,
    targets: &[Target],
    mut status: Option<StatusHook>,
) -> Result<UringOutcome, String> {
    // One thread submits and reaps: completions need no interrupting task work
    // (COOP_TASKRUN), and the kernel may skip issuer checks (SINGLE_ISSUER). Older
    // kernels refuse the flags: fall back to a plain ring.
    let entries = opts.ring_entries.max(8);
    let mut builder = IoUring::builder();
    if let Some(cpu) = sq_polling(jobs)? {
        builder.setup_sqpoll(SQPOLL_IDLE_MS);
        if let Some(cpu) = cpu {
            builder.setup_sqpoll_cpu(cpu);
        }
    }
    let ring = builder
        .clone()
        .setup_coop_taskrun()
        .setup_single_issuer()
        .build(entries)
        .or_else(|_| builder.build(entries))
        .map_err(|e| format!("io_uring setup: {e}"))?;
    let mut clones = Vec::new();
    let mut phases: Vec<Vec<u32>> = vec![Vec::new()];
    let mut tenants = Tenants::default();
    let groups = reporting_groups(jobs);
    let per_prio = per_prio_reporting(jobs);
    let mut ordinal = 0u64;
    let mut flows = FlowGroups::default();
    let mut locks = FileLocks::default();
    let mut max_bs = 4096usize;
    let target_of =
        |name: &str| targets.iter().position(|t| t.path.as_path() == Path::new(name)).expect("opened above");
    let regions_of = set_up_regions(jobs, |name| {
        let t = &targets[target_of(name)];
        let regular = !t.block_device;
        FileLens { regular, at_start: if regular { t.len_before } else { t.size }, set_up: t.size }
    })?;
    for (job_index, spec) in jobs.iter().enumerate() {
        if job_index > 0 && spec.stonewall {
            phases.push(Vec::new());
        }
        let reporting_group = groups[job_index];
        max_bs = max_bs.max(spec.max_bs() as usize);
        let (tenant, weight) = tenants.tenant_of(spec);
        let arc = Arc::new(spec.clone());
        // the clones run, are reported and number their logs in fio's order of threads;
        // their seeds come from the job file's order, as in simulation
        let first_thread = ordinal + 1;
        ordinal += u64::from(spec.numjobs);
        for clone in spec.clones_in_fio_order() {
            let thread_number = first_thread + u64::from(spec.fio_thread_position(clone));
            let file_targets: Vec<usize> =
                (0..spec.files_per_clone()).map(|filenum| target_of(&spec.file_name_of(clone, filenum))).collect();
            let regions = &regions_of[job_index][clone as usize];
            let seed = clone_seed(spec, first_thread + u64::from(clone), opts.seed);
            let grown_by_fill = file_targets.iter().any(|&t| targets[t].grows);
            let regions_at_start =
                (grown_by_fill && !spec.fill_device && spec.needed_file_bytes(clone, 0, None).is_none())
                    .then_some(seed);
            let mut driver = JobDriver::new(arc.clone(), clone, regions, seed)?;
            flows.attach(&mut driver);
            locks.attach(&mut driver);
            phases.last_mut().expect("one phase").push(clones.len() as u32);
            let mut rec = JobRecorder::for_job(spec, reporting_group, thread_number as u32, per_prio[job_index])?;
            rec.open_outputs(spec, clone, &vec![0; spec.files_per_clone() as usize])?;
            clones.push(CloneState {
                driver,
                rec,
                targets: file_targets,
                job_index,
                reporting_group,
                nice: spec.nice,
                tenant,
                weight,
                write_sync: spec.direct || spec.writes_fua(),
                datasync: spec.fdatasync_every > 0,
                wake_at: None,
                kick: false,
                flow_held: false,
                done: false,
                // verify=null writes no headers (its reads are not checked)
                verify: spec.verify && !spec.verify_format.pretend,
                verify_failed: false,
                check_reads: spec.verify && !spec.verify_only && !spec.writes_data(),
                prerun: None,
                postrun: None,
                unlink_after_postrun: Vec::new(),
                regions_at_start,
                written: WrittenBlocks::default(),
                next_generation: 1,
                content: BufferFiller::new(&spec.buffers, spec.bs[Op::Write.index()].min(), spec.max_bs(), seed),
                completed_now: 0,
                force_async: spec.force_async,
                since_forced: 0,
                nowait: spec.nowait,
            });
        }
    }
    let steady = SteadyStates::new(clones.iter().map(|c| (&*c.driver.spec, c.reporting_group)))?;
    let mut clones_of = vec![Vec::new(); jobs.len()];
    for (k, clone) in clones.iter().enumerate() {
        clones_of[clone.job_index].push(k as u32);
    }
    let target_info: Vec<TargetInfo> = targets
        .iter()
        .map(|t| TargetInfo {
            path: t.path.clone(),
            block_device: t.block_device,
            created: t.created,
            laid_out: (t.created && !t.grows) || t.extended,
            kept: t.keep || opts.keep_files,
            kernel_scheduler: targets::kernel_scheduler(&t.path),
            size: t.size,
        })
        .collect();
    if let Some(ready) = status.as_mut().and_then(|s| s.targets_ready.take()) {
        ready(&target_info);
    }
    // fio's disk stats: the counters of each device the targets are on, over the run
    let mut disk_dirs: Vec<PathBuf> = Vec::new();
    for dir in targets.iter().filter_map(|t| targets::block_device_dir(&t.path)) {
        if !disk_dirs.contains(&dir) {
            disk_dirs.push(dir);
        }
    }
    let disks_before: Vec<(&PathBuf, DiskSample)> =
        disk_dirs.iter().filter_map(|d| Some((d, DiskSample::read(d)?))).collect();
    let usage_start = usage();
    let clone_count = clones.len();
    let (start, unix_ms) = (Instant::now(), std::time::SystemTime::now());
    // log_unix_epoch, log_alternate_epoch: the engine's time zero on the job's clock
    let unix_ms = unix_ms.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    for c in &mut clones {
        let spec = c.driver.spec.clone();
        c.rec.set_log_clock(&spec, |clock| match clock {
            LogClock::Unix => unix_ms,
            LogClock::Id(id) => clock_ms(id),
        });
    }
    let mut e = Engine {
        ring,
        start,
        clones,
        phases,
        phase: 0,
        clones_of,
        waits_for: wait_for_targets(jobs),
        waiting: Vec::new(),
        targets: targets.iter().map(|t| (t.fd(), t.path.clone())).collect(),
        slots: Vec::new(),
        free: vec![Vec::new(); clone_count],
        sched: {
            let mut sched = scheduler;
            sched.set_tenants(&tenants.tree);
            sched
        },
        policy_time: std::time::Duration::ZERO,
        in_ring: 0,
        max_in_ring: 0,
        forced_async: 0,
        ring_entries: opts.ring_entries.max(8),
        poll: opts.poll,
        steady,
        max_bs,
        requests: 0,
        io_errors: Vec::new(),
        postruns: 0,
        start_error: None,
        interrupted: false,
        preruns: 0,
        verify_errors: Vec::new(),
        verified_blocks: 0,
        inject_errors: opts.inject_errors.filter(|&(every, _)| every > 0),
        completions: 0,
        batch: Vec::with_capacity(64),
        waits: 0,
        status: status.and_then(|s| Some((nvsched_report::StatusClock::new(s.every)?, s.dump))),
        unlinked: UnlinkedFiles::default(),
        remade: Vec::new(),
        latest_target: HashMap::new(),
    };
    let ran = e.event_loop();
    if !opts.keep_files {
        // what the run made anew goes, as what it laid out does
        for (_, path) in &e.targets[targets.len()..] {
            let _ = std::fs::remove_file(path);
        }
    }
    ran?;
    let end = e.now();
    let disk_util =
        disks_before.iter().filter_map(|(dir, before)| Some(before.util_until(&DiskSample::read(dir)?))).collect();
    for (k, c) in e.clones.iter_mut().enumerate() {
        c.rec.finish(&c.driver, end, e.steady.report(k as u32))?;
    }
    attribute_cpu(&mut e.clones, usage_start, usage());
    let verify_unsettled = e.clones.iter().map(|c| c.written.unsettled()).sum();
    let (verify_errors, verified_blocks) = (std::mem::take(&mut e.verify_errors), e.verified_blocks);
    let usage_end = usage();
    Ok(UringOutcome {
        clones: e
            .clones
            .into_iter()
            .map(|c| CloneOutcome {
                job_index: c.job_index,
                clone: c.driver.clone_index,
                reporting_group: c.reporting_group,
                tenant: c.tenant,
                replay: c.driver.replay_stats().cloned(),
                stats: c.rec.stats,
            })
            .collect(),
        end,
        policy: e.sched.report(),
        policy_id: e.sched.id(),
        requests: e.requests,
        max_in_ring: e.max_in_ring,
        forced_async: e.forced_async,
        sq_polled: e.ring.params().is_setup_sqpoll(),
        waits: e.waits,
        io_errors: e.io_errors,
        verify_errors,
        verified_blocks,
        verify_unsettled,
        kernel: targets::kernel_release(),
        // a file a fill grew is as long as what was written to it
        targets: target_info
            .into_iter()
            .zip(targets)
            .map(|(info, t)| match t.grows {
                true => TargetInfo { size: file_len(t.fd()).unwrap_or(info.size), ..info },
                false => info,
            })
            .collect(),
        cpu_user: usage_end.user.saturating_sub(usage_start.user),
        cpu_sys: usage_end.sys.saturating_sub(usage_start.sys),
        policy_time: e.policy_time,
        tenants: tenants.tree,
        disk_util,
        interrupted: e.interrupted,
    })
}

impl Engine {
    fn now(&self) -> Nanos {
        elapsed_since(self.start)
    }

    fn start_phase(&mut self, phase: usize, now: Nanos) {
        self.phase = phase;
        if phase >= self.phases.len() {
            return;
        }
        // the phase's clones start as `wait_for` lets them (the last phase's are all done)
        self.waiting = self.phases[phase].clone();
        self.start_waiters(now);
    }

    /// Clone `c` starts: its `exec_prerun` first, if its job has one (as in fio: after
    /// the files are laid out, before the clone's I/O; the other clones go on meanwhile).
    fn start_clone(&mut self, c: u32, now: Nanos) {
        if let Err(e) = self.take_regions_at_start(c) {
            self.start_error.get_or_insert(e);
            return;
        }
        let clone = &mut self.clones[c as usize];
        if self.interrupted {
            return self.begin(c, now);
        }
        match hooks::start(&clone.driver.spec, Stage::Prerun) {
            Ok(None) => self.begin(c, now),
            Ok(Some(hook)) => {
                clone.prerun = Some(hook);
                self.preruns += 1;
            }
            Err(e) => {
                self.start_error.get_or_insert(e);
            }
        }
    }

    /// Clone `c` begins its I/O, once it opened its files: those made anew since the run
    /// began are the ones it opens. One that an earlier job removed (`unlink=1`) fails it
    /// if it does not write, as in fio; if it writes, it makes the file anew, empty.
    fn begin(&mut self, c: u32, now: Nanos) {
        let clone = &mut self.clones[c as usize];
        for t in clone.targets.iter_mut() {
            *t = self.latest_target.get(&self.targets[*t].1).copied().unwrap_or(*t);
        }
        clone.driver.start(now);
        if self.interrupted {
            clone.driver.terminate(now);
        }
        clone.kick = true;
        match self.unlinked.open(&clone.driver.spec, clone.driver.clone_index) {
            Opened::Missing(name) => clone.rec.failed_to_open(&mut clone.driver, now, &name),
            Opened::Files { recreated } => {
                for name in recreated {
                    if let Err(e) = self.remake(c, &name) {
                        self.start_error.get_or_insert(e);
                    }
                }
            }
        }
    }

    /// Clone `c` makes its file `name` anew (`O_CREAT`, empty): it and the clones that
    /// start later use the new file.
    fn remake(&mut self, c: u32, name: &str) -> Result<(), String> {
        let clone = &mut self.clones[c as usize];
        let spec = &clone.driver.spec;
        let Some(filenum) =
            (0..spec.files_per_clone()).find(|&f| spec.file_name_of(clone.driver.clone_index, f) == name)
        else {
            return Ok(());
        };
        let path = self.targets[clone.targets[filenum as usize]].1.clone();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_DIRECT)
            .open(&path)
            .map_err(|e| format!("job '{}': cannot make '{}' anew: {e}", spec.name, path.display()))?;
        let t = self.targets.len();
        self.targets.push((file.as_raw_fd(), path.clone()));
        self.remade.push(file);
        self.latest_target.insert(path, t);
        clone.targets[filenum as usize] = t;
        Ok(())
    }

    /// A clone without a size on a file a fill grows works on what the file holds now.
    fn take_regions_at_start(&mut self, c: u32) -> Result<(), String> {
        let clone = &mut self.clones[c as usize];
        let Some(seed) = clone.regions_at_start else { return Ok(()) };
        let spec = clone.driver.spec.clone();
        let bs = u64::from(spec.min_bs()).max(1);
        let mut regions = Vec::with_capacity(clone.targets.len());
        for (filenum, &t) in clone.targets.iter().enumerate() {
            let (file, path) = (&self.targets[t].0, &self.targets[t].1);
            let len = file_len(*file).map_err(|e| format!("{}: {e}", path.display()))? / bs * bs;
            let name = spec.file_name_of(clone.driver.clone_index, filenum as u32);
            regions.push(spec.clone_region(clone.driver.clone_index, filenum as u32, &name, len)?);
        }
        clone.driver.move_to(&regions, seed)
    }

    /// Clones whose prerun succeeded start; postruns that ended are reaped. A prerun that
    /// failed stops the run, as it stops its job in fio before any I/O.
    fn poll_hooks(&mut self, now: Nanos) -> Result<(), String> {
        let mut starting = Vec::new();
        for (c, clone) in self.clones.iter_mut().enumerate() {
            let Some(hook) = &mut clone.prerun else { continue };
            match hook.poll() {
                None => {}
                Some(Ok(())) => {
                    clone.prerun = None;
                    self.preruns -= 1;
                    starting.push(c as u32);
                }
                Some(Err(e)) => {
                    self.start_error.get_or_insert(e);
                }
            }
        }
        for c in starting {
            self.begin(c, now);
        }
        if self.postruns > 0 {
            for clone in &mut self.clones {
                let Some(result) = clone.postrun.as_mut().and_then(RunningHook::poll) else { continue };
                if let Err(e) = result {
                    eprintln!("warning: {e}");
                }
                clone.postrun = None;
                self.postruns -= 1;
                remove_unlinked(std::mem::take(&mut clone.unlink_after_postrun));
            }
        }
        match self.start_error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Whether a hook is running (the loop then looks again every millisecond).
    fn hooks_running(&self) -> bool {
        self.postruns > 0 || self.preruns > 0
    }

    /// Whether clone `c` may start: every clone of the job it waits for has ended.
    fn may_start(&self, c: u32) -> bool {
        match self.waits_for[self.clones[c as usize].job_index] {
            Some(waitee) => self.clones_of[waitee].iter().all(|&k| self.clones[k as usize].ended()),
            None => true,
        }
    }

    /// The waiting clones whose `wait_for` job has finished (all, without one) start now.
    fn start_waiters(&mut self, now: Nanos) {
        let (ready, waiting): (Vec<u32>, Vec<u32>) =
            std::mem::take(&mut self.waiting).into_iter().partition(|&c| self.may_start(c));
        self.waiting = waiting;
        for c in ready {
            self.start_clone(c, now);
        }
    }

    /// Hands the status hook every clone's statistics so far; the next is due an interval
    /// after the one just passed.
    #[cold]
    fn status(&mut self, now: Nanos) {
        let clones =
            self.clones.iter().map(|c| (c.reporting_group, c.job_index, c.rec.snapshot(&c.driver, now))).collect();
        if let Some((clock, dump)) = &mut self.status {
            dump(now, clones);
            clock.advance(now);
        }
    }

    fn event_loop(&mut self) -> Result<(), String> {
        self.start_phase(0, Nanos::ZERO);
        loop {
            let now = self.now();
            if !self.interrupted && crate::interrupted() {
                self.interrupt(now);
            }
            if self.status.as_ref().is_some_and(|(clock, _)| clock.is_due(now)) {
                self.status(now);
            }
            if !self.waiting.is_empty() {
                self.start_waiters(now);
            }
            if self.hooks_running() || self.start_error.is_some() {
                self.poll_hooks(now)?;
            }
            while self.phase < self.phases.len()
                && self.phases[self.phase].iter().all(|&c| self.clones[c as usize].ended())
            {
                self.start_phase(self.phase + 1, now);
            }
            for i in 0..self.clones.len() {
                let c = &self.clones[i];
                if !c.done && c.driver.started_at().is_some() && (c.kick || c.wake_at.is_some_and(|w| w <= now)) {
                    self.poll_clone(i as u32, now);
                }
            }
            self.kick(now);
            // past the last phase every clone has ended, its postrun too
            if self.phase >= self.phases.len() && self.in_ring == 0 && self.sched.queued() == 0 {
                return Ok(());
            }
            let hook_check = self.hooks_running().then(|| now + Nanos::from_ms(1));
            // with the ring full the policy cannot dispatch before a completion: its timer
            // (maybe a deadline already past) would only spin
            let policy_timer = (self.in_ring < self.ring_entries).then(|| self.sched.next_wakeup()).flatten();
            let deadline = (self.clones.iter().filter(|c| !c.done).filter_map(|c| c.wake_at))
                .chain(policy_timer)
                .chain(hook_check)
                .min();
            self.wait(now, deadline)?;
            self.reap();
        }
    }

    /// Submits pending SQEs and waits for a completion or the deadline.
    fn wait(&mut self, now: Nanos, deadline: Option<Nanos>) -> Result<(), String> {
        if self.in_ring == 0 {
            self.ring.submit().map_err(|e| format!("io_uring submit: {e}"))?;
            match deadline {
                Some(d) if d > now => {
                    let gap = Duration::from_nanos((d - now).0);
                    if self.poll {
                        while self.now() < d {
                            std::hint::spin_loop();
                        }
                    } else {
                        // nanosleep, not thread::sleep (which sleeps on after a signal):
                        // a signal ends the wait, and the loop stops the run
                        let ts = libc::timespec {
                            tv_sec: gap.as_secs() as libc::time_t,
                            tv_nsec: gap.subsec_nanos().into(),
                        };
                        // SAFETY: reads `ts`, which outlives the call; no remainder is asked for.
                        unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
                    }
                }
                Some(_) => {}
                None if self.sched.queued() > 0 => {
                    return Err(format!(
                        "policy '{}' holds {} request(s) with none in flight and no timer: stalled",
                        self.sched.id(),
                        self.sched.queued()
                    ))
                }
                None => {}
            }
            return Ok(());
        }
        if self.poll {
            self.ring.submit().map_err(|e| format!("io_uring submit: {e}"))?;
            return Ok(());
        }
        self.waits += 1;
        let result = match deadline {
            Some(d) if d > now => {
                let gap = (d - now).0;
                let ts = types::Timespec::new().sec(gap / 1_000_000_000).nsec((gap % 1_000_000_000) as u32);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(1, &args)
            }
            Some(_) => self.ring.submit(),
            None => self.ring.submit_and_wait(1),
        };
        match result {
            Ok(_) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::ETIME) || e.raw_os_error() == Some(libc::EINTR) => Ok(()),
            Err(e) => Err(format!("io_uring wait: {e}")),
        }
    }

    fn poll_clone(&mut self, c: u32, now: Nanos) {
        self.clones[c as usize].kick = false;
        loop {
            self.batch.clear();
            let clone = &mut self.clones[c as usize];
            match clone.driver.poll(now, &mut self.batch) {
                Poll::Ready => {
                    let in_flow = clone.driver.in_flow();
                    let units = std::mem::take(&mut self.batch);
                    clone.rec.stats.record_submit_batch(units.len() as u32);
                    for u in &units {
                        self.issue(c, *u, now);
                    }
                    self.batch = units;
                    if in_flow {
                        self.release_flow(now);
                    }
                }
                Poll::WaitUntil(t) => {
                    clone.wake_at = Some(t);
                    return;
                }
                Poll::Held(until) => {
                    clone.wake_at = (until < Nanos::MAX).then_some(until);
                    clone.flow_held = true;
                    return;
                }
                Poll::Blocked => {
                    clone.wake_at = None;
                    return;
                }
                Poll::Finished => {
                    clone.done = true;
                    clone.wake_at = None;
                    if clone.driver.in_flow() {
                        self.release_flow(now);
                    }
                    let clone = &mut self.clones[c as usize];
                    let end = clone.driver.finished_at().unwrap_or(now);
                    clone.rec.stopped(&clone.driver, end);
                    // unlink=1: the files go from the disk after the postrun, as in fio;
                    // clones that have them open go on with them
                    let unlinked = self.unlinked.finished(&clone.driver.spec, clone.driver.clone_index);
                    // as in fio: after the clone's I/O and its verify
                    let postrun = hooks::start(&clone.driver.spec, Stage::Postrun).unwrap_or_else(|e| {
                        eprintln!("warning: {e}");
                        None
                    });
                    match postrun {
                        Some(hook) => {
                            clone.postrun = Some(hook);
                            clone.unlink_after_postrun = unlinked;
                            self.postruns += 1;
                        }
                        None => remove_unlinked(unlinked),
                    }
                    if let Some(what) = clone.driver.spec.exit_on_finish(clone.rec.stats.error.is_some()) {
                        self.exit_others(c, what, now);
                    }
                    return;
                }
            }
        }
    }

    /// A clone of a flow group issued or finished, or a `lockfile` lock came back: the
    /// held clones look again now (fio's held jobs spin on the group's counts).
    fn release_flow(&mut self, now: Nanos) {
        for other in self.clones.iter_mut().filter(|o| o.flow_held) {
            other.flow_held = false;
            other.wake_at = Some(now);
        }
    }

    /// `exitall` or `exitall_on_error`: clone `c` finished, so the jobs `what` names stop
    /// issuing; polled again, they finish.
    fn exit_others(&mut self, c: u32, what: ExitWhat, now: Nanos) {
        let group_of = |k: u32| self.clones[k as usize].reporting_group;
        let targets = exit_targets(what, c, self.clones.len() as u32, group_of, &self.phases[self.phase]);
        self.stop_clones(&targets, now);
    }

    /// A signal: as fio on SIGINT, the running clones issue no more and finish with what
    /// they have in flight; those that start later end at once.
    #[cold]
    fn interrupt(&mut self, now: Nanos) {
        self.interrupted = true;
        let running: Vec<u32> =
            (0..self.clones.len() as u32).filter(|&c| self.clones[c as usize].driver.started_at().is_some()).collect();
        self.stop_clones(&running, now);
    }

    /// Clones `ks` issue no more (`exitall`, steady state reached); polled again, they
    /// finish once what they have out completes.
    fn stop_clones(&mut self, ks: &[u32], now: Nanos) {
        for &k in ks {
            let other = &mut self.clones[k as usize];
            if !other.done {
                other.driver.terminate(now);
                other.wake_at = Some(now);
            }
        }
    }

    fn alloc_slot(&mut self, c: u32) -> u32 {
        if let Some(s) = self.free[c as usize].pop() {
            return s;
        }
        self.slots.push(Slot {
            rq: Request::read(0, 0),
            clone: 0,
            op: Op::Read,
            len: 0,
            offset: 0,
            created: Nanos::ZERO,
            inserted: Nanos::ZERO,
            dispatched: Nanos::ZERO,
            buf: AlignedBuf::new(self.max_bs),
            merged_next: NONE,
            file: 0,
            sync_range: SyncRange::FSYNC,
            generation: 0,
            header_generation: 0,
            state: State::Free,
            iov: Vec::new(),
            filled: false,
        });
        (self.slots.len() - 1) as u32
    }

    fn issue(&mut self, c: u32, unit: IoUnit, now: Nanos) {
        let slot = self.alloc_slot(c);
        self.requests += 1;
        let clone = &mut self.clones[c as usize];
        if clone.driver.counts_depth(unit.op) {
            clone.rec.stats.record_issue_depth(clone.driver.inflight());
        }
        clone.rec.on_issue(now, &unit);
        let s = &mut self.slots[slot as usize];
        s.generation = s.generation.wrapping_add(1);
        if unit.op == Op::Write && clone.verify {
            let generation = clone.next_generation;
            clone.next_generation += 1;
            let format = &clone.driver.spec.verify_format;
            verify::fill(s.buf.slice_mut(unit.len_bytes as usize), unit.offset_bytes, generation, format);
            clone.written.issued(unit.file, unit.offset_bytes, unit.len_bytes, generation);
            s.header_generation = generation;
            s.filled = false;
        } else if unit.op == Op::Write {
            let len = unit.len_bytes as usize;
            if clone.content.refills() {
                clone.content.fill(s.buf.slice_mut(len));
            } else {
                if !s.filled {
                    clone.content.fill_for_reuse(s.buf.slice_mut(usize::MAX));
                    s.filled = true;
                }
                if clone.content.scrambles() {
                    BufferFiller::scramble(s.buf.slice_mut(len), unit.offset_bytes, now.as_u64());
                }
            }
        } else {
            s.filled = false;
            if unit.op == Op::Discard && clone.verify {
                clone.written.trimmed(unit.file, unit.offset_bytes, unit.len_bytes);
            }
        }
        s.rq = Request {
            id: RequestId(u64::from(slot) | (u64::from(s.generation) << 32)),
            op: unit.op,
            // each target has its own range of offsets, so the policy never merges
            // requests to different files
            offset_bytes: ((clone.targets[unit.file as usize] as u64) << TARGET_SHIFT) + unit.offset_bytes,
            len_bytes: unit.len_bytes,
            sync: unit.op != Op::Write || clone.write_sync,
            fua: clone.driver.fua() && unit.op == Op::Write,
            prio: unit.prio,
            nice: clone.nice,
            job: c,
            tenant: clone.tenant,
            tenant_weight: clone.weight,
            submit_time: now,
        };
        s.clone = c;
        s.op = unit.op;
        s.len = unit.len_bytes;
        s.offset = unit.offset_bytes;
        s.file = unit.file;
        s.sync_range = unit.sync_range;
        // fio's slat runs from the I/O's start, once its buffer is filled, to its handing
        // over (here, to the policy); both clocks are read afresh, as `now` is the loop's
        s.created = elapsed_since(self.start).max(now);
        s.merged_next = NONE;
        s.state = State::Queued;
        let rq = s.rq;
        let timer = Instant::now();
        let inserted = self.sched.insert(rq, now);
        self.policy_time += timer.elapsed();
        self.slots[slot as usize].inserted = elapsed_since(self.start);
        match inserted {
            Inserted::Queued => {}
            Inserted::MergedInto(parent) => {
                let p = parent.0 as u32;
                let mut tail = slot;
                while self.slots[tail as usize].merged_next != NONE {
                    tail = self.slots[tail as usize].merged_next;
                }
                self.slots[tail as usize].merged_next = self.slots[p as usize].merged_next;
                self.slots[p as usize].merged_next = slot;
                self.slots[slot as usize].state = State::Merged;
            }
        }
    }

    fn kick(&mut self, now: Nanos) {
        while self.in_ring < self.ring_entries {
            let view = DeviceView { inflight: self.in_ring, queue_depth: self.ring_entries };
            let timer = Instant::now();
            let dispatched = self.sched.dispatch(now, view);
            self.policy_time += timer.elapsed();
            let Some(rq) = dispatched else { break };
            let slot = rq.id.0 as u32;
            self.slots[slot as usize].rq = rq;
            self.slots[slot as usize].dispatched = now;
            self.slots[slot as usize].state = State::InRing;
            let sqe = self.build_sqe(slot);
            // SAFETY: the buffers and iovecs the SQE points to live in the slot, which is
            // not reused until its CQE is reaped.
            unsafe {
                while self.ring.submission().push(&sqe).is_err() {
                    self.ring.submit().expect("submit to make room");
                }
            }
            self.in_ring += 1;
            self.max_in_ring = self.max_in_ring.max(self.in_ring);
        }
    }

    fn build_sqe(&mut self, slot: u32) -> squeue::Entry {
        let s = &self.slots[slot as usize];
        let clone = &self.clones[s.clone as usize];
        let fd = types::Fd(self.targets[clone.targets[s.file as usize]].0);
        let ioprio = s.rq.prio.to_raw();
        let entry = match s.op {
            Op::Flush if !s.sync_range.is_fsync() => {
                opcode::SyncFileRange::new(fd, s.len).offset(s.offset).flags(u32::from(s.sync_range.0)).build()
            }
            Op::Flush => {
                let flags = if clone.datasync { types::FsyncFlags::DATASYNC } else { types::FsyncFlags::empty() };
                opcode::Fsync::new(fd).flags(flags).build()
            }
            Op::Read | Op::Write => {
                let nowait = if clone.nowait { libc::RWF_NOWAIT } else { 0 };
                if s.merged_next == NONE {
                    let ptr = s.buf.ptr;
                    if s.op == Op::Read {
                        opcode::Read::new(fd, ptr, s.len).offset(s.offset).ioprio(ioprio).rw_flags(nowait).build()
                    } else {
                        let flags = nowait | if s.rq.fua { libc::RWF_DSYNC } else { 0 };
                        opcode::Write::new(fd, ptr, s.len).offset(s.offset).ioprio(ioprio).rw_flags(flags).build()
                    }
                } else {
                    // a merged request: one vectored I/O over the members' buffers
                    let mut members = Vec::new();
                    let mut m = slot;
                    while m != NONE {
                        let ms = &self.slots[m as usize];
                        members.push((ms.offset, ms.buf.ptr, ms.len));
                        m = ms.merged_next;
                    }
                    members.sort_by_key(|m| m.0);
                    let start = members[0].0;
                    let iov: Vec<libc::iovec> = members
                        .iter()
                        .map(|(_, p, l)| libc::iovec { iov_base: *p as *mut libc::c_void, iov_len: *l as usize })
                        .collect();
                    let op = s.op;
                    let fua = s.rq.fua;
                    let sm = &mut self.slots[slot as usize];
                    sm.iov = iov;
                    let (ptr, n) = (sm.iov.as_ptr(), sm.iov.len() as u32);
                    if op == Op::Read {
                        opcode::Readv::new(fd, ptr, n).offset(start).ioprio(ioprio).rw_flags(nowait).build()
                    } else {
                        let flags = nowait | if fua { libc::RWF_DSYNC } else { 0 };
                        opcode::Writev::new(fd, ptr, n).offset(start).ioprio(ioprio).rw_flags(flags).build()
                    }
                }
            }
            // fio punches a hole in a file, and issues BLKDISCARD on a block device; one
            // asynchronous fallocate does the first, and on a block device the kernel
            // turns it into write-zeroes that may deallocate
            Op::Discard => opcode::Fallocate::new(fd, u64::from(s.len))
                .offset(s.offset)
                .mode(libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE)
                .build(),
        };
        let entry = entry.user_data(u64::from(slot));
        // as fio's io_uring engine: every Nth prepared request of a job is forced async
        let clone = &mut self.clones[self.slots[slot as usize].clone as usize];
        if clone.force_async > 0 {
            clone.since_forced += 1;
            if clone.since_forced == clone.force_async {
                clone.since_forced = 0;
                self.forced_async += 1;
                return entry.flags(squeue::Flags::ASYNC);
            }
        }
        entry
    }

    /// Completes what the kernel finished. Each completion is followed at once by the
    /// requests it lets the jobs and the policy issue, submitted right away (as fio does
    /// with iodepth_batch_submit=1), so the device is not left idle while the rest of a
    /// burst of completions is processed.
    fn reap(&mut self) {
        let done: Vec<(u32, i32)> = self.ring.completion().map(|c| (c.user_data() as u32, c.result())).collect();
        if done.is_empty() {
            return;
        }

        for (slot, result) in done {
            let now = self.now();
            let (expected, start): (i64, u64) = {
                let (mut n, mut start) = (0i64, u64::MAX);
                let mut m = slot;
                while m != NONE {
                    n += i64::from(self.slots[m as usize].len);
                    start = start.min(self.slots[m as usize].offset);
                    m = self.slots[m as usize].merged_next;
                }
                (n, start)
            };
            let result = match self.inject_errors {
                Some((every, errno)) => {
                    self.completions += 1;
                    if self.completions.is_multiple_of(every) {
                        -errno
                    } else {
                        result
                    }
                }
                None => result,
            };
            let s = &self.slots[slot as usize];
            let outcome = if result < 0 {
                self.io_errors.push(format!(
                    "{} at offset {}: {}",
                    s.op.name(),
                    s.offset,
                    std::io::Error::from_raw_os_error(-result)
                ));
                Outcome::Failed(-result)
            } else if s.op == Op::Read && i64::from(result) < expected {
                // direct I/O reads short only at the end of a file
                Outcome::ReadTo(start + result as u64)
            } else if s.op.is_data() && i64::from(result) != expected {
                self.io_errors.push(format!(
                    "{} at offset {}: short I/O ({result} of {expected} bytes)",
                    s.op.name(),
                    s.offset
                ));
                Outcome::Failed(libc::EIO)
            } else {
                Outcome::Done
            };
            let clone = self.slots[slot as usize].clone;
            self.complete(slot, now, outcome);
            if !self.clones[clone as usize].done {
                self.poll_clone(clone, now);
            }
            let before = self.in_ring;
            self.kick(now);
            if self.in_ring > before {
                let _ = self.ring.submit();
            }
        }
        for i in 0..self.clones.len() {
            let clone = &mut self.clones[i];
            let n = std::mem::take(&mut clone.completed_now);
            if n > 0 {
                clone.rec.reaped(&clone.driver, n);
            }
        }
    }

    /// Completes the request in `slot` (and those merged into it), failed with `errno`
    /// or not.
    fn complete(&mut self, slot: u32, now: Nanos, outcome: Outcome) {
        self.in_ring -= 1;
        let rq = self.slots[slot as usize].rq;
        let dispatched = self.slots[slot as usize].dispatched;
        let timer = Instant::now();
        self.sched.complete(&Completion { rq: &rq, dispatched_at: dispatched, now, dispatched_by_policy: true });
        self.policy_time += timer.elapsed();
        let mut gave_back_lock = false;
        let mut m = slot;
        while m != NONE {
            let next = self.slots[m as usize].merged_next;
            let (c, io, header_generation) = {
                let s = &self.slots[m as usize];
                let io = CompletedIo {
                    op: s.op,
                    len_bytes: s.len,
                    offset_bytes: s.offset,
                    file: s.file,
                    prio: s.rq.prio,
                    created: s.created,
                    inserted: s.inserted,
                };
                (s.clone, io, s.header_generation)
            };
            let errno = match outcome {
                Outcome::Failed(e) => Some(e),
                _ => None,
            };
            // a member of a short read that did not get all it asked for: whether it got
            // part of it
            let past_end = match outcome {
                Outcome::ReadTo(end) if end < io.offset_bytes + u64::from(io.len_bytes) => Some(end > io.offset_bytes),
                _ => None,
            };
            let clone = &mut self.clones[c as usize];
            if clone.verify {
                match io.op {
                    Op::Write => clone.written.landed(io.file, io.offset_bytes, io.len_bytes, header_generation),
                    Op::Discard => clone.written.landed(io.file, io.offset_bytes, io.len_bytes, TRIM_GENERATION),
                    _ => {}
                }
            }
            if io.op == Op::Read && (clone.check_reads || clone.driver.verifying()) && !clone.verify_failed {
                // a block the job reads back: what it holds must be what was written last
                // verify=null only pretends: nothing is checked, so nothing counts as such
                if !clone.driver.spec.verify_format.pretend {
                    self.verified_blocks += 1;
                }
                let found = match (errno, past_end) {
                    (Some(e), _) => Err(format!(
                        "read of block at offset {} failed ({})",
                        io.offset_bytes,
                        std::io::Error::from_raw_os_error(e)
                    )),
                    (None, Some(_)) => {
                        Err(format!("read of block at offset {} reached past the file's end", io.offset_bytes))
                    }
                    (None, None) => verify::check(
                        self.slots[m as usize].buf.slice(io.len_bytes as usize),
                        io.offset_bytes,
                        clone.written.get(io.file, io.offset_bytes),
                        &clone.driver.spec.verify_format,
                    ),
                };
                if let Err(e) = found {
                    let path = self.targets[clone.targets[io.file as usize]].1.display();
                    let message = format!("verify: {path}: {e}");
                    // fio's EILSEQ: counted and gone past with continue_on_error=verify,
                    // otherwise it fails the job
                    let stats = &mut clone.rec.stats;
                    if clone.driver.spec.on_error.goes_on(ErrorKind::Verify, libc::EILSEQ) {
                        if let Some(count) = &mut stats.io_errors {
                            count.add(libc::EILSEQ);
                        }
                    } else if stats.error.is_none() {
                        let sync = clone.driver.spec.engine_kind == EngineKind::Sync;
                        stats.error = Some(JobError::verify(message.clone(), sync));
                    }
                    self.verify_errors.push(message);
                    if clone.driver.spec.verify_fatal {
                        clone.verify_failed = true;
                        clone.driver.stop_verify();
                    }
                }
            }
            clone.kick = true;
            clone.completed_now += 1;
            gave_back_lock |= clone.driver.locks_files();
            match (errno, past_end) {
                (Some(e), _) => clone.rec.complete_failed(&mut clone.driver, &io, now, e),
                (None, Some(straddled)) => clone.rec.complete_past_end(&mut clone.driver, &io, now, straddled),
                (None, None) => clone.rec.complete(&mut clone.driver, &io, now),
            }
            if let Some(stop) = self.steady.on_complete(c, &clone.driver, io.op, io.len_bytes, now) {
                let stop = stop.to_vec();
                self.stop_clones(&stop, now);
            }
            let s = &mut self.slots[m as usize];
            s.state = State::Free;
            s.merged_next = NONE;
            s.iov.clear();
            self.free[c as usize].push(m);
            m = next;
        }
        // a `lockfile` lock came back: the clones waiting for one look again
        if gave_back_lock {
            self.release_flow(now);
        }
    }
}
