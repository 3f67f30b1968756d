//! When a job issues: the per-clone state machine shared by both engines. It knows
//! depths, think times, rates, fsync cadence and stop conditions, and nothing about how
//! requests are served.

use crate::filelock::CloneLocks;
use crate::flow::FlowShare;
use crate::gen::{IoGenerator, IoUnit, Region, SkewedFiles, SyncRange};
use crate::latency_target::{LatencyProbe, Verdict};
use crate::spec::{EngineKind, FileService, JobSpec, RateProcess, ThinktimeCounts};
use crate::trace::{place, DeviceSpan, Placement};
use crate::units::SizeOrPercent;
use crate::written::{WrittenBlocks, TRIM_GENERATION};
use nvsched_core::rng::mix64;
use nvsched_core::{IoPrio, Nanos, Op, SimRng};
use std::sync::Arc;

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
    rate_next: [Nanos; 3],
    rate_rng: SimRng,
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
    /// For a job that is not time-based (nor a replay), the clone's regions and seed: a
    /// pass ended by bytes starts over from the start of each, as fio's clear_io_state
    /// puts it back, and every pass (with `randrepeat`) draws what the first drew
    /// (boxed: rare). `None`: the job [runs by time](Self::runs_by_time).
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

/// The byte ranges of a clone's data I/Os in flight, (file, start, end): at most
/// `iodepth` of them, so a list.
#[derive(Debug, Default)]
struct InFlightRanges {
    ranges: Vec<(u16, u64, u64)>,
}

impl InFlightRanges {
    fn range(file: u16, offset_bytes: u64, len_bytes: u32) -> (u16, u64, u64) {
        (file, offset_bytes, offset_bytes + u64::from(len_bytes))
    }

    fn overlaps(&self, unit: &IoUnit) -> bool {
        let (file, start, end) = Self::range(unit.file, unit.offset_bytes, unit.len_bytes);
        start < end && self.ranges.iter().any(|&(f, s, e)| f == file && s < end && start < e)
    }

    fn issued(&mut self, unit: &IoUnit) {
        if unit.len_bytes > 0 {
            self.ranges.push(Self::range(unit.file, unit.offset_bytes, unit.len_bytes));
        }
    }

    fn landed(&mut self, file: u16, offset_bytes: u64, len_bytes: u32) {
        let range = Self::range(file, offset_bytes, len_bytes);
        if let Some(i) = self.ranges.iter().position(|&r| r == range) {
            self.ranges.swap_remove(i);
        }
    }
}

/// What a job with `serialize_overlap` or `verify` keeps of its I/Os.
#[derive(Debug, Default)]
struct Tracked {
    /// `serialize_overlap`: its data I/Os in flight.
    in_flight: Option<InFlightRanges>,
    /// `verify`: what it wrote, read back once its I/O is done.
    verify: Option<VerifyPass>,
}

impl Tracked {
    /// `unit` was issued: returns whether a `verify_backlog` read-back is due.
    fn issued(&mut self, unit: &IoUnit) -> bool {
        if let Some(ranges) = &mut self.in_flight {
            ranges.issued(unit);
        }
        let Some(v) = &mut self.verify else { return false };
        if unit.op == Op::Discard {
            v.written.trimmed(unit.file, unit.offset_bytes, unit.len_bytes);
        }
        let backlog = unit.op == Op::Write && v.wrote(unit.file, unit.offset_bytes, unit.len_bytes);
        let pass = unit.op.is_data() && v.passed(unit.len_bytes);
        backlog || pass
    }

    fn landed(&mut self, op: Op, file: u16, offset_bytes: u64, len_bytes: u32) {
        if let Some(ranges) = &mut self.in_flight {
            ranges.landed(file, offset_bytes, len_bytes);
        }
        if let Some(v) = &mut self.verify {
            match op {
                Op::Write => v.written.landed(file, offset_bytes, len_bytes, 0),
                Op::Discard => v.written.landed(file, offset_bytes, len_bytes, TRIM_GENERATION),
                _ => {}
            }
        }
    }
}

/// `verify`'s read-back: the blocks the job wrote (or, for `verify_only`, every block of
/// its region), read at the job's depth once its I/O is done, as fio's verify phase; and
/// with `verify_backlog`, the oldest of them every so many writes.
#[derive(Debug, Default)]
struct VerifyPass {
    written: WrittenBlocks,
    /// (file, offset, length) of each block to read, and the next to issue.
    list: Vec<(u16, u64, u32)>,
    next: usize,
    /// `verify_only`: every block of the clone's regions, walked without listing them (a
    /// whole device holds millions).
    walk: Option<RegionWalk>,
    state: VerifyState,
    /// `verify_backlog` (0: none) and `verify_backlog_batch`, the writes issued since the
    /// last read-back, and the blocks written in the order they were (a block written
    /// twice is there twice; the first finds it, the second finds it gone).
    /// `in_write_order`: the read-back after a pass reads them in that order too (fio keeps
    /// its history as a list unless offsets may repeat: `norandommap`, `rw=...:N`),
    /// otherwise in offset order (fio's tree).
    in_write_order: bool,
    backlog: u32,
    backlog_batch: u32,
    since_backlog: u32,
    order: std::collections::VecDeque<(u16, u64)>,
    /// Bytes per pass over the job's size (fio verifies after each, `time_based` passes
    /// included), those issued in the running pass, and whether one just ended.
    pass_bytes: u64,
    pass_issued: u64,
    pass_ended: bool,
    /// Bytes the read-backs have read (fio's keep_running counts them toward `io_size`).
    read_bytes: u64,
    /// Time spent in fio's verify phases (the read-backs after a pass and at the end, not
    /// `verify_backlog`'s within one), and when the one under way began.
    phase_time: Nanos,
    phase_since: Option<Nanos>,
}

impl VerifyPass {
    /// A verify phase begins at `now`.
    fn phase_begins(&mut self, now: Nanos) {
        self.phase_since.get_or_insert(now);
    }
    /// The verify phase under way, if any, ends at `now`.
    fn phase_ends(&mut self, now: Nanos) {
        if let Some(since) = self.phase_since.take() {
            self.phase_time += now.saturating_sub(since);
        }
    }

    /// A write was issued: whether a backlog read-back is now due.
    fn wrote(&mut self, file: u16, offset_bytes: u64, len_bytes: u32) -> bool {
        self.written.issued(file, offset_bytes, len_bytes, 0);
        if self.in_write_order || self.backlog > 0 {
            self.order.push_back((file, offset_bytes));
        }
        if self.backlog == 0 {
            return false;
        }
        self.since_backlog += 1;
        if self.since_backlog < self.backlog {
            return false;
        }
        self.since_backlog = 0;
        true
    }

    /// `len_bytes` of data were issued: whether a pass over the job's size just ended.
    fn passed(&mut self, len_bytes: u32) -> bool {
        self.pass_issued += u64::from(len_bytes);
        if self.pass_bytes == 0 || self.pass_issued < self.pass_bytes {
            return false;
        }
        self.pass_issued -= self.pass_bytes;
        self.pass_ended = true;
        true
    }

    /// Lists the blocks to read back now, taking them from those left for the end; the
    /// writes have all landed. After a pass, every block written; otherwise
    /// (`verify_backlog`) the oldest, at most `backlog_batch`.
    fn begin_backlog(&mut self) {
        self.next = 0;
        self.state = VerifyState::Backlog;
        self.list.clear();
        if std::mem::take(&mut self.pass_ended) {
            if self.in_write_order {
                self.take_oldest(usize::MAX);
            }
            self.list.append(&mut self.written.take_all());
            self.order.clear();
            self.since_backlog = 0;
            return;
        }
        self.take_oldest(self.backlog_batch as usize);
    }

    /// Lists the oldest written blocks still unchecked, in the order written, until the
    /// list holds `count`.
    fn take_oldest(&mut self, count: usize) {
        while self.list.len() < count {
            let Some((file, offset)) = self.order.pop_front() else { break };
            if let Some(len) = self.written.take(file, offset) {
                self.list.push((file, offset, len));
            }
        }
    }

    /// How many blocks the read-back under way reads.
    fn listed(&self) -> usize {
        self.walk.as_ref().map_or(self.list.len(), |w| w.blocks.last().copied().unwrap_or(0) as usize)
    }

    /// Appends reads of listed blocks not yet issued, at most `room`; returns how many.
    fn issue_reads(&mut self, out: &mut Vec<IoUnit>, room: u32, prio: IoPrio) -> u32 {
        let n = (room as usize).min(self.listed() - self.next);
        for i in self.next..self.next + n {
            let (file, offset_bytes, len_bytes) = match &self.walk {
                Some(w) => w.block(i as u64),
                None => self.list[i],
            };
            out.push(IoUnit { op: Op::Read, sync_range: SyncRange::FSYNC, offset_bytes, len_bytes, prio, file });
            self.read_bytes += u64::from(len_bytes);
        }
        self.next += n;
        n as u32
    }
}

/// Every `bs` block of a clone's regions, one file after another.
#[derive(Debug)]
struct RegionWalk {
    regions: Vec<Region>,
    bs: u64,
    /// Blocks in the regions up to and including each (a running sum).
    blocks: Vec<u64>,
}

impl RegionWalk {
    fn new(regions: &[Region], bs: u64) -> RegionWalk {
        let blocks = regions
            .iter()
            .scan(0, |sum, r| {
                *sum += r.len / bs;
                Some(*sum)
            })
            .collect();
        RegionWalk { regions: regions.to_vec(), bs, blocks }
    }

    /// The `i`th block: (file, offset, length).
    fn block(&self, i: u64) -> (u16, u64, u32) {
        let file = self.blocks.partition_point(|&b| b <= i);
        let before = if file == 0 { 0 } else { self.blocks[file - 1] };
        (file as u16, self.regions[file].start + (i - before) * self.bs, self.bs as u32)
    }
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
        let region = regions[0];
        let gen = IoGenerator::new(&spec, region, seed)?;
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
        let io_limit = if spec.create_only || spec.verify_only {
            0
        } else {
            loop_bytes.saturating_mul(u64::from(spec.loops.max(1)))
        };
        let sync_engine = spec.engine_kind == EngineKind::Sync;
        let pass_bytes = if by_time { loop_bytes } else { size_pass_bytes(&spec, size, io_size, sync_engine) };
        // a pass also ends where the files are done (fio's get_io_u finds no block left)
        let loops_by_passes = !by_time && gen.counts_passes();
        let restart = (!by_time).then(|| Box::new((regions.to_vec(), seed)));
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
            rate_next: [Nanos::ZERO; 3],
            rate_rng: SimRng::stream(seed, 4),
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
        self.rate_next = [now; 3];
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
        self.empty_pass_flush = !self.runs_by_time()
            && self.spec.flushes_at_end()
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
        self.done_after_passes(self.passes_ended + 1)
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
        if self.done_after_passes(self.passes_ended + 1) {
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
                        let mut drawn = match &mut self.files {
                            Some(files) => files.next_unit(&mut self.gen),
                            None => Some(self.gen.next_unit()),
                        };
                        let pass_ended = self.passes_completed() != passes_before;
                        if pass_ended && self.pass_ends_job() {
                            self.stop_issuing();
                            break;
                        }
                        if pass_ended && self.spec.randrepeat && self.loops_by_passes {
                            // the next pass draws afresh from the seeds; what the old
                            // state drew for it goes
                            self.start_pass_over();
                            if drawn.is_some() {
                                drawn = Some(self.gen.next_unit());
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
            if let Some(gap) = self.rate_gap(&unit) {
                let d = unit.op.index();
                if self.rate_next[d] > now {
                    self.pending = Some(unit);
                    wake = Some(self.rate_next[d]);
                    break;
                }
                self.rate_next[d] += gap;
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
                if t.issued(&unit) {
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
                    for next in &mut self.rate_next {
                        *next = (*next + pause).min(self.think_until);
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

    /// Pacing gap for `unit` under `rate`/`rate_iops`, if its direction is rate limited.
    fn rate_gap(&mut self, unit: &IoUnit) -> Option<Nanos> {
        let d = unit.op.index().min(2);
        let (bps, iops) = (self.spec.rate_bps[d], self.spec.rate_iops[d]);
        let mean_s = if iops > 0 {
            1.0 / iops as f64
        } else if bps > 0 {
            f64::from(unit.len_bytes) / bps as f64
        } else {
            return None;
        };
        let gap_s = match self.spec.rate_process {
            RateProcess::Linear => mean_s,
            RateProcess::Poisson => self.rate_rng.exponential(mean_s),
        };
        Some(Nanos::from_secs_f64(gap_s))
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

/// The files of a clone with several: a generator each (the current one lives in the
/// driver, the others are parked here), and fio's `file_service_type` choosing the next.
/// As in fio, a file is found done only when the next block is asked of it and its pass
/// is over (its generator wraps): it is closed, and another is chosen. The pass over the
/// job's files ends when every one is done; then all are closed and a new pass begins.
/// Round robin goes on from where it stopped, skipping done files and, with `openfiles`,
/// files that cannot be opened yet (fio's busy retry).
#[derive(Debug)]
struct FileSet {
    parked: Vec<Option<IoGenerator>>,
    current: usize,
    service: FileService,
    /// More I/Os the current file keeps before the next is chosen (round robin, random).
    left: u32,
    /// Where round robin looks next (fio's next_file).
    next_rr: usize,
    open: Vec<bool>,
    open_count: usize,
    /// `openfiles`: how many files may be open at once.
    open_limit: usize,
    /// This pass: the file's pass is over; how many are.
    done: Vec<bool>,
    done_count: usize,
    /// The first I/O of a file's next pass, drawn as its generator found this one over.
    next_pass_first: Vec<Option<IoUnit>>,
    /// Bytes issued to each file this pass, and each file's region length: where a
    /// generator does not go over its region a pass at a time (zipf, random runs), a
    /// file whose bytes cover its region is done.
    done_bytes: Vec<u64>,
    region_len: Vec<u64>,
    /// The job's smallest block: such a file with less than this left is done.
    min_block: u64,
    /// Passes over all the files: each was done (fio's files all done).
    passes: u64,
    rng: SimRng,
    /// `file_service_type=zipf|pareto|normal`: the draw of the next file.
    skewed: Option<SkewedFiles>,
}

impl FileSet {
    fn new(spec: &JobSpec, regions: &[Region], seed: u64) -> Result<FileSet, String> {
        let mut parked = vec![None];
        for (k, r) in regions.iter().enumerate().skip(1) {
            parked.push(Some(IoGenerator::new(spec, *r, mix64(seed ^ (k as u64).wrapping_mul(0x9e37_79b9)))?));
        }
        let n = regions.len();
        Ok(FileSet {
            parked,
            current: 0,
            service: spec.file_service.clone(),
            left: 0,
            next_rr: 0,
            open: vec![false; n],
            open_count: 0,
            open_limit: if spec.openfiles == 0 { n } else { spec.openfiles as usize },
            done: vec![false; n],
            done_count: 0,
            next_pass_first: vec![None; n],
            done_bytes: vec![0; n],
            region_len: regions.iter().map(|r| r.len).collect(),
            min_block: u64::from(spec.min_bs()).max(1),
            passes: 0,
            rng: SimRng::stream(seed, 9),
            skewed: match &spec.file_service {
                FileService::Skewed(distribution) => Some(SkewedFiles::new(distribution, n)),
                _ => None,
            },
        })
    }

    /// The file for the next I/O or flush, which takes its turn (fio's get_next_file):
    /// the current one while its turn lasts, else the next by the service type. `gen`
    /// becomes the chosen file's generator. Some file is open and not done when called.
    fn choose(&mut self, gen: &mut IoGenerator) -> usize {
        let current = self.current;
        if self.open[current] && !self.done[current] {
            if self.service == FileService::Sequential {
                return current;
            }
            if self.left > 0 {
                self.left -= 1;
                return current;
            }
        }
        let n = self.parked.len();
        // a closed file opens if a slot is free; otherwise fio is busy and tries the next
        let may_take = |set: &FileSet, k: usize| !set.done[k] && (set.open[k] || set.open_count < set.open_limit);
        let next = match self.service {
            FileService::Random(_) => {
                let count = (0..n).filter(|&k| may_take(self, k)).count() as u64;
                let pick = self.rng.below(count.max(1)) as usize;
                (0..n).filter(|&k| may_take(self, k)).nth(pick).unwrap_or(current)
            }
            FileService::Skewed(_) => {
                // fio draws again while the file drawn is done or cannot open; a few
                // tries, then the first that can be taken
                let mut skewed = self.skewed.take().expect("a skewed file service has its draw");
                let mut drawn = None;
                for _ in 0..64 {
                    let k = skewed.draw(&mut self.rng);
                    if k < n && may_take(self, k) {
                        drawn = Some(k);
                        break;
                    }
                }
                self.skewed = Some(skewed);
                drawn.or_else(|| (0..n).find(|&k| may_take(self, k))).unwrap_or(current)
            }
            _ => {
                let mut found = current;
                for _ in 0..n {
                    let k = self.next_rr;
                    self.next_rr = (k + 1) % n;
                    if may_take(self, k) {
                        found = k;
                        break;
                    }
                }
                found
            }
        };
        if !self.open[next] {
            self.open[next] = true;
            self.open_count += 1;
        }
        self.left = self.service.turn().saturating_sub(1);
        if next != current {
            let mut other = self.parked[next].take().expect("a parked generator");
            std::mem::swap(gen, &mut other);
            self.parked[current] = Some(other);
            self.current = next;
        }
        next
    }

    /// A new pass: every file starts over from its start and is closed, as fio's
    /// clear_io_state leaves them; round robin goes on from where it stopped, and a
    /// random choice of file starts from `seed` again (fio re-seeds it with the others).
    fn restart(&mut self, spec: &JobSpec, regions: &[Region], seed: u64) {
        let fresh = match FileSet::new(spec, regions, seed) {
            Ok(fresh) => fresh,
            Err(_) => return,
        };
        *self = FileSet { next_rr: self.next_rr, passes: self.passes, ..fresh };
    }

    /// File `k`'s pass is over: it is closed until the next pass.
    fn retire(&mut self, k: usize) {
        self.done_count += usize::from(!self.done[k]);
        self.done[k] = true;
        if std::mem::take(&mut self.open[k]) {
            self.open_count -= 1;
        }
    }

    /// The next I/O, its `file` set; None where the pass over the files has just ended
    /// (each was done), and the next draw begins a new pass.
    fn next_unit(&mut self, gen: &mut IoGenerator) -> Option<IoUnit> {
        loop {
            if self.done_count == self.done.len() {
                self.done.iter_mut().for_each(|d| *d = false);
                self.done_count = 0;
                self.open.iter_mut().for_each(|o| *o = false);
                self.open_count = 0;
                self.done_bytes.iter_mut().for_each(|b| *b = 0);
                self.passes += 1;
                return None;
            }
            let k = self.choose(gen);
            // fio's skewed file services start a file over when its pass is used up
            // (get_next_rand_block resets the file), so no file is ever done and the
            // job ends by its bytes
            let starts_over = matches!(self.service, FileService::Skewed(_));
            let mut unit = match self.next_pass_first[k].take() {
                Some(unit) => unit,
                None if !gen.counts_passes() => {
                    if self.region_len[k].saturating_sub(self.done_bytes[k]) < self.min_block {
                        if !starts_over {
                            self.retire(k);
                            continue;
                        }
                        self.done_bytes[k] = 0;
                    }
                    gen.next_unit()
                }
                None => {
                    let passes = gen.passes_completed();
                    let unit = gen.next_unit();
                    if gen.passes_completed() != passes && !starts_over {
                        self.next_pass_first[k] = Some(unit);
                        self.retire(k);
                        continue;
                    }
                    unit
                }
            };
            self.done_bytes[k] += u64::from(unit.len_bytes);
            unit.file = k as u16;
            return Some(unit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobfile::tests::env;
    use crate::spec::{parse_job_str, ParseOptions};
    use std::path::Path;

    fn driver(text: &str) -> JobDriver {
        driver_over(text, 1 << 30)
    }

    /// A started driver for the first job of `text` over `files` files of `file_bytes`
    /// each, 1 MiB apart.
    fn driver_over_files(text: &str, files: u64, file_bytes: u64) -> JobDriver {
        let spec = parse_job_str(text, Path::new("t.fio"), &env(), ParseOptions::default()).unwrap().jobs.remove(0);
        let regions: Vec<Region> = (0..files).map(|k| Region { start: k << 20, len: file_bytes }).collect();
        let mut d = JobDriver::new(Arc::new(spec), 0, &regions, 1).unwrap();
        d.start(Nanos::ZERO);
        d
    }

    /// A started driver for the first job of `text` over a region of `region_bytes`.
    fn driver_over(text: &str, region_bytes: u64) -> JobDriver {
        let spec = parse_job_str(text, Path::new("t.fio"), &env(), ParseOptions::default()).unwrap().jobs.remove(0);
        let mut d = JobDriver::new(Arc::new(spec), 0, &[Region { start: 0, len: region_bytes }], 1).unwrap();
        d.start(Nanos::ZERO);
        d
    }

    #[test]
    fn cmdprio_percentage_gives_that_share_of_ios_the_other_priority() {
        let text =
            "[a]\nioengine=io_uring\niodepth=1\nrw=randrw\nprio=5\ncmdprio_percentage=30,100\ntime_based\nruntime=1\n";
        let mut d = driver(text);
        let (mut reads, mut reads_rt, mut writes_rt, mut writes) = (0, 0, 0, 0);
        let mut out = Vec::new();
        for i in 0..20_000u64 {
            out.clear();
            d.poll(Nanos(i), &mut out);
            for u in &out {
                let rt = u.prio == IoPrio::rt(0);
                assert!(rt || u.prio == IoPrio::be(5), "{:?}", u.prio);
                match u.op {
                    Op::Read => (reads, reads_rt) = (reads + 1, reads_rt + u32::from(rt)),
                    _ => (writes, writes_rt) = (writes + 1, writes_rt + u32::from(rt)),
                }
            }
            d.on_complete(Nanos(i), Op::Read, 4096, Nanos::ZERO);
        }
        let share = f64::from(reads_rt) / f64::from(reads);
        assert!((0.28..0.32).contains(&share), "{reads_rt} of {reads} reads");
        assert_eq!(writes_rt, writes, "100% of the writes");
    }

    /// (file, block) of every I/O a three-file job issues, completing each at once.
    fn file_order(service: &str) -> Vec<(u16, u64)> {
        let text = format!("[j]\nsize=48k\nnrfiles=3\nbs=4k\nrw=write\nfile_service_type={service}\n");
        let mut d = driver_over_files(&text, 3, 16 << 10);
        let mut out = Vec::new();
        let mut order = Vec::new();
        for t in 1..100u64 {
            out.clear();
            if d.poll(Nanos(t), &mut out) == Poll::Finished {
                break;
            }
            for u in &out {
                assert_eq!(u64::from(u.file), u.offset_bytes >> 20, "the unit names its file");
                order.push((u.file, (u.offset_bytes & 0xfffff) / 4096));
                d.on_complete(Nanos(t), u.op, u.len_bytes, Nanos::ZERO);
            }
        }
        order
    }

    #[test]
    fn end_of_pass_flushes_go_one_file_at_a_time_and_the_next_pass_waits_for_them() {
        let text = "[j]\nsize=16k\nnrfiles=2\nbs=4k\nrw=write\nioengine=libaio\niodepth=4\nloops=2\nend_fsync=1\n";
        let mut d = driver_over_files(text, 2, 8 << 10);
        let mut out = Vec::new();
        let mut poll = |d: &mut JobDriver, t: u64| {
            out.clear();
            let p = d.poll(Nanos(t), &mut out);
            (p, out.iter().map(|u| (u.op, u.file)).collect::<Vec<_>>())
        };
        let mut first = Vec::new();
        while let (Poll::Ready, units) = poll(&mut d, 1) {
            first.extend(units);
        }
        assert_eq!(first.len(), 4, "the first pass's writes: {first:?}");
        for (op, _) in &first {
            d.on_complete(Nanos(2), *op, 4096, Nanos::ZERO);
        }
        // fio's fio_io_sync: a flush per file, each waited for, outside the statistics
        for file in 0..2 {
            assert_eq!(poll(&mut d, 3), (Poll::Ready, vec![(Op::Flush, file)]));
            assert!(d.counts_depth(Op::Write) && !d.counts_depth(Op::Flush), "fio leaves it out of the depths");
            assert_eq!(poll(&mut d, 4), (Poll::Blocked, vec![]), "nothing else while it is out");
            assert!(!d.on_complete(Nanos(5), Op::Flush, 0, Nanos::ZERO).counted);
        }
        let (_, second) = poll(&mut d, 6);
        assert!(!second.is_empty() && second.iter().all(|(op, _)| *op == Op::Write), "the second pass: {second:?}");
        assert!(d.counts_depth(Op::Flush), "an fsync=N flush counts again");
    }

    #[test]
    fn fsync_and_end_fsync_with_several_files_follow_fio() {
        let text = "[j]\nsize=24k\nnrfiles=3\nbs=4k\nrw=write\nend_fsync=1\nfsync=4\n";
        let mut d = driver_over_files(text, 3, 8 << 10);
        let (mut out, mut seen) = (Vec::new(), Vec::new());
        for t in 1..100u64 {
            out.clear();
            if d.poll(Nanos(t), &mut out) == Poll::Finished {
                break;
            }
            let issued: Vec<IoUnit> = out.clone();
            for u in &issued {
                let done = d.on_complete(Nanos(t), u.op, u.len_bytes, Nanos::ZERO);
                let what = match u.op {
                    Op::Flush if done.counted => format!("sync{}", u.file),
                    Op::Flush => format!("end{}", u.file),
                    _ => format!("w{}:{}", u.file, (u.offset_bytes & 0xfffff) / 4096),
                };
                seen.push(what);
            }
        }
        // fio 3.33's write_iolog (psync): the sync takes the turn of the file due next
        // (file 0 has had its share after its second write, so file 1 follows file 2);
        // end_fsync then syncs every file, outside the statistics (sync total_ios=1)
        let fio = ["w0:0", "w1:0", "w2:0", "w0:1", "sync1", "w2:1", "w1:1", "end0", "end1", "end2"];
        assert_eq!(seen, fio);
    }

    /// Runs the first job of `text` over `files` files of `file_bytes` each, every request
    /// completing at once; what it issued.
    fn run_over_files(text: &str, files: u64, file_bytes: u64) -> Vec<IoUnit> {
        let mut d = driver_over_files(text, files, file_bytes);
        let mut out = Vec::new();
        for t in 1..1000u64 {
            let before = out.len();
            if d.poll(Nanos(t), &mut out) == Poll::Finished {
                break;
            }
            for u in &out[before..] {
                d.landed(u.op, u.file, u.offset_bytes, u.len_bytes);
                d.on_complete(Nanos(t), u.op, u.len_bytes, Nanos::ZERO);
            }
        }
        out
    }

    /// A job with several files ends when each has had its pass, as fio's does when its
    /// files are all done (`bs=3k` over two 32 KiB files: 10 blocks each, 60 KiB of the
    /// 64 KiB size), and `verify` reads back file by file in offset order (fio keeps a
    /// sequential job's history as a tree): fio 3.33's write_iolog, psync.
    #[test]
    fn several_files_end_with_their_passes_and_verify_file_by_file() {
        let run =
            |job: &str| -> Vec<(Op, u16)> { run_over_files(job, 2, 32 << 10).iter().map(|u| (u.op, u.file)).collect() };
        let reads = run("[j]\nsize=64k\nnrfiles=2\nbs=3k\nrw=read\nfile_service_type=sequential\n");
        assert_eq!(reads, [[(Op::Read, 0); 10], [(Op::Read, 1); 10]].concat());
        let verified = run("[j]\nsize=64k\nnrfiles=2\nbs=4k\nrw=write\nverify=crc32c\n");
        let writes = [(Op::Write, 0), (Op::Write, 1)].repeat(8);
        assert_eq!(verified, [writes, vec![(Op::Read, 0); 8], vec![(Op::Read, 1); 8]].concat());
    }

    /// `openfiles=2` of four files: I/O goes round the first two until both are done,
    /// then round the other two (fio 3.33's write_iolog, psync, 24 KiB a file).
    #[test]
    fn openfiles_keeps_io_to_the_files_open() {
        let order = |extra: &str| -> Vec<u16> {
            let text = format!("[j]\nsize=96k\nnrfiles=4\nopenfiles=2\nbs=4k\nrw=read\n{extra}\n");
            run_over_files(&text, 4, 24 << 10).iter().map(|u| u.file).collect()
        };
        let first_two = [0, 1].repeat(6);
        let last_two = [2, 3].repeat(6);
        assert_eq!(order(""), [first_two.clone(), last_two.clone()].concat());
        assert_eq!(order("file_service_type=sequential"), [[0; 6], [1; 6], [2; 6], [3; 6]].concat());
        let pairs = [0, 0, 1, 1].repeat(3);
        let later = [2, 2, 3, 3].repeat(3);
        assert_eq!(order("file_service_type=roundrobin:2"), [pairs, later].concat());
    }

    /// The operations `run_over_files` issues, as fio's write_iolog lists them: `w1` a
    /// write to file 1, `S0` a flush of file 0.
    fn ops_over_files(text: &str, files: u64, file_bytes: u64) -> String {
        let ops: Vec<String> =
            run_over_files(text, files, file_bytes).iter().map(|u| format!("{}{}", op_letter(u.op), u.file)).collect();
        ops.join(" ")
    }

    /// An operation as these tests write it: `r`, `w`, `S` (a flush), `t` (a trim).
    fn op_letter(op: Op) -> char {
        match op {
            Op::Read => 'r',
            Op::Write => 'w',
            Op::Flush => 'S',
            _ => 't',
        }
    }

    /// With `randrepeat` (fio's default) every loop draws what the first drew, as fio
    /// re-seeds its generators between two runs of do_io: fio 3.33's write_iolog for
    /// `rw=randrw size=32k loops=2` (psync) reads and writes the same 8 blocks in the same
    /// order twice, also over two files; a time-based job's passes do not repeat.
    #[test]
    fn every_loop_repeats_the_first_with_randrepeat() {
        let passes = |text: &str, files: u64| -> Vec<Vec<(Op, u16, u64)>> {
            let units = run_over_files(text, files, 32 << 10);
            let per_pass = (32 << 10) * files as usize / 4096;
            units
                .iter()
                .map(|u| (u.op, u.file, u.offset_bytes))
                .collect::<Vec<_>>()
                .chunks(per_pass)
                .map(<[_]>::to_vec)
                .collect()
        };
        for (text, files) in [
            ("[j]\nsize=32k\nbs=4k\nrw=randrw\nloops=3\n", 1),
            ("[j]\nsize=64k\nnrfiles=2\nbs=4k\nrw=randread\nloops=2\n", 2),
            // fio 3.33: `rw=read nrfiles=3 file_service_type=random loops=2` repeats its
            // order of files too
            ("[j]\nsize=96k\nnrfiles=3\nbs=4k\nrw=read\nfile_service_type=random\nloops=2\n", 3),
            ("[j]\nsize=32k\nbs=4k\nrw=randwrite\nloops=2\nioengine=libaio\niodepth=4\n", 1),
        ] {
            let p = passes(text, files);
            assert!(p.len() >= 2, "{text}");
            assert!(p.windows(2).all(|w| w[0] == w[1]), "{text}: {p:?}");
            let mut first = p[0].clone();
            first.sort_by_key(|&(_, f, o)| (f, o));
            first.dedup_by_key(|u| (u.1, u.2));
            assert_eq!(first.len(), p[0].len(), "{text}: a pass covers every block once");
        }
        for engine in ["psync", "libaio"] {
            let text = format!("[j]\nsize=32k\nbs=4k\nrw=randread\nloops=2\nrandrepeat=0\nioengine={engine}\n");
            let again = passes(&text, 1);
            assert!(again.len() == 2 && again[0] != again[1], "{engine}: randrepeat=0 draws on");
        }
        let timed = passes("[j]\nsize=32k\nbs=4k\nrw=randread\ntime_based\nruntime=1s\n", 1);
        assert!(timed.len() > 2 && timed.windows(2).any(|w| w[0] != w[1]), "a time-based job draws on");
    }

    /// fio finds a file done only when it asks it for the next block and none fits:
    /// closed, it gives its `openfiles` slot to the next, and round robin goes on from
    /// where it stopped. The orders are fio 3.33's write_iolog (psync).
    #[test]
    fn a_file_is_done_when_asked_for_a_block_it_has_not() {
        // a flush takes the turn of the file it goes to; files 0 and 1 are found done
        // after it, so file 2 comes before the file 3 just opened
        let ops = ops_over_files("[j]\nsize=96k\nnrfiles=4\nopenfiles=3\nbs=4k\nrw=write\nfsync=5\n", 4, 24 << 10);
        let fio = "w0 w1 w2 w0 w1 S2 w0 w1 w2 w0 w1 S2 w0 w1 w2 w0 w1 S2 w2 w3 w2 w3 w2 S3 w3 w3 w3 w3";
        assert_eq!(ops, fio);
        // the second flush of a loop's end is the first request of the next, taking the
        // turn of the file round robin reached
        let ops = ops_over_files("[j]\nsize=64k\nnrfiles=2\nbs=4k\nrw=write\nfsync=8\nloops=2\n", 2, 32 << 10);
        let pass = "w0 w1 w0 w1 w0 w1 w0 w1 S0 w1 w0 w1 w0 w1 w0 w1 w0 S1";
        let second = "S0 w1 w0 w1 w0 w1 w0 w1 w0 S1 w0 w1 w0 w1 w0 w1 w0 w1";
        assert_eq!(ops, format!("{pass} {second}"));
        // a forward skip that goes round within each file never finds one done: the job
        // ends by its size (fio reads 25 blocks of 4 KiB from three files of 34133 bytes)
        let reads = run_over_files("[j]\nsize=100k\nnrfiles=3\nbs=4k\nrw=read:8k\n", 3, 34_133);
        assert_eq!(reads.len(), 25);
        // a flush falls due after the last block of the last file: the job, short of its
        // size, asks for another block (fio: eight writes to file 2, then S2)
        let ops = ops_over_files("[j]\nsize=100k\nnrfiles=3\nopenfiles=2\nbs=4k\nrw=write\nfsync=8\n", 3, 34_133);
        assert!(ops.ends_with("S1 w2 w2 w2 w2 w2 w2 w2 w2 S2"), "{ops}");
    }

    /// Blocks (4 KiB) of one file the job issues, each completing at once: `w3` a write of
    /// block 3, `r0` a read, `S` a flush.
    fn blocks_over_file(text: &str, file_bytes: u64) -> String {
        let units = run_over_files(text, 1, file_bytes);
        let op = |u: &IoUnit| match u.op {
            Op::Read | Op::Write => format!("{}{}", op_letter(u.op), (u.offset_bytes & 0xfffff) / 4096),
            _ => op_letter(u.op).to_string(),
        };
        units.iter().map(op).collect::<Vec<_>>().join(" ")
    }

    /// fio's do_io ends a pass where its files are done, at the job's limit, or, with an
    /// asynchronous engine, after `size` bytes issued (its count leaves out what a sync
    /// engine completes at once); the next pass starts over at the start of the file, and
    /// a loop left with nothing to issue still flushes. fio 3.33's write_iolog.
    #[test]
    fn passes_end_where_fios_do_io_ends() {
        let job = "[j]\nrw=write\nbs=4k\nsize=16k\nloops=2\nend_fsync=1\n";
        assert_eq!(blocks_over_file(job, 32 << 10), "w0 w1 w2 w3 w4 w5 w6 w7 S S");
        let job = format!("{job}ioengine=libaio\n");
        assert_eq!(blocks_over_file(&job, 32 << 10), "w0 w1 w2 w3 S w0 w1 w2 w3 S");
        // keep_running counts the read-back's bytes toward io_size: two passes of 16 KiB
        // written and read make 64 KiB, past the 40 KiB asked for
        let job = "[j]\nrw=write\nbs=4k\nsize=16k\nio_size=40k\nverify=crc32c\n";
        assert_eq!(blocks_over_file(job, 16 << 10), "w0 w1 w2 w3 r0 r1 r2 r3 w0 w1 w2 w3 r0 r1 r2 r3");
        assert_eq!(blocks_over_file("[j]\nrw=write\nbs=4k\nsize=16k\nio_size=40k\n", 16 << 10).split(' ').count(), 10);
        // the read-back leaves the file not done, so the job goes on while its size is
        // owed, its reads counted (fio: 2 blocks written and read, twice, as the skip
        // leaves no room for a third in 16 KiB); fio's number_ios counts the reads too
        let job = "[j]\nrw=write:4k\nbs=3k\nsize=16k\nverify=crc32c\n";
        assert_eq!(blocks_over_file(job, 16 << 10), "w0 w1 r0 r1 w0 w1 r0 r1");
        let job = "[j]\nrw=write\nbs=4k\nsize=8k\nloops=3\nnumber_ios=3\nverify=crc32c\nend_fsync=1\n";
        assert_eq!(blocks_over_file(job, 8 << 10), "w0 w1 S r0 r1 w0 w1 S r0 r1 w0 S r0");
        // a random job with a map reads back in the order written, at the job's end too
        let ops = blocks_over_file("[j]\nrw=randwrite\nbs=4k\nsize=32k\nverify=crc32c\n", 32 << 10);
        let (writes, reads) = ops.split_at(ops.find('r').unwrap());
        assert_eq!(writes.trim().replace('w', ""), reads.trim().replace('r', ""));
    }

    #[test]
    fn several_files_are_served_in_fios_order() {
        // fio 3.33's write_iolog for nrfiles=3, size=48k, bs=4k, rw=write (psync)
        let rr = [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (0, 2), (1, 2), (2, 2), (0, 3), (1, 3), (2, 3)];
        assert_eq!(file_order("roundrobin"), rr);
        let seq = [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2), (1, 3), (2, 0), (2, 1), (2, 2), (2, 3)];
        assert_eq!(file_order("sequential"), seq);
        let rr2 = [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 2), (2, 3)];
        assert_eq!(file_order("roundrobin:2"), rr2);
        // random: fio's draws differ, but each file gets its four blocks, in order
        let random = file_order("random");
        assert_eq!(random.len(), 12);
        for f in 0..3 {
            let blocks: Vec<u64> = random.iter().filter(|(file, _)| *file == f).map(|(_, b)| *b).collect();
            assert_eq!(blocks, [0, 1, 2, 3], "{random:?}");
        }
        assert_ne!(random, rr, "random is not round robin");
    }

    /// I/Os per file of eight-file job `text` whose files are `file_len` bytes each,
    /// completing each at once, over at most `ticks` polls or until the job finishes.
    fn ios_per_file(text: &str, file_len: u64, ticks: u64) -> [u32; 8] {
        let spec = parse_job_str(text, Path::new("t.fio"), &env(), ParseOptions::default()).unwrap().jobs.remove(0);
        let regions: Vec<Region> = (0..8).map(|k| Region { start: k * file_len, len: file_len }).collect();
        let mut d = JobDriver::new(Arc::new(spec), 0, &regions, 7).unwrap();
        d.start(Nanos::ZERO);
        let (mut out, mut counts) = (Vec::new(), [0u32; 8]);
        for t in 1..=ticks {
            out.clear();
            if d.poll(Nanos(t), &mut out) == Poll::Finished {
                break;
            }
            for u in &out {
                counts[u.file as usize] += 1;
                d.on_complete(Nanos(t), u.op, u.len_bytes, Nanos::ZERO);
            }
        }
        counts
    }

    /// `file_service_type=zipf|pareto|normal`: each I/O's file drawn from the distribution
    /// without fio's hash, so the hot ranks share a file. fio 3.33, eight 10 MiB files,
    /// 2000 random reads (write_iolog), files by share: zipf:1.2 90.8%, 3.4%, ...;
    /// normal:10 42.4%, 42.2%, 8.2%, 6.9%, ... (two neighbouring files).
    #[test]
    fn skewed_file_service_draws_each_file_from_the_distribution() {
        let shares = |service: &str| -> Vec<f64> {
            let text = format!("[j]\nsize=80m\nnrfiles=8\nbs=4k\nrw=randread\nfile_service_type={service}\n");
            let counts = ios_per_file(&text, 10 << 20, 2000);
            let total: u32 = counts.iter().sum();
            let mut shares: Vec<f64> = counts.iter().map(|&c| f64::from(c) / f64::from(total)).collect();
            shares.sort_by(|a, b| b.total_cmp(a));
            shares
        };
        let zipf = shares("zipf:1.2");
        assert!(zipf[0] > 0.85 && zipf[1] < 0.06, "{zipf:?}");
        let normal = shares("normal:10");
        assert!(normal[0] > 0.35 && normal[1] > 0.35 && normal[2] + normal[3] > 0.1 && normal[4] < 0.01, "{normal:?}");
        let uniform = shares("random");
        assert!(uniform[0] < 0.16, "{uniform:?}");
        // a hot file whose pass is used up starts over, as fio resets it: a size-based
        // job of eight 1 MiB files still ends after its 2048 I/Os, 90% of them in one
        // file (fio 3.33: 2048 reads, 90.9% in one file)
        let text = "[j]\nsize=8m\nnrfiles=8\nbs=4k\nrw=randread\nfile_service_type=zipf:1.2\n";
        let counts = ios_per_file(text, 1 << 20, 10_000);
        assert_eq!(counts.iter().sum::<u32>(), 2048, "{counts:?}");
        assert!(*counts.iter().max().unwrap() > 1800, "{counts:?}");
    }

    #[test]
    fn thinktime_blocks_issue_then_wait_for_completion_then_pause() {
        let mut d = driver("[a]\nioengine=io_uring\niodepth=32\nrw=randread\nthinktime=1000\nthinktime_blocks=8\nthinktime_blocks_type=issue\nruntime=1\ntime_based\n");
        let mut out = Vec::new();
        while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
        assert_eq!(out.len(), 8, "thinktime_blocks caps what is out, not iodepth");
        for i in 1..=7u64 {
            d.on_complete(Nanos(i * 1000), Op::Read, 4096, Nanos::ZERO);
            assert_eq!(d.poll(Nanos(i * 1000), &mut out), Poll::Blocked, "waits for all 8 (fio's quiesce)");
        }
        d.on_complete(Nanos(9_000), Op::Read, 4096, Nanos::ZERO);
        assert_eq!(d.poll(Nanos(9_000), &mut out), Poll::WaitUntil(Nanos(1_009_000)), "then thinks");
        out.clear();
        while d.poll(Nanos(1_009_000), &mut out) == Poll::Ready {}
        assert_eq!(out.len(), 8);
    }

    /// fio's default `thinktime_blocks_type=complete`: the queue fills, the job issues
    /// one more per completion until 8 have completed, then waits for the rest and
    /// pauses; what completed while it waited counts toward the next pause, which comes
    /// after one more I/O (fio's handle_thinktime takes the count before it quiesces).
    #[test]
    fn thinktime_blocks_completed_lets_the_queue_fill_and_counts_what_completes_while_waiting() {
        let mut d = driver("[a]\nioengine=io_uring\niodepth=32\nrw=randread\nthinktime=1000\nthinktime_blocks=8\nruntime=1\ntime_based\n");
        let mut out = Vec::new();
        while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
        assert_eq!(out.len(), 32, "nothing has completed: the queue fills");
        for i in 1..=8u64 {
            d.on_complete(Nanos(i * 1000), Op::Read, 4096, Nanos::ZERO);
            let poll = d.poll(Nanos(i * 1000), &mut out);
            assert_eq!(poll == Poll::Ready, i < 8, "completion {i}: one more goes out until 8 have come back");
        }
        assert_eq!(out.len(), 32 + 7);
        for i in 9..=39u64 {
            d.on_complete(Nanos(i * 1000), Op::Read, 4096, Nanos::ZERO);
            let poll = d.poll(Nanos(i * 1000), &mut out);
            if i < 39 {
                assert_eq!(poll, Poll::Blocked, "waits for all out (fio's quiesce)");
            } else {
                assert_eq!(poll, Poll::WaitUntil(Nanos(1_039_000)), "then thinks");
            }
        }
        out.clear();
        assert_eq!(d.poll(Nanos(1_039_000), &mut out), Poll::Ready);
        assert_eq!(out.len(), 1, "31 completed while it waited: the next pause is due after one more");
        d.on_complete(Nanos(1_040_000), Op::Read, 4096, Nanos::ZERO);
        assert_eq!(d.poll(Nanos(1_040_000), &mut out), Poll::WaitUntil(Nanos(2_040_000)));
        // a synchronous engine: its I/O completes before fio checks, one I/O per pause
        let mut d = driver("[a]\nrw=randread\nthinktime=1000\nruntime=1\ntime_based\n");
        out.clear();
        assert_eq!(d.poll(Nanos::ZERO, &mut out), Poll::Ready);
        d.on_complete(Nanos(100), Op::Read, 4096, Nanos::ZERO);
        assert_eq!(d.poll(Nanos(100), &mut out), Poll::WaitUntil(Nanos(1_000_100)), "one I/O, then the pause");
    }

    #[test]
    fn iodepth_low_lets_a_full_queue_drain_before_refilling_it() {
        let mut d = driver("[a]\nioengine=io_uring\niodepth=16\niodepth_low=4\nrw=randread\nruntime=1\ntime_based\n");
        let mut out = Vec::new();
        for round in 0..3u64 {
            out.clear();
            while d.poll(Nanos(round), &mut out) == Poll::Ready {}
            assert_eq!(d.inflight(), 16, "round {round}: fills the queue");
            for left in (4..16).rev() {
                d.on_complete(Nanos(round), Op::Read, 4096, Nanos::ZERO);
                let poll = d.poll(Nanos(round), &mut out);
                assert_eq!(poll == Poll::Ready, left == 4, "issues again at {left} out");
                if poll == Poll::Ready {
                    break;
                }
            }
        }
        // without it the queue is topped up after every completion
        let mut d = driver("[a]\nioengine=io_uring\niodepth=16\nrw=randread\nruntime=1\ntime_based\n");
        while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
        d.on_complete(Nanos(1), Op::Read, 4096, Nanos::ZERO);
        assert_eq!(d.poll(Nanos(1), &mut out), Poll::Ready);
    }

    #[test]
    fn iodepth_batch_complete_min_waits_for_that_many_completions() {
        // (iodepth, iodepth_low, iodepth_batch_complete_min) -> requests out when fio is
        // done reaping a full queue
        assert_eq!(reap_until(16, 0, 1), 15);
        assert_eq!(reap_until(16, 0, 6), 10);
        assert_eq!(reap_until(16, 4, 1), 4);
        assert_eq!(reap_until(16, 4, 5), 1, "16, 11, 6, 1: whole batches until at most 4 are out");
        assert_eq!(reap_until(16, 4, 0), 4, "0 reaps one at a time, as fio does on a full queue");
        assert_eq!(reap_until(4, 0, 8), 0, "at most what is out");
        let mut d = driver(
            "[a]\nioengine=io_uring\niodepth=16\niodepth_batch_complete_min=6\nrw=randread\nruntime=1\ntime_based\n",
        );
        let mut out = Vec::new();
        while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
        assert_eq!(d.inflight(), 16);
        for left in (10..16).rev() {
            d.on_complete(Nanos(1), Op::Read, 4096, Nanos::ZERO);
            let poll = d.poll(Nanos(1), &mut out);
            assert_eq!(poll == Poll::Ready, left == 10, "issues again at {left} out");
        }
        while d.poll(Nanos(1), &mut out) == Poll::Ready {}
        assert_eq!(d.inflight(), 16, "and fills the queue again");
    }

    #[test]
    fn thinktime_iotime_pauses_after_issuing_for_that_long() {
        // each I/O completes 1 us after it is issued; 20 ms pauses after 80 ms of issuing
        let mut d = driver("[a]\nrw=randread\nthinktime=20ms\nthinktime_iotime=80ms\nruntime=1\ntime_based\n");
        let (mut t, mut out, mut issued_at) = (Nanos::ZERO, Vec::new(), Vec::new());
        loop {
            out.clear();
            match d.poll(t, &mut out) {
                Poll::Ready => {
                    issued_at.push(t);
                    t += Nanos::from_us(1);
                    d.on_complete(t, Op::Read, 4096, Nanos::from_us(1));
                }
                Poll::WaitUntil(w) => t = w,
                _ => break,
            }
        }
        let gaps: Vec<(Nanos, Nanos)> =
            issued_at.windows(2).filter(|w| w[1] - w[0] > Nanos::from_us(1)).map(|w| (w[0], w[1] - w[0])).collect();
        assert_eq!(gaps.len(), 9, "the tenth pause is cut off by the runtime: {gaps:?}");
        for (i, (at, gap)) in gaps.iter().enumerate() {
            assert_eq!(*gap, Nanos::from_ms(20) + Nanos::from_us(1), "pause {i}");
            // the stretch of issuing before pause i began at the end of pause i - 1
            let began = if i == 0 { Nanos::ZERO } else { gaps[i - 1].0 + gaps[i - 1].1 };
            assert_eq!(*at - began, Nanos::from_ms(80), "pause {i} comes after 80 ms of issuing");
        }
    }

    #[test]
    fn number_ios_and_loops_bound_the_io() {
        let count = |text: &str| run_to_end(&mut driver(text)).0.len();
        assert_eq!(count("[a]\nrw=randread\nsize=1m\n"), 256);
        assert_eq!(count("[a]\nrw=randread\nsize=1m\nloops=3\n"), 768);
        assert_eq!(count("[a]\nrw=read\nsize=1m\nnumber_ios=100\n"), 100);
        // fio 3.33: number_ios counts per loop, and a time-based job loops until its runtime
        assert_eq!(count("[a]\nrw=read\nsize=1m\nnumber_ios=100\nloops=3\n"), 300);
        assert_eq!(count("[a]\nrw=read\nsize=1m\nnumber_ios=300\nloops=2\n"), 512, "each loop ends with its pass");
        assert!(
            count("[a]\nioengine=io_uring\niodepth=8\nrw=randread\nruntime=10ms\ntime_based\nnumber_ios=50\n") > 1000
        );
        assert_eq!(count("[a]\nrw=read\nsize=1m\nnumber_ios=1000\n"), 256, "size comes first");
    }

    /// A size-based job ends with its pass over the region, as fio's, even short of its
    /// size: a block that would pass the end is not done, and mixed sizes shrink to fit
    /// it. The counts are fio 3.33's on a 1 MiB file (psync; fio's own draws differ, so
    /// mixed sizes are checked by bytes and coverage, not counts).
    #[test]
    fn a_pass_ends_at_the_region_end_as_fio() {
        let region = Region { start: 0, len: 1 << 20 };
        let units = |job: &str| {
            let text = format!("[a]\nsize=1m\n{job}\n");
            let spec =
                parse_job_str(&text, Path::new("t.fio"), &env(), ParseOptions::default()).unwrap().jobs.remove(0);
            let mut d = JobDriver::new(Arc::new(spec), 0, &[region], 1).unwrap();
            d.start(Nanos::ZERO);
            let (mut out, mut t) = (Vec::new(), Nanos::ZERO);
            loop {
                let before = out.len();
                match d.poll(t, &mut out) {
                    Poll::Finished => break out,
                    Poll::Ready => {
                        for u in &out[before..] {
                            t += Nanos(1_000);
                            d.on_complete(t, u.op, u.len_bytes, Nanos::ZERO);
                        }
                    }
                    other => panic!("{job}: {other:?}"),
                }
            }
        };
        // (job, I/Os as fio, bytes as fio, every 4 KiB block once per pass)
        let cases: [(&str, Option<usize>, u64, bool); 14] = [
            ("rw=read\nbs=3k", Some(341), 341 * 3072, false),
            ("rw=randread\nbs=3k", Some(341), 341 * 3072, false),
            ("rw=read\nbs=3k\nloops=2", Some(682), 682 * 3072, false),
            ("rw=randread\nbs=3k\nloops=2", Some(682), 682 * 3072, false),
            ("rw=read\nbs=3k\nio_size=3m", Some(1024), 3 << 20, false),
            // io_size over size with loops: the passes end it at io_size, not io_size x loops
            ("rw=read\nbs=4k\nio_size=2m\nloops=2", Some(512), 2 << 20, false),
            // a forward skip ends the pass once a block reached the end: 4k of every 12k;
            // from a block short of the end it goes round again (fio's holed I/O)
            ("rw=write:8k\nbs=4k", Some(86), 86 * 4096, false),
            ("rw=read:4k\nbs=4k", Some(256), 1 << 20, false),
            // a skip that stops short of the end, where the next block does not fit, ends it
            ("rw=read:4k\nbs=8k", Some(85), 85 * 8192, false),
            ("rw=read\nbs=4k\nio_size=50%", Some(128), 1 << 19, false),
            ("rw=read\nbssplit=4k/50:64k/50\nloops=2", None, 2 << 20, false),
            ("rw=read\nbsrange=4k-64k", None, 1 << 20, true),
            ("rw=randread\nbssplit=4k/50:64k/50", None, 1 << 20, true),
            ("rw=randread\nbsrange=4k-16k", None, 1 << 20, true),
        ];
        for (job, ios, bytes, once) in cases {
            let units = units(job);
            assert!(units.iter().all(|u| u.offset_bytes + u64::from(u.len_bytes) <= region.len), "{job}");
            assert_eq!(units.iter().map(|u| u64::from(u.len_bytes)).sum::<u64>(), bytes, "{job}");
            if let Some(ios) = ios {
                assert_eq!(units.len(), ios, "{job}");
            }
            if once {
                let mut covered = vec![0u32; 256];
                for u in &units {
                    (u.offset_bytes / 4096..(u.offset_bytes + u64::from(u.len_bytes)) / 4096)
                        .for_each(|b| covered[b as usize] += 1);
                }
                assert!(covered.iter().all(|&c| c == 1), "{job}: {covered:?}");
            }
        }
        // a time-based job goes on over the end, and a random one past its map's pass
        let timed = units("rw=read\nbs=3k\ntime_based\nruntime=1ms");
        assert_eq!(timed.len(), 1000, "one per microsecond");
        assert_eq!(timed[341].offset_bytes, 0, "after 341 blocks it wraps");
    }

    /// Runs a job to its end, completing the oldest request in flight each step; returns
    /// how many I/Os it issued and the most that overlapped one another at once.
    fn run_fifo(text: &str) -> (u64, usize) {
        let spec = parse_job_str(text, Path::new("t.fio"), &env(), ParseOptions::default()).unwrap().jobs.remove(0);
        let mut d = JobDriver::new(Arc::new(spec), 0, &[Region { start: 0, len: 16384 }], 1).unwrap();
        d.start(Nanos::ZERO);
        let (mut in_flight, mut out) = (std::collections::VecDeque::new(), Vec::new());
        let (mut issued, mut most_overlapping, mut t) = (0u64, 0usize, 0u64);
        loop {
            t += 1000;
            let mut poll = d.poll(Nanos(t), &mut out);
            while poll == Poll::Ready {
                poll = d.poll(Nanos(t), &mut out);
            }
            issued += out.len() as u64;
            in_flight.extend(out.drain(..));
            let overlapping = in_flight
                .iter()
                .filter(|u: &&IoUnit| {
                    in_flight.iter().filter(|v| v.offset_bytes == u.offset_bytes && v.file == u.file).count() > 1
                })
                .count();
            most_overlapping = most_overlapping.max(overlapping);
            if poll == Poll::Finished {
                return (issued, most_overlapping);
            }
            if let Some(u) = in_flight.pop_front() {
                d.landed(u.op, u.file, u.offset_bytes, u.len_bytes);
                d.on_complete(Nanos(t), u.op, u.len_bytes, Nanos::ZERO);
            }
        }
    }

    /// Runs a job to its end, completing each batch as it is issued; returns its I/Os.
    fn run_batches(text: &str) -> Vec<IoUnit> {
        run_batches_to_end(text).1
    }

    /// Runs the first job of `text`, each batch completing 1 µs after it is issued: the
    /// driver, what it issued, and when it finished.
    fn run_batches_to_end(text: &str) -> (JobDriver, Vec<IoUnit>, Nanos) {
        let mut d = driver(text);
        let (mut all, mut out, mut t) = (Vec::new(), Vec::new(), 0u64);
        while t < 1 << 40 {
            t += 1000;
            let mut poll = d.poll(Nanos(t), &mut out);
            while poll == Poll::Ready {
                poll = d.poll(Nanos(t), &mut out);
            }
            if poll == Poll::Finished {
                break;
            }
            for u in out.drain(..) {
                d.landed(u.op, u.file, u.offset_bytes, u.len_bytes);
                d.on_complete(Nanos(t), u.op, u.len_bytes, Nanos::ZERO);
                all.push(u);
            }
        }
        assert!(out.is_empty() && d.finished_at().is_some());
        let end = d.finished_at().unwrap();
        (d, all, end)
    }

    #[test]
    fn a_verifying_job_times_its_writes_over_its_write_phases_and_its_reads_over_its_read_backs() {
        let job = "[a]\nioengine=io_uring\niodepth=4\nrw=write\nsize=64k\nverify=crc32c\nloops=2\n";
        let (d, ios, end) = run_batches_to_end(job);
        // two passes of 16 writes, each read back: 4 batches each, 1 µs apart
        assert_eq!(runs(&ios), [(Op::Write, 16), (Op::Read, 16)].repeat(2));
        let [reads, writes, trims] = d.direction_runtimes(end, end).unwrap();
        assert_eq!((reads + writes, trims), (end, Nanos::ZERO));
        assert!(reads >= Nanos::from_us(6) && writes >= Nanos::from_us(6), "{reads:?} {writes:?} of {end:?}");
        // a job that reads as well reads the whole time
        let (d, _, end) = run_batches_to_end("[a]\nioengine=io_uring\niodepth=4\nrw=randrw\nsize=64k\nverify=crc32c\n");
        let [reads, writes, _] = d.direction_runtimes(end, end).unwrap();
        assert!(reads == end && writes < end && writes > Nanos::ZERO, "{reads:?} {writes:?} of {end:?}");
        // verify_backlog's read-backs within a pass are part of it; only the end's is not
        let (d, ios, end) = run_batches_to_end(&format!("{job}verify_backlog=4\n"));
        let [reads, _, _] = d.direction_runtimes(end, end).unwrap();
        assert!(ios.iter().filter(|u| u.op == Op::Read).count() >= 32);
        assert!(reads <= Nanos::from_us(4), "the read-backs between and after the passes: {reads:?} of {end:?}");
        // without a read-back every direction runs the whole time
        let (d, _, end) = run_batches_to_end("[a]\nioengine=io_uring\niodepth=4\nrw=write\nsize=64k\n");
        assert_eq!(d.direction_runtimes(end, end), None);
        // a read-back under way (`--status-interval`) counts up to the moment asked
        let mut d = driver("[a]\nioengine=io_uring\niodepth=4\nrw=write\nsize=16k\nverify=crc32c\n");
        let mut out = Vec::new();
        let mut t = Nanos::ZERO;
        while !out.iter().any(|u: &IoUnit| u.op == Op::Read) {
            for u in out.drain(..) {
                d.landed(u.op, u.file, u.offset_bytes, u.len_bytes);
                d.on_complete(t, u.op, u.len_bytes, Nanos::ZERO);
            }
            t += Nanos::from_us(1);
            while d.poll(t, &mut out) == Poll::Ready {}
        }
        let later = t + Nanos::from_us(5);
        assert_eq!(d.direction_runtimes(later, later).unwrap()[0], Nanos::from_us(5));
    }

    #[test]
    fn verify_reads_back_the_last_write_of_each_block_after_the_writes() {
        let job = "[a]\nioengine=io_uring\niodepth=4\nrw=randwrite\nsize=64k\nbsrange=4k-8k\nverify=crc32c\n";
        let ios = run_batches(job);
        let writes: Vec<&IoUnit> = ios.iter().filter(|u| u.op == Op::Write).collect();
        let reads: Vec<&IoUnit> = ios.iter().filter(|u| u.op == Op::Read).collect();
        let first_read = ios.iter().position(|u| u.op == Op::Read).unwrap();
        assert!(ios[first_read..].iter().all(|u| u.op == Op::Read), "the reads come after every write");
        assert!(!reads.is_empty() && reads.len() <= writes.len());
        // as fio's history list holds them: each block is written once, read back in
        // the order written
        let order = |ios: &[&IoUnit]| ios.iter().map(|u| (u.offset_bytes, u.len_bytes)).collect::<Vec<_>>();
        assert_eq!(order(&reads), order(&writes));
        let job = format!("{job}norandommap\n");
        let ios = run_batches(&job);
        let writes: Vec<&IoUnit> = ios.iter().filter(|u| u.op == Op::Write).collect();
        let reads: Vec<&IoUnit> = ios.iter().filter(|u| u.op == Op::Read).collect();
        for r in &reads {
            // norandommap: each read is a block as it was last written, in offset order
            let last = writes
                .iter()
                .rev()
                .find(|w| {
                    w.offset_bytes < r.offset_bytes + u64::from(r.len_bytes)
                        && r.offset_bytes < w.offset_bytes + u64::from(w.len_bytes)
                })
                .unwrap();
            assert_eq!((last.offset_bytes, last.len_bytes), (r.offset_bytes, r.len_bytes));
        }
        assert!(reads.windows(2).all(|p| p[0].offset_bytes < p[1].offset_bytes));
        assert!(run_batches(&format!("{job}do_verify=0\n")).iter().all(|u| u.op == Op::Write));
        // verify_only: every block of the region, nothing written
        let only = run_batches(&format!("{job}verify_only=1\nbs=4k\n"));
        assert_eq!(only.len(), (1 << 30) / 4096);
        assert!(only.iter().all(|u| u.op == Op::Read && u.len_bytes == 4096));
    }

    /// Runs of one direction in the order issued: (op, how many).
    fn runs(ios: &[IoUnit]) -> Vec<(Op, usize)> {
        let mut runs: Vec<(Op, usize)> = Vec::new();
        for u in ios {
            match runs.last_mut() {
                Some((op, n)) if *op == u.op => *n += 1,
                _ => runs.push((u.op, 1)),
            }
        }
        runs
    }

    #[test]
    fn verify_backlog_reads_back_the_oldest_writes_every_so_many() {
        let job = "[a]\nioengine=io_uring\niodepth=8\nrw=randwrite\nsize=256k\nverify=crc32c\nverify_backlog=16\n";
        let ios = run_batches(job);
        // as fio 3.33's iolog shows for this job: 16 writes, their 16 blocks read back, ...
        let (w, r) = (Op::Write, Op::Read);
        assert_eq!(runs(&ios), [(w, 16), (r, 16)].repeat(4));
        // in the order they were written (fio's history is a list when each block is
        // written once per pass)
        let offsets = |r: std::ops::Range<usize>| ios[r].iter().map(|u| u.offset_bytes).collect::<Vec<_>>();
        assert_eq!(offsets(16..32), offsets(0..16));
        // a smaller batch leaves the rest to the end
        let ios = run_batches(&format!("{job}verify_backlog_batch=4\n"));
        let mut expected = [(w, 16), (r, 4)].repeat(4);
        expected[7] = (r, 4 + 12 * 4);
        assert_eq!(runs(&ios), expected);
        // fio reads back nothing without do_verify, backlog included
        assert!(run_batches(&format!("{job}do_verify=0\n")).iter().all(|u| u.op == w));
    }

    /// fio 3.33's iologs: a job verifies after each pass over its size (`loops`, and
    /// `time_based` passes too), and its runtime ends the read-back as it ends its I/O.
    #[test]
    fn verify_reads_back_after_each_pass_within_the_runtime() {
        let (w, r) = (Op::Write, Op::Read);
        let job = "[a]\nioengine=io_uring\niodepth=4\nrw=randwrite\nsize=64k\nverify=crc32c\n";
        assert_eq!(runs(&run_batches(&format!("{job}loops=3\n"))), [(w, 16), (r, 16)].repeat(3));
        let timed = runs(&run_batches(&format!("{job}time_based\nruntime=100us\n")));
        assert!(timed.len() > 6, "{timed:?}");
        let (last, whole) = timed.split_last().unwrap();
        assert!(whole.chunks(2).all(|c| c[0] == (w, 16) && c.get(1).is_none_or(|&x| x == (r, 16))), "{timed:?}");
        assert!(last.1 <= 16, "the runtime cuts the last pass or read-back short: {timed:?}");
        // cut short by its runtime before its size is written: nothing is read back
        let cut =
            run_batches("[a]\nioengine=io_uring\niodepth=4\nrw=randwrite\nsize=1g\nverify=crc32c\nruntime=50us\n");
        assert!(!cut.is_empty() && cut.iter().all(|u| u.op == w));
    }

    #[test]
    fn verify_only_walks_every_block_of_each_file_without_listing_them() {
        let w = RegionWalk::new(&[Region { start: 4096, len: 8192 }, Region { start: 0, len: 12288 }], 4096);
        let all: Vec<_> = (0..5).map(|i| w.block(i)).collect();
        assert_eq!(all, [(0, 4096, 4096), (0, 8192, 4096), (1, 0, 4096), (1, 4096, 4096), (1, 8192, 4096)]);
        let v = VerifyPass { walk: Some(w), ..VerifyPass::default() };
        assert_eq!(v.listed(), 5);
    }

    #[test]
    fn create_only_issues_nothing_not_even_the_end_flush() {
        let mut d = driver("[a]\nrw=write\nsize=1m\nend_fsync=1\ncreate_only=1\n");
        assert_eq!(d.poll(Nanos::ZERO, &mut Vec::new()), Poll::Finished);
        let mut d = driver("[a]\nrw=write\nsize=1m\nend_fsync=1\n");
        assert_eq!(d.poll(Nanos::ZERO, &mut Vec::new()), Poll::Ready);
    }

    #[test]
    fn a_fill_ends_at_enospc_without_an_error_and_lands_what_is_in_flight() {
        const ENOSPC: i32 = 28;
        let mut d = driver("[a]\nioengine=io_uring\niodepth=4\nrw=write\nfill_device=1\nend_fsync=1\n");
        let mut out = Vec::new();
        while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
        assert_eq!(out.len(), 4);
        let done = d.on_error(Nanos(10), Op::Write, ENOSPC);
        assert!(done.failed.is_none(), "ENOSPC ends a fill, it does not fail it");
        // the writes in flight still count; nothing more is written, the end flush is owed
        assert!((1..4).all(|k| d.on_complete(Nanos(10 + k), Op::Write, 4096, Nanos::ZERO).counted));
        out.clear();
        assert_eq!(d.poll(Nanos(20), &mut out), Poll::Ready);
        assert_eq!(out.iter().map(|u| u.op).collect::<Vec<_>>(), [Op::Flush]);
        // a second ENOSPC (the flush's) is no error either
        assert!(d.on_error(Nanos(30), Op::Flush, ENOSPC).failed.is_none());
        assert_eq!(d.poll(Nanos(30), &mut out), Poll::Finished);
        // without fill_device, ENOSPC fails the job
        let mut d = driver("[a]\nioengine=io_uring\niodepth=4\nrw=write\n");
        d.poll(Nanos::ZERO, &mut Vec::new());
        assert_eq!(d.on_error(Nanos(10), Op::Write, ENOSPC).failed, Some(Failure::Io(ENOSPC)));
    }

    #[test]
    fn serialize_overlap_keeps_overlapping_ios_apart() {
        let job = "[a]\nioengine=io_uring\niodepth=8\nrw=randwrite\nnorandommap\nio_size=800k\n";
        let (issued, overlapping) = run_fifo(job);
        assert_eq!(issued, 200);
        assert_eq!(overlapping, 8, "four blocks, eight in flight: writes overlap without it");
        let (issued, overlapping) = run_fifo(&format!("{job}serialize_overlap=1\n"));
        assert_eq!(issued, 200, "every I/O is still issued, later");
        assert_eq!(overlapping, 0);
    }

    #[test]
    fn sync_job_issues_one_and_thinks_after_completion() {
        let mut d = driver("[a]\nrw=randread\nthinktime=2000\nruntime=1\ntime_based\n");
        let mut out = Vec::new();
        assert_eq!(d.poll(Nanos::ZERO, &mut out), Poll::Ready);
        assert_eq!(out.len(), 1);
        assert_eq!(d.poll(Nanos::ZERO, &mut out), Poll::Blocked);
        d.on_complete(Nanos(100_000), Op::Read, 4096, Nanos::ZERO);
        assert_eq!(d.poll(Nanos(100_000), &mut out), Poll::WaitUntil(Nanos(2_100_000)));
        assert_eq!(d.poll(Nanos(2_100_000), &mut out), Poll::Ready);
    }

    #[test]
    fn async_job_fills_depth_in_batches() {
        let mut d = driver("[a]\nioengine=io_uring\niodepth=8\niodepth_batch_submit=3\nrw=randread\nsize=1m\n");
        let mut out = Vec::new();
        assert_eq!(d.poll(Nanos::ZERO, &mut out), Poll::Ready);
        assert_eq!(out.len(), 3);
        d.poll(Nanos::ZERO, &mut out);
        d.poll(Nanos::ZERO, &mut out);
        assert_eq!(out.len(), 8);
        assert_eq!(d.poll(Nanos::ZERO, &mut out), Poll::Blocked);
    }

    #[test]
    fn size_limits_issued_bytes() {
        let mut d = driver("[a]\nioengine=libaio\niodepth=64\nrw=write\nbs=4k\nsize=40k\n");
        let mut out = Vec::new();
        while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
        assert_eq!(out.len(), 10);
        for _ in 0..10 {
            d.on_complete(Nanos(5), Op::Read, 4096, Nanos::ZERO);
        }
        assert_eq!(d.poll(Nanos(5), &mut out), Poll::Finished);
        assert_eq!(d.finished_at(), Some(Nanos(5)));
    }

    #[test]
    fn linear_rate_spaces_issues() {
        let mut d = driver("[a]\nioengine=libaio\niodepth=64\nrw=randread\nrate_iops=1000\nruntime=1\ntime_based\n");
        let mut out = Vec::new();
        assert_eq!(d.poll(Nanos::ZERO, &mut out), Poll::Ready);
        assert_eq!(d.poll(Nanos::ZERO, &mut out), Poll::WaitUntil(Nanos::from_ms(1)));
        assert_eq!(d.poll(Nanos::from_ms(1), &mut out), Poll::Ready);
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn poisson_rate_has_the_configured_mean() {
        let mut d = driver("[a]\nioengine=libaio\niodepth=65536\nrw=randread\nrate_iops=1000\nrate_process=poisson\nruntime=100\ntime_based\n");
        let mut out = Vec::new();
        let mut now = Nanos::ZERO;
        let mut gaps = Vec::new();
        while out.len() < 20_000 {
            match d.poll(now, &mut out) {
                Poll::WaitUntil(t) => {
                    gaps.push((t - now).as_secs_f64());
                    now = t;
                }
                Poll::Ready => {}
                other => panic!("{other:?}"),
            }
        }
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        assert!((mean - 0.001).abs() < 0.00005, "{mean}");
        let cv = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt() / mean;
        assert!((cv - 1.0).abs() < 0.05, "exponential gaps have cv 1: {cv}");
    }

    #[test]
    fn an_async_engine_queues_its_fsync_behind_the_writes_in_flight() {
        // fio 3.33's libaio engine sends the sync with writes out (QD4, fsync=2, 8 x 1 MiB:
        // "IO depths: 1=12.5%, 2=37.5%, 4=87.5%"); the end of a pass waits for them all
        let mut d = driver("[a]\nioengine=libaio\niodepth=4\nrw=write\nfsync=2\nsize=1m\n");
        let mut out = Vec::new();
        while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
        let ops: Vec<Op> = out.iter().map(|u| u.op).collect();
        assert_eq!(ops, [Op::Write, Op::Write, Op::Flush, Op::Write], "queued at depth 4");
        assert_eq!(d.poll(Nanos::ZERO, &mut out), Poll::Blocked);
        // but only into a free slot of the queue, and a free scheduler tag
        let mut d = driver("[a]\nioengine=libaio\niodepth=2\nrw=write\nfsync=2\nsize=1m\n");
        out.clear();
        while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
        assert_eq!(out.len(), 2, "the queue is full: {out:?}");
        d.on_complete(Nanos(1), Op::Write, 4096, Nanos::ZERO);
        assert_eq!(d.poll_at_most(Nanos(1), &mut out, 0), Poll::Blocked, "no tag free");
        assert_eq!(d.poll_at_most(Nanos(1), &mut out, 1), Poll::Ready);
        assert_eq!((out[2].op, d.inflight()), (Op::Flush, 2));
        // a synchronous engine has nothing else out when its flush is due
        let mut d = driver("[a]\nioengine=psync\nrw=write\nfsync=2\nsize=1m\n");
        let mut ops = Vec::new();
        for t in 1..6 {
            out.clear();
            assert_eq!(d.poll(Nanos(t), &mut out), Poll::Ready);
            ops.extend(out.iter().map(|u| u.op));
            assert_eq!(d.poll(Nanos(t), &mut out), Poll::Blocked, "one at a time");
            d.on_complete(Nanos(t), out[0].op, 4096, Nanos::ZERO);
        }
        assert_eq!(ops, [Op::Write, Op::Write, Op::Flush, Op::Write, Op::Write]);
    }

    /// Runs `d` to its end, each unit completing 1 us after the previous one; returns
    /// what it issued, whether each completion counted, and when it finished.
    fn run_to_end(d: &mut JobDriver) -> (Vec<(Op, bool)>, Nanos) {
        let (mut out, mut counted, mut t) = (Vec::new(), Vec::new(), Nanos::ZERO);
        loop {
            let before = out.len();
            match d.poll(t, &mut out) {
                Poll::Finished => break,
                Poll::WaitUntil(w) => t = w,
                Poll::Ready => {
                    for _ in before..out.len() {
                        t += Nanos(1_000);
                        counted.push(d.on_complete(t, Op::Read, 4096, Nanos::ZERO).counted);
                    }
                }
                Poll::Blocked | Poll::Held(_) => panic!("blocked with nothing in flight at {t:?}"),
            }
        }
        assert_eq!(d.finished_at(), Some(t), "finished when the last request completed");
        (out.iter().map(|u| u.op).zip(counted).collect(), t)
    }

    /// A driver replaying `trace` (written to a temporary file) with `options`.
    fn replaying(trace: &str, options: &str) -> JobDriver {
        let dir = std::env::temp_dir().join(format!("nvsched-driver-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let path = dir.join(format!("{}.trace", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
        std::fs::write(&path, trace).unwrap();
        driver(&format!("[a]\nread_iolog={}\n{options}\n", path.display()))
    }

    /// Polls `d` from time 0, completing each unit `service` after it was issued, with
    /// at most `d`'s depth in flight; returns (issue time, unit) in order.
    fn replay_timeline(d: &mut JobDriver, service: Nanos) -> Vec<(Nanos, IoUnit)> {
        let (mut now, mut issued, mut inflight) = (Nanos::ZERO, Vec::new(), Vec::<Nanos>::new());
        loop {
            let mut out = Vec::new();
            let poll = d.poll(now, &mut out);
            for u in out {
                issued.push((now, u));
                inflight.push(now + service);
            }
            inflight.sort();
            let next_completion = inflight.first().copied();
            match poll {
                Poll::Finished => return issued,
                Poll::Ready => continue,
                Poll::WaitUntil(t) if next_completion.is_none_or(|c| t < c) => now = t,
                _ => {
                    now = next_completion.expect("blocked with nothing in flight");
                    inflight.remove(0);
                    d.on_complete(now, Op::Read, 4096, Nanos::ZERO);
                }
            }
        }
    }

    const TRACE: &str = "1000000 0 0 8 1\n1500000 0 8 8 0\n1500000 1 1200 16 1\n9000000 0 16 8 1\n";

    #[test]
    fn replay_issues_each_record_at_its_time_where_the_trace_put_it() {
        let mut d = replaying(TRACE, "ioengine=io_uring\niodepth=8");
        let got = replay_timeline(&mut d, Nanos(100_000));
        let times: Vec<u64> = got.iter().map(|(t, _)| t.0).collect();
        assert_eq!(times, [0, 500_000, 500_000, 8_000_000], "relative to the first record");
        let units: Vec<(Op, u64, u32)> = got.iter().map(|(_, u)| (u.op, u.offset_bytes, u.len_bytes)).collect();
        // device 0 holds its first MiB of the region, device 1 the next
        assert_eq!(
            units,
            [
                (Op::Read, 0, 4096),
                (Op::Write, 4096, 4096),
                (Op::Read, (1 << 20) + 614_400, 8192),
                (Op::Read, 8192, 4096)
            ]
        );
        let st = d.replay_stats().unwrap();
        assert_eq!((st.records, st.issued, st.lag_max), (4, 4, Nanos::ZERO));
        assert_eq!(d.finished_at(), Some(Nanos(8_100_000)), "the job ends with the trace");
    }

    #[test]
    fn replay_behind_a_full_queue_goes_late_and_says_so() {
        let mut d = replaying(TRACE, "");
        let got = replay_timeline(&mut d, Nanos(2_000_000));
        let times: Vec<u64> = got.iter().map(|(t, _)| t.0).collect();
        assert_eq!(times, [0, 2_000_000, 4_000_000, 8_000_000], "iodepth 1: each waits for the one before");
        let st = d.replay_stats().unwrap();
        assert_eq!(st.lag_max, Nanos(3_500_000));
        assert_eq!(st.late_ios, 2);
        assert_eq!(st.lag_mean(), Nanos((1_500_000 + 3_500_000) / 4));
    }

    #[test]
    fn replay_options_scale_skip_and_drop() {
        let times = |options: &str| -> Vec<u64> {
            replay_timeline(&mut replaying(TRACE, options), Nanos(1_000)).iter().map(|(t, _)| t.0).collect()
        };
        assert_eq!(times("ioengine=io_uring\niodepth=8\nreplay_time_scale=200"), [0, 250_000, 250_000, 4_000_000]);
        assert_eq!(times("ioengine=io_uring\niodepth=8\nreplay_no_stall=1"), [0, 0, 0, 0]);
        let mut d = replaying(TRACE, "replay_skip=write");
        assert_eq!(replay_timeline(&mut d, Nanos(1_000)).len(), 3);
        assert_eq!(d.replay_stats().unwrap().skipped, 1);
        // device 1's request lies beyond a 1 MiB file split in two halves
        let mut d = replaying(TRACE, "size=1m");
        assert!(replay_timeline(&mut d, Nanos(1_000)).iter().all(|(_, u)| u.offset_bytes < 512 << 10));
        assert_eq!((d.replay_stats().unwrap().issued, d.replay_stats().unwrap().dropped), (3, 1));
        let mut d = replaying(TRACE, "size=1m\nreplay_outside=wrap");
        let wrapped = replay_timeline(&mut d, Nanos(1_000))[2].1.offset_bytes;
        assert_eq!((wrapped, d.replay_stats().unwrap().wrapped), ((512 << 10) + 614_400 % (512 << 10), 1));
        let mut d = replaying(TRACE, "size=1m\nreplay_devices=shared");
        assert_eq!(replay_timeline(&mut d, Nanos(1_000))[2].1.offset_bytes, 614_400, "one space for all devices");
        assert_eq!(d.replay_stats().unwrap().dropped, 0);
    }

    #[test]
    fn runtime_cuts_a_replay_short_and_flushes_replay_as_flushes() {
        let trace = "fio version 3 iolog\n0 f write 0 4096\n10 f sync 0 0\n3000000 f read 0 4096\n";
        let mut d = replaying(trace, "runtime=1");
        let got = replay_timeline(&mut d, Nanos(1_000));
        let ops: Vec<Op> = got.iter().map(|(_, u)| u.op).collect();
        assert_eq!(ops, [Op::Write, Op::Flush], "the read at 3 s lies past the runtime");
        assert_eq!(d.replay_stats().unwrap().issued, 2);
    }

    #[test]
    fn a_pause_longer_than_the_runtime_ends_with_it() {
        for pause in ["thinktime=5s", "rate=1k", "rate_iops=1"] {
            let mut d = driver(&format!("[a]\nrw=randread\nruntime=1\ntime_based\n{pause}\n"));
            let (ios, end) = run_to_end(&mut d);
            assert_eq!(ios.len(), 1, "{pause}: one read, then the pause");
            assert_eq!(end, Nanos::from_secs(1), "{pause}: the job ends at its runtime, as fio's");
        }
    }

    /// Where `fsync=N` flushes, as fio 3.33's write_iolog shows them (psync): before the
    /// next write, so none after the job's last one, and twice where a loop or `io_size`
    /// pass ends on a due flush; a time-based job's wraps flush once.
    #[test]
    fn fsync_flushes_where_fio_does() {
        // the region is the job's size, as the engines cut it
        let pattern = |job: &str| -> String {
            let size = if job.contains("size=48k") { 48 << 10 } else { 64 << 10 };
            let mut d = driver_over(&format!("[a]\nrw=write\nbs=4k\nfsync=8\n{job}\n"), size);
            let ops = run_to_end(&mut d).0;
            let text: String = ops.iter().map(|(op, _)| if *op == Op::Flush { 'S' } else { 'w' }).collect();
            text.replace("wwww", "4")
        };
        assert_eq!(pattern("size=64k\nloops=3"), "44S44SS44S44SS44S44");
        assert_eq!(pattern("size=48k\nloops=3"), "44S44S44SS44S4");
        assert_eq!(pattern("size=64k\nio_size=192k"), "44S44SS44S44SS44S44");
        assert_eq!(pattern("size=64k\nnumber_ios=16"), "44S44");
        assert_eq!(pattern("size=64k\nloops=2\nrw=randwrite"), "44S44SS44S44");
        assert_eq!(pattern("size=64k\nloops=2\nrw=randwrite\nnorandommap"), "44S44S44S44");
        let mut d = driver_over("[a]\nrw=write\nbs=4k\nfsync=8\nsize=64k\nruntime=1ms\ntime_based\n", 64 << 10);
        let ops = run_to_end(&mut d).0;
        let (writes, flushes) =
            ops.iter().fold((0, 0), |(w, f), (op, _)| if *op == Op::Flush { (w, f + 1) } else { (w + 1, f) });
        assert!(writes > 64, "{writes} writes: it wraps");
        assert_eq!(flushes, writes / 8, "one flush per 8 writes across the wraps");
    }

    /// Between two passes (loops, or `io_size` wraps) fio runs its end flush and its
    /// read-back where the pass over the region ends, not after a byte count: `bs=3k`
    /// over 64 KiB does 21 blocks a pass. The sequences are fio 3.33's write_iologs
    /// (w: write, r: read, S: flush; "5" is 5 writes, "R" 5 reads).
    #[test]
    fn between_passes_the_flush_and_read_back_come_where_fio_puts_them() {
        let sequence = |job: &str| -> String {
            let mut d = driver_over(&format!("[a]\nrw=write\nsize=64k\n{job}\n"), 64 << 10);
            let mut out = Vec::new();
            let mut t = Nanos::ZERO;
            loop {
                let before = out.len();
                match d.poll(t, &mut out) {
                    Poll::Finished => break,
                    Poll::Ready => {
                        for u in &out[before..] {
                            t += Nanos(1_000);
                            d.landed(u.op, u.file, u.offset_bytes, u.len_bytes);
                            d.on_complete(t, u.op, u.len_bytes, Nanos::ZERO);
                        }
                    }
                    other => panic!("{job}: {other:?}"),
                }
            }
            let ops: String = out
                .iter()
                .map(|u: &IoUnit| match u.op {
                    Op::Write => 'w',
                    Op::Read => 'r',
                    _ => 'S',
                })
                .collect();
            ops.replace("wwwww", "5").replace("rrrrr", "R")
        };
        assert_eq!(sequence("bs=3k\nloops=2\nend_fsync=1"), "5555wS5555wS");
        assert_eq!(sequence("bs=3k\nloops=2\nverify=crc32c"), "5555wRRRRr5555wRRRRr");
        assert_eq!(sequence("bs=4k\nio_size=128k\nend_fsync=1"), "555wS555wS");
        // fsync=8's second flush at the pass end opens the next pass, after the read-back
        assert_eq!(sequence("bs=4k\nloops=2\nfsync=8\nverify=crc32c"), "5wwwS5wwwSRRRrS5wwwS5wwwRRRr");
        assert_eq!(sequence("bs=4k\nloops=2\nverify=crc32c\nverify_backlog=8"), "5wwwRrrr5wwwRrrr5wwwRrrr5wwwRrrr");
    }

    #[test]
    fn thinktime_keeps_fsync_counting() {
        let mut d = driver("[a]\nrw=write\nfsync=2\nthinktime=10\nsize=64k\n");
        let ops: Vec<Op> = run_to_end(&mut d).0.into_iter().map(|(op, _)| op).collect();
        // as fio 3.33: 7 flushes, none after the last write (the job ends there)
        assert_eq!(ops.len(), 23, "16 writes, a flush after every second one but the last: {ops:?}");
        assert!(
            ops.chunks(3).all(|c| c == [Op::Write, Op::Write, Op::Flush] || c == [Op::Write, Op::Write]),
            "{ops:?}"
        );
    }

    #[test]
    fn end_fsync_flushes_after_each_pass_uncounted() {
        let w = (Op::Write, true);
        let end_flush = (Op::Flush, false);
        let (ops, _) = run_to_end(&mut driver("[a]\nrw=write\nsize=16k\nend_fsync=1\n"));
        assert_eq!(ops, [w, w, w, w, end_flush]);
        // each loop ends with one (fio runs do_io, and its end_fsync, once per loop)
        let (ops, _) = run_to_end(&mut driver_over("[a]\nrw=randwrite\nsize=8k\nloops=2\nfsync_on_close=1\n", 8 << 10));
        assert_eq!(ops, [w, w, end_flush, w, w, end_flush]);
        // over a larger file a sync engine's pass ends only at the job's limit, and the
        // next loop issues nothing but flushes again (fio 3.33, psync: `size=8k` over a
        // 1 GiB file); an asynchronous engine's pass ends after `size` bytes
        let (ops, _) = run_to_end(&mut driver("[a]\nrw=randwrite\nsize=8k\nloops=2\nfsync_on_close=1\n"));
        assert_eq!(ops, [w, w, w, w, end_flush, end_flush]);
        let (ops, _) =
            run_to_end(&mut driver("[a]\nioengine=libaio\nrw=randwrite\nsize=8k\nloops=2\nfsync_on_close=1\n"));
        assert_eq!(ops, [w, w, end_flush, w, w, end_flush]);
        // after an fsync=N flush none is owed (fio's last_was_sync); an fsync=N flush due
        // on the job's last write is not issued, so the end flush comes instead (fio 3.33:
        // no sync counted)
        let (ops, _) = run_to_end(&mut driver("[a]\nrw=write\nsize=12k\nfsync=2\nend_fsync=1\n"));
        assert_eq!(ops, [w, w, (Op::Flush, true), w, end_flush]);
        let (ops, _) = run_to_end(&mut driver("[a]\nrw=write\nsize=8k\nfsync=2\nend_fsync=1\n"));
        assert_eq!(ops, [w, w, end_flush]);
        // jobs that do not write do not flush
        let (ops, _) = run_to_end(&mut driver("[a]\nrw=read\nsize=8k\nend_fsync=1\n"));
        assert_eq!(ops, [(Op::Read, true), (Op::Read, true)]);
        // an asynchronous job drains first, and a time-based one flushes after its runtime
        let mut d = driver("[a]\nioengine=io_uring\niodepth=4\nrw=randrw\nend_fsync=1\nruntime=2ms\ntime_based\n");
        let mut out = Vec::new();
        while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
        assert_eq!(out.len(), 4);
        assert_eq!(d.poll(Nanos::from_ms(2), &mut out), Poll::Blocked, "drains first");
        for i in 1..4 {
            assert!(d.on_complete(Nanos::from_ms(2) + Nanos(i), Op::Read, 4096, Nanos::ZERO).counted);
        }
        assert_eq!(d.poll(Nanos::from_ms(3), &mut out), Poll::Blocked);
        assert!(d.on_complete(Nanos::from_ms(3), Op::Read, 4096, Nanos::ZERO).counted);
        assert_eq!(d.finished_at(), None, "the flush is still owed");
        assert_eq!(d.poll(Nanos::from_ms(3), &mut out), Poll::Ready);
        assert_eq!(out.last().map(|u| u.op), Some(Op::Flush));
        assert!(!d.on_complete(Nanos::from_ms(4), Op::Read, 4096, Nanos::ZERO).counted, "not counted");
        assert_eq!(d.poll(Nanos::from_ms(4), &mut out), Poll::Finished);
        assert_eq!(d.finished_at(), Some(Nanos::from_ms(4)), "the job's runtime includes it");
    }

    #[test]
    fn terminate_stops_issuing_and_still_owes_the_end_flush() {
        let mut d = driver("[a]\nioengine=io_uring\niodepth=2\nrw=write\nend_fsync=1\ntime_based\nruntime=1\n");
        let mut out = Vec::new();
        while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
        d.terminate(Nanos(10));
        assert_eq!(d.poll(Nanos(10), &mut out), Poll::Blocked, "in-flight writes complete first");
        d.on_complete(Nanos(20), Op::Read, 4096, Nanos::ZERO);
        d.on_complete(Nanos(30), Op::Read, 4096, Nanos::ZERO);
        assert_eq!(d.poll(Nanos(30), &mut out), Poll::Ready);
        assert_eq!(out.iter().map(|u| u.op).collect::<Vec<_>>(), [Op::Write, Op::Write, Op::Flush]);
        assert!(!d.on_complete(Nanos(40), Op::Read, 4096, Nanos::ZERO).counted);
        assert_eq!(d.poll(Nanos(40), &mut out), Poll::Finished);
        // terminated before its startdelay: done at once, nothing issued, nothing owed
        let mut d = driver("[a]\nrw=write\nend_fsync=1\nstartdelay=1\nsize=1m\n");
        d.terminate(Nanos(5));
        assert_eq!(d.poll(Nanos(5), &mut out), Poll::Finished);
        assert_eq!(d.finished_at(), Some(Nanos(5)));
    }

    #[test]
    fn startdelay_postpones_the_first_issue() {
        let mut d = driver("[a]\nrw=randread\nstartdelay=5ms\nruntime=1ms\ntime_based\n");
        let mut out = Vec::new();
        assert_eq!(d.poll(Nanos::ZERO, &mut out), Poll::WaitUntil(Nanos::from_ms(5)));
        assert_eq!(d.end(), Some(Nanos::from_ms(6)));
        assert_eq!(d.poll(Nanos::from_ms(5), &mut out), Poll::Ready);
    }

    #[test]
    fn runtime_stops_issuing() {
        let mut d = driver("[a]\nrw=randread\nruntime=1ms\ntime_based\nramp_time=1ms\n");
        assert_eq!(d.ramp_end(), Nanos::from_ms(1));
        assert_eq!(d.end(), Some(Nanos::from_ms(2)));
        let mut out = Vec::new();
        assert_eq!(d.poll(Nanos::from_ms(2), &mut out), Poll::Finished);
    }

    #[test]
    fn max_latency_fails_the_job_and_stops_it() {
        let mut d = driver(
            "[a]\nioengine=io_uring\niodepth=4\nrw=randread\nmax_latency=100\ntime_based\nruntime=1\nend_fsync=1\n",
        );
        let mut out = Vec::new();
        while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
        assert_eq!(out.len(), 4);
        let fast = d.on_complete(Nanos::from_us(50), Op::Read, 4096, Nanos::from_us(50));
        assert!(fast.counted && fast.failed.is_none());
        let slow = d.on_complete(Nanos::from_us(150), Op::Read, 4096, Nanos::from_us(150));
        assert_eq!(
            (slow.counted, slow.failed),
            (true, Some(Failure::Latency(Nanos::from_us(100)))),
            "the slow one counts, as in fio"
        );
        out.clear();
        assert_eq!(d.poll(Nanos::from_us(150), &mut out), Poll::Blocked, "nothing more is issued, no flush either");
        assert!(out.is_empty());
        assert!(
            !d.on_complete(Nanos::from_us(160), Op::Read, 4096, Nanos::ZERO).counted,
            "what completes after counts no more"
        );
        d.on_complete(Nanos::from_us(170), Op::Read, 4096, Nanos::ZERO);
        assert_eq!(d.poll(Nanos::from_us(170), &mut out), Poll::Finished);
        assert_eq!(d.finished_at(), Some(Nanos::from_us(150)), "its runtime ends with the failure");
    }

    /// Runs `d` against a device where a request takes 100 us per request in flight when
    /// it was issued; returns the completions' outcomes and the most in flight beyond the
    /// depth the driver had then.
    fn run_against_queueing_device(d: &mut JobDriver) -> (Vec<Completed>, u32) {
        let mut due: std::collections::BinaryHeap<std::cmp::Reverse<(Nanos, Nanos)>> = Default::default();
        let (mut now, mut out, mut outcomes, mut excess) = (Nanos::ZERO, Vec::new(), Vec::new(), 0);
        loop {
            out.clear();
            match d.poll(now, &mut out) {
                Poll::Finished => return (outcomes, excess),
                Poll::Ready => {
                    for _ in &out {
                        due.push(std::cmp::Reverse((now + Nanos::from_us(100 * u64::from(d.inflight())), now)));
                    }
                    excess = excess.max(d.inflight().saturating_sub(d.depth()));
                    continue;
                }
                Poll::WaitUntil(_) | Poll::Blocked | Poll::Held(_) => {}
            }
            let std::cmp::Reverse((at, issued)) = due.pop().expect("blocked with nothing in flight");
            now = at;
            outcomes.push(d.on_complete(now, Op::Read, 4096, now - issued));
        }
    }

    #[test]
    fn latency_target_finds_the_deepest_queue_that_meets_it_then_stops() {
        // 100 us per request in flight: depths up to 10 meet 1 ms
        let mut d = driver("[a]\nioengine=io_uring\niodepth=64\nrw=randread\nlatency_target=1ms\nlatency_window=20ms\ntime_based\nruntime=10\n");
        let (outcomes, excess) = run_against_queueing_device(&mut d);
        assert_eq!(excess, 0, "never more in flight than the depth it issued at");
        assert_eq!(d.latency_depth(), Some(10));
        assert_eq!(
            outcomes.iter().filter(|c| c.restart_stats).count(),
            1,
            "statistics restart once, for the final window"
        );
        assert!(outcomes.iter().all(|c| c.failed.is_none()));
        let end = d.finished_at().unwrap();
        assert!(end < Nanos::from_secs(1), "it stops once the final window held, long before runtime: {end}");
        assert!(d.ramp_end() > Nanos::ZERO && end - d.ramp_end() >= Nanos::from_ms(20), "the final window is measured");
    }

    #[test]
    fn latency_target_at_depth_one_fails_only_a_hundred_percent_target() {
        // every request takes 100 us at depth 1: a 50 us target cannot be met
        let mut d =
            driver("[a]\nioengine=io_uring\niodepth=8\nrw=randread\nlatency_target=50\ntime_based\nruntime=1\n");
        let (outcomes, _) = run_against_queueing_device(&mut d);
        assert_eq!(
            outcomes.iter().filter_map(|c| c.failed.clone()).collect::<Vec<_>>(),
            [Failure::Latency(Nanos::from_us(50))]
        );
        assert_eq!(d.finished_at(), Some(Nanos::from_us(100)));
        let mut d = driver("[a]\nioengine=io_uring\niodepth=8\nrw=randread\nlatency_target=50\nlatency_percentile=99\nlatency_window=1ms\ntime_based\nruntime=20ms\n");
        let (outcomes, _) = run_against_queueing_device(&mut d);
        assert!(outcomes.iter().all(|c| c.failed.is_none() && !c.restart_stats));
        assert_eq!((d.latency_depth(), d.finished_at()), (Some(1), Some(Nanos::from_ms(20))), "it runs on at depth 1");
    }

    #[test]
    fn cmdprio_bssplit_gives_each_block_size_its_shares_of_priorities() {
        let mut d = driver(
            // norandommap: the random map would cut I/Os short once the region fills up
            "[a]\nioengine=io_uring\niodepth=1\nrw=randread\nnorandommap\nbssplit=64k/40:1m/60\nprioclass=2\nprio=7\n\
             cmdprio_bssplit=64k/25/1/1:64k/75/3/2:1024k/0,1024k/0\ntime_based\nruntime=1\n",
        );
        let (mut out, mut counts) = (Vec::new(), std::collections::HashMap::new());
        for i in 0..20_000u64 {
            out.clear();
            assert_eq!(d.poll(Nanos(i), &mut out), Poll::Ready);
            *counts.entry((out[0].len_bytes, out[0].prio)).or_insert(0u32) += 1;
            d.on_complete(Nanos(i), Op::Read, 4096, Nanos::ZERO);
        }
        let n = |bs: u32, p: IoPrio| f64::from(counts.get(&(bs, p)).copied().unwrap_or(0)) / 20_000.0;
        assert!((n(65_536, IoPrio::rt(1)) - 0.40 * 0.25).abs() < 0.01, "{counts:?}");
        assert!((n(65_536, IoPrio::new(nvsched_core::PrioClass::Idle, 2)) - 0.40 * 0.75).abs() < 0.01, "{counts:?}");
        assert!((n(1 << 20, IoPrio::be(7)) - 0.60).abs() < 0.01, "1 MiB reads keep the job's own: {counts:?}");
        assert_eq!(counts.len(), 3, "{counts:?}");
        // the simple form takes cmdprio_class/cmdprio; and it excludes cmdprio_percentage
        let spec = |extra: &str| {
            let text = format!("[a]\nioengine=io_uring\nrw=randread\nbssplit=4k/50:8k/50\n{extra}");
            parse_job_str(&text, Path::new("t.fio"), &env(), ParseOptions::default()).map(|mut f| f.jobs.remove(0))
        };
        let s = spec("cmdprio_bssplit=8k/100\ncmdprio_class=2\ncmdprio=1\n").unwrap();
        assert_eq!(s.cmdprio_split(Op::Read), [(8192, 100, IoPrio::be(1))]);
        assert_eq!(s.ioprios(), [IoPrio::default(), IoPrio::be(1)]);
        let e = spec("cmdprio_bssplit=8k/100\ncmdprio_percentage=10\n").unwrap_err().to_string();
        assert!(e.contains("exclude each other"), "{e}");
        let e = spec("cmdprio_bssplit=8k/60/1/0:8k/60/2/0\n").unwrap_err().to_string();
        assert!(e.contains("add up to 120%"), "{e}");
    }
}
