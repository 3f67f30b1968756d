//! When a job issues: the per-clone state machine shared by both engines. It knows
//! depths, think times, rates, fsync cadence and stop conditions, and nothing about how
//! requests are served.

use crate::filelock::CloneLocks;
use crate::flow::FlowShare;
use crate::gen::{IoGenerator, IoUnit, Region, SkewedFiles, SyncRange};
use crate::latency_target::{LatencyProbe, Verdict};
use crate::spec::{EngineKind, FileService, JobSpec, ThinktimeCounts};
use crate::trace::{place, DeviceSpan, Placement};
use crate::units::SizeOrPercent;
use crate::written::{WrittenBlocks, TRIM_GENERATION};
use nvsched_core::rng::mix64;
use nvsched_core::{IoPrio, Nanos, Op, SimRng};
use std::sync::Arc;

mod files;
mod pacing;
mod tracked;
use files::FileSet;
use pacing::Pacer;
use tracked::{InFlightRanges, RegionWalk, Tracked, VerifyPass};

/// `cmdprio_bssplit` for one direction: (block size, share %, priority).
type SizeShares = Vec<(u32, u8, IoPrio)>;

/// What a job wants from its engine right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poll {
    /// Units were appended to the output: submit them now, together.
    Ready,
    /// Nothing until this time (think time or rate pacing), unless a completion comes.
    WaitUntil(Nanos),
    /// Nothing until one of its requests completes.
    Blocked,
    /// Held back by flow control (`flow`), or waiting for a file's `lockfile` lock: poll
    /// again when another job issues, finishes or gives a lock back, or at this time (the
    /// job's end; `Nanos::MAX` without one), whichever comes first. A time, not an
    /// `Option`: `Poll` stays two words, returned in registers on the hot path.
    Held(Nanos),
    /// Done issuing and nothing in flight.
    Finished,
}

/// One job clone's issuing logic.
#[derive(Debug)]
pub struct JobDriver {
    pub spec: Arc<JobSpec>,
    pub clone_index: u32,
    /// The generator of the file the next I/O goes to.
    gen: IoGenerator,
    /// The clone's other files, with several (`nrfiles`, `filename=a:b`; boxed: most
    /// jobs have one).
    files: Option<Box<FileSet>>,
    depth: u32,
    batch: u32,
    inflight: u32,
    issued_bytes: u64,
    /// The generator's completed passes the job has looked at (`pass_ends_job`).
    passes_seen: u64,
    /// Stop issuing after this many bytes (`u64::MAX` when time based).
    io_limit: u64,
    /// The job ends after its first pass: the later ones find no room
    /// ([`Region::for_later_passes`], [`JobDriver::job_ends_after`]).
    one_pass: bool,
    /// The passes after the first work elsewhere than the first.
    later_moves: bool,
    /// Stop issuing after this many I/Os (`number_ios`; `u64::MAX` without).
    ios_limit: u64,
    /// I/Os between `thinktime` pauses (`u32::MAX`: no thinktime).
    think_every: u32,
    started_at: Option<Nanos>,
    ramp_end: Nanos,
    end: Option<Nanos>,
    stopped: bool,
    think_until: Nanos,
    /// Data I/Os issued since the last `thinktime` pause.
    since_think: u32,
    /// `thinktime_blocks_type=complete`: data I/Os completed, and that count at the last
    /// pause; a check a full queue put off until a completion makes room (fio checks
    /// after the reaping).
    think_completed: u64,
    think_last: u64,
    think_check_due: bool,
    /// `thinktime_iotime` (0: pauses come by count only) and when the current stretch of
    /// issuing began (the job's start or the end of its last pause).
    think_iotime: Nanos,
    issuing_since: Nanos,
    /// Issue nothing until what is out has completed, then pause.
    quiescing: Option<Pause>,
    /// The queue filled (`iodepth_low`, `iodepth_batch_complete_min`): issue nothing until
    /// at most this many are out.
    refill_below: u32,
    refill_wait: bool,
    /// I/Os issued for `number_ios`: data I/Os and `verify` reads, as fio counts both.
    issued_ios: u64,
    /// `rate`/`rate_iops` pacing (boxed: few jobs are paced).
    pacer: Option<Box<Pacer>>,
    /// Draws which I/Os get `cmdprio_percentage`'s priority.
    prio_rng: SimRng,
    prio: IoPrio,
    /// `cmdprio_percentage` and its priority, for reads and for writes.
    cmdprio: [Option<(u8, IoPrio)>; 2],
    /// `cmdprio_bssplit`: (block size, share, priority) for reads and for writes (boxed:
    /// few jobs have it).
    cmdprio_split: Option<Box<[SizeShares; 2]>>,
    pending: Option<IoUnit>,
    /// What `serialize_overlap` and `verify` keep of the clone's I/Os (boxed, and one
    /// field for both: few jobs have either, and the hot path looks once).
    tracked: Option<Box<Tracked>>,
    writes_since_flush: u32,
    flush_every: u32,
    /// With `sync_file_range`: per file, the bytes written since its last sync (first
    /// offset, end), as fio's first_write and last_write.
    written_since_sync: Vec<Option<(u64, u64)>>,
    flush_due: FlushDue,
    /// An end-of-pass flush is in flight (then nothing else is).
    end_flush_out: bool,
    /// The file whose end-of-pass flush comes next: fio flushes the files one at a
    /// time, each once the one before has completed.
    end_flush_file: u16,
    /// The last unit issued was a flush (fio then skips the end-of-pass one).
    last_was_flush: bool,
    /// Bytes per `loops` pass: `io_size`, else `size` (fio's keep_running goes on while
    /// a largest block of it is owed).
    loop_bytes: u64,
    /// Bytes after which a pass ends (fio's do_io stops after `size` issued bytes, as an
    /// asynchronous engine counts them; `u64::MAX`: none), and the issued bytes where the
    /// running pass ends so.
    pass_bytes: u64,
    next_pass_end: u64,
    /// For a job that is not time-based (nor a replay), the clone's regions of the passes
    /// after the first ([`Region::for_later_passes`]) and seed: a pass ended by bytes
    /// starts over from the start of each, as fio's clear_io_state puts it back, and
    /// every pass (with `randrepeat`) draws what the first drew (boxed: rare). `None`:
    /// the job [runs by time](Self::runs_by_time).
    restart: Option<Box<(Vec<Region>, u64)>>,
    /// Passes also end where the generator's passes over the region do (fio finds its
    /// files done): the end-of-pass flush and read-back go there, not after a byte count
    /// the region may not divide into (`bs=3k` over 64 KiB: 21 blocks a pass).
    loops_by_passes: bool,
    /// Passes that have ended (by the files or by bytes).
    passes_ended: u64,
    /// The job ended at its byte or I/O limit with `loops` passes to go: fio's next
    /// do_io issues nothing, but flushes again at its end (`end_fsync`).
    empty_pass_flush: bool,
    /// `issued_bytes` when the running pass began.
    pass_start_bytes: u64,
    /// The second `fsync=N` flush of a pass end waits for the read-back between passes.
    flush_after_backlog: bool,
    finished_at: Option<Nanos>,
    /// The trace this clone replays (`read_iolog`), in place of `gen` (boxed: the
    /// generated workloads' drivers stay small).
    replay: Option<Box<Replay>>,
    /// Its share of a `flow` group (boxed: most jobs have none).
    flow: Option<Box<FlowShare>>,
    /// Its files' `lockfile` locks (boxed: most jobs have none).
    locks: Option<Box<CloneLocks>>,
    /// `latency_target`'s search for a depth (boxed: most jobs have none).
    latency: Option<Box<LatencyProbe>>,
    /// `max_latency`, `latency_target`, `rate_min` or `rate_iops_min` is set: completions
    /// are judged.
    watches: bool,
    /// What `rate_min`/`rate_iops_min` count, per direction.
    min_rate: MinRate,
    /// A lower depth was chosen: issue nothing until the requests out have completed.
    draining: bool,
    /// `verify_backlog`: enough writes went out; read back the oldest before more.
    backlog_due: bool,
    /// Once drained, the statistics restart (the latency search's final window).
    restart_when_drained: bool,
    /// The job failed (`max_latency`, `latency_target`, `rate_min`): it issues nothing
    /// more and counts nothing more.
    failed: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum VerifyState {
    /// The job's I/O is not done yet.
    #[default]
    Pending,
    /// A `verify_backlog` read-back: the job's other I/O waits.
    Backlog,
    /// The read-back once the job's I/O is done.
    Reading,
    Done,
}

/// Why a job lets what it has out complete and then pauses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pause {
    /// `thinktime`, after `thinktime_blocks` I/Os or `thinktime_iotime` of issuing.
    Think,
    /// `flow_sleep`, held back by flow control.
    FlowSleep,
}

/// Completed bytes and I/Os per direction (read, write) for `rate_min`/`rate_iops_min`,
/// and where the running cycle began: (time, bytes, I/Os).
#[derive(Debug, Default)]
struct MinRate {
    bytes: [u64; 2],
    ios: [u64; 2],
    mark: [Option<(Nanos, u64, u64)>; 2],
}

/// What one completion meant for its job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completed {
    /// It counts in the job's statistics and logs: all do but the end-of-pass flush,
    /// which fio does not account, and whatever completes after the job failed.
    pub counted: bool,
    /// The statistics restart now, after this completion (the latency search found its
    /// depth; fio resets the job's statistics for the final window).
    pub restart_stats: bool,
    /// This completion failed the job, as fio fails it.
    pub failed: Option<Failure>,
}

/// Why a job failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The request took longer than this (`max_latency`, or a 100% `latency_target` at
    /// depth 1): fio's ETIMEDOUT.
    Latency(Nanos),
    /// `rate_min`/`rate_iops_min` was not met over a `rate_cycle`: fio's EIO, and its
    /// message.
    MinRate(String),
    /// A request failed with this errno (real devices), and `continue_on_error` did not
    /// cover it.
    Io(i32),
}

/// How a clone's replay went: what it issued, left out and how late.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplayStats {
    /// Records in the trace.
    pub records: u64,
    pub issued: u64,
    /// Left out by `replay_skip`.
    pub skipped: u64,
    /// Beyond their device's part of the job's file, left out (`replay_outside=drop`).
    pub dropped: u64,
    /// Beyond it, folded in (`replay_outside=wrap`).
    pub wrapped: u64,
    /// Issued later than the trace's time (scaled) because `iodepth` was full.
    pub lag_max: Nanos,
    pub lag_total_ns: u128,
    /// Issued 1 ms or more late.
    pub late_ios: u64,
}

impl ReplayStats {
    pub fn lag_mean(&self) -> Nanos {
        Nanos(self.lag_total_ns.checked_div(u128::from(self.issued)).unwrap_or(0) as u64)
    }
}

/// A trace being replayed: the next record, and where each trace device lands.
#[derive(Debug)]
struct Replay {
    spans: Vec<DeviceSpan>,
    next: usize,
    /// When the unit last taken from the trace is due.
    due: Nanos,
    stats: ReplayStats,
}

const LATE: Nanos = Nanos(1_000_000);

/// A flush the job owes once its outstanding requests have completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FlushDue {
    No,
    /// `fsync=N`/`fdatasync=N`: counted in the sync statistics.
    Counted,
    /// `end_fsync`/`fsync_on_close` at the end of a pass: fio does not count it.
    EndOfPass,
}

/// Bytes after which fio's do_io ends a pass of a job that is not time based: `size`
/// (a random write without a map: `io_size` if larger; with `verify_backlog`, twice, for
/// the reads), as an asynchronous engine counts what it queues. A sync engine completes
/// each request as it issues it and counts none, so its passes end only where its files
/// are done or at the job's limit (`u64::MAX`).
fn size_pass_bytes(spec: &JobSpec, size: u64, io_size: Option<u64>, sync_engine: bool) -> u64 {
    if sync_engine || spec.pattern.is_trimwrite() {
        return u64::MAX;
    }
    let writes = spec.pattern.writes();
    let mut bytes = size;
    if writes && spec.pattern.is_random() && spec.norandommap {
        bytes = bytes.max(io_size.unwrap_or(0));
    }
    if writes && spec.verify && spec.verify_backlog > 0 {
        bytes = bytes.saturating_add(size);
    }
    bytes
}

impl JobDriver {
    /// `seed` is specific to this clone; `regions` is where its I/O goes, one per file
    /// (one unless the job has several files).
    pub fn new(spec: Arc<JobSpec>, clone_index: u32, regions: &[Region], seed: u64) -> Result<JobDriver, String> {
        // a clone whose offset lies past its file's end has an empty region and issues
        // nothing (`JobSpec::region_past_end`); its generator gets one block to stand on
        let issues_nothing = regions.iter().all(|r| r.len == 0);
        let region = regions[0];
        let gen_region = if issues_nothing {
            Region { len: u64::from(spec.max_bs()).max(u64::from(spec.random_align())), ..region }
        } else {
            region
        };
        let gen = IoGenerator::new(&spec, gen_region, seed)?;
        let files = match regions.len() {
            1 => None,
            _ => Some(Box::new(FileSet::new(&spec, regions, seed)?)),
        };
        // the job's bytes: its size, at most what its regions hold (several files share
        // the size, each region holding its share unless `filesize` sized the files); a
        // percentage size was taken of the file's length when the region was cut
        let regions_len: u64 = regions.iter().map(|r| r.len).sum();
        let size = match spec.size {
            Some(SizeOrPercent::Bytes(b)) => b.min(regions_len),
            _ => regions_len,
        };
        let replay = spec.trace().map(|t| {
            Box::new(Replay {
                spans: t.device_spans(spec.replay.devices, size),
                next: 0,
                due: Nanos::ZERO,
                stats: ReplayStats { records: t.records.len() as u64, ..ReplayStats::default() },
            })
        });
        // a replay ends with its trace (or io_size, number_ios, runtime); a percentage
        // io_size is of the job's size, as in fio
        let io_size = spec.io_size.map(|s| s.resolve(size));
        let by_time = spec.time_based || replay.is_some();
        let loop_bytes = if by_time { io_size.unwrap_or(u64::MAX) } else { io_size.unwrap_or(size) };
        // fio's trimwrite trims and writes `size` (`io_size`, `number_ios`) each
        let pairs = if spec.pattern.is_trimwrite() { 2 } else { 1 };
        let loop_bytes = loop_bytes.saturating_mul(pairs);
        // create_only: the files are laid out, nothing is issued; verify_only: nothing but
        // the read-back
        let io_limit = if spec.create_only || spec.verify_only || issues_nothing {
            0
        } else {
            loop_bytes.saturating_mul(u64::from(spec.loops.max(1)))
        };
        // the passes after the first may start elsewhere; where they find no room (an
        // appending job's), fio's job ends with its first pass
        let later: Vec<Region> = regions.iter().map(Region::for_later_passes).collect();
        let later_moves = later != regions;
        let one_pass = !by_time && later.iter().any(|r| r.len < u64::from(spec.min_bs()).max(1));
        let sync_engine = spec.engine_kind == EngineKind::Sync;
        let pass_bytes = if by_time { loop_bytes } else { size_pass_bytes(&spec, size, io_size, sync_engine) };
        // a pass also ends where the files are done (fio's get_io_u finds no block left)
        let loops_by_passes = !by_time && gen.counts_passes();
        let restart = (!by_time).then(|| Box::new((later, seed)));
        // fio 3.33 counts number_ios per loop and, once it is reached, starts the next
        // loop where the last one stopped; a time-based job loops until its runtime, so
        // number_ios does not end it (a replay is cut short by it: an nvsched extension)
        let ios_limit = match spec.number_ios {
            0 => u64::MAX,
            _ if spec.time_based && replay.is_none() => u64::MAX,
            n => {
                n.saturating_mul(pairs).saturating_mul(if replay.is_some() { 1 } else { u64::from(spec.loops.max(1)) })
            }
        };
        let think_every =
            if spec.thinktime > Nanos::ZERO { spec.thinktime_blocks.clamp(1, u32::MAX - 1) } else { u32::MAX };
        let think_iotime = if spec.thinktime > Nanos::ZERO { spec.thinktime_iotime } else { Nanos::ZERO };
        let spec_watches = spec.max_latency > Nanos::ZERO
            || spec.latency.target > Nanos::ZERO
            || spec.rate_min_bps[..2] != [0, 0]
            || spec.rate_iops_min[..2] != [0, 0];
        let prio = spec.ioprio();
        let cmdprio = [spec.cmdprio(Op::Read), spec.cmdprio(Op::Write)];
        let refill_at = refill_below(spec.queue_depth(), &spec);
        let split = [spec.cmdprio_split(Op::Read), spec.cmdprio_split(Op::Write)];
        let cmdprio_split = split.iter().any(|l| !l.is_empty()).then(|| Box::new(split));
        let serialize_overlap = spec.serialize_overlap;
        let pacer = Pacer::new(&spec, SimRng::stream(seed, 4));
        // fio reads back (verify_backlog included) only with do_verify
        let verify = (spec.verify && (spec.do_verify || spec.verify_only)).then(|| {
            // verify_only: every block of the clone's regions, as the earlier run wrote them
            let bs = u64::from(spec.bs[Op::Write.index()].min());
            let walk = spec.verify_only.then(|| RegionWalk::new(regions, bs));
            let backlog = if spec.verify_only { 0 } else { spec.verify_backlog };
            let backlog_batch = if spec.verify_backlog_batch > 0 { spec.verify_backlog_batch } else { backlog };
            // a time-based job's passes, by bytes, as an engine that queues counts them (a
            // sync engine's never end, and its runtime ends the job before any read-back;
            // the driver says where other passes end)
            let by_bytes = spec.time_based && replay.is_none() && !sync_engine && !spec.verify_only;
            let pass_bytes = if by_bytes { io_size.unwrap_or(size) } else { 0 };
            // fio keeps its history as a list only for a file with a random map (random
            // offsets, each once a pass); otherwise as a tree in (file, offset) order
            let in_write_order = spec.pattern.is_random() && !spec.norandommap && spec.rw_modifier <= 1;
            VerifyPass { walk, in_write_order, backlog, backlog_batch, pass_bytes, ..VerifyPass::default() }
        });
        Ok(JobDriver {
            depth: spec.queue_depth(),
            batch: spec.iodepth_batch_submit.max(1),
            flush_every: spec.fsync_every.max(spec.fdatasync_every).max(spec.sync_file_range.map_or(0, |(_, n)| n)),
            written_since_sync: Vec::new(),
            spec,
            clone_index,
            gen,
            files,
            inflight: 0,
            issued_bytes: 0,
            io_limit,
            one_pass,
            later_moves,
            ios_limit,
            think_every,
            think_iotime,
            issuing_since: Nanos::ZERO,
            started_at: None,
            ramp_end: Nanos::ZERO,
            end: None,
            stopped: false,
            think_until: Nanos::ZERO,
            since_think: 0,
            think_completed: 0,
            think_last: 0,
            think_check_due: false,
            quiescing: None,
            refill_below: refill_at,
            refill_wait: false,
            issued_ios: 0,
            passes_seen: 0,
            pacer,
            prio_rng: SimRng::stream(seed, 5),
            prio,
            cmdprio,
            cmdprio_split,
            pending: None,
            tracked: (serialize_overlap || verify.is_some())
                .then(|| Box::new(Tracked { in_flight: serialize_overlap.then(InFlightRanges::default), verify })),
            writes_since_flush: 0,
            flush_due: FlushDue::No,
            end_flush_out: false,
            end_flush_file: 0,
            last_was_flush: false,
            loop_bytes,
            pass_bytes,
            // the last pass ends with the job's own stop, so one pass needs no check
            next_pass_end: if io_limit > pass_bytes { pass_bytes } else { u64::MAX },
            restart,
            loops_by_passes,
            passes_ended: 0,
            empty_pass_flush: false,
            pass_start_bytes: 0,
            flush_after_backlog: false,
            finished_at: None,
            replay,
            flow: None,
            locks: None,
            latency: None,
            watches: spec_watches,
            min_rate: MinRate::default(),
            draining: false,
            backlog_due: false,
            restart_when_drained: false,
            failed: false,
        })
    }

    /// Makes the clone a member of a `flow` group (from [`crate::FlowGroups`]); it joins
    /// when it starts and leaves when it finishes.
    /// The same clone, not yet started, over other regions (a file's size known only as
    /// the clone starts); its flow share goes with it.
    pub fn move_to(&mut self, regions: &[Region], seed: u64) -> Result<(), String> {
        debug_assert!(self.started_at.is_none(), "a clone moves before it starts");
        let mut moved = JobDriver::new(self.spec.clone(), self.clone_index, regions, seed)?;
        moved.flow = self.flow.take();
        moved.locks = self.locks.take();
        *self = moved;
        Ok(())
    }

    pub fn set_flow(&mut self, share: FlowShare) {
        self.flow = Some(Box::new(share));
    }

    /// Whether the clone is in a `flow` group: its issuing and finishing may release
    /// another member that is [held](Poll::Held).
    pub fn in_flow(&self) -> bool {
        self.flow.is_some()
    }

    /// Gives the clone its files' `lockfile` locks (from [`crate::FileLocks`]).
    pub fn set_locks(&mut self, locks: CloneLocks) {
        self.locks = Some(Box::new(locks));
    }

    /// Whether the clone locks its files: each of its completions gives a lock back,
    /// which may release another clone that is [held](Poll::Held) waiting for it.
    pub fn locks_files(&self) -> bool {
        self.locks.is_some()
    }

    /// Starts the clone (its group's turn has come); it issues after `startdelay`.
    pub fn start(&mut self, group_start: Nanos) {
        if let Some(f) = &mut self.flow {
            f.join();
        }
        let now = group_start + self.spec.startdelay;
        self.started_at = Some(now);
        self.ramp_end = now + self.spec.ramp_time;
        self.end = (self.spec.runtime > Nanos::ZERO).then(|| now + self.spec.ramp_time + self.spec.runtime);
        if let Some(p) = &mut self.pacer {
            p.start(now);
        }
        self.think_until = now;
        self.issuing_since = now;
        self.latency = LatencyProbe::new(&self.spec.latency, self.depth, now).map(Box::new);
        if let Some(p) = &self.latency {
            self.set_depth(p.depth());
        }
    }

    pub fn started_at(&self) -> Option<Nanos> {
        self.started_at
    }
    /// Completions before this time are warm-up (`ramp_time`) and not counted.
    pub fn ramp_end(&self) -> Nanos {
        self.ramp_end
    }
    /// When issuing stops by time, if it does.
    pub fn end(&self) -> Option<Nanos> {
        self.end
    }
    pub fn inflight(&self) -> u32 {
        self.inflight
    }
    /// Whether a request of type `op` just issued counts in fio's I/O depth distribution:
    /// not the flushes at a pass's end (`end_fsync`, `fsync_on_close`), which fio issues
    /// in its FSYNCING state and leaves out.
    pub fn counts_depth(&self, op: Op) -> bool {
        op != Op::Flush || !self.end_flush_out
    }
    pub fn depth(&self) -> u32 {
        self.depth
    }
    /// The depth `latency_target`'s search is at (fio's `latency_depth`), if it searches.
    pub fn latency_depth(&self) -> Option<u32> {
        self.latency.as_ref().map(|p| p.depth())
    }
    /// The job's own priority (`prioclass`/`prio`), which I/Os carry unless `cmdprio`'s.
    pub fn default_prio(&self) -> IoPrio {
        self.prio
    }
    pub fn issued_bytes(&self) -> u64 {
        self.issued_bytes
    }
    pub fn finished_at(&self) -> Option<Nanos> {
        self.finished_at
    }
    pub fn region(&self) -> Region {
        self.gen.region()
    }
    /// Whether writes of this job carry FUA.
    pub fn fua(&self) -> bool {
        self.spec.writes_fua()
    }

    /// The job issues no more data I/O (a size, count or time limit); it still owes the
    /// end-of-pass flush if it asked for one.
    fn stop_issuing(&mut self) {
        self.stopped = true;
        self.pending = None;
        // an `fsync=N` flush not yet issued is dropped at a time stop, as fio checks the
        // time first (at a size or count stop none is pending)
        self.flush_due = FlushDue::No;
        self.owe_end_flush();
    }

    /// A time-based job or a replay: its runtime or trace ends it, not its passes.
    fn runs_by_time(&self) -> bool {
        self.restart.is_none()
    }

    /// The job has issued its bytes (`io_size` or `size` times `loops`) or its
    /// `number_ios`. Where that came before its last `loops` pass, fio runs one more
    /// do_io, which issues nothing but flushes at its end again (`end_fsync`), and ends
    /// the job.
    #[cold]
    fn stop_at_limit(&mut self) {
        self.stop_issuing();
        // a pass that issued nothing is that empty do_io itself, and fio ends the job
        // with it (`loops=3 verify=crc32c number_ios=3 end_fsync=1` over a file done in
        // the first: writes, a flush, the read-back, one flush)
        self.empty_pass_flush = !self.runs_by_time()
            && self.spec.flushes_at_end()
            && self.issued_bytes > self.pass_start_bytes
            && self.passes_ended.saturating_add(1) < u64::from(self.spec.loops.max(1));
    }

    /// Another job's `exitall` ends this one at `now`: it issues no more data I/O; what is
    /// in flight completes, and a job that was running still owes its end-of-pass flush
    /// (fio's do_io flushes after a termination too).
    pub fn terminate(&mut self, now: Nanos) {
        if !self.stopped {
            self.stop_issuing();
            if self.started_at.is_none_or(|start| now < start) {
                self.flush_due = FlushDue::No;
            }
        }
        // fio's exitall (and a fill's ENOSPC) ends the job, read-back, later loops and
        // all, also one that has issued its last write
        self.end_verify_phase(now);
        self.set_verify_state(VerifyState::Done);
        self.empty_pass_flush = false;
        self.mark_finished(now);
    }

    /// The clone could not open its files at its start (fio's failed open): it ends at
    /// once, without I/O.
    pub fn fail_at_start(&mut self, now: Nanos) {
        self.fail(now);
    }

    /// fio's `should_fsync`: a job that writes, whose last request was not a flush.
    fn owe_end_flush(&mut self) {
        if self.spec.flushes_at_end() && !self.last_was_flush {
            self.flush_due = FlushDue::EndOfPass;
        }
    }

    fn mark_finished(&mut self, now: Nanos) {
        if self.stopped
            && self.inflight == 0
            && self.flush_due == FlushDue::No
            && !self.empty_pass_flush
            && self.finished_at.is_none()
            && self.verify_state().is_none_or(|state| state == VerifyState::Done)
        {
            self.finished_at = Some(now);
            if let Some(f) = &mut self.flow {
                f.leave();
            }
        }
    }

    /// The generator has just completed a pass over the region (the I/O it drew starts
    /// the next): whether the job ends here, by fio's keep_running. A size-based job
    /// ends after its last `loops` pass, even a few bytes short of its size (a block that
    /// does not fit before the end is not done); with `io_size`, it goes on while a whole
    /// largest block of `io_size` (not times `loops`) is still owed. Jobs with several
    /// files keep to their byte count.
    #[cold]
    #[inline(never)]
    fn pass_ends_job(&mut self) -> bool {
        self.passes_seen = self.passes_completed();
        self.job_ends_after(self.passes_ended + 1)
    }

    /// Whether the job ends once `passes` passes have ended ([`done_after_passes`]);
    /// one whose later passes find no room ends after its first, and where it would
    /// have gone on, fio's next do_io issues nothing but flushes again at its end
    /// (`size=32k file_append=1 loops=3 end_fsync=1`: 8 writes, 2 flushes).
    ///
    /// [`done_after_passes`]: Self::done_after_passes
    fn job_ends_after(&mut self, passes: u64) -> bool {
        let done = self.done_after_passes(passes);
        if self.one_pass {
            self.empty_pass_flush = !done && self.spec.flushes_at_end();
            return true;
        }
        done
    }

    /// fio's keep_running once `passes` passes have ended: the first `loops` always run;
    /// then another while a largest block of `io_size` (or `size`) is owed, counting the
    /// bytes the passes' read-backs read (`verify`) as fio counts all the job's bytes.
    /// Without `io_size` a job whose files are done stops there, unless it reads back:
    /// fio's read-back leaves its files not done (`rw=write:4k bs=3k size=64k
    /// verify=crc32c` over four files writes and reads 24 KiB twice).
    fn done_after_passes(&self, passes: u64) -> bool {
        if self.spec.time_based || passes < u64::from(self.spec.loops.max(1)) {
            return false;
        }
        let verify = self.tracked.as_ref().and_then(|t| t.verify.as_ref());
        if self.spec.io_size.is_none() && verify.is_none() {
            return true;
        }
        let read_back = verify.map_or(0, |v| {
            // what this pass's read-back will read, and what earlier ones read
            v.read_bytes + v.written.blocks().map(|(_, _, b)| u64::from(b.len)).sum::<u64>()
        });
        let done = self.issued_bytes.saturating_add(read_back);
        self.loop_bytes.saturating_sub(done) < u64::from(self.spec.max_bs())
    }

    /// Passes the job has completed: over its region, or over all its files (each file
    /// has had its pass).
    fn passes_completed(&self) -> u64 {
        match &self.files {
            Some(files) => files.passes,
            None => self.gen.passes_completed(),
        }
    }

    /// A pass over the region has ended and the job goes on: whether fio 3.33 flushes
    /// once more before the next pass. When an `fsync=N` flush fell due on the pass's last
    /// write, fio issues two flushes there (at the end of a loop or `io_size` pass; not at
    /// a time-based wrap). Checked with fio's write_iolog: `size=64k fsync=8
    /// loops=3` writes 8, flushes, writes 8, flushes twice, and so on, 7 flushes in all.
    fn flushes_again_at_pass_end(&self) -> bool {
        self.flush_every > 0 && self.last_was_flush && self.writes_since_flush == 0 && !self.spec.time_based
    }

    /// A pass over the region ended before the unit just drawn, and the job goes on: what
    /// fio does between two runs of its do_io (a second `fsync=N` flush, and with
    /// [`loops_by_passes`](Self::loops_by_passes) the end-of-pass flush and the
    /// read-back). Returns whether any of it must come before that unit.
    #[cold]
    fn between_passes(&mut self) -> bool {
        let flush_again = self.flushes_again_at_pass_end();
        let mut owed = false;
        if self.loops_by_passes {
            owed = self.end_of_pass();
            self.next_pass_end = self.pass_end_after(self.pass_bytes);
        }
        if flush_again && self.backlog_due {
            // fio's second flush opens the next do_io, after the read-back
            self.flush_after_backlog = true;
        } else if flush_again {
            self.flush_due = FlushDue::Counted;
        }
        owed || flush_again
    }

    /// Where the next pass ends by bytes, `bytes` from now: never where the job's own
    /// limit ends it first.
    fn pass_end_after(&self, bytes: u64) -> u64 {
        match self.issued_bytes.saturating_add(bytes) {
            end if end >= self.io_limit => u64::MAX,
            end => end,
        }
    }

    /// A pass (not the last) has ended: fio's end_fsync comes after each, then its
    /// read-back. Returns whether the job now owes either. Out of line: once per pass,
    /// not per I/O.
    #[cold]
    fn end_of_pass(&mut self) -> bool {
        self.passes_ended += 1;
        self.pass_start_bytes = self.issued_bytes;
        let mut owed = false;
        if self.flush_due == FlushDue::No {
            self.owe_end_flush();
            owed = self.flush_due != FlushDue::No;
        }
        if let Some(v) = self.tracked.as_deref_mut().and_then(|t| t.verify.as_mut()) {
            v.pass_ended = true;
            self.backlog_due = true;
            owed = true;
        }
        owed
    }

    /// The running pass has issued its `size` bytes (an asynchronous engine's do_io
    /// stops there): the end flush and read-back come between it and the next, which
    /// starts over at the start of the region. An `fsync=N` flush that fell due on its
    /// last write opens the next pass, after them. Out of line: once per pass.
    #[cold]
    #[inline(never)]
    fn bytes_pass_end(&mut self) -> bool {
        self.next_pass_end = self.pass_end_after(self.pass_bytes);
        if self.runs_by_time() {
            // a time-based job's `io_size` passes: the end flush (its read-back goes by
            // its own count)
            if self.flush_due != FlushDue::No {
                return false;
            }
            self.owe_end_flush();
            return self.flush_due != FlushDue::No;
        }
        if self.job_ends_after(self.passes_ended + 1) {
            // the job ends with this pass: its end flush and read-back follow
            self.stop_issuing();
            return true;
        }
        let deferred_flush = std::mem::replace(&mut self.flush_due, FlushDue::No) == FlushDue::Counted;
        let owed = self.end_of_pass();
        if deferred_flush {
            // after the end flush and the read-back (the backlog step takes it up)
            self.flush_after_backlog = true;
            self.backlog_due = true;
        }
        self.start_pass_over();
        owed || deferred_flush
    }

    /// fio's clear_io_state before its next do_io: each file's next I/O is at its start
    /// again, and the random generators start from their seeds (`randrepeat`, on by
    /// default), so the pass draws what the first pass drew (`rw=randrw size=32k loops=2`
    /// reads and writes the same 8 blocks in the same order twice).
    fn start_pass_over(&mut self) {
        if let Some((regions, seed)) = self.restart.as_deref() {
            // randrepeat=0: fio's generators go on where they are; a seed of the pass's
            // own stands in, so each pass draws anew
            let seed = if self.spec.randrepeat { *seed } else { mix64(*seed ^ self.passes_ended) };
            if let Ok(gen) = IoGenerator::new(&self.spec, regions[0], seed) {
                self.gen = gen;
            }
            if let Some(files) = &mut self.files {
                files.restart(&self.spec, regions, seed);
            }
            self.passes_seen = self.passes_completed(); // the fresh generator's count
        }
    }

    /// Issues the flush that is due: an `fsync=N` flush of an asynchronous engine as
    /// the next request (fio's libaio and io_uring engines queue it behind what is in
    /// flight), any other once nothing is in flight (the end of a pass waits for it all;
    /// a synchronous engine has only one request out).
    fn poll_flush(&mut self, out: &mut Vec<IoUnit>, max_units: u32) -> Poll {
        let queues = self.flush_due == FlushDue::Counted && self.spec.engine_kind != EngineKind::Sync;
        let room = self.inflight < self.depth && max_units > 0 && !self.held_back();
        if self.inflight > 0 && !(queues && room) {
            return Poll::Blocked;
        }
        // fsync=N flushes the file whose turn is next, and takes that turn (fio takes
        // a file for the flush as for any I/O); the end of a pass flushes every file,
        // one at a time (fio's fio_io_sync waits for each)
        let counted = self.flush_due == FlushDue::Counted;
        let file = match (&mut self.files, self.flush_due) {
            (None, _) => 0,
            (Some(f), FlushDue::EndOfPass) => {
                let file = self.end_flush_file;
                let last = usize::from(file) + 1 >= f.parked.len();
                self.end_flush_file = if last { 0 } else { file + 1 };
                file
            }
            (Some(f), _) => f.choose(&mut self.gen) as u16,
        };
        if self.flush_due == FlushDue::EndOfPass {
            self.end_flush_out = true;
        }
        if self.end_flush_file == 0 {
            self.flush_due = FlushDue::No;
        }
        self.last_was_flush = true;
        self.inflight += 1;
        let (sync_range, offset_bytes, len_bytes) = match self.spec.sync_file_range {
            Some((flags, _)) if counted => {
                // the range written since the file's last sync, as fio tracks it
                // (io_uring takes a 32-bit length)
                let (first, end) = self.written_since_sync.get(usize::from(file)).copied().flatten().unwrap_or((0, 0));
                (flags, first, (end - first).min(u64::from(u32::MAX)) as u32)
            }
            _ => (SyncRange::FSYNC, 0, 0),
        };
        out.push(IoUnit { op: Op::Flush, sync_range, offset_bytes, len_bytes, prio: self.prio, file });
        Poll::Ready
    }

    /// Appends the units to issue now (a batch) to `out` and says what to do next.
    pub fn poll(&mut self, now: Nanos, out: &mut Vec<IoUnit>) -> Poll {
        self.poll_at_most(now, out, u32::MAX)
    }

    /// Like [`poll`](Self::poll), issuing at most `max_units` (free scheduler tags).
    #[inline]
    pub fn poll_at_most(&mut self, now: Nanos, out: &mut Vec<IoUnit>, max_units: u32) -> Poll {
        if self.locks.is_some() {
            return self.poll_locked(now, out, max_units);
        }
        self.poll_units(now, out, max_units)
    }

    /// `lockfile`: what the job draws waits, in order, until its file's lock can be taken
    /// (drawn and counted in flight, as fio's I/O waiting in `lock_file` is); meanwhile
    /// the job draws nothing more and is held until another clone gives a lock back.
    #[cold]
    #[inline(never)]
    fn poll_locked(&mut self, now: Nanos, out: &mut Vec<IoUnit>, max_units: u32) -> Poll {
        if !self.locks.as_ref().is_some_and(|l| l.waiting()) {
            let start = out.len();
            let poll = self.poll_units(now, out, max_units);
            if out.len() == start {
                return poll;
            }
            self.locks.as_deref_mut().expect("a locking clone").wait(out.drain(start..));
        }
        let locks = self.locks.as_deref_mut().expect("a locking clone");
        if locks.release_to(out, max_units) > 0 {
            Poll::Ready
        } else {
            Poll::Held(Nanos::MAX)
        }
    }

    /// Whether the job issues nothing new until requests complete: it waits for what is
    /// out before a pause, drains to a lower depth, or refills a full queue only once
    /// it has emptied far enough (`iodepth_low`, `iodepth_batch_complete_min`).
    fn held_back(&self) -> bool {
        self.quiescing.is_some() || self.draining || self.refill_wait
    }

    /// A flush that is due, a stop, or a backlog to issue comes first, in that order.
    fn poll_due(&mut self, now: Nanos, out: &mut Vec<IoUnit>, max_units: u32) -> Option<Poll> {
        if self.end_flush_out {
            // fio goes on once its end-of-pass flush has completed
            return Some(Poll::Blocked);
        }
        if self.flush_due != FlushDue::No {
            return Some(self.poll_flush(out, max_units));
        }
        if self.stopped {
            return Some(self.poll_stopped(now, out, max_units));
        }
        if self.backlog_due {
            return Some(self.poll_backlog(now, out, max_units));
        }
        None
    }

    fn poll_units(&mut self, now: Nanos, out: &mut Vec<IoUnit>, max_units: u32) -> Poll {
        let Some(start) = self.started_at else { return Poll::Blocked };
        if now < start && !self.stopped {
            return Poll::WaitUntil(start);
        }
        if !self.stopped && self.end.is_some_and(|end| now >= end) {
            self.stop_issuing();
        }
        if let Some(poll) = self.poll_due(now, out, max_units) {
            return poll;
        }
        if self.held_back() {
            return Poll::Blocked;
        }
        if now < self.think_until {
            return self.wait_until(self.think_until);
        }
        if self.think_check_due && self.inflight < self.depth {
            // the check a full queue put off: fio makes it once the reaping returns
            self.think_check_due = false;
            if self.think_blocks_completed() {
                self.start_think();
                if self.inflight > 0 {
                    return Poll::Blocked;
                }
                self.quiescing = None;
                self.begin_pause(now, Pause::Think);
                return self.wait_until(self.think_until);
            }
        }
        let start_len = out.len();
        let mut wake = None;
        let mut held = false;
        let limit = self.batch.min(max_units);
        while self.inflight < self.depth && ((out.len() - start_len) as u32) < limit {
            if self.issued_bytes >= self.io_limit || self.issued_ios >= self.ios_limit {
                self.stop_at_limit();
                break;
            }
            let unit = match self.pending.take() {
                Some(unit) => unit,
                None => {
                    let next = if self.replay.is_some() {
                        self.next_replayed()
                    } else {
                        // a pass over several files ends with the I/O that covers the
                        // last of them, so what comes between passes (a flush taking a
                        // file's turn, as fio's does) is known before the next is drawn;
                        // a single region's pass ends where its generator wraps
                        let passes_before = self.passes_seen;
                        let steer = self.pacer.as_ref().map(|p| p.steer(now));
                        let steer = |op| steer.map_or(op, |s| s.direction(op));
                        let mut drawn = match &mut self.files {
                            Some(files) => files.next_unit(&mut self.gen, steer),
                            None => Some(self.gen.next_unit_steered(steer)),
                        };
                        let pass_ended = self.passes_completed() != passes_before;
                        if pass_ended && self.pass_ends_job() {
                            self.stop_issuing();
                            break;
                        }
                        if pass_ended && (self.spec.randrepeat || self.later_moves) && self.loops_by_passes {
                            // the next pass draws afresh from the seeds; what the old
                            // state drew for it goes
                            self.start_pass_over();
                            if drawn.is_some() {
                                drawn = Some(self.gen.next_unit_steered(steer));
                            }
                        }
                        let Some(mut unit) = drawn else {
                            // several files: their pass ended before anything was drawn
                            if self.between_passes() {
                                break;
                            }
                            continue;
                        };
                        unit.prio = self.prio_of(unit.op, unit.len_bytes);
                        if pass_ended && self.between_passes() {
                            self.pending = Some(unit);
                            break;
                        }
                        Some(unit)
                    };
                    let Some(unit) = next else {
                        self.stop_issuing();
                        break;
                    };
                    unit
                }
            };
            if self.replay.is_some() {
                if let Some(due) = self.replay_wait(now) {
                    self.pending = Some(unit);
                    wake = Some(due);
                    break;
                }
            }
            if self.flow.as_ref().is_some_and(|f| f.held()) {
                self.pending = Some(unit);
                held = true;
                break;
            }
            if self.overlaps_in_flight(&unit) {
                // fio requeues it and waits for a completion before trying again
                self.pending = Some(unit);
                break;
            }
            if let Some(p) = &mut self.pacer {
                if let Some(due) = p.due(unit.op).filter(|&due| due > now) {
                    self.pending = Some(unit);
                    wake = Some(due);
                    break;
                }
                p.issued(unit.op, unit.len_bytes);
            }
            out.push(unit);
            if let Some(f) = &mut self.flow {
                f.count();
            }
            self.inflight += 1;
            self.issued_bytes += u64::from(unit.len_bytes);
            self.issued_ios += 1;
            self.last_was_flush = unit.op == Op::Flush;
            let mut pause = false;
            if let Some(t) = &mut self.tracked {
                // fio looks for a backlog to read back as it fetches the next I/O: a job
                // that has just issued its last bytes (or I/Os) fetches none, and its
                // final read-back takes the batch (and its time counts as the reads')
                let last = self.issued_bytes >= self.io_limit || self.issued_ios >= self.ios_limit;
                if t.issued(&unit) && !last {
                    self.backlog_due = true;
                    pause = true;
                }
            }
            if unit.op == Op::Write && self.flush_every > 0 {
                self.writes_since_flush += 1;
                // fio decides a flush when it fetches the next I/O: a job that has just
                // issued its last bytes (or I/Os) owes none
                let at_limit = self.issued_bytes >= self.io_limit || self.issued_ios >= self.ios_limit;
                if self.writes_since_flush >= self.flush_every {
                    self.writes_since_flush = 0;
                    if !at_limit {
                        self.flush_due = FlushDue::Counted;
                        pause = true;
                    }
                }
            }
            if self.issued_bytes >= self.next_pass_end {
                pause |= self.bytes_pass_end();
            }
            if self.think_every < u32::MAX {
                self.since_think += 1;
                let issued_long_enough =
                    self.think_iotime > Nanos::ZERO && now.saturating_sub(self.issuing_since) >= self.think_iotime;
                let blocks_done = match self.spec.thinktime_counts {
                    ThinktimeCounts::Issued => self.since_think >= self.think_every,
                    // a full queue: fio reaps before it checks, so the check waits for a
                    // completion (at the top of the next poll)
                    ThinktimeCounts::Completed if self.inflight >= self.depth => {
                        self.think_check_due = true;
                        false
                    }
                    ThinktimeCounts::Completed => self.think_blocks_completed(),
                };
                if blocks_done || issued_long_enough {
                    // fio: after `thinktime_blocks` I/Os (or `thinktime_iotime`), wait for
                    // all in flight, then pause
                    self.start_think();
                    pause = true;
                }
            }
            if pause {
                break;
            }
        }
        if self.inflight >= self.depth && self.refill_below < self.depth {
            self.refill_wait = true;
        }
        if out.len() > start_len {
            return Poll::Ready;
        }
        if let Some(poll) = self.poll_due(now, out, max_units) {
            return poll;
        }
        if held {
            return self.hold(now);
        }
        match wake {
            Some(t) => self.wait_until(t),
            None => Poll::Blocked,
        }
    }

    /// Held back by `flow`: with `flow_sleep`, let what is out complete, then sleep
    /// before looking again (fio's io_u_quiesce and usleep); without, look again as soon
    /// as another member issues (fio spins).
    #[cold]
    #[inline(never)]
    fn hold(&mut self, now: Nanos) -> Poll {
        let sleep = self.spec.flow_sleep;
        if sleep == Nanos::ZERO {
            return Poll::Held(self.end.unwrap_or(Nanos::MAX));
        }
        if self.inflight > 0 {
            self.quiescing = Some(Pause::FlowSleep);
            return Poll::Blocked;
        }
        self.begin_pause(now, Pause::FlowSleep);
        self.wait_until(self.think_until)
    }

    /// `thinktime_blocks_type=complete`: `thinktime_blocks` I/Os have completed since the
    /// last pause.
    fn think_blocks_completed(&self) -> bool {
        self.think_completed >= self.think_last + u64::from(self.think_every)
    }

    /// A thinktime pause is due: it starts once what is out has completed. What completes
    /// meanwhile counts toward the next one, as fio takes the count before it waits.
    fn start_think(&mut self) {
        self.since_think = 0;
        self.think_last = self.think_completed;
        self.think_check_due = false;
        self.quiescing = Some(Pause::Think);
    }

    /// What was out has completed: the pause starts now. After a `thinktime` pause the
    /// next stretch of issuing starts (`thinktime_iotime`), and with
    /// `rate_ignore_thinktime` rate pacing moves on by the pause instead of catching up
    /// (issuing at once when the pause ends, as fio makes sure it does).
    fn begin_pause(&mut self, now: Nanos, why: Pause) {
        match why {
            Pause::FlowSleep => self.think_until = now + self.spec.flow_sleep,
            Pause::Think => {
                let pause = self.spec.thinktime;
                self.think_until = now + pause;
                self.issuing_since = self.think_until;
                if self.spec.rate_ignore_thinktime {
                    if let Some(p) = &mut self.pacer {
                        p.skip_pause(pause, self.think_until);
                    }
                }
            }
        }
    }

    /// A pause (thinktime, rate pacing) ends at the job's end at the latest: fio cuts both
    /// sleeps to the runtime left, so a long pause does not stretch the job past it.
    fn wait_until(&self, t: Nanos) -> Poll {
        Poll::WaitUntil(self.end.map_or(t, |end| t.min(end)))
    }

    /// The trace's next record that is replayed (not skipped, not dropped), placed in the
    /// clone's region; `None` at the trace's end.
    #[cold]
    #[inline(never)]
    fn next_replayed(&mut self) -> Option<IoUnit> {
        let (Some(r), Some(trace), Some(start)) = (&mut self.replay, self.spec.trace(), self.started_at) else {
            return None;
        };
        let region = self.gen.region();
        let (rec, offset) = loop {
            let rec = *trace.records.get(r.next)?;
            r.next += 1;
            if self.spec.replay.skip[rec.op.index()] {
                r.stats.skipped += 1;
                continue;
            }
            if rec.op == Op::Flush {
                break (rec, 0);
            }
            match place(&rec, r.spans[rec.device as usize], self.spec.replay.outside) {
                Placement::At(o) => break (rec, region.start + o),
                Placement::Wrapped(o) => {
                    r.stats.wrapped += 1;
                    break (rec, region.start + o);
                }
                Placement::Dropped => r.stats.dropped += 1,
            }
        };
        r.due = Nanos(start.0.saturating_add(self.spec.replay.due_ns(rec.at_ns)));
        let prio = match rec.prio {
            Some(p) if self.spec.replay.trace_ioprio => p,
            _ => self.prio_of(rec.op, rec.len_bytes),
        };
        Some(IoUnit {
            op: rec.op,
            sync_range: SyncRange::FSYNC,
            offset_bytes: offset,
            len_bytes: rec.len_bytes,
            prio,
            file: 0,
        })
    }

    /// When the replayed unit just taken is not due yet, its time; else counts it as
    /// issued `now`, with its lag. Out of line: the generated workloads never come here.
    #[cold]
    #[inline(never)]
    fn replay_wait(&mut self, now: Nanos) -> Option<Nanos> {
        let r = self.replay.as_mut()?;
        if r.due > now {
            return Some(r.due);
        }
        let lag = now - r.due;
        r.stats.issued += 1;
        r.stats.lag_max = r.stats.lag_max.max(lag);
        r.stats.lag_total_ns += u128::from(lag.0);
        r.stats.late_ios += u64::from(lag >= LATE);
        None
    }

    /// How the replay went, for a clone that replays a trace.
    pub fn replay_stats(&self) -> Option<&ReplayStats> {
        self.replay.as_ref().map(|r| &r.stats)
    }

    /// The priority of the next I/O in direction `op`, of `len_bytes`:
    /// `cmdprio_percentage` of them (or `cmdprio_bssplit`'s share of that size) get
    /// another priority, the rest the job's own.
    fn prio_of(&mut self, op: Op, len_bytes: u32) -> IoPrio {
        if self.cmdprio_split.is_some() {
            return self.split_prio(op, len_bytes);
        }
        match op.data_index().and_then(|d| self.cmdprio[d]) {
            Some((pct, prio)) if pct >= 100 || self.prio_rng.below(100) < u64::from(pct) => prio,
            _ => self.prio,
        }
    }

    /// `cmdprio_bssplit`: one draw picks among the shares given for the I/O's size.
    #[cold]
    #[inline(never)]
    fn split_prio(&mut self, op: Op, len_bytes: u32) -> IoPrio {
        let (Some(split), Some(d)) = (self.cmdprio_split.as_deref(), op.data_index()) else {
            return self.prio;
        };
        let mut shares = split[d].iter().filter(|(bs, _, _)| *bs == len_bytes).peekable();
        if shares.peek().is_none() {
            return self.prio;
        }
        let draw = self.prio_rng.below(100);
        let mut cumulative = 0;
        for &(_, pct, prio) in shares {
            cumulative += u64::from(pct);
            if draw < cumulative {
                return prio;
            }
        }
        self.prio
    }

    /// With `serialize_overlap`: whether `unit` overlaps a data I/O of the clone in flight.
    #[inline]
    fn overlaps_in_flight(&self, unit: &IoUnit) -> bool {
        self.tracked.as_ref().and_then(|t| t.in_flight.as_ref()).is_some_and(|r| r.overlaps(unit))
    }

    /// The `op` of `len_bytes` at `offset_bytes` in file `file` is no longer in flight
    /// (completed or failed): with `serialize_overlap`, what waited on it may go; with
    /// `verify`, a write no longer races those issued after it.
    #[inline]
    pub fn landed(&mut self, op: Op, file: u16, offset_bytes: u64, len_bytes: u32) {
        if let Some(locks) = &mut self.locks {
            locks.give_back(file, op);
        }
        if self.spec.sync_file_range.is_some() {
            self.note_written_range(op, file, offset_bytes, len_bytes);
        }
        if let Some(t) = &mut self.tracked {
            t.landed(op, file, offset_bytes, len_bytes);
        }
    }

    /// `sync_file_range`'s range: a write extends its file's, any sync ends it.
    #[cold]
    fn note_written_range(&mut self, op: Op, file: u16, offset_bytes: u64, len_bytes: u32) {
        let file = usize::from(file);
        if self.written_since_sync.len() <= file {
            self.written_since_sync.resize(file + 1, None);
        }
        let range = &mut self.written_since_sync[file];
        match op {
            Op::Write => {
                let end = offset_bytes + u64::from(len_bytes);
                *range =
                    Some(range.map_or((offset_bytes, end), |(first, last)| (first.min(offset_bytes), last.max(end))));
            }
            Op::Flush => *range = None,
            Op::Read | Op::Discard => {}
        }
    }

    /// The job is reading back what it wrote (`verify`): each read it issues now is a
    /// block to check.
    pub fn verifying(&self) -> bool {
        matches!(self.verify_state(), Some(VerifyState::Reading | VerifyState::Backlog))
    }

    fn verify_state(&self) -> Option<VerifyState> {
        self.tracked.as_ref().and_then(|t| t.verify.as_ref()).map(|v| v.state)
    }

    /// Stops the read-back after the reads in flight (`verify_fatal`, a bad block).
    pub fn stop_verify(&mut self) {
        if let Some(v) = self.tracked.as_deref_mut().and_then(|t| t.verify.as_mut()) {
            v.next = v.listed();
        }
    }

    /// The job's I/O is done and nothing is in flight: the read-back of what it wrote
    /// begins (or goes on), or the job is finished.
    fn poll_stopped(&mut self, now: Nanos, out: &mut Vec<IoUnit>, max_units: u32) -> Poll {
        if let Some(v) = self.tracked.as_deref_mut().and_then(|t| t.verify.as_mut()) {
            // fio's read-back ends with the job's runtime, as its I/O does: none starts
            // after it, and one under way stops issuing
            let timed_out = self.end.is_some_and(|end| now >= end);
            if timed_out {
                v.next = v.listed();
            }
            // a backlog read-back cut short by the job's own end gives way to the final one
            let waiting = matches!(v.state, VerifyState::Pending | VerifyState::Backlog);
            if waiting && self.inflight == 0 && self.flush_due == FlushDue::No {
                v.state = if self.failed || timed_out { VerifyState::Done } else { VerifyState::Reading };
                if v.state == VerifyState::Reading {
                    v.phase_begins(now.max(self.ramp_end));
                }
                if !self.spec.verify_only {
                    let mut cut_short = v.list.split_off(v.next.min(v.list.len()));
                    if v.state != VerifyState::Reading {
                        cut_short.clear();
                    }
                    if v.in_write_order {
                        // fio's history list: the oldest first, a backlog cut short too
                        v.list = cut_short;
                        v.take_oldest(usize::MAX);
                        v.list.append(&mut v.written.take_all());
                    } else {
                        v.list = v.written.blocks().map(|(f, o, b)| (f, o, b.len)).collect();
                        v.list.extend(cut_short);
                        v.list.sort_unstable();
                    }
                    v.next = 0;
                }
            }
        }
        if self.verify_state() == Some(VerifyState::Reading) {
            if let Some(poll) = self.issue_verify_reads(out, max_units) {
                return poll;
            }
            self.end_verify_phase(now);
            self.set_verify_state(VerifyState::Done);
        }
        if self.inflight == 0 && !self.failed && std::mem::take(&mut self.empty_pass_flush) {
            self.flush_due = FlushDue::EndOfPass;
            return self.poll_flush(out, max_units);
        }
        self.mark_finished(now);
        if self.inflight == 0 {
            Poll::Finished
        } else {
            Poll::Blocked
        }
    }

    /// `verify_backlog`: once the writes out have landed, the oldest blocks written are
    /// read back at the job's depth; then the job goes on. Out of line: once per backlog.
    #[cold]
    #[inline(never)]
    fn poll_backlog(&mut self, now: Nanos, out: &mut Vec<IoUnit>, max_units: u32) -> Poll {
        let Some(v) = self.tracked.as_deref_mut().and_then(|t| t.verify.as_mut()) else {
            // no read-back: only a flush that opens the next pass waited here
            self.backlog_due = false;
            if std::mem::take(&mut self.flush_after_backlog) {
                self.flush_due = FlushDue::Counted;
            }
            return self.poll_units(now, out, max_units);
        };
        if v.state == VerifyState::Pending {
            if self.inflight > 0 {
                return Poll::Blocked; // let the writes land first
            }
            if v.pass_ended {
                // the read-back between two passes: one of fio's verify phases
                v.phase_begins(now.max(self.ramp_end));
            }
            v.begin_backlog();
        }
        if let Some(poll) = self.issue_verify_reads(out, max_units) {
            return poll;
        }
        self.end_verify_phase(now);
        self.set_verify_state(VerifyState::Pending);
        self.backlog_due = false;
        if std::mem::take(&mut self.flush_after_backlog) {
            self.flush_due = FlushDue::Counted;
        }
        self.poll_units(now, out, max_units)
    }

    /// Issues the listed read-back reads the depth has room for: `Ready` if it issued
    /// some, `Blocked` while some are listed or out, `None` once all are done.
    fn issue_verify_reads(&mut self, out: &mut Vec<IoUnit>, max_units: u32) -> Option<Poll> {
        let room = self.batch.min(max_units).min(self.depth.saturating_sub(self.inflight));
        let v = self.tracked.as_deref_mut()?.verify.as_mut()?;
        let n = v.issue_reads(out, room, self.prio);
        self.issued_ios += u64::from(n);
        // a read after a flush: the next end of a pass flushes again (fio's should_fsync)
        self.last_was_flush &= n == 0;
        self.inflight += n;
        if n > 0 {
            return Some(Poll::Ready);
        }
        (v.next < v.listed() || self.inflight > 0).then_some(Poll::Blocked)
    }

    fn end_verify_phase(&mut self, now: Nanos) {
        let since_ramp = now.max(self.ramp_end);
        if let Some(v) = self.tracked.as_deref_mut().and_then(|t| t.verify.as_mut()) {
            v.phase_ends(since_ramp);
        }
    }

    /// How long each direction ran by fio's clock, of the `runtime` after the warm-up that
    /// ends at `now`, where the job read back what it wrote (`None` otherwise: all ran the
    /// whole time); a read-back under way counts up to `now`.
    /// fio times its verify phases (the read-backs after a pass and at the end) as reads
    /// only, and the I/O phases as the directions the job's `rw` names: a write job that
    /// verifies reports its writes over its write phases and its reads over its read-backs.
    pub fn direction_runtimes(&self, runtime: Nanos, now: Nanos) -> Option<[Nanos; 3]> {
        let v = self.tracked.as_ref()?.verify.as_ref()?;
        let under_way = v.phase_since.map_or(Nanos::ZERO, |since| now.saturating_sub(since));
        let read_back = (v.phase_time + under_way).min(runtime);
        let io = runtime - read_back;
        // the directions the job does (fio's td_read, td_write, td_trim)
        let phases = |op: Op| if self.spec.active_ops().any(|o| o == op) { io } else { Nanos::ZERO };
        Some([phases(Op::Read) + read_back, phases(Op::Write), phases(Op::Discard)])
    }

    fn set_verify_state(&mut self, state: VerifyState) {
        if let Some(v) = self.tracked.as_deref_mut().and_then(|t| t.verify.as_mut()) {
            v.state = state;
        }
    }

    /// One of this clone's requests completed at `now`, `latency` after it was issued:
    /// what that means for the job's statistics.
    pub fn on_complete(&mut self, now: Nanos, op: Op, len_bytes: u32, latency: Nanos) -> Completed {
        debug_assert!(self.inflight > 0, "completion without a request in flight");
        let mut done = Completed { counted: !self.end_flush_out && !self.failed, restart_stats: false, failed: None };
        self.end_flush_out = false;
        self.inflight = self.inflight.saturating_sub(1);
        if op != Op::Flush {
            self.think_completed += 1;
        }
        // fio judges latencies only of what it accounts: not during ramp_time
        if self.watches && done.counted && now >= self.ramp_end {
            done.failed = self.watch(now, op, len_bytes, latency);
        }
        done.restart_stats = self.returned(now);
        done
    }

    /// Whether `reaped` completions are too few for fio to return them yet: a full queue
    /// waits for `iodepth_batch_complete_min` of them.
    pub fn defers_reap(&self, reaped: u32) -> bool {
        self.refill_wait && reaped < self.spec.iodepth_batch_complete_min
    }

    /// A request came back with error `errno` (real devices): it counts in no statistics,
    /// and it fails the job, as in fio, unless `continue_on_error` covers it
    /// ([`ErrorPolicy::goes_on`]).
    ///
    /// [`ErrorPolicy::goes_on`]: crate::errors::ErrorPolicy::goes_on
    #[cold]
    pub fn on_error(&mut self, now: Nanos, op: Op, errno: i32) -> Completed {
        debug_assert!(self.inflight > 0, "completion without a request in flight");
        let mut done = Completed { counted: false, restart_stats: false, failed: None };
        self.end_flush_out = false;
        self.inflight = self.inflight.saturating_sub(1);
        if !self.failed && !self.spec.on_error.goes_on(crate::errors::ErrorKind::of(op), errno) {
            if self.spec.fill_device && crate::errors::is_out_of_space(errno) {
                // fio: a fill ends at ENOSPC, without an error; what is in flight lands
                self.terminate(now);
            } else {
                self.fail(now);
                done.failed = Some(Failure::Io(errno));
            }
        }
        done.restart_stats = self.returned(now);
        done
    }

    /// What follows any request's return: a full queue may be refilled, a pause may
    /// begin, a drain may end (true: the statistics restart), the job may be over.
    fn returned(&mut self, now: Nanos) -> bool {
        if self.refill_wait && self.inflight <= self.refill_below {
            self.refill_wait = false;
        }
        if self.inflight == 0 {
            if let Some(why) = self.quiescing.take() {
                self.begin_pause(now, why);
            }
        }
        let restart = self.draining && self.inflight == 0 && self.drained(now);
        self.mark_finished(now);
        restart
    }

    /// `max_latency`, `latency_target` and `rate_min`/`rate_iops_min` judge a counted
    /// completion; returns why it failed the job, if it did. Out of line: only jobs with
    /// one of them come here.
    #[cold]
    #[inline(never)]
    fn watch(&mut self, now: Nanos, op: Op, len_bytes: u32, latency: Nanos) -> Option<Failure> {
        if self.spec.max_latency > Nanos::ZERO && latency > self.spec.max_latency {
            self.fail(now);
            return Some(Failure::Latency(self.spec.max_latency));
        }
        if let Some(why) = self.check_min_rate(now, op, len_bytes) {
            self.fail(now);
            return Some(Failure::MinRate(why));
        }
        // requests issued at a depth found too deep are not judged again: fio drains
        // them to avoid "a storm of ramp downs"
        if self.latency.is_some() && op.is_data() && !self.draining {
            return self.judge_latency(now, latency).map(Failure::Latency);
        }
        None
    }

    /// fio's `check_min_rate`: after 2 s to settle, each `rate_cycle` in a direction must
    /// have moved `rate_min` bytes/s (or `rate_iops_min` I/Os/s); the message if not.
    fn check_min_rate(&mut self, now: Nanos, op: Op, len_bytes: u32) -> Option<String> {
        let d = op.data_index()?;
        let (min_bps, min_iops) = (self.spec.rate_min_bps[d], self.spec.rate_iops_min[d]);
        if min_bps == 0 && min_iops == 0 {
            return None;
        }
        let r = &mut self.min_rate;
        r.bytes[d] += u64::from(len_bytes);
        r.ios[d] += 1;
        if now < self.ramp_end + Nanos::from_secs(2) {
            return None;
        }
        let (bytes, ios) = (r.bytes[d], r.ios[d]);
        let Some((at, bytes_then, ios_then)) = r.mark[d] else {
            r.mark[d] = Some((now, bytes, ios));
            return None;
        };
        let spent = now - at;
        if spent < self.spec.rate_cycle {
            return None;
        }
        r.mark[d] = Some((now, bytes, ios));
        // as fio: per whole millisecond spent (truncated), and no rate in none
        let spent_ms = spent.0 / 1_000_000;
        let per_s = |n: u64| if spent_ms == 0 { 0 } else { (u128::from(n) * 1000 / u128::from(spent_ms)) as u64 };
        if min_bps > 0 {
            let rate = per_s(bytes - bytes_then);
            (rate < min_bps).then(|| format!("rate_min={min_bps}B/s not met, got {rate}B/s"))
        } else {
            let rate = per_s(ios - ios_then);
            (rate < min_iops).then(|| format!("rate_iops_min={min_iops} not met, got {rate} IOPS"))
        }
    }

    /// What was out at a depth the search left has completed: judging starts afresh, and
    /// the statistics restart if this is the final window (returns whether).
    #[cold]
    #[inline(never)]
    fn drained(&mut self, now: Nanos) -> bool {
        self.draining = false;
        if let Some(p) = &mut self.latency {
            p.new_window(now);
        }
        if std::mem::take(&mut self.restart_when_drained) {
            self.ramp_end = now;
            return true;
        }
        false
    }

    /// Sets the queue depth (`latency_target` moves it) and what a full queue drains to.
    fn set_depth(&mut self, depth: u32) {
        self.depth = depth;
        self.refill_below = refill_below(depth, &self.spec);
    }

    /// `latency_target`'s search takes one completion and applies its verdict; returns
    /// the target when a miss failed the job. Out of line: only such jobs come here.
    #[cold]
    #[inline(never)]
    fn judge_latency(&mut self, now: Nanos, latency: Nanos) -> Option<Nanos> {
        let probe = self.latency.as_mut()?;
        let verdict = probe.on_complete(now, latency);
        let depth = probe.depth();
        self.set_depth(depth);
        match verdict {
            Verdict::Keep | Verdict::Raised => {}
            // fio lets what is out complete before it goes on at a lower depth
            Verdict::Lowered => self.draining = true,
            Verdict::FinalRun => {
                self.draining = true;
                self.restart_when_drained = true;
            }
            Verdict::Done => self.stop_issuing(),
            Verdict::Failed => {
                self.fail(now);
                return Some(self.spec.latency.target);
            }
        }
        None
    }

    /// The job fails at `now` (fio's ETIMEDOUT or EIO): it issues nothing more, owes no
    /// flush, and its runtime ends here.
    fn fail(&mut self, now: Nanos) {
        self.failed = true;
        self.stopped = true;
        self.pending = None;
        self.flush_due = FlushDue::No;
        self.empty_pass_flush = false;
        self.draining = false;
        self.end_verify_phase(now);
        self.set_verify_state(VerifyState::Done); // a failed job reads nothing back
        self.finished_at.get_or_insert(now);
    }
}

/// What a full queue of `depth` drains to before it is filled again (u32::MAX: no
/// wait, one completion makes room).
fn refill_below(depth: u32, spec: &JobSpec) -> u32 {
    let out = reap_until(depth, spec.iodepth_low, spec.iodepth_batch_complete_min);
    if out + 1 < depth {
        out
    } else {
        u32::MAX
    }
}

/// How many requests are out when fio is done reaping a full queue of `depth`: it waits
/// for at least `batch_min` completions at a time (all that are out, if fewer) until no
/// more than `low` are out (`iodepth_low`; 0: `depth`, which stops after one round).
fn reap_until(depth: u32, low: u32, batch_min: u32) -> u32 {
    let low = if low == 0 { depth } else { low };
    let batch = batch_min.max(1);
    let mut out = depth;
    loop {
        out -= batch.min(out);
        if out <= low {
            return out;
        }
    }
}

#[cfg(test)]
mod tests;
