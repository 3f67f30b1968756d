//! fio options → [`JobSpec`]: the option table (one entry per option, with its parser and
//! help), `[global]` inheritance, per-direction value lists and cross-option checks.

use crate::buffers::BufferSpec;
use crate::filelock::LockMode;
use crate::gen::SyncRange;
use crate::jobfile::{Environment, JobFileError, Location, RawOption, RawSection};
use crate::steadystate::SteadyStateSpec;
use crate::trace::{load_trace, DeviceMapping, Outside, Trace, TraceFormat};
use crate::units::{parse_bool, parse_int_in, parse_size, parse_size_or_percent, parse_time, KbBase, SizeOrPercent};
use nvsched_core::{IoPrio, LogRequest, Nanos, Op, PrioClass};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `file_service_type`: which of a clone's files the next I/O goes to.
#[derive(Clone, Debug, PartialEq)]
pub enum FileService {
    /// The next file after this many I/Os.
    RoundRobin(u32),
    /// Each file to the end of its region, then the next.
    Sequential,
    /// A file drawn at random after this many I/Os.
    Random(u32),
    /// `zipf`, `pareto` or `normal` (`gauss`): each I/O's file drawn from that
    /// distribution (a zipf, pareto or normal [`Distribution`]), as fio draws it over
    /// the files scaled up by 2^10.
    Skewed(Distribution),
}

impl FileService {
    /// I/Os a file gets before the next is chosen (sequential: until it is done).
    pub fn turn(&self) -> u32 {
        match self {
            FileService::RoundRobin(n) | FileService::Random(n) => *n,
            FileService::Skewed(_) => 1,
            FileService::Sequential => u32::MAX,
        }
    }
}

/// The access pattern of `rw=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    SeqRead,
    SeqWrite,
    SeqTrim,
    RandRead,
    RandWrite,
    RandTrim,
    SeqMixed,
    RandMixed,
    /// `trimwrite`: each block trimmed, then written.
    SeqTrimWrite,
    RandTrimWrite,
}

impl Pattern {
    pub fn is_random(self) -> bool {
        matches!(
            self,
            Pattern::RandRead | Pattern::RandWrite | Pattern::RandTrim | Pattern::RandMixed | Pattern::RandTrimWrite
        )
    }
    /// `trimwrite`, `randtrimwrite`: a trim, then a write of the same blocks.
    pub fn is_trimwrite(self) -> bool {
        matches!(self, Pattern::SeqTrimWrite | Pattern::RandTrimWrite)
    }
    pub fn is_mixed(self) -> bool {
        matches!(self, Pattern::SeqMixed | Pattern::RandMixed)
    }
    /// The single operation of a non-mixed pattern.
    pub fn single_op(self) -> Option<Op> {
        match self {
            Pattern::SeqRead | Pattern::RandRead => Some(Op::Read),
            Pattern::SeqWrite | Pattern::RandWrite => Some(Op::Write),
            Pattern::SeqTrim | Pattern::RandTrim => Some(Op::Discard),
            Pattern::SeqMixed | Pattern::RandMixed | Pattern::SeqTrimWrite | Pattern::RandTrimWrite => None,
        }
    }
    pub fn writes(self) -> bool {
        self.is_mixed()
            || self.is_trimwrite()
            || self.single_op() == Some(Op::Write)
            || self.single_op() == Some(Op::Discard)
    }
    pub fn fio_name(self) -> &'static str {
        match self {
            Pattern::SeqRead => "read",
            Pattern::SeqWrite => "write",
            Pattern::SeqTrim => "trim",
            Pattern::RandRead => "randread",
            Pattern::RandWrite => "randwrite",
            Pattern::RandTrim => "randtrim",
            Pattern::SeqMixed => "rw",
            Pattern::RandMixed => "randrw",
            Pattern::SeqTrimWrite => "trimwrite",
            Pattern::RandTrimWrite => "randtrimwrite",
        }
    }
}

/// `filesize`: every file of the job this size, or each a size drawn from `[low, high]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileSize {
    pub low: u64,
    pub high: u64,
}

impl FileSize {
    /// Whether a file already this long is taken as it is (fio keeps a file whose size
    /// lies in the range, and sizes any other anew).
    pub fn holds(&self, file_len: u64) -> bool {
        (self.low..=self.high).contains(&file_len)
    }
}

/// The stream of the generators that draw file sizes from a `filesize` range.
const FILE_SIZE_STREAM: u64 = 0xf11e_5123;

/// Block sizes of one direction.
#[derive(Clone, Debug, PartialEq)]
pub enum BlockSizes {
    Fixed(u32),
    /// Uniform multiple of `min` in `[min, max]` (`bsrange`).
    Range {
        min: u32,
        max: u32,
    },
    /// Weighted sizes (`bssplit`); weights are percentages and sum to 100.
    Split(Vec<(u32, f64)>),
}

impl BlockSizes {
    pub fn min(&self) -> u32 {
        match self {
            BlockSizes::Fixed(b) => *b,
            BlockSizes::Range { min, .. } => *min,
            BlockSizes::Split(v) => v.iter().map(|(b, _)| *b).min().unwrap_or(4096),
        }
    }
    pub fn max(&self) -> u32 {
        match self {
            BlockSizes::Fixed(b) => *b,
            BlockSizes::Range { max, .. } => *max,
            BlockSizes::Split(v) => v.iter().map(|(b, _)| *b).max().unwrap_or(4096),
        }
    }
    /// fio's "(R) 4096B-4096B" notation.
    pub fn describe(&self) -> String {
        format!("{}B-{}B", self.min(), self.max())
    }
}

/// What `thinktime_blocks` counts (fio's `thinktime_blocks_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThinktimeCounts {
    /// I/Os completed since the last pause (fio's default): an engine that queues keeps
    /// issuing until that many have come back, checking after each issue (after the
    /// reaping a full queue forces), and what completes while the job waits for the rest
    /// before its pause counts toward the next one, as in fio's handle_thinktime.
    Completed,
    /// I/Os issued since the last pause.
    Issued,
}

/// `random_distribution=`.
#[derive(Clone, Debug, PartialEq)]
pub enum Distribution {
    Uniform,
    Zipf {
        theta: f64,
        center: f64,
    },
    Pareto {
        h: f64,
        center: f64,
    },
    /// `dev_pct` is fio's deviation in percent of the region.
    Normal {
        dev_pct: f64,
        center: f64,
    },
    /// fio's `zoned`/`zoned_abs`: (share of accesses in percent, zone size) per zone, the
    /// zones laid one after another from the start of the region, uniform within each.
    Zoned(Vec<(f64, ZoneSize)>),
}

/// Synchronous engines have one request outstanding; asynchronous ones up to `iodepth`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    Sync,
    Async,
}

/// fio's `unified_rw_reporting`: how a job's report shows its directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnifiedRw {
    /// Reads, writes and trims apart.
    None,
    /// One "mixed" direction, their sum.
    Mixed,
    /// Apart, and their sum as "mixed" after them.
    Both,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMode {
    None,
    /// O_SYNC
    Sync,
    /// O_DSYNC
    Dsync,
}

/// The size of one zone of a `zoned` (percent of the region) or `zoned_abs` (bytes)
/// distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ZoneSize {
    Percent(f64),
    Bytes(u64),
    /// What the zones before it leave of the region (an empty last size).
    Rest,
}

/// Which jobs a finishing `exitall` job stops (fio's `exit_what`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitWhat {
    /// The other jobs of its reporting group (fio's default).
    Group,
    /// Every job running now, across groups; the next stonewalled jobs then start.
    Stonewall,
    /// Every job: those after a later stonewall never run (reported with no I/O).
    All,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateProcess {
    Linear,
    Poisson,
}

/// One job section, inherited globals applied and checked. Clones (`numjobs`) share it.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    pub name: String,
    pub at: Location,
    pub description: Option<String>,
    pub pattern: Pattern,
    /// `rw=PATTERN:N`: bytes added after each sequential I/O (negative: backwards), or
    /// for random patterns the I/Os per random offset; 0 without.
    pub rw_modifier: i64,
    /// `rw_sequencer=identical`: a random pattern's `:N` repeats each random offset N
    /// times instead of going on sequentially from it.
    pub rw_identical: bool,
    pub rwmix_read_pct: u32,
    /// Indexed by [`Op::index`]: read, write, trim.
    pub bs: [BlockSizes; 3],
    /// `blockalign`: boundary of random offsets (default: the smallest block size).
    pub blockalign: Option<u32>,
    /// `bs_is_seq_rand`: `bs`'s read entry sizes sequential I/O and its write entry random
    /// I/O, whatever the direction.
    pub bs_is_seq_rand: bool,
    /// `iodepth` as the job gave it, which fio reports (`iodepth=8` in its header and
    /// `latency_depth` even where a synchronous engine caps the queue at 1); the depth
    /// the job queues at is [`JobSpec::queue_depth`].
    pub iodepth: u32,
    pub iodepth_batch_submit: u32,
    /// `iodepth_low`: once `iodepth` requests are out, issue again only when no more than
    /// this many are (0, the default, or `iodepth` and above: keep the queue full).
    pub iodepth_low: u32,
    /// `iodepth_batch_complete_min`: a full queue waits for at least this many
    /// completions at a time (0 or 1: one).
    pub iodepth_batch_complete_min: u32,
    pub ioengine: String,
    pub engine_kind: EngineKind,
    pub direct: bool,
    pub sync_mode: SyncMode,
    pub fsync_every: u32,
    pub fdatasync_every: u32,
    /// `sync_file_range=FLAGS:N`: after every N writes, sync the range written since the
    /// last sync with these flags (instead of an fsync).
    pub sync_file_range: Option<(SyncRange, u32)>,
    /// `end_fsync`: flush once a pass's writes are done (fio does not count it in the
    /// statistics, but the job's runtime includes it).
    pub end_fsync: bool,
    /// `fsync_on_close`: the same flush at the end of a pass (fio issues it for either).
    pub fsync_on_close: bool,
    pub numjobs: u32,
    /// `thread`: fio runs the clones as threads rather than processes, which only its
    /// "Starting" line shows.
    pub thread: bool,
    pub size: Option<SizeOrPercent>,
    /// `io_size`: bytes, or a share of the job's size (its region).
    pub io_size: Option<SizeOrPercent>,
    pub offset: SizeOrPercent,
    /// Clone i starts at offset + i * offset_increment (bytes, or a percentage of the file).
    pub offset_increment: SizeOrPercent,
    /// `offset_align`: what a percentage `offset` is aligned up to; 0: the smallest block.
    pub offset_align: u64,
    /// `filesize`: each file's size, fixed or drawn per file from a range; `size` is then
    /// the I/O amount, capped at the files' total.
    pub filesize: Option<FileSize>,
    /// 0 = no limit
    pub runtime: Nanos,
    pub time_based: bool,
    pub ramp_time: Nanos,
    /// Delay before the job starts (within its group).
    pub startdelay: Nanos,
    pub thinktime: Nanos,
    /// `thinktime_blocks`: I/Os between pauses (fio waits for them to complete first).
    pub thinktime_blocks: u32,
    /// `thinktime_blocks_type`: whether `thinktime_blocks` counts completed I/Os (fio's
    /// default) or issued ones.
    pub thinktime_counts: ThinktimeCounts,
    /// `thinktime_iotime`: a pause also comes after issuing for this long (0: not by time).
    pub thinktime_iotime: Nanos,
    /// `thinktime_spin`: the part of the pause fio spends spinning (the pause is
    /// `thinktime` all the same).
    pub thinktime_spin: Nanos,
    /// `rate_ignore_thinktime`: after a pause, rate pacing goes on from where it was
    /// instead of catching up.
    pub rate_ignore_thinktime: bool,
    /// `bwavgtime` and `iopsavgtime`: the windows bandwidth and IOPS samples average over.
    pub bw_avg_time: Nanos,
    pub iops_avg_time: Nanos,
    /// `flow`: weight among the jobs of its `flow_id` (0: no flow control).
    pub flow: u32,
    pub flow_id: u32,
    /// `lockfile`: how clones of synchronous engines that share a file take turns on it.
    pub lockfile: LockMode,
    /// `flow_sleep`: held back by flow control, let what is out complete and sleep this
    /// long before looking again (0: wait until another job of the group issues).
    pub flow_sleep: Nanos,
    /// `number_ios`: I/Os per loop (0: no such limit); a time-based job loops on.
    pub number_ios: u64,
    /// `loops`: passes over the job's size (not time based).
    pub loops: u32,
    /// bytes/s per direction, 0 = unlimited
    pub rate_bps: [u64; 3],
    pub rate_iops: [u64; 3],
    pub rate_process: RateProcess,
    pub prio: Option<u8>,
    pub prioclass: Option<u8>,
    /// `cmdprio_percentage`: % of reads and of writes issued with `cmdprio_class`/`cmdprio`.
    pub cmdprio_pct: [u8; 2],
    pub cmdprio_class: [u8; 2],
    pub cmdprio_level: [u8; 2],
    /// `cmdprio_bssplit`, for reads and for writes: the share of I/Os of each block size
    /// that go out at another priority (in place of `cmdprio_percentage`).
    pub cmdprio_bssplit: [Vec<BsPrio>; 2],
    pub nice: i8,
    pub cgroup: Option<String>,
    pub cgroup_weight: u32,
    pub stonewall: bool,
    /// `wait_for`: the name of an earlier job whose clones must all finish before this
    /// job starts.
    pub wait_for: Option<String>,
    /// `exitall`: when this job finishes, the jobs `exit_what` names stop.
    pub exitall: bool,
    pub exit_what: ExitWhat,
    /// `exitall_on_error`: when this job fails, every running job stops.
    pub exitall_on_error: bool,
    pub new_group: bool,
    pub group_reporting: bool,
    /// `stats=0`: the job runs but is left out of the report (e.g. a fill before the
    /// measured jobs).
    pub stats: bool,
    /// `unified_rw_reporting`: how the report shows the directions.
    pub unified_rw_reporting: UnifiedRw,
    pub percentile_list: Vec<f64>,
    /// Decimals the normal output shows of each percentile: the most any entry of
    /// `percentile_list` was written with (2 for the default list), as fio prints them.
    pub percentile_precision: u8,
    /// Which latencies get percentiles in the report (fio's defaults: completion only).
    pub slat_percentiles: bool,
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub distribution: Distribution,
    pub norandommap: bool,
    /// `percentage_random`: of a random pattern's offsets, the % drawn at random per
    /// direction (read, write, trim); the rest continue from the last I/O (100: all random).
    pub percentage_random: [u8; 3],
    pub randseed: u64,
    pub randrepeat: bool,
    pub filename: Option<String>,
    /// `filename=a:b:c`: the names after the first (each clone works on every one).
    pub more_filenames: Vec<String>,
    /// `opendir`: every regular file below this directory joins the job's files.
    pub opendir: Option<String>,
    /// `unit_base=1`: the normal output's bandwidth in bits.
    pub bandwidth_in_bits: bool,
    /// `nrfiles`: files per clone when the names are generated (`NAME.CLONE.FILENUM`).
    pub nrfiles: u32,
    /// `file_service_type`: how a clone with several files picks the next one.
    pub file_service: FileService,
    /// `openfiles`: how many of a clone's files are open at once (0: all). fio opens
    /// them in order and the next when one is done, so I/O goes round the open ones.
    pub openfiles: u32,
    /// `directory`: prefixes of the job's file names (fio's `a:b` list).
    pub directory: Vec<String>,
    pub kb_base: KbBase,
    /// nvsched extension: the simulated drive's state before the run.
    pub precondition: Option<String>,
    /// `ioscheduler`: the policy in front of the device (fio switches the kernel's
    /// scheduler; nvsched runs the policy of that name). Checked by the caller, which
    /// knows the policies.
    pub ioscheduler: Option<String>,
    /// Where each option was last set (`[global]`'s lines included): errors found after
    /// parsing (an unknown policy, jobs that disagree) point at the option's line.
    pub option_lines: BTreeMap<&'static str, Location>,
    /// `verify=crc32c`: written blocks carry a checked header (real devices only).
    pub verify: bool,
    /// What verified blocks hold: `verify_interval`, `verify_pattern`, `verify=pattern`.
    pub verify_format: VerifyFormat,
    /// Read back and check what was written after the writes (fio's default 1).
    pub do_verify: bool,
    /// Only check the headers written by an earlier run; issue no workload.
    pub verify_only: bool,
    /// `verify_fatal`: the verify phase stops checking a job's blocks at its first bad one.
    pub verify_fatal: bool,
    /// `verify_backlog`: after this many writes (0: none), the job lets them land and
    /// reads back `verify_backlog_batch` of its oldest written blocks (0: as many).
    pub verify_backlog: u32,
    pub verify_backlog_batch: u32,
    /// `create_only`: the job's files are laid out (and kept, as fio keeps them) and the
    /// job issues nothing.
    pub create_only: bool,
    /// `file_append`: each regular file's region starts at its end as the run finds it
    /// (0 for a file the run creates), whatever `offset` says, and is `size` bytes long,
    /// so the job grows the file, as fio's get_start_offset does.
    pub file_append: bool,
    /// `overwrite`: fio writes a new file out in full before a job that only writes
    /// (without it, and for a job that reads either way, see `lays_out_data`).
    pub overwrite: bool,
    /// `fallocate` gives a new file its size when fio only allocates it (any mode but
    /// `none`, `0` and `keep`, which leave it empty, so the next job on it extends it).
    pub fallocate_sizes_file: bool,
    /// `fill_device` (`fill_fs`): the job writes until its file system (or device) is
    /// full, an ENOSPC that ends the job without an error. Without a size, its file
    /// takes the free space: on a real file system what `statvfs` says is free, in
    /// simulation what the other files leave of the device.
    pub fill_device: bool,
    /// `write_hint`: the write lifetime hint (`RWH_WRITE_LIFE_*`, 1 none to 5 extreme) set
    /// on the job's files with `F_SET_RW_HINT` (real devices).
    pub write_hint: Option<u64>,
    /// `serialize_overlap`: an I/O that overlaps one of the job's I/Os in flight waits
    /// until that one completes (fio's rule: only for jobs that write or trim with
    /// `iodepth` > 1, or that replay a trace).
    pub serialize_overlap: bool,
    /// `exec_prerun` / `exec_postrun`: shell commands run before and after the job's I/O
    /// (real devices), their output saved in `NAME.prerun.txt` / `NAME.postrun.txt`.
    pub exec_prerun: Option<String>,
    pub exec_postrun: Option<String>,
    /// `allow_file_create=0`: a file that does not exist is an error, not laid out.
    pub allow_file_create: bool,
    /// `log_alternate_epoch` and `log_alternate_epoch_clock_id` as given (in any order);
    /// `logs.alternate_clock` holds what they mean.
    pub log_alternate_epoch: bool,
    pub log_alternate_clock_id: i32,
    /// `sqthread_poll`: the kernel polls the submission queue (IORING_SETUP_SQPOLL), with
    /// its thread on `sqthread_poll_cpu` if given (real devices; the ring is shared by
    /// every job, so the jobs must agree).
    pub sqthread_poll: bool,
    pub sqthread_poll_cpu: Option<u32>,
    /// `force_async=N`: every Nth submission of the job goes to the kernel's async
    /// workers (IOSQE_ASYNC) instead of being tried inline first (0: none; real devices).
    pub force_async: u32,
    /// `nowait`: reads and writes carry RWF_NOWAIT, failing with EAGAIN where they would
    /// block (real devices; io_uring and pvsync2).
    pub nowait: bool,
    /// `invalidate`: drop the files' cached pages before the run (real devices; on by
    /// default, as in fio).
    pub invalidate: bool,
    /// What the job's writes carry (`zero_buffers`, `buffer_pattern`, ...; real devices).
    pub buffers: BufferSpec,
    /// `filename_format`: how a job without `filename` names its clones' files.
    pub filename_format: Option<String>,
    /// `significant_figures` of the normal output's IOPS, bandwidth and sizes (1-10).
    pub significant_figures: u8,
    /// `continue_on_error` and `ignore_error`: which failed I/Os the job goes on after.
    pub on_error: crate::errors::ErrorPolicy,
    /// The job's own option lines as written (fio's "job options").
    pub job_options: OptionsAsWritten,
    /// fio-style log files (`write_lat_log`, `write_bw_log`, `write_iops_log`).
    pub logs: LogRequest,
    /// `read_iolog` and the `replay_*` options: a trace replayed instead of `rw`/`bs`.
    pub replay: ReplaySpec,
    /// `write_iolog`: where the job's issued I/Os are logged as fio's iolog.
    pub write_iolog: Option<String>,
    /// fio's latency-target profiling (`latency_target` and its companions).
    pub latency: LatencyTargetSpec,
    /// `max_latency`: a request slower than this (issue to completion) fails the job
    /// with ETIMEDOUT, as in fio; zero: no limit.
    pub max_latency: Nanos,
    /// `steadystate`, `ss_dur`, `ss_ramp`: end the job once its throughput is steady.
    pub steadystate: SteadyStateSpec,
    /// `zonemode=strided` with `zonesize`, `zonerange`, `zoneskip`.
    pub zones: ZoneSpec,
    /// `rate_min` (bytes/s) and `rate_iops_min` per direction: a job slower than this
    /// over a `rate_cycle` fails (fio's EIO), after 2 s to settle; 0: no minimum.
    pub rate_min_bps: [u64; 3],
    pub rate_iops_min: [u64; 3],
    pub rate_cycle: Nanos,
}

/// fio's strided zones: I/O stays in a zone of `range` bytes until `size` bytes have
/// been transferred, then moves on by `range + skip` (back to the start at the end).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneSpec {
    /// `zonemode=strided`.
    pub strided: bool,
    /// `zonesize`: bytes transferred per zone.
    pub size: u64,
    /// `zonerange`: the zone's length (default: `zonesize`).
    pub range: u64,
    /// `zoneskip`: bytes left out after each zone.
    pub skip: u64,
}

/// fio's latency-target profiling: the job searches for the highest depth (up to
/// `iodepth`) at which `percentile`% of its requests complete within `target`.
#[derive(Clone, Debug, PartialEq)]
pub struct LatencyTargetSpec {
    /// `latency_target`, issue to completion; zero: no search, the job runs at `iodepth`.
    pub target: Nanos,
    /// `latency_window`: how long each depth is tried before it is judged.
    pub window: Nanos,
    /// `latency_percentile`: the share of requests that must meet the target (default 100).
    pub percentile: f64,
    /// `latency_run`: keep adjusting the depth for the whole run instead of stopping once
    /// a depth has held through a final window.
    pub keep_running: bool,
}

/// One entry of `cmdprio_bssplit`: `pct`% of the I/Os of `bs` bytes go out at `prio`
/// (`None`: `cmdprio_class`/`cmdprio`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BsPrio {
    pub bs: u32,
    pub pct: u8,
    pub prio: Option<IoPrio>,
}

/// How a job replays a block trace.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplaySpec {
    /// `read_iolog`, as written (relative paths are relative to the job file).
    pub read_iolog: Option<String>,
    /// `trace_format`; `None` detects it.
    pub format: Option<TraceFormat>,
    /// `replay_no_stall`: ignore the trace's times, issue as fast as `iodepth` allows.
    pub no_stall: bool,
    /// `replay_time_scale`: 200 replays twice as fast.
    pub time_scale_pct: u32,
    /// `replay_skip`: directions left out, by [`Op::index`].
    pub skip: [bool; 4],
    pub devices: DeviceMapping,
    pub outside: Outside,
    /// `replay_scale`: the trace's offsets are divided by this.
    pub offset_divisor: u64,
    /// `replay_align`: and then aligned down to this many bytes.
    pub align_bytes: u64,
    /// `replay_ioprio`: requests keep the priority the trace gives them (else the job's).
    pub trace_ioprio: bool,
    /// `merge_blktrace_file`: `read_iolog` names blktraces separated by `:`, merged into
    /// one written here (relative to the working directory) when the job starts.
    pub merge_file: Option<String>,
    /// `merge_blktrace_scalars`: per input, its times in percent (empty: all 100).
    pub merge_scalars_pct: Vec<u64>,
    /// `merge_blktrace_iters`: per input, how many times it is laid end to end (empty: 1).
    pub merge_iterations: Vec<u32>,
    /// The merged blktrace, to be written to `merge_file` (what the job replays).
    pub merged: Option<Arc<Vec<u8>>>,
    /// The trace, read once the job's options are all known.
    pub trace: Option<Arc<Trace>>,
}

impl ReplaySpec {
    /// When a record `at_ns` after the trace's first is due, after the replay's start: at
    /// the trace's pace scaled by `replay_time_scale`, or at once (`replay_no_stall`).
    pub fn due_ns(&self, at_ns: u64) -> u64 {
        if self.no_stall {
            0
        } else if self.time_scale_pct == 100 {
            at_ns
        } else {
            (at_ns as u128 * 100 / u128::from(self.time_scale_pct)) as u64
        }
    }
}

/// fio's default percentile list.
pub const DEFAULT_PERCENTILES: [f64; 17] =
    [1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99];

/// fio's default `randseed`.
pub const DEFAULT_RANDSEED: u64 = 0x89;

impl JobSpec {
    /// Where clone `clone` logs its issued I/Os (`write_iolog`): the name as given, with
    /// `.CLONE` added when the job has several clones.
    pub fn write_iolog_path(&self, clone: u32) -> Option<String> {
        let name = self.write_iolog.as_ref()?;
        Some(if self.numjobs > 1 { format!("{name}.{clone}") } else { name.clone() })
    }

    /// The trace this job replays, if any.
    pub fn trace(&self) -> Option<&Arc<Trace>> {
        self.replay.trace.as_ref()
    }

    /// The line that last set `option`, else the job's section header.
    pub fn option_line(&self, option: &str) -> &Location {
        self.option_lines.get(option).unwrap_or(&self.at)
    }

    /// Where the job asks for buffered I/O (`direct=0` or `buffered=1`), if it says so
    /// (fio's default is buffered too, but only a job that says so is warned about).
    pub fn buffered_by_option(&self) -> Option<&Location> {
        if self.direct {
            return None;
        }
        ["direct", "buffered"].into_iter().find_map(|o| self.option_lines.get(o))
    }

    fn defaults(at: Location) -> JobSpec {
        JobSpec {
            name: String::new(),
            at,
            description: None,
            pattern: Pattern::SeqRead,
            rw_modifier: 0,
            rw_identical: false,
            rwmix_read_pct: 50,
            bs: [BlockSizes::Fixed(4096), BlockSizes::Fixed(4096), BlockSizes::Fixed(4096)],
            blockalign: None,
            bs_is_seq_rand: false,
            iodepth: 1,
            iodepth_batch_submit: 1,
            iodepth_low: 0,
            iodepth_batch_complete_min: 1,
            ioengine: "psync".into(),
            engine_kind: EngineKind::Sync,
            direct: false,
            sync_mode: SyncMode::None,
            fsync_every: 0,
            fdatasync_every: 0,
            sync_file_range: None,
            end_fsync: false,
            fsync_on_close: false,
            numjobs: 1,
            thread: false,
            size: None,
            io_size: None,
            offset: SizeOrPercent::Bytes(0),
            offset_increment: SizeOrPercent::Bytes(0),
            offset_align: 0,
            filesize: None,
            runtime: Nanos::ZERO,
            time_based: false,
            ramp_time: Nanos::ZERO,
            startdelay: Nanos::ZERO,
            thinktime: Nanos::ZERO,
            thinktime_blocks: 1,
            thinktime_counts: ThinktimeCounts::Completed,
            thinktime_iotime: Nanos::ZERO,
            thinktime_spin: Nanos::ZERO,
            rate_ignore_thinktime: false,
            bw_avg_time: Nanos::from_ms(500),
            iops_avg_time: Nanos::from_ms(500),
            flow: 0,
            flow_id: 0,
            lockfile: LockMode::None,
            flow_sleep: Nanos::ZERO,
            number_ios: 0,
            loops: 1,
            rate_bps: [0; 3],
            rate_iops: [0; 3],
            rate_process: RateProcess::Linear,
            prio: None,
            prioclass: None,
            cmdprio_pct: [0; 2],
            // fio: the highest class (real-time), level 0
            cmdprio_class: [1; 2],
            cmdprio_level: [0; 2],
            cmdprio_bssplit: [Vec::new(), Vec::new()],
            nice: 0,
            cgroup: None,
            cgroup_weight: 100,
            stonewall: false,
            wait_for: None,
            exitall: false,
            exitall_on_error: false,
            exit_what: ExitWhat::Group,
            new_group: false,
            group_reporting: false,
            stats: true,
            unified_rw_reporting: UnifiedRw::None,
            percentile_list: DEFAULT_PERCENTILES.to_vec(),
            percentile_precision: 2,
            slat_percentiles: false,
            clat_percentiles: true,
            lat_percentiles: false,
            distribution: Distribution::Uniform,
            norandommap: false,
            percentage_random: [100; 3],
            randseed: DEFAULT_RANDSEED,
            randrepeat: true,
            filename: None,
            more_filenames: Vec::new(),
            opendir: None,
            bandwidth_in_bits: false,
            nrfiles: 1,
            file_service: FileService::RoundRobin(1),
            openfiles: 0,
            directory: Vec::new(),
            kb_base: KbBase::Binary,
            precondition: None,
            ioscheduler: None,
            option_lines: BTreeMap::new(),
            verify: false,
            do_verify: true,
            verify_only: false,
            verify_fatal: false,
            verify_backlog: 0,
            verify_backlog_batch: 0,
            serialize_overlap: false,
            create_only: false,
            file_append: false,
            overwrite: false,
            fallocate_sizes_file: true,
            verify_format: VerifyFormat::default(),
            fill_device: false,
            write_hint: None,
            exec_prerun: None,
            exec_postrun: None,
            allow_file_create: true,
            log_alternate_epoch: false,
            log_alternate_clock_id: 0,
            sqthread_poll: false,
            sqthread_poll_cpu: None,
            force_async: 0,
            nowait: false,
            invalidate: true,
            buffers: BufferSpec::default(),
            filename_format: None,
            significant_figures: 4,
            on_error: crate::errors::ErrorPolicy::default(),
            job_options: Vec::new(),
            logs: LogRequest::default(),
            replay: ReplaySpec {
                read_iolog: None,
                format: None,
                no_stall: false,
                time_scale_pct: 100,
                skip: [false; 4],
                devices: DeviceMapping::Split,
                outside: Outside::Drop,
                offset_divisor: 1,
                align_bytes: 512,
                trace_ioprio: false,
                merge_file: None,
                merge_scalars_pct: Vec::new(),
                merge_iterations: Vec::new(),
                merged: None,
                trace: None,
            },
            write_iolog: None,
            latency: LatencyTargetSpec {
                target: Nanos::ZERO,
                window: Nanos::ZERO,
                percentile: 100.0,
                keep_running: false,
            },
            max_latency: Nanos::ZERO,
            steadystate: SteadyStateSpec::default(),
            zones: ZoneSpec::default(),
            rate_min_bps: [0; 3],
            rate_iops_min: [0; 3],
            rate_cycle: Nanos::from_ms(1000),
        }
    }

    /// The ioprio requests of this job carry: a level without a class means best-effort
    /// (as fio does); a class without a level means level 0.
    pub fn ioprio(&self) -> IoPrio {
        match (self.prioclass, self.prio) {
            (None, None) => IoPrio::default(),
            (None, Some(level)) => IoPrio::be(level),
            (Some(class), level) => {
                IoPrio::new(PrioClass::from_number(class).unwrap_or(PrioClass::None), level.unwrap_or(0))
            }
        }
    }

    /// For reads (`Op::Read`) and writes: the share of I/Os, in %, issued with another
    /// priority than [`ioprio`](Self::ioprio), and that priority (fio's `cmdprio_*`).
    pub fn cmdprio(&self, op: Op) -> Option<(u8, IoPrio)> {
        let d = op.data_index()?;
        let pct = self.cmdprio_pct[d];
        (pct > 0).then(|| (pct, self.cmdprio_prio(d)))
    }

    /// `cmdprio_bssplit`'s entries for direction `op`, their priority resolved (empty
    /// without the option).
    pub fn cmdprio_split(&self, op: Op) -> Vec<(u32, u8, IoPrio)> {
        let Some(d) = op.data_index() else { return Vec::new() };
        let simple = self.cmdprio_prio(d);
        self.cmdprio_bssplit[d].iter().filter(|e| e.pct > 0).map(|e| (e.bs, e.pct, e.prio.unwrap_or(simple))).collect()
    }

    /// `cmdprio_class`/`cmdprio` for direction index `d` (real-time by default, as fio).
    fn cmdprio_prio(&self, d: usize) -> IoPrio {
        let class = PrioClass::from_number(self.cmdprio_class[d]).unwrap_or(PrioClass::RealTime);
        IoPrio::new(class, self.cmdprio_level[d])
    }

    /// Every priority this job's I/Os can carry.
    pub fn ioprios(&self) -> Vec<IoPrio> {
        let mut all = vec![self.ioprio()];
        for op in [Op::Read, Op::Write] {
            for (_, _, p) in self.cmdprio_split(op) {
                if !all.contains(&p) {
                    all.push(p);
                }
            }
        }
        if let Some(t) = self.trace().filter(|_| self.replay.trace_ioprio) {
            all.extend(t.prios.iter().filter(|p| **p != self.ioprio()));
        }
        for op in [Op::Read, Op::Write] {
            if let Some((_, p)) = self.cmdprio(op) {
                if !all.contains(&p) {
                    all.push(p);
                }
            }
        }
        all
    }

    /// Smallest block size over the directions this job issues: the alignment of
    /// random offsets (fio's `blockalign` default).
    /// The block-size settings the job draws from: those of its directions, or with
    /// `bs_is_seq_rand` the read (sequential) and write (random) entries.
    fn block_sizes_used(&self) -> impl Iterator<Item = &BlockSizes> + '_ {
        let by_direction = (!self.bs_is_seq_rand).then(|| self.active_ops().map(|op| &self.bs[op.index()]));
        let seq_rand = self.bs_is_seq_rand.then(|| [&self.bs[Op::Read.index()], &self.bs[Op::Write.index()]]);
        by_direction.into_iter().flatten().chain(seq_rand.into_iter().flatten())
    }

    pub fn min_bs(&self) -> u32 {
        self.block_sizes_used().map(BlockSizes::min).min().unwrap_or(4096)
    }

    /// Where random offsets fall: multiples of `blockalign`, else of the smallest block.
    pub fn random_align(&self) -> u32 {
        self.blockalign.unwrap_or_else(|| self.min_bs())
    }

    pub fn max_bs(&self) -> u32 {
        match self.trace() {
            Some(t) => t.max_len_bytes.max(512),
            None => self.block_sizes_used().map(BlockSizes::max).max().unwrap_or(4096),
        }
    }

    /// The data directions this job issues (a replay: those in its trace and not skipped).
    pub fn active_ops(&self) -> impl Iterator<Item = Op> + '_ {
        [Op::Read, Op::Write, Op::Discard].into_iter().filter(move |&op| match self.trace() {
            Some(t) => t.has_op[op.index()] && !self.replay.skip[op.index()],
            None => match self.pattern.single_op() {
                Some(only) => only == op,
                None if self.pattern.is_trimwrite() => op != Op::Read,
                None => op.is_data(),
            },
        })
    }

    /// Whether fio lays a new regular file of this job out with data before it starts:
    /// for a job that reads, or that writes with `overwrite` and does not append (fio's
    /// extend_file); not for one that only writes, whose file is only allocated and so
    /// holds no data yet.
    pub fn lays_out_data(&self) -> bool {
        let ops = || self.active_ops();
        ops().any(|op| op == Op::Read) || (self.overwrite && !self.file_append && ops().any(|op| op == Op::Write))
    }

    /// Whether the job writes data (a safety question on real devices).
    pub fn writes_data(&self) -> bool {
        self.active_ops().any(|op| op != Op::Read)
    }

    /// Bytes the job's file needs for its replay when no size is given: every trace
    /// device's furthest request fits.
    pub fn replay_bytes(&self) -> Option<u64> {
        let t = self.trace()?;
        (self.size.is_none() && self.filesize.is_none()).then(|| t.needed_bytes(self.replay.devices))
    }

    /// Where clone `clone`'s region starts in a file of `file_len` bytes: `offset` plus
    /// `clone` times `offset_increment`, either a percentage of the file; with one, the
    /// sum is aligned up to `offset_align`, or to the smallest block, as fio's
    /// get_start_offset aligns it.
    pub fn clone_offset(&self, clone: u32, file_len: u64) -> u64 {
        let offset = self.offset.resolve(file_len) + self.offset_increment.resolve(file_len) * u64::from(clone);
        if matches!(self.offset, SizeOrPercent::Bytes(_)) && matches!(self.offset_increment, SizeOrPercent::Bytes(_)) {
            return offset;
        }
        let align = if self.offset_align > 0 { self.offset_align } else { u64::from(self.min_bs()) }.max(1);
        offset.div_ceil(align) * align
    }

    /// Clone `clone`'s region in file `filenum` of `file_len` bytes: from
    /// [`clone_offset`] for `size` bytes (or N% of the file), cut at the file's end. With
    /// `filesize`, the region is the file from the offset (fio's io_size of each file: a
    /// length outside `filesize`'s range is taken as the file's drawn size) and `size`
    /// only counts the job's bytes.
    ///
    /// [`clone_offset`]: JobSpec::clone_offset
    pub fn clone_region(
        &self,
        clone: u32,
        filenum: u32,
        file_name: &str,
        file_len: u64,
    ) -> Result<crate::Region, String> {
        let offset = self.clone_offset(clone, file_len);
        if offset >= file_len {
            return Err(format!(
                "job '{}' ({}): offset {offset} is beyond the end of '{file_name}' ({file_len} bytes)",
                self.name, self.at
            ));
        }
        let bs = u64::from(self.min_bs()).max(1);
        let len = match (self.filesize, self.size_per_file()) {
            (Some(fs), size) => {
                let file = if fs.holds(file_len) { file_len } else { self.drawn_file_size(fs, clone, filenum) };
                match size {
                    // fio takes a percentage size of each file's io_size
                    Some(percent @ SizeOrPercent::Percent(_)) => percent.resolve(file.saturating_sub(offset)),
                    _ => file.saturating_sub(offset),
                }
            }
            (None, None) => file_len - offset,
            (None, Some(SizeOrPercent::Bytes(b))) => b,
            // fio rounds a percentage of the file down to whole (smallest) blocks
            (None, Some(percent)) => percent.resolve(file_len) / bs * bs,
        }
        .min(file_len - offset);
        Ok(crate::Region { start: offset, len })
    }

    /// Clone `clone`'s region in file `filenum`, which held `len_before` bytes before the
    /// run and holds `file_len` now: [`clone_region`]'s, or with `file_append` (a
    /// regular file, not a block device) `size` bytes from where the file ended.
    ///
    /// [`clone_region`]: JobSpec::clone_region
    pub fn region_in(
        &self,
        clone: u32,
        filenum: u32,
        file_name: &str,
        regular_file: bool,
        len_before: u64,
        file_len: u64,
    ) -> Result<crate::Region, String> {
        if !(self.file_append && regular_file) {
            return self.clone_region(clone, filenum, file_name, file_len);
        }
        let len = match self.size_per_file() {
            Some(SizeOrPercent::Bytes(b)) => b.min(file_len.saturating_sub(len_before)),
            _ => 0,
        };
        if len == 0 {
            return Err(format!(
                "job '{}' ({}): file_append finds no room after the end of '{file_name}' ({file_len} bytes)",
                self.name, self.at
            ));
        }
        Ok(crate::Region { start: len_before, len })
    }

    /// The size of file `filenum` of clone `clone` under `filesize`: fixed, or drawn from
    /// the range (a multiple of the smallest block, as fio draws it) by a generator seeded
    /// with `randseed`, the clone and the file, so the layout does not depend on the run.
    fn drawn_file_size(&self, fs: FileSize, clone: u32, filenum: u32) -> u64 {
        if fs.low == fs.high {
            return fs.low;
        }
        let label = (u64::from(clone) << 32) | u64::from(filenum);
        let mut rng = nvsched_core::SimRng::stream(self.randseed ^ nvsched_core::rng::mix64(FILE_SIZE_STREAM), label);
        let drawn = fs.low + rng.below(fs.high - fs.low);
        let bs = u64::from(self.min_bs()).max(1);
        (drawn - drawn % bs).max(fs.low)
    }

    /// `size` of each of a clone's files: with several, fio divides it among them, to the
    /// byte (`size=100k nrfiles=3` makes three files of 34133 bytes; a block that does not
    /// fit before a file's end is not done).
    fn size_per_file(&self) -> Option<SizeOrPercent> {
        let files = u64::from(self.files_per_clone());
        match self.size? {
            SizeOrPercent::Bytes(b) if files > 1 => Some(SizeOrPercent::Bytes(b / files)),
            other => Some(other),
        }
    }

    /// Bytes file `filenum` of clone `clone` must hold (`filesize`, or the end of its
    /// region; a percentage `size` is of `capacity`, the device's, where one is known).
    /// None when the job gives no size that says.
    pub fn needed_file_bytes(&self, clone: u32, filenum: u32, capacity: Option<u64>) -> Option<u64> {
        if let Some(fs) = self.filesize {
            return Some(self.drawn_file_size(fs, clone, filenum));
        }
        // a percentage offset needs the file's size first: it counts from 0 here; an
        // appending job's region starts at the file's end, which its caller adds
        let offset = if self.file_append { 0 } else { self.clone_offset(clone, 0) };
        if let Some(bytes) = self.replay_bytes() {
            return Some(offset + bytes);
        }
        match self.size_per_file()? {
            SizeOrPercent::Bytes(b) => Some(offset + b),
            SizeOrPercent::Percent(p) => capacity.map(|c| (c as f64 * p / 100.0) as u64),
        }
    }

    /// The (first) file clone `clone` works on, as fio names it: `filename`, or `NAME.CLONE.0`
    /// (`filename_format`, with `$jobname`, `$jobnum`, `$filenum`) when none is given, under `directory` if set (the first one for a `filename`,
    /// round robin over the clones for generated names; absolute names are prefixed too).
    pub fn file_name(&self, clone: u32) -> String {
        self.file_name_of(clone, 0)
    }

    /// How many files each clone works on: `filename=a:b:c`'s names, or `nrfiles`.
    pub fn files_per_clone(&self) -> u32 {
        if self.filename.is_some() {
            1 + self.more_filenames.len() as u32
        } else {
            self.nrfiles
        }
    }

    /// Every (clone, file number) of the job, clone by clone.
    pub fn clone_files(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        (0..self.numjobs).flat_map(move |clone| (0..self.files_per_clone()).map(move |f| (clone, f)))
    }

    /// The name of file `filenum` of clone `clone` (see [`JobSpec::file_name`]).
    pub fn file_name_of(&self, clone: u32, filenum: u32) -> String {
        let given = match filenum {
            0 => self.filename.clone(),
            k => self.more_filenames.get(k as usize - 1).cloned(),
        };
        let name = given.unwrap_or_else(|| match &self.filename_format {
            Some(format) => format
                .replace("$jobname", &self.name)
                .replace("$jobnum", &clone.to_string())
                .replace("$filenum", &filenum.to_string())
                .replace("$clientuid", "0"),
            None => format!("{}.{clone}.{filenum}", self.name),
        });
        if self.directory.is_empty() {
            return name;
        }
        let dir = if self.filename.is_some() { 0 } else { clone as usize % self.directory.len() };
        format!("{}/{}", self.directory[dir].trim_end_matches('/'), name.trim_start_matches('/'))
    }

    /// Whether the job flushes at the end of each pass (`end_fsync`, `fsync_on_close`):
    /// fio does for jobs that write.
    pub fn flushes_at_end(&self) -> bool {
        (self.end_fsync || self.fsync_on_close)
            && !self.create_only
            && !self.verify_only
            && (self.pattern.is_mixed() || self.pattern.is_trimwrite() || self.pattern.single_op() == Some(Op::Write))
    }

    /// Writes carry FUA when the job opens with O_SYNC/O_DSYNC and uses direct I/O.
    /// Which jobs stop as this one finishes, having `failed` or not: `exitall`'s
    /// `exit_what`, or every running job (`exitall_on_error`, for a failure; fio 3.33
    /// still runs the later stonewall groups).
    pub fn exit_on_finish(&self, failed: bool) -> Option<ExitWhat> {
        if self.exitall {
            Some(self.exit_what)
        } else if failed && self.exitall_on_error {
            Some(ExitWhat::Stonewall)
        } else {
            None
        }
    }

    /// Requests out at once: `iodepth`, 1 for a synchronous engine.
    pub fn queue_depth(&self) -> u32 {
        if self.engine_kind == EngineKind::Sync {
            1
        } else {
            self.iodepth
        }
    }
    pub fn writes_fua(&self) -> bool {
        self.sync_mode != SyncMode::None
    }
}

/// Option lines as written, in order: the key and the value after `=` (`None` for a bare
/// flag such as `time_based`, which fio leaves out of its JSON "job options").
pub type OptionsAsWritten = Vec<(String, Option<String>)>;

/// A parsed job file.
#[derive(Clone, Debug, PartialEq)]
pub struct JobFile {
    pub jobs: Vec<JobSpec>,
    /// Options set in `[global]` sections, as written (fio's "global options").
    pub global_options: OptionsAsWritten,
    /// Options accepted with a caveat or ignored (with `ignore_unsupported`).
    pub warnings: Vec<String>,
}

impl JobFile {
    /// What a simulated run leaves out of these jobs, one warning each: the shell
    /// commands of `exec_prerun` and `exec_postrun`, which only real-device runs execute,
    /// `sqthread_poll`, which the host model does not change for, and buffered I/O
    /// without a `page_cache` in the device profile.
    /// What a real-device run does differently from what these jobs ask: buffered I/O
    /// goes to the device as direct I/O.
    pub fn real_device_warnings(&self) -> Vec<String> {
        let buffered = self.jobs.iter().filter_map(|j| Some((j.buffered_by_option()?, &j.name)));
        buffered
            .map(|(at, name)| {
                format!("{at}: buffered I/O runs as direct I/O for job '{name}' (nvsched opens real targets with O_DIRECT, so the policy sees every request)")
            })
            .collect()
    }

    pub fn simulation_warnings(&self, page_cache: bool) -> Vec<String> {
        let mut out = Vec::new();
        for j in &self.jobs {
            if let Some(at) = j.buffered_by_option().filter(|_| !page_cache) {
                out.push(format!(
                    "{at}: buffered I/O is simulated as direct I/O for job '{}' (the device profile has no page cache; --page-cache SIZE adds one)",
                    j.name
                ));
            }
            if j.sqthread_poll {
                out.push(format!(
                    "{}: sqthread_poll of job '{}' has no effect in simulation (the host model charges the same submission cost)",
                    j.option_line("sqthread_poll"),
                    j.name
                ));
            }
            if j.nowait {
                out.push(format!(
                    "{}: nowait of job '{}' has no effect in simulation (a simulated request never has to wait to be accepted)",
                    j.option_line("nowait"),
                    j.name
                ));
            }
            if j.force_async > 0 {
                out.push(format!(
                    "{}: force_async of job '{}' has no effect in simulation (the host model charges the same submission cost)",
                    j.option_line("force_async"),
                    j.name
                ));
            }
            if j.write_hint.is_some() {
                out.push(format!(
                    "{}: write_hint of job '{}' is not modelled in simulation (the simulated drive places every write alike)",
                    j.option_line("write_hint"),
                    j.name
                ));
            }
            if j.logs.alternate_clock.is_some_and(|id| id != 0) {
                out.push(format!(
                    "{}: log_alternate_epoch_clock_id of job '{}' names a clock a simulation does not have; its log times count from the run's start",
                    j.option_line("log_alternate_epoch_clock_id"),
                    j.name
                ));
            }
            for (option, set) in [("exec_prerun", &j.exec_prerun), ("exec_postrun", &j.exec_postrun)] {
                if set.is_some() {
                    out.push(format!(
                        "{}: {option} of job '{}' is not run in simulation (it runs with --engine uring)",
                        j.option_line(option),
                        j.name
                    ));
                }
            }
        }
        out
    }

    /// The drive state the job file asks for (`precondition=`); jobs that set it must agree.
    pub fn precondition(&self) -> Result<Option<String>, JobFileError> {
        let found =
            self.device_wide("precondition", "drive state", "the drive has one state", |j| j.precondition.as_deref())?;
        Ok(found.map(|j| j.precondition.clone().unwrap_or_default()))
    }

    /// The scheduler the job file asks for (`ioscheduler=`) and the line that set it; jobs
    /// that set it must agree.
    pub fn ioscheduler(&self) -> Result<Option<(String, Location)>, JobFileError> {
        let found =
            self.device_wide("ioscheduler", "scheduler", "the device has one scheduler", |j| j.ioscheduler.as_deref())?;
        Ok(found.map(|j| (j.ioscheduler.clone().unwrap_or_default(), j.option_line("ioscheduler").clone())))
    }

    /// The first job that sets a setting of the whole device, after checking that every job
    /// setting it gives the same value.
    fn device_wide(
        &self,
        option: &str,
        what: &str,
        why: &str,
        get: impl Fn(&JobSpec) -> Option<&str>,
    ) -> Result<Option<&JobSpec>, JobFileError> {
        let mut found: Option<(&JobSpec, &str)> = None;
        for j in &self.jobs {
            let Some(value) = get(j) else { continue };
            match found {
                Some((first, first_value)) if first_value != value => {
                    return Err(JobFileError::new(
                        j.option_line(option),
                        Some(option),
                        format!(
                            "job '{}' asks for {what} {value} but job '{}' for {first_value}; {why}",
                            j.name, first.name
                        ),
                    ))
                }
                Some(_) => {}
                None => found = Some((j, value)),
            }
        }
        Ok(found.map(|(j, _)| j))
    }
}

/// How strictly to parse.
#[derive(Clone, Copy, Debug, Default)]
pub struct ParseOptions {
    /// Unknown or unsupported options become warnings instead of errors.
    pub ignore_unsupported: bool,
}

type Apply = fn(&mut JobSpec, &str) -> Result<(), String>;

/// One supported option.
pub struct OptionDef {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    /// What a bare `name` (no `=value`) means, if it is accepted: `1` for flags, `""`
    /// for `write_*_log` (the default file name prefix, the job's name).
    pub bare: Option<&'static str>,
    pub help: &'static str,
    apply: Apply,
}

macro_rules! opt {
    ($name:expr, [$($alias:expr),*], $bare:expr, $help:expr, $apply:expr) => {
        OptionDef { name: $name, aliases: &[$($alias),*], bare: $bare, help: $help, apply: $apply }
    };
}

/// The value trimmed, or `missing` when nothing is left.
fn non_empty(v: &str, missing: &str) -> Result<String, String> {
    let v = v.trim();
    if v.is_empty() {
        Err(missing.to_string())
    } else {
        Ok(v.to_string())
    }
}

fn int_in(v: &str, min: i64, max: i64) -> Result<i64, String> {
    parse_int_in(v, min, max)
}

/// Every option nvsched understands; the single source for parsing and `--help` text.
pub static OPTIONS: &[OptionDef] = &[
    opt!("name", [], None, "job name (default: the section name)", |j, v| {
        if v.trim().is_empty() {
            return Err("job name must not be empty".into());
        }
        j.name = v.trim().to_string();
        Ok(())
    }),
    opt!("description", [], None, "free text, reported as fio's \"desc\"", |j, v| {
        j.description = Some(v.to_string());
        Ok(())
    }),
    opt!("filename", [], None, "target file, or files a:b:c (each clone uses every one); /dev/... means the whole simulated device", |j, v| {
        if v.is_empty() {
            return Err("filename must not be empty".into());
        }
        let mut names = colon_list(v).into_iter();
        j.filename = names.next();
        j.more_filenames = names.collect();
        Ok(())
    }),
    opt!(
        "opendir",
        [],
        None,
        "every regular file below this directory (recursively, in path order) is one of the job's files, before those filename names (as fio 3.33 orders them)",
        |j, v| {
            j.opendir = Some(non_empty(v, "opendir needs a directory")?);
            Ok(())
        }
    ),
    opt!("nrfiles", ["nr_files"], None, "files per clone when their names are generated ($jobname.$jobnum.$filenum); size is divided among them", |j, v| {
        j.nrfiles = int_in(v, 1, 4096)? as u32;
        Ok(())
    }),
    opt!(
        "filename_format",
        [],
        None,
        "names of the files of a job without filename: $jobname, $jobnum (the clone) and $filenum (the file, from 0; see nrfiles) are replaced (default $jobname.$jobnum.$filenum)",
        |j, v| {
            if v.trim().is_empty() {
                return Err("filename_format must not be empty".into());
            }
            j.filename_format = Some(v.to_string());
            Ok(())
        }
    ),
    opt!(
        "directory",
        [],
        None,
        "prefix of the job's file names; a:b spreads generated names over the clones",
        |j, v| {
            let dirs: Vec<String> = colon_list(v).into_iter().filter(|d| !d.is_empty()).collect();
            if dirs.is_empty() {
                return Err("directory must not be empty".into());
            }
            j.directory = dirs;
            Ok(())
        }
    ),
    opt!(
        "rw",
        ["readwrite"],
        None,
        "read, write, trim, randread, randwrite, randtrim, rw/readwrite, randrw, trimwrite, randtrimwrite (each block trimmed, then written); :N skips N bytes (sequential) or takes a new random offset every N I/Os",
        |j, v| {
            let (v, modifier) = match v.split_once(':') {
                Some((p, m)) => (p.trim(), Some(m.trim())),
                None => (v, None),
            };
            j.pattern = match v {
            "read" => Pattern::SeqRead,
            "write" => Pattern::SeqWrite,
            "trim" => Pattern::SeqTrim,
            "randread" => Pattern::RandRead,
            "randwrite" => Pattern::RandWrite,
            "randtrim" => Pattern::RandTrim,
            "rw" | "readwrite" => Pattern::SeqMixed,
            "randrw" => Pattern::RandMixed,
            "trimwrite" => Pattern::SeqTrimWrite,
            "randtrimwrite" => Pattern::RandTrimWrite,
            other => {
                return Err(format!(
                    "'{other}' is not a pattern; accepted: read, write, trim, randread, randwrite, randtrim, rw, readwrite, randrw, trimwrite, randtrimwrite"
                ))
            }
        };
            // fio's offset modifier: bytes added after each sequential I/O (negative:
            // backwards), or I/Os per random offset (sequential in between)
            j.rw_modifier = match modifier {
                None => 0,
                Some(m) if j.pattern.is_random() => {
                    parse_int_in(m, 1, i64::from(u32::MAX)).map_err(|e| format!("random ':N' (I/Os per offset): {e}"))?
                }
                Some(m) => {
                    let (sign, bytes) = match m.strip_prefix('-') {
                        Some(rest) => (-1, rest),
                        None => (1, m),
                    };
                    let skip = parse_size(bytes, j.kb_base).map_err(|e| format!("sequential ':SIZE' (bytes to skip): {e}"))?;
                    sign * i64::try_from(skip).map_err(|_| format!("skip '{m}' is too large"))?
                }
            };
            Ok(())
        }
    ),
    opt!(
        "rw_sequencer",
        [],
        None,
        "sequential (default) or identical: what a random pattern's :N does between random offsets, go on sequentially or repeat the offset",
        |j, v| {
            j.rw_identical = match v {
                "sequential" => false,
                "identical" => true,
                other => return Err(format!("'{other}' is not one of sequential, identical")),
            };
            Ok(())
        }
    ),
    opt!("rwmixread", [], None, "percentage of reads in a mixed pattern (0..=100)", |j, v| {
        j.rwmix_read_pct = int_in(v, 0, 100)? as u32;
        Ok(())
    }),
    opt!("rwmixwrite", [], None, "percentage of writes in a mixed pattern (0..=100)", |j, v| {
        j.rwmix_read_pct = 100 - int_in(v, 0, 100)? as u32;
        Ok(())
    }),
    opt!("bs", ["blocksize"], None, "block size per direction: read[,write[,trim]]", |j, v| {
        let kb = j.kb_base;
        let sizes = per_direction(v, |s| parse_block_size(s, kb).map(BlockSizes::Fixed))?;
        apply_per_direction(&mut j.bs, sizes, BlockSizes::Fixed(4096));
        Ok(())
    }),
    opt!(
        "bs_is_seq_rand",
        [],
        Some("1"),
        "bs's two values size sequential and random I/O (of either direction) instead of reads and writes (0 or 1)",
        |j, v| {
            j.bs_is_seq_rand = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!("blockalign", ["ba"], None, "boundary random offsets are aligned to (default: the smallest block)", |j, v| {
        let kb = j.kb_base;
        let values = per_direction(v, |s| parse_block_size(s, kb))?;
        let mut given = values.iter().flatten();
        let first = *given.next().expect("per_direction gives at least one");
        if given.any(|&a| a != first) {
            return Err("different alignments per direction are not supported; give one value".into());
        }
        j.blockalign = Some(first);
        Ok(())
    }),
    opt!("bsrange", ["blocksize_range"], None, "block size range per direction: lo-hi[,lo-hi]", |j, v| {
        let kb = j.kb_base;
        let ranges = per_direction(v, |s| {
            let (lo, hi) =
                s.split_once('-').or_else(|| s.split_once(':')).ok_or_else(|| format!("'{s}' is not a range lo-hi"))?;
            let (mut lo, mut hi) = (parse_block_size(lo, kb)?, parse_block_size(hi, kb)?);
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            Ok(BlockSizes::Range { min: lo, max: hi })
        })?;
        apply_per_direction(&mut j.bs, ranges, BlockSizes::Fixed(4096));
        Ok(())
    }),
    opt!("bssplit", [], None, "weighted block sizes: bs/pct:bs/pct[,...] per direction", |j, v| {
        let kb = j.kb_base;
        let splits = per_direction(v, |s| parse_bssplit(s, kb))?;
        apply_per_direction(&mut j.bs, splits, BlockSizes::Fixed(4096));
        Ok(())
    }),
    opt!("iodepth", [], None, "requests in flight for asynchronous engines (1..=65536)", |j, v| {
        j.iodepth = int_in(v, 1, 65_536)? as u32;
        Ok(())
    }),
    opt!("iodepth_batch_submit", ["iodepth_batch"], None, "requests submitted together (0 = iodepth)", |j, v| {
        j.iodepth_batch_submit = int_in(v, 0, 65_536)? as u32;
        Ok(())
    }),
    opt!(
        "iodepth_batch_complete_min",
        ["iodepth_batch_complete"],
        None,
        "a full queue waits for at least this many completions at a time before issuing again (default 1)",
        |j, v| {
            j.iodepth_batch_complete_min = int_in(v, 0, 65_536)? as u32;
            Ok(())
        }
    ),
    opt!(
        "iodepth_batch_complete_max",
        [],
        None,
        "accepted: nvsched handles completions as they arrive, however many at a time",
        |_, v| int_in(v, 0, 65_536).map(|_| ())
    ),
    opt!(
        "iodepth_low",
        [],
        None,
        "once iodepth requests are out, let them drain to this many before issuing again (default: iodepth, keeping the queue full)",
        |j, v| {
            j.iodepth_low = int_in(v, 0, 65_536)? as u32;
            Ok(())
        }
    ),
    opt!(
        "ioengine",
        [],
        None,
        "sync, psync, vsync, pvsync, pvsync2 (one request at a time); libaio, io_uring, posixaio, null (asynchronous)",
        |j, v| {
            j.engine_kind = match v {
            "sync" | "psync" | "vsync" | "pvsync" | "pvsync2" => EngineKind::Sync,
            "libaio" | "io_uring" | "posixaio" | "null" => EngineKind::Async,
            other => {
                return Err(format!(
                    "'{other}' is not a supported engine; accepted: sync, psync, vsync, pvsync, pvsync2, libaio, io_uring, posixaio, null"
                ))
            }
        };
            j.ioengine = v.to_string();
            Ok(())
        }
    ),
    opt!("direct", [], Some("1"), "O_DIRECT (0 or 1); buffered I/O goes through the simulated page cache with --page-cache, else runs as direct I/O", |j, v| {
        j.direct = parse_bool(v)?;
        Ok(())
    }),
    opt!("buffered", [], Some("1"), "the inverse of direct", |j, v| {
        j.direct = !parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "sync",
        [],
        None,
        "write open mode: none/0, sync/1 (O_SYNC), dsync (O_DSYNC); direct sync writes are FUA",
        |j, v| {
            j.sync_mode = match v {
                "none" | "0" => SyncMode::None,
                "sync" | "1" => SyncMode::Sync,
                "dsync" => SyncMode::Dsync,
                other => return Err(format!("'{other}' is not a sync mode; accepted: none, 0, sync, 1, dsync")),
            };
            Ok(())
        }
    ),
    opt!("fsync", [], None, "flush the device cache after every N writes (0 = never)", |j, v| {
        j.fsync_every = int_in(v, 0, u32::MAX.into())? as u32;
        Ok(())
    }),
    opt!("fdatasync", [], None, "like fsync, with fdatasync", |j, v| {
        j.fdatasync_every = int_in(v, 0, u32::MAX.into())? as u32;
        Ok(())
    }),
    opt!(
        "sync_file_range",
        [],
        None,
        "every N writes, sync_file_range over the range written since the last sync: FLAGS[:N], FLAGS wait_before, write and/or wait_after, comma-separated (N default 1); it writes back and waits in the page cache (--page-cache), never flushes the device",
        |j, v| {
            let (flags, every) = match v.split_once(':') {
                Some((flags, n)) => (flags, int_in(n, 1, u32::MAX.into())? as u32),
                None => (v, 1),
            };
            let mut bits = 0;
            for flag in flags.split(',').map(str::trim) {
                bits |= match flag {
                    "wait_before" => SyncRange::WAIT_BEFORE,
                    "write" => SyncRange::WRITE,
                    "wait_after" => SyncRange::WAIT_AFTER,
                    other => {
                        return Err(format!("'{other}' is not a sync_file_range flag; accepted: wait_before, write, wait_after"))
                    }
                };
            }
            j.sync_file_range = Some((SyncRange(bits), every));
            Ok(())
        }
    ),
    opt!("end_fsync", [], Some("1"), "flush once the job's writes are done (each loop), not counted in stats", |j, v| {
        j.end_fsync = parse_bool(v)?;
        Ok(())
    }),
    opt!("fsync_on_close", [], Some("1"), "like end_fsync (fio flushes at the end for either)", |j, v| {
        j.fsync_on_close = parse_bool(v)?;
        Ok(())
    }),
    opt!("numjobs", [], None, "identical clones of the job (1..=4096)", |j, v| {
        j.numjobs = int_in(v, 1, 4096)? as u32;
        Ok(())
    }),
    opt!(
        "size",
        [],
        None,
        "bytes of I/O per clone and the region it is confined to (or N% of the file/device)",
        |j, v| {
            let s = parse_size_or_percent(v, j.kb_base)?;
            if s == SizeOrPercent::Bytes(0) {
                return Err("size must be greater than 0".into());
            }
            j.size = Some(s);
            Ok(())
        }
    ),
    opt!("io_size", ["io_limit"], None, "bytes of I/O to do, independent of the region size (bytes or N% of size)", |j, v| {
        j.io_size = Some(parse_size_or_percent(v, j.kb_base)?);
        Ok(())
    }),
    opt!("offset", ["fileoffset"], None, "start of the region within the file/device (bytes or N%)", |j, v| {
        j.offset = parse_size_or_percent(v, j.kb_base).map_err(|e| e.replace("(0, 100]", "[0, 100]"))?;
        Ok(())
    }),
    opt!(
        "offset_increment",
        [],
        None,
        "clone i starts at offset + i * offset_increment (bytes, or N% of the file or device)",
        |j, v| {
            j.offset_increment = parse_size_or_percent(v, j.kb_base)?;
            Ok(())
        }
    ),
    opt!(
        "offset_align",
        [],
        None,
        "what a percentage offset is aligned up to (bytes; default 0: the smallest block size)",
        |j, v| {
            j.offset_align = parse_size(v, j.kb_base)?;
            Ok(())
        }
    ),
    opt!(
        "filesize",
        [],
        None,
        "size of each of the job's files, or a range lo-hi drawn per file (size is then the I/O amount, at most the files' total)",
        |j, v| {
            let (lo, hi) = match v.split_once('-').or_else(|| v.split_once(':')) {
                Some((lo, hi)) => (parse_size(lo, j.kb_base)?, parse_size(hi, j.kb_base)?),
                None => {
                    let s = parse_size(v, j.kb_base)?;
                    (s, s)
                }
            };
            if lo == 0 {
                return Err("filesize must be greater than 0".into());
            }
            j.filesize = Some(FileSize { low: lo.min(hi), high: lo.max(hi) });
            Ok(())
        }
    ),
    opt!("runtime", ["timeout"], None, "run-time cap, seconds unless a unit is given", |j, v| {
        j.runtime = parse_time(v, Nanos::from_secs(1))?;
        Ok(())
    }),
    opt!("time_based", [], Some("1"), "keep going until runtime ends (0 or 1)", |j, v| {
        j.time_based = parse_bool(v)?;
        Ok(())
    }),
    opt!("ramp_time", [], None, "warm-up excluded from the statistics, seconds unless a unit is given", |j, v| {
        j.ramp_time = parse_time(v, Nanos::from_secs(1))?;
        Ok(())
    }),
    opt!("startdelay", [], None, "delay before the job starts, seconds unless a unit is given", |j, v| {
        j.startdelay = parse_time(v, Nanos::from_secs(1))?;
        Ok(())
    }),
    opt!(
        "thinktime",
        [],
        None,
        "pause after every thinktime_blocks I/Os, once they completed; microseconds unless a unit is given",
        |j, v| {
            j.thinktime = parse_time(v, Nanos::from_us(1))?;
            Ok(())
        }
    ),
    opt!(
        "thinktime_blocks",
        [],
        None,
        "I/Os between thinktime pauses (default 1), counted as thinktime_blocks_type says (completed, by default); what is out completes before each pause",
        |j, v| {
            j.thinktime_blocks = int_in(v, 1, i64::from(u32::MAX))? as u32;
            Ok(())
        }
    ),
    opt!(
        "thinktime_iotime",
        [],
        None,
        "pause for thinktime also after issuing for this long, or after thinktime_blocks I/Os if that is given, whichever comes first; seconds unless a unit is given",
        |j, v| {
            j.thinktime_iotime = parse_time(v, Nanos::from_secs(1))?;
            Ok(())
        }
    ),
    opt!(
        "thinktime_spin",
        [],
        None,
        "the part of thinktime fio spends spinning before it sleeps; microseconds unless a unit is given (the pause is thinktime either way: no host CPU is modelled for the job)",
        |j, v| {
            j.thinktime_spin = parse_time(v, Nanos::from_us(1))?;
            Ok(())
        }
    ),
    opt!(
        "rate_ignore_thinktime",
        [],
        Some("1"),
        "after a thinktime pause, rate pacing goes on from the pause's end instead of catching up on the I/O the pause cost (0 or 1)",
        |j, v| {
            j.rate_ignore_thinktime = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "bwavgtime",
        [],
        None,
        "milliseconds each bandwidth sample averages over (bw min/max/mean/samples in the report; default 500)",
        |j, v| {
            j.bw_avg_time = Nanos::from_ms(int_in(v, 1, 86_400_000)? as u64);
            Ok(())
        }
    ),
    opt!(
        "iopsavgtime",
        [],
        None,
        "milliseconds each IOPS sample averages over (iops min/max/mean/samples in the report; default 500)",
        |j, v| {
            j.iops_avg_time = Nanos::from_ms(int_in(v, 1, 86_400_000)? as u64);
            Ok(())
        }
    ),
    opt!(
        "flow",
        [],
        None,
        "weight among the jobs of its flow_id (0-1000): they issue I/Os in proportion to their weights (0: no flow control; a negative value, older fio's signed counter, is taken as fio 3.33 takes it, see docs/job-files.md)",
        |j, v| {
            // fio 3.33 checks only the upper bound and stores the value in an unsigned
            // int, so -2 (older fio's syntax, still in its examples) is the weight 2^32-2
            let weight = int_in(v, i64::from(i32::MIN), i64::from(i32::MAX))?;
            if weight > 1000 {
                return Err(format!("{weight} is out of range 0..=1000"));
            }
            j.flow = weight as u32;
            Ok(())
        }
    ),
    opt!("flow_id", [], None, "the flow group the job's flow weight counts in (default 0)", |j, v| {
        j.flow_id = int_in(v, 0, i64::from(u32::MAX))? as u32;
        Ok(())
    }),
    opt!(
        "flow_sleep",
        [],
        None,
        "held back by flow, let the I/Os out complete and sleep this long before looking again; microseconds unless a unit is given (0: go on as soon as another job of the group issues)",
        |j, v| {
            j.flow_sleep = parse_time(v, Nanos::from_us(1))?;
            Ok(())
        }
    ),
    opt!(
        "latency_target",
        [],
        None,
        "search for the highest depth (up to iodepth) whose requests meet this latency, issue to completion; microseconds unless a unit is given",
        |j, v| {
            j.latency.target = parse_time(v, Nanos::from_us(1))?;
            Ok(())
        }
    ),
    opt!("latency_window", [], None, "how long latency_target tries each depth; microseconds unless a unit is given", |j, v| {
        j.latency.window = parse_time(v, Nanos::from_us(1))?;
        Ok(())
    }),
    opt!(
        "latency_percentile",
        [],
        None,
        "the share of requests (%) that must meet latency_target in a window (default 100; fio reads the first of a:b)",
        |j, v| {
            let first = v.split(':').next().unwrap_or(v).trim();
            let p: f64 = first.parse().map_err(|_| format!("'{first}' is not a number"))?;
            if !(0.0..=100.0).contains(&p) {
                return Err(format!("percentile {first} is out of range [0, 100]"));
            }
            j.latency.percentile = p;
            Ok(())
        }
    ),
    opt!(
        "latency_run",
        [],
        Some("1"),
        "with latency_target: keep adjusting the depth all run instead of stopping once one holds",
        |j, v| {
            j.latency.keep_running = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "max_latency",
        [],
        None,
        "fail the job (error 110, ETIMEDOUT) when a request takes longer, issue to completion; microseconds unless a unit is given",
        |j, v| {
            j.max_latency = parse_time(v, Nanos::from_us(1))?;
            Ok(())
        }
    ),
    opt!(
        "steadystate",
        ["ss"],
        None,
        "METRIC[:LIMIT[%]], METRIC one of iops, iops_slope, bw, bw_slope (default iops_slope:0.01%): with ss_dur, end the job once the last ss_dur one-second samples meet it",
        |j, v| j.steadystate.set_criterion(v)
    ),
    opt!(
        "steadystate_duration",
        ["ss_dur"],
        None,
        "how many seconds of samples steadystate judges (whole seconds; seconds unless a unit is given); 0: no detection",
        |j, v| {
            let d = parse_time(v, Nanos::from_secs(1))?;
            if d > Nanos::ZERO && d < Nanos::from_secs(1) {
                return Err("must be at least one second (samples are one second each)".to_string());
            }
            j.steadystate.duration_s = u32::try_from(d.0 / 1_000_000_000).map_err(|_| "too long".to_string())?;
            Ok(())
        }
    ),
    opt!(
        "steadystate_ramp_time",
        ["ss_ramp"],
        None,
        "steadystate sampling starts one second after this, seconds unless a unit is given",
        |j, v| {
            j.steadystate.ramp = parse_time(v, Nanos::from_secs(1))?;
            Ok(())
        }
    ),
    opt!(
        "zonemode",
        [],
        None,
        "none (default) or strided: I/O stays in a zone of zonerange bytes for zonesize bytes, then skips zoneskip",
        |j, v| {
            j.zones.strided = match v {
                "none" => false,
                "strided" => true,
                "zbd" => return Err("zoned block devices (zbd) are not modelled; accepted: none, strided".to_string()),
                other => return Err(format!("'{other}' is not one of none, strided")),
            };
            Ok(())
        }
    ),
    opt!("zonesize", [], None, "zonemode=strided: bytes transferred in a zone before moving on", |j, v| {
        j.zones.size = parse_size(v, j.kb_base)?;
        Ok(())
    }),
    opt!("zonerange", [], None, "zonemode=strided: the length of a zone (default zonesize)", |j, v| {
        j.zones.range = parse_size(v, j.kb_base)?;
        Ok(())
    }),
    opt!("zoneskip", [], None, "zonemode=strided: bytes skipped after each zone", |j, v| {
        j.zones.skip = parse_size(v, j.kb_base)?;
        Ok(())
    }),
    opt!(
        "thinktime_blocks_type",
        [],
        None,
        "complete (fio's default): a pause comes once thinktime_blocks I/Os have completed since the last; issue: once that many were issued",
        |j, v| {
            j.thinktime_counts = match v {
                "complete" => ThinktimeCounts::Completed,
                "issue" => ThinktimeCounts::Issued,
                other => return Err(format!("'{other}' is not one of complete, issue")),
            };
            Ok(())
        }
    ),
    opt!("write_lat_log", [], Some(""), "log each I/O's latency: PREFIX_lat|clat|slat.N.log (bare: the job's name)", |j, v| {
        j.logs.lat = Some(v.to_string());
        Ok(())
    }),
    opt!("write_bw_log", [], Some(""), "log each I/O's bandwidth (KB/s): PREFIX_bw.N.log (bare: the job's name)", |j, v| {
        j.logs.bw = Some(v.to_string());
        Ok(())
    }),
    opt!("write_iops_log", [], Some(""), "log each I/O (IOPS): PREFIX_iops.N.log (bare: the job's name)", |j, v| {
        j.logs.iops = Some(v.to_string());
        Ok(())
    }),
    opt!(
        "write_hist_log",
        [],
        Some(""),
        "log completion-latency histograms every log_hist_msec: PREFIX_clat_hist.N.log, fio's format for fiologparser_hist.py (bare: the job's name)",
        |j, v| {
            j.logs.hist = Some(v.to_string());
            Ok(())
        }
    ),
    opt!("log_hist_msec", [], None, "ms between the histogram samples of write_hist_log", |j, v| {
        j.logs.hist_msec = int_in(v, 0, i64::from(u32::MAX))? as u32;
        Ok(())
    }),
    opt!(
        "log_hist_coarseness",
        [],
        None,
        "0-6: each column of write_hist_log sums 2^N of fio's 1856 buckets (1856, 928, ... 29 columns)",
        |j, v| {
            j.logs.hist_coarseness = int_in(v, 0, 6)? as u8;
            Ok(())
        }
    ),
    opt!("log_avg_msec", [], None, "log one line per window of this many ms and direction: the mean (0: every I/O)", |j, v| {
        j.logs.avg_msec = int_in(v, 0, i64::from(u32::MAX))? as u32;
        Ok(())
    }),
    opt!(
        "per_job_logs",
        [],
        Some("1"),
        "0: log files are named without the job number (PREFIX_bw.log) and every job appends its lines to them when it finishes, as fio does (default 1)",
        |j, v| {
            j.logs.per_job = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "log_max_value",
        [],
        Some("1"),
        "with log_avg_msec, latency logs hold each window's largest latency instead of its mean (0 or 1; bandwidth and IOPS logs keep the window's rate)",
        |j, v| {
            j.logs.max_value = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "log_unix_epoch",
        [],
        Some("1"),
        "log times are Unix times in milliseconds (in simulation counted from the report's time of day, which SOURCE_DATE_EPOCH sets)",
        |j, v| {
            j.logs.unix_epoch = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "log_alternate_epoch",
        [],
        Some("1"),
        "log times are those of the clock log_alternate_epoch_clock_id names, in milliseconds (wins over log_unix_epoch; in simulation only CLOCK_REALTIME, 0, has a time of day)",
        |j, v| {
            j.log_alternate_epoch = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "log_alternate_epoch_clock_id",
        [],
        None,
        "clock_gettime clock of log_alternate_epoch: 0 CLOCK_REALTIME (default), 1 CLOCK_MONOTONIC, 7 CLOCK_BOOTTIME, ...",
        |j, v| {
            j.log_alternate_clock_id = int_in(v, 0, 15)? as i32;
            Ok(())
        }
    ),
    opt!("log_offset", [], Some("1"), "add each I/O's offset to the log lines (0 or 1)", |j, v| {
        j.logs.offset = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "log_prio",
        [],
        Some("1"),
        "the last column of the log lines is each I/O's priority value, as 0x2004 (class << 13 | level), not 0/1 for cmdprio's (0 or 1)",
        |j, v| {
            j.logs.prio = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!("number_ios", [], None, "I/Os per loop, if no other limit comes first (0: none; a time_based job runs its runtime)", |j, v| {
        j.number_ios = parse_int_in(v, 0, i64::MAX)? as u64;
        Ok(())
    }),
    opt!("loops", [], None, "run the job's I/O this many times over (not with time_based)", |j, v| {
        j.loops = int_in(v, 1, i64::from(u32::MAX))? as u32;
        Ok(())
    }),
    opt!("rate", [], None, "bandwidth cap in bytes/s per clone: read[,write[,trim]]", |j, v| {
        let kb = j.kb_base;
        let rates = per_direction(v, |s| parse_size(s, kb))?;
        apply_per_direction(&mut j.rate_bps, rates, 0);
        Ok(())
    }),
    opt!(
        "rate_min",
        ["ratemin"],
        None,
        "fail the job (error 5, EIO) when its bandwidth in bytes/s falls below this over a rate_cycle: read[,write[,trim]]",
        |j, v| {
            let kb = j.kb_base;
            let rates = per_direction(v, |s| parse_size(s, kb))?;
            apply_per_direction(&mut j.rate_min_bps, rates, 0);
            Ok(())
        }
    ),
    opt!(
        "rate_iops_min",
        [],
        None,
        "fail the job (error 5, EIO) when its IOPS fall below this over a rate_cycle: read[,write[,trim]]",
        |j, v| {
            let rates = per_direction(v, |s| parse_int_in(s, 0, i64::MAX).map(|v| v as u64))?;
            apply_per_direction(&mut j.rate_iops_min, rates, 0);
            Ok(())
        }
    ),
    opt!("rate_cycle", ["ratecycle"], None, "the window rate_min and rate_iops_min are judged over, ms (default 1000)", |j, v| {
        j.rate_cycle = Nanos::from_ms(parse_int_in(v, 1, i64::from(u32::MAX))? as u64);
        Ok(())
    }),
    opt!("rate_iops", [], None, "IOPS cap per clone: read[,write[,trim]]", |j, v| {
        let rates = per_direction(v, |s| parse_int_in(s, 0, i64::MAX).map(|v| v as u64))?;
        apply_per_direction(&mut j.rate_iops, rates, 0);
        Ok(())
    }),
    opt!("rate_process", [], None, "linear (fixed gaps) or poisson (exponential gaps)", |j, v| {
        j.rate_process = match v {
            "linear" => RateProcess::Linear,
            "poisson" => RateProcess::Poisson,
            other => return Err(format!("'{other}' is not a rate process; accepted: linear, poisson")),
        };
        Ok(())
    }),
    opt!("prio", [], None, "I/O priority level 0..=7 (0 is highest)", |j, v| {
        j.prio = Some(int_in(v, 0, 7)? as u8);
        Ok(())
    }),
    opt!("prioclass", [], None, "I/O priority class: 0 none, 1 real-time, 2 best-effort, 3 idle", |j, v| {
        j.prioclass = Some(int_in(v, 0, 3)? as u8);
        Ok(())
    }),
    opt!(
        "cmdprio_percentage",
        [],
        None,
        "io_uring/libaio: % of I/Os issued with cmdprio_class/cmdprio: all[,write] or read,write",
        |j, v| cmdprio_pair(&mut j.cmdprio_pct, v, 0, 100)
    ),
    opt!(
        "cmdprio_class",
        [],
        None,
        "class of cmdprio_percentage's I/Os: 1 real-time (default), 2 best-effort, 3 idle; read[,write]",
        |j, v| cmdprio_pair(&mut j.cmdprio_class, v, 1, 3)
    ),
    opt!(
        "cmdprio_bssplit",
        [],
        None,
        "io_uring/libaio: per block size, the % of I/Os sent at another priority: bs/pct[/class/level]:...[,write] (without class/level: cmdprio_class/cmdprio)",
        |j, v| {
            let kb = j.kb_base;
            if v.split(',').count() > 2 {
                return Err(format!("'{v}' has more than two comma-separated lists (read,write)"));
            }
            let lists = per_direction(v, |list| parse_cmdprio_bssplit(list, kb))?;
            for (slot, list) in j.cmdprio_bssplit.iter_mut().zip(lists) {
                *slot = list.unwrap_or_default();
            }
            Ok(())
        }
    ),
    opt!("cmdprio", [], None, "level 0..=7 of cmdprio_percentage's I/Os (default 0); read[,write]", |j, v| {
        cmdprio_pair(&mut j.cmdprio_level, v, 0, 7)
    }),
    opt!("nice", [], None, "CPU nice value -20..=19", |j, v| {
        j.nice = int_in(v, -20, 19)? as i8;
        Ok(())
    }),
    opt!("cgroup", [], None, "cgroup (tenant) name; jobs naming the same cgroup share it", |j, v| {
        if v.is_empty() {
            return Err("cgroup name must not be empty".into());
        }
        j.cgroup = Some(v.to_string());
        Ok(())
    }),
    opt!("cgroup_weight", [], None, "weight of the job's cgroup, 100..=1000", |j, v| {
        j.cgroup_weight = int_in(v, 100, 1000)? as u32;
        Ok(())
    }),
    opt!("stonewall", ["wait_for_previous"], Some("1"), "wait for earlier jobs to finish; starts a new group", |j, v| {
        j.stonewall = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "wait_for",
        [],
        None,
        "start only once every clone of this earlier job (by name) has finished; unlike stonewall, no new group",
        |j, v| {
            if v.trim().is_empty() {
                return Err("wait_for needs the name of an earlier job".into());
            }
            j.wait_for = Some(v.trim().to_string());
            Ok(())
        }
    ),
    opt!("exitall", [], Some("1"), "when this job finishes, stop the jobs exit_what names", |j, v| {
        j.exitall = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "exitall_on_error",
        [],
        Some("1"),
        "when this job fails (max_latency, latency_target, rate_min), stop every running job; later stonewall groups still run, as in fio (0 or 1)",
        |j, v| {
            j.exitall_on_error = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "exit_what",
        [],
        None,
        "what exitall stops: group (default), stonewall (all running jobs) or all (later groups too)",
        |j, v| {
            j.exit_what = match v {
                "group" => ExitWhat::Group,
                "stonewall" => ExitWhat::Stonewall,
                "all" => ExitWhat::All,
                other => return Err(format!("'{other}' is not an exit_what; accepted: group, stonewall, all")),
            };
            Ok(())
        }
    ),
    opt!("new_group", [], Some("1"), "start a new reporting group without waiting", |j, v| {
        j.new_group = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "unified_rw_reporting",
        [],
        Some("1"),
        "none (0): reads, writes and trims apart; mixed (1): together as one \"mixed\" direction; both (2): apart, then mixed",
        |j, v| {
            j.unified_rw_reporting = match v {
                "none" | "0" => UnifiedRw::None,
                "mixed" | "1" => UnifiedRw::Mixed,
                "both" | "2" => UnifiedRw::Both,
                other => {
                    return Err(format!(
                        "'{other}' is not a unified_rw_reporting mode; accepted: none, 0, mixed, 1, both, 2"
                    ))
                }
            };
            Ok(())
        }
    ),
    opt!(
        "stats",
        [],
        Some("1"),
        "0: the job runs but is left out of the report, as fio leaves it out (e.g. a fill before the measured jobs)",
        |j, v| {
            j.stats = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!("group_reporting", [], Some("1"), "report each group as one job", |j, v| {
        j.group_reporting = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "percentile_list",
        [],
        None,
        "completion-latency percentiles, a:b:c (at most 20, each in (0, 100])",
        |j, v| {
            let mut list = Vec::new();
            let mut precision = 0;
            for part in v.split(':') {
                let p: f64 = part.trim().parse().map_err(|_| format!("'{part}' is not a number"))?;
                let decimals = part.trim().split_once('.').map_or(0, |(_, frac)| frac.len());
                precision = precision.max(decimals.min(usize::from(u8::MAX)) as u8);
                if !(p > 0.0 && p <= 100.0) {
                    return Err(format!("percentile {part} is out of range (0, 100]"));
                }
                list.push(p);
            }
            if list.len() > 20 {
                return Err(format!("{} percentiles given; at most 20", list.len()));
            }
            list.sort_by(f64::total_cmp);
            j.percentile_list = list;
            j.percentile_precision = precision;
            Ok(())
        }
    ),
    opt!("clat_percentiles", [], Some("1"), "report completion-latency percentiles (default 1)", |j, v| {
        j.clat_percentiles = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "lat_percentiles",
        [],
        Some("1"),
        "report total-latency percentiles; per-priority entries then measure total latency",
        |j, v| {
            j.lat_percentiles = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!("slat_percentiles", [], Some("1"), "report submission-latency percentiles (asynchronous engines)", |j, v| {
        j.slat_percentiles = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "random_distribution",
        [],
        None,
        "random, zipf:THETA[:CENTER], pareto:H[:CENTER], normal:DEV%[:CENTER], zoned:A%/S%:..., zoned_abs:A%/BYTES:...",
        |j, v| {
            j.distribution = parse_distribution(v, j.kb_base)?;
            Ok(())
        }
    ),
    opt!(
        "random_generator",
        [],
        None,
        "tausworthe, lfsr or tausworthe64: accepted; nvsched draws offsets from its own seeded generator (each block once per pass unless norandommap, as fio's do)",
        |_, v| match v {
            "tausworthe" | "lfsr" | "tausworthe64" => Ok(()),
            other => Err(format!("'{other}' is not one of tausworthe, lfsr, tausworthe64")),
        }
    ),
    opt!("norandommap", [], Some("1"), "draw random offsets independently (repeats allowed)", |j, v| {
        j.norandommap = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "percentage_random",
        [],
        None,
        "% of a random pattern's offsets drawn at random, read[,write[,trim]] (default 100); the others follow on from the previous I/O",
        |j, v| {
            let pcts = per_direction(v, |s| int_in(s, 0, 100).map(|p| p as u8))?;
            apply_per_direction(&mut j.percentage_random, pcts, 100);
            Ok(())
        }
    ),
    opt!("randseed", [], None, "seed of the job's random generators", |j, v| {
        j.randseed = parse_int_in(v, 0, i64::MAX)? as u64;
        Ok(())
    }),
    opt!(
        "randrepeat",
        ["allrandrepeat"],
        Some("1"),
        "1: seeds follow randseed; 0: seeds also mix in the run's --seed",
        |j, v| {
            j.randrepeat = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!("kb_base", [], None, "1024 (k = 1024, kib = 1000, fio's default) or 1000 (the reverse)", |j, v| {
        j.kb_base = match v {
            "1024" => KbBase::Binary,
            "1000" => KbBase::Decimal,
            other => return Err(format!("'{other}' is not a kb_base; accepted: 1000, 1024")),
        };
        Ok(())
    }),
    opt!(
        "io_submit_mode",
        [],
        None,
        "inline or offload: accepted; nvsched's engines issue rate-paced I/O on time whenever iodepth allows, as fio's offload does",
        |_, v| one_of(v, &["inline", "offload"])
    ),
    opt!(
        "unlink",
        [],
        Some("1"),
        "accepted for compatibility: on real devices nvsched removes the files it laid out after the run unless --keep-files, whatever this says",
        accept_bool
    ),
    opt!(
        "thread",
        ["threads"],
        Some("1"),
        "clones are threads, not processes (0 or 1): only the normal output's 'Starting' line shows it",
        |j, v| {
            j.thread = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "gtod_reduce",
        [],
        Some("1"),
        "accepted: nvsched times every I/O at no cost to the run (simulated time; two clock reads per I/O on real devices) and reports every latency, where fio leaves them out",
        accept_bool
    ),
    opt!("disable_lat", [], Some("1"), "accepted: total latency is measured and reported anyway (see gtod_reduce)", accept_bool),
    opt!("disable_clat", [], Some("1"), "accepted: completion latency is measured and reported anyway (see gtod_reduce)", accept_bool),
    opt!("disable_slat", [], Some("1"), "accepted: submission latency is measured and reported anyway (see gtod_reduce)", accept_bool),
    opt!(
        "disable_bw_measurement",
        ["disable_bw"],
        Some("1"),
        "accepted: bandwidth is measured and reported anyway (see gtod_reduce)",
        accept_bool
    ),
    opt!(
        "clocksource",
        [],
        None,
        "gettimeofday, clock_gettime or cpu: accepted; nvsched's clock is simulated time, or the monotonic clock on real devices",
        |_, v| one_of(v, &["gettimeofday", "clock_gettime", "cpu"])
    ),
    opt!(
        "invalidate",
        [],
        Some("1"),
        "drop the files' pages from the page cache before the run (posix_fadvise DONTNEED; on by default, as in fio): what laying out a file left there would otherwise make direct writes invalidate it as they go (real devices; the simulator has no page cache)",
        |j, v| {
            j.invalidate = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "fallocate",
        [],
        None,
        "none, native, posix, keep or truncate (or 0/1): a file a job only allocates has its full size, or none with none, 0 or keep, so the next job on it writes it out if that job reads (in simulation; on real devices nvsched allocates such a file with fallocate either way)",
        |j, v| {
            one_of(v, &["none", "native", "posix", "keep", "truncate", "0", "1"])?;
            j.fallocate_sizes_file = !["none", "0", "keep"].contains(&v);
            Ok(())
        }
    ),
    opt!("create_serialize", [], Some("1"), "accepted: nvsched lays out its files one after another before any job starts", accept_bool),
    opt!(
        "overwrite",
        [],
        Some("1"),
        "1: a job that only writes finds its new file laid out with data, as one that reads does; 0 (fio's default): it finds the file without data (fio only allocates it), so the simulated drive holds nothing there until written, a buffered write of part of a page it has not written does not read the page in the simulated page cache, and on real devices nvsched only allocates the file",
        |j, v| {
            j.overwrite = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "allow_mounted_write",
        [],
        Some("1"),
        "accepted, but nvsched refuses to write to a mounted block device whatever this says",
        accept_bool
    ),
    opt!(
        "softrandommap",
        [],
        Some("1"),
        "accepted: nvsched's random map (a keyed permutation) needs no memory and cannot fail to allocate",
        accept_bool
    ),
    opt!(
        "openfiles",
        [],
        None,
        "files of a job open at once: I/O goes round them, the next opening when one is done",
        |j, v| {
            j.openfiles = int_in(v, 1, i64::from(u32::MAX))? as u32;
            Ok(())
        }
    ),
    opt!(
        "file_service_type",
        [],
        None,
        "how a clone with several files picks the next: roundrobin[:N] (the default: the next file after N I/Os, 1 by default), sequential (each file to its end in turn), random[:N] (a file at random after N I/Os), or zipf[:THETA], pareto[:H], normal[:DEV] (gauss) with an optional :CENTER (each I/O's file drawn from that distribution, as random_distribution draws offsets)",
        |j, v| {
            let kind = v.split(':').next().unwrap_or(v);
            if matches!(kind, "zipf" | "pareto" | "normal" | "gauss") {
                // fio's defaults and ':CENTER' as random_distribution takes them
                j.file_service = FileService::Skewed(parse_distribution(v, j.kb_base)?);
                return Ok(());
            }
            let n = match v.split_once(':') {
                Some((_, n)) => Some(int_in(n, 1, i64::from(u32::MAX))? as u32),
                None => None,
            };
            j.file_service = match kind {
                "roundrobin" => FileService::RoundRobin(n.unwrap_or(1)),
                "random" => FileService::Random(n.unwrap_or(1)),
                "sequential" if n.is_none() => FileService::Sequential,
                "sequential" => return Err("sequential takes no ':N'".into()),
                other => {
                    return Err(format!("'{other}' is not one of roundrobin, sequential, random, zipf, pareto, normal, gauss"))
                }
            };
            Ok(())
        }
    ),
    opt!(
        "pre_read",
        [],
        Some("1"),
        "accepted: there is no page cache to fill (direct I/O on real devices)",
        accept_bool
    ),
    opt!("lockmem", [], None, "accepted: nvsched's I/O buffers are small and not locked", |j, v| {
        parse_size(v, j.kb_base).map(|_| ())
    }),
    opt!(
        "iomem",
        ["mem"],
        None,
        "malloc, shm, shmhuge, mmap, mmaphuge, mmapshared or cudamalloc: accepted; nvsched's buffers are page-aligned heap memory",
        |_, v| {
            let kind = v.split(':').next().unwrap_or(v);
            one_of(kind, &["malloc", "shm", "shmhuge", "mmap", "mmaphuge", "mmapshared", "cudamalloc"])
        }
    ),
    opt!(
        "iomem_align",
        ["mem_align"],
        None,
        "accepted for values up to 4096: nvsched's buffers are aligned to 4096 bytes",
        |j, v| {
            let align = parse_size(v, j.kb_base)?;
            if align > 4096 {
                return Err(format!("{align}: nvsched's buffers are aligned to 4096 bytes, not more"));
            }
            Ok(())
        }
    ),
    opt!(
        "disk_util",
        [],
        Some("1"),
        "accepted: nvsched reports no disk utilisation section (the simulated device has no block-layer counters)",
        accept_bool
    ),
    opt!(
        "cpus_allowed",
        ["cpumask", "numa_cpu_nodes"],
        None,
        "accepted: nvsched runs every job in one thread (real devices) or models host CPUs with host.cpus (simulator), so there is nothing to pin",
        |_, _| Ok(())
    ),
    opt!(
        "cpus_allowed_policy",
        [],
        None,
        "shared or split: accepted, see cpus_allowed",
        |_, v| one_of(v, &["shared", "split"])
    ),
    opt!("numa_mem_policy", [], None, "accepted: nvsched's buffers are ordinary heap memory", |_, _| Ok(())),
    opt!("gtod_cpu", [], None, "accepted: nvsched keeps no timing thread (see gtod_reduce)", |_, v| {
        int_in(v, 0, 1 << 20).map(|_| ())
    }),
    opt!(
        "log_entries",
        [],
        None,
        "accepted: nvsched's logs need no preallocated entries",
        |_, v| int_in(v, 1, i64::MAX).map(|_| ())
    ),
    opt!(
        "log_compression",
        [],
        None,
        "accepted: nvsched keeps its logs in files, not compressed in memory",
        |j, v| parse_size(v, j.kb_base).map(|_| ())
    ),
    opt!(
        "create_fsync",
        [],
        Some("1"),
        "accepted: nvsched always syncs a file it lays out before the jobs start",
        accept_bool
    ),
    opt!(
        "unique_filename",
        [],
        Some("1"),
        "accepted: for fio's client/server mode, which nvsched has not",
        accept_bool
    ),
    opt!(
        "significant_figures",
        [],
        None,
        "significant figures of IOPS, bandwidth and sizes in the normal output, 1-10 (default 4)",
        |j, v| {
            j.significant_figures = int_in(v, 1, 10)? as u8;
            Ok(())
        }
    ),
    opt!(
        "unit_base",
        [],
        None,
        "0 or 8: bandwidth in bytes; 1: the normal output's bandwidth (BW= and the group line's bw=) in bits per second, as fio prints it (amounts, samples, JSON and terse stay in bytes)",
        |j, v| {
            j.bandwidth_in_bits = match v {
                "0" | "8" => false,
                "1" => true,
                other => return Err(format!("'{other}' is not one of 0, 8, 1")),
            };
            Ok(())
        }
    ),
    opt!(
        "fixedbufs",
        [],
        Some("1"),
        "accepted: nvsched's ring does not register its buffers (an overhead saving, not a behaviour)",
        accept_bool
    ),
    opt!(
        "registerfiles",
        [],
        Some("1"),
        "accepted: nvsched's ring does not register its files (an overhead saving, not a behaviour)",
        accept_bool
    ),
    opt!(
        "nonvectored",
        [],
        Some("1"),
        "accepted: nvsched's io_uring engine issues plain read and write requests for single buffers either way",
        |_, v| int_in(v, -1, 1).map(|_| ())
    ),
    opt!(
        "uncached",
        [],
        Some("1"),
        "accepted: I/O is direct, so there is no page cache to bypass",
        |_, v| int_in(v, 0, i64::from(u32::MAX)).map(|_| ())
    ),
    opt!(
        "userspace_reap",
        [],
        Some("1"),
        "accepted: how completions are reaped is nvsched's own (the io-uring crate's completion queue)",
        accept_bool
    ),
    opt!(
        "hugepage-size",
        [],
        None,
        "accepted: nvsched's buffers are page-aligned heap memory, not huge pages",
        |j, v| parse_size(v, j.kb_base).map(|_| ())
    ),
    opt!(
        "read_iolog_chunked",
        [],
        Some("1"),
        "accepted: nvsched reads a trace into memory as it parses the job file (a memory saving in fio, not a behaviour)",
        accept_bool
    ),
    opt!(
        "create_on_open",
        [],
        Some("1"),
        "accepted: nvsched lays out new files before any job starts, outside the jobs' time",
        accept_bool
    ),
    opt!(
        "fadvise_hint",
        [],
        Some("1"),
        "accepted: I/O is direct, so page-cache advice has no effect",
        |_, v| one_of(v, &["0", "1", "sequential", "random"])
    ),
    opt!(
        "unlink_each_loop",
        [],
        Some("1"),
        "accepted: on real devices nvsched removes the files it laid out after the run unless --keep-files, whatever this says",
        accept_bool
    ),
    opt!(
        "lockfile",
        [],
        None,
        "jobs sharing a file take turns on it: none, exclusive (one I/O at a time) or readwrite (reads share, writes alone); as in fio, only synchronous engines' I/O holds the lock until it completes",
        |j, v| {
            j.lockfile = LockMode::parse(v)?;
            Ok(())
        }
    ),
    opt!(
        "cgroup_nodelete",
        [],
        Some("1"),
        "accepted: nvsched creates no cgroups (cgroup= names a tenant of the policy)",
        accept_bool
    ),
    opt!(
        "log_compression_cpus",
        [],
        None,
        "accepted: nvsched does not compress its logs",
        |_, v| non_empty(v, "log_compression_cpus needs a CPU list").map(|_| ())
    ),
    opt!(
        "log_store_compressed",
        [],
        Some("1"),
        "0: logs are plain text (1, fio's compressed .fz logs, is not supported)",
        |_, v| match parse_bool(v)? {
            false => Ok(()),
            true => Err("compressed logs are not supported; nvsched writes plain-text logs".into()),
        }
    ),
    opt!(
        "error_dump",
        [],
        Some("1"),
        "accepted: a failed I/O's error names its file, offset and length either way",
        accept_bool
    ),
    opt!(
        "verify_dump",
        [],
        Some("1"),
        "accepted: a verify failure names the block's offset and what is wrong with it; nvsched writes no dump files",
        accept_bool
    ),
    opt!(
        "verify_async",
        [],
        None,
        "accepted: a job's read-back goes out at its depth through the policy and each read is checked as it completes, in nvsched's one thread",
        |_, v| int_in(v, 0, 1024).map(|_| ())
    ),
    opt!(
        "verify_async_cpus",
        [],
        None,
        "accepted: nvsched checks read-backs in its one thread, so there are no verify threads to pin",
        |_, _| Ok(())
    ),
    opt!(
        "verify_state_save",
        [],
        Some("1"),
        "accepted: nvsched keeps no verify state (verify_only checks each block's own header)",
        accept_bool
    ),
    opt!(
        "experimental_verify",
        [],
        Some("1"),
        "accepted: nvsched verifies the blocks it recorded as written either way",
        accept_bool
    ),
    opt!(
        "verify",
        [],
        None,
        "written blocks carry a checksummed header, read back and checked (uring engine): crc32c; fio's other checksums (md5, sha256, xxhash, crc64, ..., meta) are checked with crc32c, as nvsched's header is its own; null: read back without headers or checks, as fio pretends",
        |j, v| {
            j.verify = match v {
                "0" | "none" => false,
                _ if VERIFY_CHECKSUMS.contains(&v) => true,
                "pattern" | "null" => true,
                other => {
                    return Err(format!(
                        "'{other}' is not a verify method nvsched takes; accepted: none, pattern, null, {}",
                        VERIFY_CHECKSUMS.join(", ")
                    ))
                }
            };
            j.verify_format.pattern_only = v == "pattern";
            j.verify_format.pretend = v == "null";
            Ok(())
        }
    ),
    opt!(
        "continue_on_error",
        [],
        None,
        "none, read, write, io, verify or all (0/1): a failed I/O of that kind with a non-fatal error (EIO, EILSEQ, or those ignore_error lists) is counted and the job goes on; otherwise it fails the job (real devices; with verify, a bad block is counted and the job goes on, where it would fail the job with EILSEQ; the run still exits 1 on a mismatch)",
        |j, v| {
            j.on_error.continue_on = crate::errors::parse_continue_on(v)?;
            Ok(())
        }
    ),
    opt!(
        "ignore_error",
        [],
        None,
        "errors continue_on_error treats as non-fatal besides EIO and EILSEQ: read_list,write_list,verify_list, each ':'-separated names (ENOSPC) or numbers",
        |j, v| {
            j.on_error.ignore = crate::errors::parse_ignore_lists(v)?;
            Ok(())
        }
    ),
    opt!(
        "zero_buffers",
        [],
        Some("1"),
        "writes carry zeros instead of random data (real devices; the simulated drives store no data, so content changes nothing there)",
        |j, v| {
            j.buffers.zero = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "refill_buffers",
        [],
        Some("1"),
        "fresh content for every write, not a buffer filled once and reused (real devices; implied by buffer_compress_percentage and dedupe_percentage)",
        |j, v| {
            j.buffers.refill = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "scramble_buffers",
        [],
        Some("1"),
        "a reused buffer gets the write's offset and time in each 512-byte sector, so no two writes are identical (default 1; real devices)",
        |j, v| {
            j.buffers.scramble = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "buffer_pattern",
        [],
        None,
        "bytes repeated over each write buffer: 0x-prefixed hex, a decimal number (little-endian) or a quoted string, concatenated (real devices)",
        |j, v| {
            j.buffers.pattern = crate::buffers::parse_pattern(v)?;
            Ok(())
        }
    ),
    opt!(
        "buffer_compress_percentage",
        [],
        None,
        "% of each buffer_compress_chunk that is zeros (or buffer_pattern), the rest random, so a compressing drive shrinks writes to about that level (real devices)",
        |j, v| {
            j.buffers.compress_percentage = int_in(v, 0, 100)? as u8;
            Ok(())
        }
    ),
    opt!(
        "buffer_compress_chunk",
        [],
        None,
        "the piece buffer_compress_percentage and dedupe_percentage work on (default: the smallest write block)",
        |j, v| {
            let bytes = parse_size(v, j.kb_base)?;
            j.buffers.compress_chunk_bytes = u32::try_from(bytes).map_err(|_| format!("{bytes} bytes is too large a chunk"))?;
            Ok(())
        }
    ),
    opt!(
        "dedupe_mode",
        [],
        None,
        "repeat (the default): a repeated piece repeats the last new one; working_set is not supported",
        |_, v| match v {
            "repeat" => Ok(()),
            "working_set" => Err("dedupe_mode=working_set is not supported; repeat is".into()),
            other => Err(format!("'{other}' is not one of repeat, working_set")),
        }
    ),
    opt!(
        "dedupe_percentage",
        [],
        None,
        "% of written pieces that repeat an earlier one, so a deduplicating drive stores less (real devices)",
        |j, v| {
            j.buffers.dedupe_percentage = int_in(v, 0, 100)? as u8;
            Ok(())
        }
    ),
    opt!("do_verify", [], Some("1"), "read back and check after writing (with verify)", |j, v| {
        j.do_verify = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "verify_pattern",
        [],
        None,
        "what verified blocks hold after their headers (with verify=pattern, all they hold, checked byte by byte; without verify, it sets verify=pattern): 0x-prefixed hex, a decimal number or a quoted string, concatenated, as buffer_pattern",
        |j, v| {
            j.verify_format.pattern = crate::buffers::parse_pattern(v)?;
            Ok(())
        }
    ),
    opt!(
        "verify_interval",
        [],
        None,
        "bytes each verify header covers (at least 80, as in fio; at most the smallest write, which it is cut to; default: the whole block)",
        |j, v| {
            let bytes = parse_size(v, j.kb_base)?;
            if !(80..=u64::from(u32::MAX)).contains(&bytes) {
                return Err(format!("{bytes} is out of range (80 bytes or more, as fio takes it)"));
            }
            j.verify_format.interval = bytes as u32;
            Ok(())
        }
    ),
    opt!("verify_only", [], Some("1"), "only check the headers written by an earlier run (with verify)", |j, v| {
        j.verify_only = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "verify_fatal",
        [],
        Some("1"),
        "stop checking a job's blocks at its first bad one (with verify; by default every block is checked)",
        |j, v| {
            j.verify_fatal = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "verify_backlog",
        [],
        None,
        "with verify and do_verify: after every this many writes, let them land and read back the oldest blocks written (verify_backlog_batch of them), then go on; what is left is read back at the end of the pass",
        |j, v| {
            j.verify_backlog = int_in(v, 0, i64::from(u32::MAX))? as u32;
            Ok(())
        }
    ),
    opt!(
        "verify_backlog_batch",
        [],
        None,
        "blocks each verify_backlog read-back checks (default: verify_backlog); fewer leaves the rest to the end",
        |j, v| {
            j.verify_backlog_batch = int_in(v, 0, i64::from(u32::MAX))? as u32;
            Ok(())
        }
    ),
    opt!(
        "create_only",
        [],
        Some("1"),
        "lay out the job's files and issue no I/O; real devices keep the files it lays out (fio's setup phase only)",
        |j, v| {
            j.create_only = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "file_append",
        [],
        Some("1"),
        "work after the end of each file as the run finds it (a new file: from 0) for size bytes, growing it, whatever offset says; on real devices an existing file grows only with --allow-destructive",
        |j, v| {
            j.file_append = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "fill_device",
        ["fill_fs"],
        Some("1"),
        "write until the file system or device is full (ENOSPC ends the job without an error); without a size, the file takes the free space",
        |j, v| {
            j.fill_device = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "write_hint",
        [],
        None,
        "none, short, medium, long or extreme: the write lifetime hint set on the job's files (F_SET_RW_HINT), which the kernel passes to the device with each write (real devices)",
        |j, v| {
            j.write_hint = Some(match v {
                "none" => 1,
                "short" => 2,
                "medium" => 3,
                "long" => 4,
                "extreme" => 5,
                other => return Err(format!("'{other}' is not one of none, short, medium, long, extreme")),
            });
            Ok(())
        }
    ),
    opt!(
        "serialize_overlap",
        ["serialise_overlap"],
        Some("1"),
        "an I/O that overlaps one of the job's I/Os in flight waits until that one completes (jobs that write or trim with iodepth > 1), so reordering cannot change what lands last",
        |j, v| {
            j.serialize_overlap = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "exec_prerun",
        [],
        None,
        "shell command each clone runs as it starts (after the files are laid out, before its I/O), output in NAME.prerun.txt; a command that fails stops the run (real devices; the simulator skips it with a warning)",
        |j, v| {
            j.exec_prerun = Some(non_empty(v, "exec_prerun needs a command")?);
            Ok(())
        }
    ),
    opt!(
        "exec_postrun",
        [],
        None,
        "shell command each clone runs as it ends (after its I/O and verify), output in NAME.postrun.txt; its failure is reported, not fatal (real devices; the simulator skips it with a warning)",
        |j, v| {
            j.exec_postrun = Some(non_empty(v, "exec_postrun needs a command")?);
            Ok(())
        }
    ),
    opt!(
        "sqthread_poll",
        [],
        Some("1"),
        "io_uring: a kernel thread polls the submission queue (IORING_SETUP_SQPOLL); real devices, where every job shares one ring, so set it for all jobs or none (the simulator's host model does not change)",
        |j, v| {
            j.sqthread_poll = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "force_async",
        [],
        None,
        "io_uring: every Nth request is handed to the kernel's async workers (IOSQE_ASYNC) instead of being tried inline first; 0: none (real devices; the simulator's host model does not change)",
        |j, v| {
            j.force_async = int_in(v, 0, i64::from(u32::MAX))? as u32;
            Ok(())
        }
    ),
    opt!(
        "nowait",
        [],
        Some("1"),
        "io_uring and pvsync2: reads and writes carry RWF_NOWAIT and fail with EAGAIN where they would have to wait (continue_on_error with EAGAIN in ignore_error's read or write list lets the job go on); real devices, a warning in simulation",
        |j, v| {
            j.nowait = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "sqthread_poll_cpu",
        [],
        None,
        "io_uring with sqthread_poll: the CPU the polling thread runs on",
        |j, v| {
            j.sqthread_poll_cpu = Some(int_in(v, 0, 4095)? as u32);
            Ok(())
        }
    ),
    opt!(
        "allow_file_create",
        [],
        Some("1"),
        "0: a job's file must exist (real devices); 1 (default): a missing file is laid out",
        |j, v| {
            j.allow_file_create = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "ioscheduler",
        [],
        None,
        "scheduling policy in front of the device (fio switches the kernel's scheduler): an ID of `nvsched policies` or ID:key=value,...; --sched overrides it",
        |j, v| {
            j.ioscheduler = Some(non_empty(v, "needs a policy, e.g. ioscheduler=mq-deadline (see `nvsched policies`)")?);
            Ok(())
        }
    ),
    opt!(
        "read_iolog",
        [],
        None,
        "replay this block trace (fio iolog v2/v3, DiskSim, SPC, MSR, Alibaba, Tencent, FIU, blkparse or ftrace text, or a blktrace binary); relative to the job file",
        |j, v| {
            j.replay.read_iolog = Some(non_empty(v, "read_iolog needs a trace file")?);
            Ok(())
        }
    ),
    opt!(
        "merge_blktrace_file",
        [],
        None,
        "merge the blktraces read_iolog names (separated by ':') into this file when the job starts, and replay it (relative to the working directory)",
        |j, v| {
            j.replay.merge_file = Some(non_empty(v, "merge_blktrace_file needs a file name")?);
            Ok(())
        }
    ),
    opt!(
        "merge_blktrace_scalars",
        [],
        None,
        "with merge_blktrace_file: per trace, the percentage its times are scaled by (':'-separated, one per trace; whole percent, as fio takes them)",
        |j, v| {
            j.replay.merge_scalars_pct = merge_list(v, "merge_blktrace_scalars", |x| x as u64)?;
            Ok(())
        }
    ),
    opt!(
        "merge_blktrace_iters",
        [],
        None,
        "with merge_blktrace_file: per trace, how many times it is laid end to end (':'-separated, one per trace)",
        |j, v| {
            j.replay.merge_iterations = merge_list(v, "merge_blktrace_iters", |x| x.min(f64::from(u32::MAX)) as u32)?;
            Ok(())
        }
    ),
    opt!(
        "write_iolog",
        [],
        None,
        "log the issued I/Os as fio's iolog (version 3; FILE.N per clone with numjobs), for read_iolog",
        |j, v| {
            j.write_iolog = Some(non_empty(v, "write_iolog needs a file name")?);
            Ok(())
        }
    ),
    opt!(
        "trace_format",
        [],
        None,
        "nvsched: the format of read_iolog's trace: auto, fio, disksim (ns), disksim-ms, spc, msr, alibaba, tencent, fiu, blktrace (binary), blkparse, ftrace",
        |j, v| {
            j.replay.format = TraceFormat::parse(v.trim())?;
            Ok(())
        }
    ),
    opt!("replay_no_stall", [], Some("1"), "replay as fast as iodepth allows, ignoring the trace's times", |j, v| {
        j.replay.no_stall = parse_bool(v)?;
        Ok(())
    }),
    opt!("replay_time_scale", [], None, "percent of the trace's pace: 200 replays twice as fast", |j, v| {
        j.replay.time_scale_pct = parse_int_in(v, 1, 1_000_000)? as u32;
        Ok(())
    }),
    opt!("replay_skip", [], None, "directions of the trace left out: read, write, trim, sync (a comma list)", |j, v| {
        let mut skip = [false; 4];
        for d in v.split(',').map(str::trim) {
            let op = match d {
                "read" => Op::Read,
                "write" => Op::Write,
                "trim" => Op::Discard,
                "sync" => Op::Flush,
                _ => return Err(format!("'{d}' is not a direction; accepted: read, write, trim, sync")),
            };
            skip[op.index()] = true;
        }
        j.replay.skip = skip;
        Ok(())
    }),
    opt!(
        "replay_ioprio",
        [],
        Some("1"),
        "nvsched: each replayed request keeps the I/O priority its trace gives it (ftrace's block_rq_* events)",
        |j, v| {
            j.replay.trace_ioprio = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!("replay_scale", [], None, "divide the trace's offsets by this (fio's replay_scale)", |j, v| {
        j.replay.offset_divisor = parse_int_in(v, 1, i64::from(u32::MAX))? as u64;
        Ok(())
    }),
    opt!("replay_align", [], None, "align the trace's offsets down to this many bytes (a multiple of 512)", |j, v| {
        let bytes = parse_size(v, j.kb_base)?;
        if bytes == 0 || bytes % 512 != 0 {
            return Err(format!("'{v}' is not a positive multiple of 512 bytes"));
        }
        j.replay.align_bytes = bytes;
        Ok(())
    }),
    opt!(
        "replay_redirect",
        [],
        None,
        "replay every trace device onto this file or device: filename=VALUE with replay_devices=shared",
        |j, v| {
            j.filename = Some(non_empty(v, "replay_redirect needs a file or device")?);
            j.replay.devices = DeviceMapping::Shared;
            Ok(())
        }
    ),
    opt!(
        "replay_devices",
        [],
        None,
        "nvsched: split (each trace device its own part of the job's file, default) or shared (one space)",
        |j, v| {
            j.replay.devices = match v.trim() {
                "split" => DeviceMapping::Split,
                "shared" => DeviceMapping::Shared,
                other => return Err(format!("'{other}' is neither split nor shared")),
            };
            Ok(())
        }
    ),
    opt!(
        "replay_outside",
        [],
        None,
        "nvsched: requests beyond their device's part: drop (default, counted) or wrap (offset modulo the part)",
        |j, v| {
            j.replay.outside = match v.trim() {
                "drop" => Outside::Drop,
                "wrap" => Outside::Wrap,
                other => return Err(format!("'{other}' is neither drop nor wrap")),
            };
            Ok(())
        }
    ),
    opt!(
        "precondition",
        [],
        None,
        "nvsched: simulated drive state before the run: clean, partial:FRACTION or full",
        |j, v| {
            let ok = v == "clean"
                || v == "full"
                || v.strip_prefix("partial:")
                    .and_then(|f| f.parse::<f64>().ok())
                    .is_some_and(|f| (0.0..=1.0).contains(&f));
            if !ok {
                return Err(format!("'{v}' is not a drive state; accepted: clean, full, partial:FRACTION (0..=1)"));
            }
            j.precondition = Some(v.to_string());
            Ok(())
        }
    ),
];

/// What verified blocks hold (fio's `verify_interval`, `verify_pattern` and
/// `verify=pattern`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VerifyFormat {
    /// Bytes each header covers: a block holds one header per interval (0: one for the
    /// whole block).
    pub interval: u32,
    /// The bytes repeated from each block's start under its headers (empty: pseudo-random
    /// bytes, different for each write).
    pub pattern: Vec<u8>,
    /// `verify=pattern`: no headers, every byte is checked against the pattern (so a
    /// stale or misplaced block passes, as in fio).
    pub pattern_only: bool,
    /// `verify=null`: fio only pretends: writes carry no headers and the blocks read
    /// back are not checked.
    pub pretend: bool,
}

/// fio's checksum verify methods: nvsched checks each with its own crc32c header.
const VERIFY_CHECKSUMS: &[&str] = &[
    "crc32c",
    "crc32c-intel",
    "crc32",
    "crc64",
    "crc16",
    "crc7",
    "md5",
    "sha1",
    "sha256",
    "sha512",
    "sha3-224",
    "sha3-256",
    "sha3-384",
    "sha3-512",
    "xxhash",
    "meta",
];

/// fio options nvsched knows of but does not model, each with the reason: a precise
/// message instead of "unknown option". Together with `OPTIONS` they cover every option
/// fio 3.33 lists (`fio --cmdhelp=all`, and `--enghelp` of io_uring and libaio).
const FIO_UNSUPPORTED: &[(&str, &str)] = &[
    ("bs_unaligned", "blocks are multiples of 512 bytes, as direct I/O needs"),
    ("blocksize_unaligned", "blocks are multiples of 512 bytes, as direct I/O needs"),
    ("dedupe_global", "dedupe_mode=working_set is not supported; dedupe_mode=repeat repeats pieces within each job"),
    (
        "dedupe_working_set_percentage",
        "dedupe_mode=working_set is not supported; dedupe_mode=repeat repeats pieces within each job",
    ),
    ("cmdprio_hint", "I/O priority hints are not modelled"),
    ("priohint", "I/O priority hints are not modelled"),
    ("verify_offset", "nvsched's verify header sits at the start of the block"),
    ("verify_state_load", "nvsched keeps no verify state between runs; verify_only checks each block's own header"),
    ("trim_percentage", "trimmed blocks are not verified (fio's verify_trim)"),
    ("trim_backlog", "trimmed blocks are not verified (fio's verify_trim)"),
    ("trim_backlog_batch", "trimmed blocks are not verified (fio's verify_trim)"),
    ("trim_verify_zero", "trimmed blocks are not verified (fio's verify_trim)"),
    ("atomic", "atomic writes are not modelled"),
    ("writefua", "the sg engine is not supported; sync=1 writes carry FUA"),
    ("readfua", "the sg engine is not supported"),
    ("hipri", "polled completions (IORING_SETUP_IOPOLL) are not supported; --poll busy-polls the completion queue"),
    ("hipri_percentage", "polled completions (IORING_SETUP_IOPOLL) are not supported"),
    ("cmd_type", "io_uring passthrough commands (io_uring_cmd) are not supported"),
    ("write_barrier", "barrier writes are not supported"),
    ("uid", "jobs run as the user who starts nvsched"),
    ("gid", "jobs run as the user who starts nvsched"),
    ("profile", "fio's built-in profiles are not included; write their jobs out"),
    ("block_error_percentiles", "zoned block devices (zonemode=zbd) are not modelled"),
    ("max_open_zones", "zoned block devices (zonemode=zbd) are not modelled"),
    ("job_max_open_zones", "zoned block devices (zonemode=zbd) are not modelled"),
    ("ignore_zone_limits", "zoned block devices (zonemode=zbd) are not modelled"),
    ("zonecapacity", "zoned block devices (zonemode=zbd) are not modelled"),
    ("zone_reset_frequency", "zoned block devices (zonemode=zbd) are not modelled"),
    ("zone_reset_threshold", "zoned block devices (zonemode=zbd) are not modelled"),
    ("read_beyond_wp", "zoned block devices (zonemode=zbd) are not modelled"),
];

/// Options fio 3.33 still knows by name but deprecated, each with whether fio only
/// warns (and ignores it) or refuses the job, and what to write instead. Found by trying
/// every option-like string in the fio 3.33 binary with `--parse-only`.
const FIO_DEPRECATED: &[(&str, Deprecation)] = &[
    ("verifysort", Deprecation::Ignored),
    ("verifysort_nr", Deprecation::Ignored),
    ("flow_watermark", Deprecation::Ignored),
    ("rwmixcycle", Deprecation::Refused("rwmixread/rwmixwrite set the mix; nothing sets its cycle")),
    ("percentage_sequential", Deprecation::Refused("set percentage_random instead")),
];

#[derive(Clone, Copy)]
enum Deprecation {
    /// fio prints "Option X is deprecated" and goes on without it.
    Ignored,
    /// fio prints that and drops the job file; with what to write instead.
    Refused(&'static str),
}

fn deprecation(key: &str) -> Option<Deprecation> {
    FIO_DEPRECATED.iter().find(|(name, _)| *name == key).map(|(_, d)| *d)
}

/// Why nvsched does not take `key`, a fio option it knows of, if it is one.
pub fn unsupported_reason(key: &str) -> Option<&'static str> {
    FIO_UNSUPPORTED.iter().find(|(name, _)| *name == key).map(|(_, why)| *why)
}

/// Looks up an option by name or alias.
pub fn find_option(key: &str) -> Option<&'static OptionDef> {
    OPTIONS.iter().find(|o| o.name == key || o.aliases.contains(&key))
}

/// Why `key` is not an option nvsched takes: a fio option it does not support, or no
/// option at all (with the closest name, if one is close).
pub fn why_not_an_option(key: &str) -> String {
    if let Some(Deprecation::Refused(instead)) = deprecation(key) {
        format!("is deprecated: fio 3.33 refuses it too ('Option {key} is deprecated'); {instead}")
    } else if let Some(Deprecation::Ignored) = deprecation(key) {
        "is deprecated and has no effect: a job may give it, and nvsched ignores it with a warning, as fio 3.33 does"
            .to_string()
    } else if let Some(why) = unsupported_reason(key) {
        format!("is a fio option nvsched does not support: {why}")
    } else {
        match closest_option(key) {
            Some(s) => format!("is not a known option (did you mean '{s}'?)"),
            None => "is not a known option".to_string(),
        }
    }
}

/// Parses a fio job file from disk.
pub fn parse_job_file(path: &Path, env: &dyn Environment, opts: ParseOptions) -> Result<JobFile, JobFileError> {
    let sections = crate::jobfile::read_job_file(path, env)?;
    build_jobs(&sections, opts).map_err(|e| e.in_file(path))
}

/// Parses job-file text (named `path` in errors).
pub fn parse_job_str(
    text: &str,
    path: &Path,
    env: &dyn Environment,
    opts: ParseOptions,
) -> Result<JobFile, JobFileError> {
    let sections = crate::jobfile::parse_job_text(text, path, env)?;
    build_jobs(&sections, opts).map_err(|e| e.in_file(path))
}

/// Applies `[global]` inheritance and every option, then checks each job as a whole.
pub fn build_jobs(sections: &[RawSection], opts: ParseOptions) -> Result<JobFile, JobFileError> {
    let mut warnings = Vec::new();
    let mut global_options = Vec::new();
    let first_at = sections.first().map(|s| s.at.clone());
    let mut template = match &first_at {
        Some(at) => JobSpec::defaults(at.clone()),
        None => return Err(JobFileError { at: None, option: None, message: "the job file defines no jobs".into() }),
    };
    let mut jobs = Vec::new();
    let mut traces = TraceCache::new();
    for section in sections {
        if section.is_global() {
            for opt in &section.options {
                apply_option(&mut template, opt, opts, &mut warnings)?;
                global_options.push((opt.key.clone(), opt.written.clone()));
            }
            continue;
        }
        let mut job = template.clone();
        job.name = section.name.clone();
        job.at = section.at.clone();
        job.job_options.clear();
        for opt in &section.options {
            apply_option(&mut job, opt, opts, &mut warnings)?;
            job.job_options.push((opt.key.clone(), opt.written.clone()));
        }
        finish_job(&mut job, &mut warnings)?;
        load_replay(&mut job, &mut traces, &mut warnings)?;
        jobs.push(job);
    }
    if jobs.is_empty() {
        return Err(JobFileError {
            at: first_at,
            option: None,
            message: "the job file defines no jobs (only [global] sections)".into(),
        });
    }
    check_sample_windows_agree(&jobs)?;
    check_wait_for(&jobs)?;
    warn_negative_flows(&jobs, &mut warnings);
    warn_async_lockfile(&jobs, &mut warnings);
    Ok(JobFile { jobs, global_options, warnings })
}

/// `lockfile` with an asynchronous engine: fio takes and gives back the lock around the
/// engine's queue call, which returns before the I/O completes, so nothing ever waits.
fn warn_async_lockfile(jobs: &[JobSpec], warnings: &mut Vec<String>) {
    for job in jobs.iter().filter(|j| j.lockfile != LockMode::None && j.engine_kind == EngineKind::Async) {
        warnings.push(format!(
            "{}: lockfile={} has no effect on job '{}': with ioengine={}, as in fio 3.33, an I/O gives the lock back once it is queued, before it completes, so no job waits for another",
            job.option_line("lockfile"),
            job.lockfile.name(),
            job.name,
            job.ioengine,
        ));
    }
}

/// A negative `flow` (older fio's signed flow counter) is, as fio 3.33 stores it, a weight
/// near 2^32, and a flow group's weights add up modulo 2^32 (fio's `unsigned int`): say
/// what that makes of each group, since it is rarely what the job meant.
fn warn_negative_flows(jobs: &[JobSpec], warnings: &mut Vec<String>) {
    let mut groups: BTreeMap<u32, (u32, Vec<&JobSpec>)> = BTreeMap::new();
    for job in jobs.iter().filter(|j| j.flow > 0) {
        let (sum, members) = groups.entry(job.flow_id).or_default();
        *sum = (0..job.numjobs).fold(*sum, |s, _| s.wrapping_add(job.flow));
        members.push(job);
    }
    for (flow_id, (sum, members)) in groups {
        for job in members.iter().filter(|j| j.flow > 1000) {
            let effect = if sum == 0 {
                "here they add up to 0, so flow control is off for the group (each job issues freely)".to_string()
            } else if job.flow >= sum {
                format!("here they add up to {sum}, no more than its own weight, so flow control never holds it back")
            } else {
                let share = f64::from(job.flow) / f64::from(sum) * 100.0;
                format!("here they add up to {sum}, so the job issues about {share:.3}% of the group's I/Os")
            };
            warnings.push(format!(
                "{}: flow={} is older fio's signed flow counter; fio 3.33, and nvsched as it, take it as the weight {} and add up the weights of flow_id {flow_id} modulo 2^32: {effect}",
                job.option_line("flow"),
                job.flow as i32,
                job.flow,
            ));
        }
    }
}

fn apply_option(
    job: &mut JobSpec,
    opt: &RawOption,
    opts: ParseOptions,
    warnings: &mut Vec<String>,
) -> Result<(), JobFileError> {
    let key = opt.key.as_str();
    if let Some(Deprecation::Ignored) = deprecation(key) {
        warnings.push(format!(
            "{}: option '{key}' is deprecated and has no effect; ignored, as fio 3.33 ignores it ('Option {key} is deprecated')",
            opt.at
        ));
        return Ok(());
    }
    let Some(def) = find_option(key) else {
        let why = why_not_an_option(key);
        if opts.ignore_unsupported {
            warnings.push(format!("{}: option '{key}' {why}; ignored", opt.at));
            return Ok(());
        }
        return Err(JobFileError::new(
            &opt.at,
            Some(key),
            format!("'{key}' {why} (--ignore-unsupported turns this into a warning)"),
        ));
    };
    let value = match (&opt.value, def.bare) {
        (Some(v), _) => v.as_str(),
        (None, Some(meaning)) => meaning,
        (None, None) => return Err(JobFileError::new(&opt.at, Some(key), "needs a value (key=value)")),
    };
    (def.apply)(job, value).map_err(|m| {
        // name what the value was expanded from: an unset ${VAR} expands to nothing
        let message = match &opt.written {
            Some(written) if written != value => format!("{m} (expanded from '{written}')"),
            _ => m,
        };
        JobFileError::new(&opt.at, Some(key), message)
    })?;
    job.option_lines.insert(def.name, opt.at.clone());
    if def.name == "verify" && job.verify && !value.starts_with("crc32c") && value != "pattern" && value != "null" {
        warnings.push(format!(
            "{}: verify={value} is checked with crc32c (nvsched's verify header is its own, not fio's)",
            opt.at
        ));
    }
    Ok(())
}

/// Cross-option checks and fio's derived defaults.
fn finish_job(job: &mut JobSpec, warnings: &mut Vec<String>) -> Result<(), JobFileError> {
    if let Some(dir) = job.opendir.clone() {
        let refuse = |m: String| JobFileError::new(job.option_line("opendir"), Some("opendir"), m);
        let found = files_below(Path::new(&dir)).map_err(|e| refuse(format!("cannot read directory '{dir}': {e}")))?;
        if found.is_empty() {
            return Err(refuse(format!("'{dir}' holds no regular files")));
        }
        // as fio 3.33 takes them: the directory's files first, then those filename names
        let named = job.filename.take().into_iter().chain(std::mem::take(&mut job.more_filenames));
        let mut all = found.into_iter().chain(named);
        job.filename = all.next();
        job.more_filenames = all.collect();
    }
    let err = |opt: Option<&str>, m: String| JobFileError::new(&job.at, opt, m);
    if job.verify && job.writes_data() && job.numjobs > 1 && job.file_name_of(0, 0) == job.file_name_of(1, 0) {
        // fio 3.33 prints the same warning for a job whose clones write one file
        warnings.push(format!(
            "{}: numjobs={} clones write and verify the same file '{}': each may overwrite blocks another wrote, so verification can fail, as fio warns (give each clone its own file, e.g. with directory= and no filename=)",
            job.option_line("numjobs"),
            job.numjobs,
            job.file_name_of(0, 0)
        ));
    }
    if job.file_append {
        // fio appends `size` bytes (its io_size) after each file's end
        let why = if job.filesize.is_some() {
            Some("filesize= sizes the whole file, so it leaves no amount to append; set size= instead")
        } else if !matches!(job.size, Some(SizeOrPercent::Bytes(_))) {
            Some("it needs size= in bytes: how much to append after each file's end")
        } else if job.fill_device {
            Some("fill_device already writes until the file system is full; drop one of them")
        } else if job.replay.read_iolog.is_some() {
            Some("a replay's offsets come from its trace")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(JobFileError::new(
                job.option_line("file_append"),
                Some("file_append"),
                format!("job '{}': file_append: {why}", job.name),
            ));
        }
    }
    if job.queue_depth() < job.iodepth {
        warnings.push(format!(
            "{}: iodepth={} with the synchronous engine {}: the queue depth is capped at 1, as fio notes (an asynchronous engine such as libaio or io_uring queues more)",
            job.option_line("iodepth"),
            job.iodepth,
            job.ioengine
        ));
    }
    if let Some(align) = job.blockalign {
        // fio: a random map is kept in blocks of the smallest size, so offsets off that
        // grid turn it off
        let off_grid = job.active_ops().any(|op| job.bs[op.index()].min() != align);
        if job.pattern.is_random() && !job.norandommap && off_grid {
            job.norandommap = true;
            warnings.push(format!(
                "{}: blockalign={align} differs from the smallest block size: the random map is off (norandommap), as in fio",
                job.option_line("blockalign")
            ));
        }
    }
    if job.number_ios > 0 && job.time_based && job.replay.read_iolog.is_none() {
        warnings.push(format!(
            "{}: number_ios does not end a time_based job: as in fio 3.33, each loop ends after that many I/Os and the next begins until the runtime",
            job.option_line("number_ios")
        ));
    }
    if job.iodepth_batch_submit == 0 || job.iodepth_batch_submit > job.queue_depth() {
        job.iodepth_batch_submit = job.queue_depth();
    }
    let lines = &job.option_lines;
    job.buffers.settle(|option| lines.contains_key(option));
    if job.thinktime_iotime > Nanos::ZERO && !job.option_lines.contains_key("thinktime_blocks") {
        // fio: with thinktime_iotime, the default of one I/O per pause does not apply
        job.thinktime_blocks = u32::MAX;
    }
    if job.thinktime_spin > job.thinktime {
        return Err(JobFileError::new(
            job.option_line("thinktime_spin"),
            Some("thinktime_spin"),
            format!(
                "job '{}': thinktime_spin ({}) is longer than thinktime ({})",
                job.name, job.thinktime_spin, job.thinktime
            ),
        ));
    }
    if job.logs.hist.is_some() && job.logs.hist_msec == 0 {
        return Err(JobFileError::new(
            job.option_line("write_hist_log"),
            Some("write_hist_log"),
            format!("job '{}': write_hist_log needs log_hist_msec, the time between samples", job.name),
        ));
    }
    for prefix in [&mut job.logs.lat, &mut job.logs.bw, &mut job.logs.iops, &mut job.logs.hist].into_iter().flatten() {
        if prefix.is_empty() {
            prefix.clone_from(&job.name);
        }
    }
    let bssplit = job.cmdprio_bssplit.iter().any(|l| !l.is_empty());
    if bssplit && job.cmdprio_pct != [0; 2] {
        return Err(err(
            Some("cmdprio_bssplit"),
            format!("job '{}': cmdprio_percentage and cmdprio_bssplit exclude each other (as in fio)", job.name),
        ));
    }
    for (set, option) in [(job.cmdprio_pct != [0; 2], "cmdprio_percentage"), (bssplit, "cmdprio_bssplit")] {
        if set && !matches!(job.ioengine.as_str(), "io_uring" | "libaio") {
            return Err(err(
                Some(option),
                format!("job '{}': {option} needs ioengine=io_uring or libaio (as in fio)", job.name),
            ));
        }
    }
    if job.files_per_clone() > 1 {
        let files = if job.filename.is_some() { "filename" } else { "nrfiles" };
        let clash = [(job.replay.read_iolog.is_some(), "read_iolog"), (job.pattern.is_trimwrite(), "rw")];
        if let Some((_, option)) = clash.iter().find(|(set, _)| *set) {
            return Err(err(
                Some(option),
                format!(
                    "job '{}': {option} is not supported with several files per job ({files}); use one job per file",
                    job.name
                ),
            ));
        }
    }
    if job.nowait && !matches!(job.ioengine.as_str(), "io_uring" | "pvsync2") {
        return Err(err(
            Some("nowait"),
            format!("job '{}': nowait needs ioengine=io_uring or pvsync2 (as in fio)", job.name),
        ));
    }
    for (set, option) in [
        (job.sqthread_poll, "sqthread_poll"),
        (job.sqthread_poll_cpu.is_some(), "sqthread_poll_cpu"),
        (job.force_async > 0, "force_async"),
    ] {
        if set && job.ioengine != "io_uring" {
            return Err(err(Some(option), format!("job '{}': {option} needs ioengine=io_uring (as in fio)", job.name)));
        }
    }
    for d in 0..3 {
        let (min, cap, option) = if job.rate_min_bps[d] > 0 {
            (job.rate_min_bps[d], job.rate_bps[d], "rate_min")
        } else {
            (job.rate_iops_min[d], job.rate_iops[d], "rate_iops_min")
        };
        if cap > 0 && min > cap {
            let m = format!(
                "job '{}': the minimum rate exceeds the rate ({min} > {cap}, direction {d}), as fio refuses",
                job.name
            );
            return Err(JobFileError::new(job.option_line(option), Some(option), m));
        }
    }
    let z = &mut job.zones;
    if !z.strided && (z.size > 0 || z.range > 0 || z.skip > 0) {
        let option = if z.size > 0 {
            "zonesize"
        } else if z.range > 0 {
            "zonerange"
        } else {
            "zoneskip"
        };
        let m = format!("job '{}': {option} needs zonemode=strided (as in fio)", job.name);
        return Err(JobFileError::new(job.option_line(option), Some(option), m));
    }
    if z.strided && z.size == 0 {
        let m = format!("job '{}': zonemode=strided needs a zonesize", job.name);
        return Err(JobFileError::new(job.option_line("zonemode"), Some("zonemode"), m));
    }
    if z.range == 0 {
        z.range = z.size;
    }
    if job.serialize_overlap && job.replay.read_iolog.is_none() && (!job.writes_data() || job.queue_depth() == 1) {
        // fio: nothing to serialise when the job changes no data or has one I/O out
        job.serialize_overlap = false;
    }
    let format = &mut job.verify_format;
    if !format.pattern.is_empty() && !job.option_lines.contains_key("verify") {
        // fio: a verify_pattern without a verify method verifies the pattern
        job.verify = true;
        format.pattern_only = true;
    }
    if job.verify && format.pattern_only && format.pattern.is_empty() {
        let m = format!("job '{}': verify=pattern needs a verify_pattern", job.name);
        return Err(JobFileError::new(job.option_line("verify"), Some("verify"), m));
    }
    // fio cuts the interval to the smallest write
    format.interval = format.interval.min(job.bs[Op::Write.index()].min());
    job.logs.alternate_clock = job.log_alternate_epoch.then_some(job.log_alternate_clock_id);
    if job.time_based && job.runtime == Nanos::ZERO {
        // fio 3.33 runs such a job by its size (rw=read size=1m: 256 reads, then it ends)
        warnings.push(format!(
            "{}: job '{}': time_based without a runtime is ignored, as in fio: the job ends by its size",
            job.option_line("time_based"),
            job.name
        ));
        job.time_based = false;
    }
    if job.fsync_every > 0 && job.fdatasync_every > 0 {
        return Err(err(Some("fsync"), format!("job '{}': set fsync or fdatasync, not both", job.name)));
    }
    if job.sync_file_range.is_some() && job.fsync_every.max(job.fdatasync_every) > 0 {
        return Err(err(
            Some("sync_file_range"),
            format!("job '{}': set sync_file_range or fsync/fdatasync, not both", job.name),
        ));
    }
    Ok(())
}

/// Traces already read, by path, format, `replay_scale` and `replay_align`: jobs that
/// share one read it once.
type TraceCache = Vec<((PathBuf, Option<TraceFormat>, u64, u64), Arc<Trace>)>;

/// Warns, for each of `options` the job sets, that it has no effect on the job, and why.
fn warn_no_effect(job: &JobSpec, options: &[&str], why: &str, warnings: &mut Vec<String>) {
    for option in options.iter().filter(|o| job.option_lines.contains_key(**o)) {
        warnings.push(format!(
            "{}: option '{option}' has no effect on job '{}'{why}",
            job.option_line(option),
            job.name
        ));
    }
}

/// Options a replayed trace decides instead (fio ignores them with `read_iolog`).
const REPLAY_OVERRIDES: [&str; 11] = [
    "rw",
    "bs",
    "bsrange",
    "bssplit",
    "rwmixread",
    "rwmixwrite",
    "random_distribution",
    "norandommap",
    "blockalign",
    "percentage_random",
    "rw_sequencer",
];

/// Reads the job's trace (`read_iolog`), relative to the job file that names it, and
/// checks the options that do not go with a replay.
fn load_replay(job: &mut JobSpec, traces: &mut TraceCache, warnings: &mut Vec<String>) -> Result<(), JobFileError> {
    let Some(name) = job.replay.read_iolog.clone() else {
        let merging = ["merge_blktrace_file", "merge_blktrace_scalars", "merge_blktrace_iters"];
        warn_no_effect(job, &merging, " without read_iolog", warnings);
        return Ok(());
    };
    let at = job.option_line("read_iolog").clone();
    let err = |option: &str, m: String| JobFileError::new(job.option_line(option), Some(option), m);
    if job.time_based {
        return Err(err(
            "time_based",
            format!(
                "job '{}': a replay ends with its trace; runtime alone (without time_based) cuts it short",
                job.name
            ),
        ));
    }
    if job.loops > 1 {
        return Err(err("loops", format!("job '{}': loops does not apply to a replay (read_iolog)", job.name)));
    }
    if job.verify {
        return Err(err("verify", format!("job '{}': verify does not apply to a replay (read_iolog)", job.name)));
    }
    warn_no_effect(job, &REPLAY_OVERRIDES, ": its trace (read_iolog) decides", warnings);
    let relative = |name: &str| {
        let path = Path::new(name);
        match at.file.parent() {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.to_path_buf(),
        }
    };
    let (divisor, align) = (job.replay.offset_divisor, job.replay.align_bytes);
    let rescaled = |mut t: Trace| {
        if (divisor, align) != (1, 512) {
            t.rescale_offsets(divisor, align);
        }
        Arc::new(t)
    };
    let (path, trace) = match job.replay.merge_file.clone() {
        Some(merge_file) => {
            let inputs: Vec<PathBuf> = name.split(':').map(relative).collect();
            let bytes = merge_inputs(job, &inputs, &merge_file)?;
            let path = PathBuf::from(merge_file);
            let trace = crate::trace::parse_blktrace(&bytes, &path)
                .map_err(|e| JobFileError::new(&at, Some("merge_blktrace_file"), e.to_string()))?;
            job.replay.merged = Some(Arc::new(bytes));
            (path, rescaled(trace))
        }
        None => {
            let merging = ["merge_blktrace_scalars", "merge_blktrace_iters"];
            warn_no_effect(job, &merging, " without merge_blktrace_file", warnings);
            let path = relative(&name);
            let key = (path.clone(), job.replay.format, divisor, align);
            let trace = match traces.iter().find(|(k, _)| *k == key) {
                Some((_, t)) => t.clone(),
                None => {
                    let t = load_trace(&path, job.replay.format)
                        .map_err(|e| JobFileError::new(&at, Some("read_iolog"), e.to_string()))?;
                    let t = rescaled(t);
                    traces.push((key, t.clone()));
                    t
                }
            };
            (path, trace)
        }
    };
    let (t, what) = (&trace, format!("{}: trace '{}'", at, path.display()));
    if t.reordered > 0 {
        warnings
            .push(format!("{what}: {} records come earlier than the one before; replayed in file order", t.reordered));
    }
    if t.realigned > 0 {
        warnings.push(format!("{what}: {} records widened to 512-byte sectors", t.realigned));
    }
    if t.empty > 0 {
        warnings.push(format!("{what}: {} records of length 0 left out", t.empty));
    }
    if t.cut_off_bytes > 0 {
        warnings.push(format!(
            "{what}: the file ends {} bytes into an event (a capture cut off); the events before it are replayed",
            t.cut_off_bytes
        ));
    }
    if let Some(depth) = t.queue_depth.filter(|_| !job.option_lines.contains_key("iodepth")) {
        // as fio does for a blktrace: replay at the depth the trace was captured at
        job.iodepth = depth;
        if job.queue_depth() > 1 {
            warnings.push(format!(
                "{what}: job '{}' replays at iodepth={depth}, the deepest its queue went (as fio takes it from a blktrace); set iodepth to choose",
                job.name
            ));
        }
    }
    job.replay.trace = Some(trace);
    Ok(())
}

/// fio's `opendir`: the regular files below `dir`, in path order (fio takes them in the
/// order the directory lists them), symbolic links left out, as fio's `lstat` does.
fn files_below(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                found.push(entry.path().display().to_string());
            }
        }
    }
    found.sort();
    Ok(found)
}

/// `merge_blktrace_file`: the blktraces `inputs` merged, as the job's scalars and
/// iterations say; the merge must not overwrite one of them.
fn merge_inputs(job: &JobSpec, inputs: &[PathBuf], merge_file: &str) -> Result<Vec<u8>, JobFileError> {
    let per_input = |option: &str, given: usize| -> Result<(), JobFileError> {
        if given == 0 || given == inputs.len() {
            return Ok(());
        }
        Err(JobFileError::new(
            job.option_line(option),
            Some(option),
            format!("job '{}': {given} values for {} traces in read_iolog (one per trace)", job.name, inputs.len()),
        ))
    };
    per_input("merge_blktrace_scalars", job.replay.merge_scalars_pct.len())?;
    per_input("merge_blktrace_iters", job.replay.merge_iterations.len())?;
    let same =
        |a: &Path, b: &Path| std::fs::canonicalize(a).ok().is_some_and(|a| Some(a) == std::fs::canonicalize(b).ok());
    if inputs.iter().any(|input| same(input, Path::new(merge_file))) {
        return Err(JobFileError::new(
            job.option_line("merge_blktrace_file"),
            Some("merge_blktrace_file"),
            format!("job '{}': merge_blktrace_file '{merge_file}' is one of the traces it merges", job.name),
        ));
    }
    let scalars = if job.replay.merge_scalars_pct.is_empty() {
        vec![100; inputs.len()]
    } else {
        job.replay.merge_scalars_pct.clone()
    };
    let iterations = if job.replay.merge_iterations.is_empty() {
        vec![1; inputs.len()]
    } else {
        job.replay.merge_iterations.clone()
    };
    crate::trace::merge_blktraces(inputs, &scalars, &iterations)
        .map_err(|e| JobFileError::new(job.option_line("read_iolog"), Some("read_iolog"), e.to_string()))
}

/// A `:`-separated list of positive numbers (fio's float list), each taken by `whole` as
/// fio takes it (truncated), which must leave at least 1.
fn merge_list<T: PartialOrd + From<u8>>(value: &str, option: &str, whole: impl Fn(f64) -> T) -> Result<Vec<T>, String> {
    value
        .split(':')
        .map(|part| {
            let x: f64 = part.trim().parse().map_err(|_| format!("'{part}' is not a number"))?;
            let w = whole(x);
            if !x.is_finite() || w < T::from(1) {
                return Err(format!("{option}: '{part}' is not 1 or more (one value per trace, separated by ':')"));
            }
            Ok(w)
        })
        .collect()
}

fn closest_option(key: &str) -> Option<&'static str> {
    OPTIONS
        .iter()
        .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()))
        .map(|name| (edit_distance(key, name), name))
        .filter(|(d, name)| *d <= 2.max(name.len() / 4))
        .min()
        .map(|(_, name)| name)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// fio per-direction list: `a` applies to all; `a,b` gives trims `b`; `a,b,` gives trims
/// the default; an empty slot keeps the default.
fn per_direction<T: Clone>(value: &str, parse: impl Fn(&str) -> Result<T, String>) -> Result<[Option<T>; 3], String> {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err(format!("'{value}' has more than three comma-separated values (read,write,trim)"));
    }
    let mut out: [Option<T>; 3] = [None, None, None];
    for (dir, slot) in out.iter_mut().enumerate() {
        let part = parts.get(dir).copied().unwrap_or(parts[parts.len() - 1]);
        if !part.is_empty() {
            *slot = Some(parse(part)?);
        }
    }
    if out.iter().all(Option::is_none) {
        return Err("empty value".into());
    }
    Ok(out)
}

/// Jobs reported together (`group_reporting`) add up their bandwidth samples window by
/// window, so they must sample over the same `bwavgtime` and `iopsavgtime`.
fn check_sample_windows_agree(jobs: &[JobSpec]) -> Result<(), JobFileError> {
    let mut first_of_group = 0;
    for (i, job) in jobs.iter().enumerate() {
        if i > 0 && (job.stonewall || job.new_group) {
            first_of_group = i;
        }
        let first = &jobs[first_of_group];
        if !job.group_reporting || i == first_of_group {
            continue;
        }
        for (option, mine, theirs) in
            [("bwavgtime", job.bw_avg_time, first.bw_avg_time), ("iopsavgtime", job.iops_avg_time, first.iops_avg_time)]
        {
            if mine != theirs {
                return Err(JobFileError::new(
                    job.option_line(option),
                    Some(option),
                    format!(
                        "job '{}' samples over {mine} but job '{}' of its reporting group over {theirs}; group_reporting adds their samples up, so they must agree",
                        job.name, first.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// `wait_for` names a job defined earlier, and one only, as fio requires (a job named by
/// another must have a unique name).
fn check_wait_for(jobs: &[JobSpec]) -> Result<(), JobFileError> {
    for (i, job) in jobs.iter().enumerate() {
        let Some(name) = &job.wait_for else { continue };
        let err = |m: String| Err(JobFileError::new(job.option_line("wait_for"), Some("wait_for"), m));
        let named: Vec<usize> = jobs.iter().enumerate().filter(|(_, j)| &j.name == name).map(|(k, _)| k).collect();
        match named.as_slice() {
            [] => return err(format!("job '{}' waits for '{name}', but no job has that name", job.name)),
            [k] if *k >= i => {
                return err(format!(
                    "job '{}' waits for '{name}', which comes after it (fio needs the job it waits for defined first)",
                    job.name
                ))
            }
            [_] => {}
            _ => {
                return err(format!(
                    "job '{}' waits for '{name}', but {} jobs have that name (it must be unique)",
                    job.name,
                    named.len()
                ))
            }
        }
    }
    Ok(())
}

/// Checks a flag that nvsched accepts without acting on it.
fn accept_bool(_: &mut JobSpec, v: &str) -> Result<(), String> {
    parse_bool(v).map(|_| ())
}

/// Accepts `v` if it is one of `choices`.
fn one_of(v: &str, choices: &[&str]) -> Result<(), String> {
    if choices.contains(&v) {
        Ok(())
    } else {
        Err(format!("'{v}' is not one of {}", choices.join(", ")))
    }
}

/// fio's `a:b` lists of paths (`filename`, `directory`): `\:` is a colon within a name.
fn colon_list(value: &str) -> Vec<String> {
    value.replace("\\:", "\0").split(':').map(|part| part.replace('\0', ":")).collect()
}

/// fio's read[,write] values of the `cmdprio_*` options, each in `min..=max`.
fn cmdprio_pair(target: &mut [u8; 2], value: &str, min: i64, max: i64) -> Result<(), String> {
    if value.split(',').count() > 2 {
        return Err(format!("'{value}' has more than two comma-separated values (read,write)"));
    }
    let values = per_direction(value, |s| parse_int_in(s, min, max).map(|v| v as u8))?;
    for (slot, v) in target.iter_mut().zip(values) {
        if let Some(v) = v {
            *slot = v;
        }
    }
    Ok(())
}

/// One direction's `cmdprio_bssplit` list: `bs/pct` entries (the priority of
/// `cmdprio_class`/`cmdprio`) or `bs/pct/class/level`; a block size's shares add up to
/// at most 100.
fn parse_cmdprio_bssplit(list: &str, kb: KbBase) -> Result<Vec<BsPrio>, String> {
    let mut out: Vec<BsPrio> = Vec::new();
    for entry in list.split(':').map(str::trim).filter(|e| !e.is_empty()) {
        let fields: Vec<&str> = entry.split('/').map(str::trim).collect();
        let (bs, pct, prio) = match fields.as_slice() {
            [bs, pct] => (bs, pct, None),
            [bs, pct, class, level] => {
                let class = parse_int_in(class, 0, 3)? as u8;
                let level = parse_int_in(level, 0, 7)? as u8;
                let class = PrioClass::from_number(class).unwrap_or(PrioClass::None);
                (bs, pct, Some(IoPrio::new(class, level)))
            }
            _ => return Err(format!("'{entry}' is not bs/percentage or bs/percentage/class/level")),
        };
        let bs = parse_block_size(bs, kb)?;
        let pct = parse_int_in(pct, 0, 100)? as u8;
        let total: u32 = out.iter().filter(|e| e.bs == bs).map(|e| u32::from(e.pct)).sum::<u32>() + u32::from(pct);
        if total > 100 {
            return Err(format!("the shares of block size {bs} add up to {total}%, more than 100"));
        }
        out.push(BsPrio { bs, pct, prio });
    }
    Ok(out)
}

fn apply_per_direction<T: Clone>(target: &mut [T; 3], values: [Option<T>; 3], default: T) {
    for (slot, v) in target.iter_mut().zip(values) {
        *slot = v.unwrap_or_else(|| default.clone());
    }
}

/// The largest request a job may issue (`bs`, or a trace's request).
pub const MAX_BLOCK_BYTES: u64 = 64 << 20;

fn parse_block_size(raw: &str, kb: KbBase) -> Result<u32, String> {
    let b = parse_size(raw, kb)?;
    if b == 0 {
        return Err(format!("block size '{raw}' must be greater than 0"));
    }
    if b % 512 != 0 {
        return Err(format!("block size '{raw}' ({b} bytes) must be a multiple of 512 (direct I/O)"));
    }
    if b > MAX_BLOCK_BYTES {
        return Err(format!("block size '{raw}' is larger than 64 MiB"));
    }
    Ok(b as u32)
}

fn parse_bssplit(raw: &str, kb: KbBase) -> Result<BlockSizes, String> {
    let mut entries: Vec<(u32, Option<f64>)> = Vec::new();
    for item in raw.split(':').map(str::trim) {
        let (size, pct) = match item.split_once('/') {
            Some((s, p)) => (s, Some(p.trim())),
            None => (item, None),
        };
        let size = parse_block_size(size, kb)?;
        let pct = match pct {
            Some("") | None => None,
            Some(p) => {
                let v: f64 = p.parse().map_err(|_| format!("'{p}' in bssplit is not a percentage"))?;
                if !(0.0..=100.0).contains(&v) {
                    return Err(format!("bssplit percentage {p} is out of range 0..=100"));
                }
                Some(v)
            }
        };
        entries.push((size, pct));
    }
    if entries.len() > 64 {
        return Err("bssplit has more than 64 entries".into());
    }
    let given: f64 = entries.iter().filter_map(|(_, p)| *p).sum();
    if given > 100.0 + 1e-9 {
        return Err(format!("bssplit percentages add up to {given}, more than 100"));
    }
    let missing = entries.iter().filter(|(_, p)| p.is_none()).count();
    let share = if missing > 0 { (100.0 - given) / missing as f64 } else { 0.0 };
    let mut split: Vec<(u32, f64)> = entries.into_iter().map(|(s, p)| (s, p.unwrap_or(share))).collect();
    let total: f64 = split.iter().map(|(_, p)| p).sum();
    if total <= 0.0 {
        return Err("bssplit percentages add up to 0".into());
    }
    // Normalise: fio leaves a sum below 100 to the last entry; weights say the same.
    for (_, p) in &mut split {
        *p *= 100.0 / total;
    }
    Ok(BlockSizes::Split(split))
}

/// `zoned:ACCESS%/SIZE%:...` or `zoned_abs:ACCESS%/BYTES:...` (one set for all
/// directions): the access shares must add up to 100, percent sizes to at most 100; an
/// empty last size (`20/`) is the rest of the region, as in fio's example.
fn parse_zones(raw: &str, absolute: bool, kb: KbBase) -> Result<Distribution, String> {
    let (kind, list) = raw.split_once(':').unwrap_or((raw, ""));
    if list.contains(',') {
        return Err(format!("per-direction {kind} distributions are not supported; give one zone list"));
    }
    let mut zones = Vec::new();
    let count = list.split(':').count();
    for (i, zone) in list.split(':').enumerate() {
        let (access, size) =
            zone.split_once('/').ok_or_else(|| format!("zone '{zone}' is not ACCESS%/SIZE (as in 50/10)"))?;
        let access: f64 = access.trim().parse().map_err(|_| format!("zone access '{access}' is not a number"))?;
        if !(0.0..=100.0).contains(&access) {
            return Err(format!("zone access {access}% is out of range 0..=100"));
        }
        let size = if size.trim().is_empty() && i + 1 == count {
            ZoneSize::Rest
        } else if absolute {
            ZoneSize::Bytes(parse_size(size.trim(), kb).map_err(|e| format!("zone size: {e}"))?)
        } else {
            let pct: f64 = size.trim().parse().map_err(|_| format!("zone size '{size}' is not a number"))?;
            if !(pct > 0.0 && pct <= 100.0) {
                return Err(format!("zone size {pct}% is out of range (0, 100]"));
            }
            ZoneSize::Percent(pct)
        };
        zones.push((access, size));
    }
    let access: f64 = zones.iter().map(|(a, _)| a).sum();
    if (access - 100.0).abs() > 1e-9 {
        return Err(format!("{kind} zone accesses add up to {access}%, not 100%"));
    }
    let size_pct: f64 = zones.iter().map(|(_, s)| if let ZoneSize::Percent(p) = s { *p } else { 0.0 }).sum();
    if zones.last().is_some_and(|(_, s)| *s == ZoneSize::Rest) && size_pct >= 100.0 {
        return Err(format!("{kind} zone sizes leave no rest for the last zone"));
    }
    if size_pct > 100.0 + 1e-9 {
        return Err(format!("{kind} zone sizes add up to {size_pct}%, more than 100%"));
    }
    Ok(Distribution::Zoned(zones))
}

fn parse_distribution(raw: &str, kb: KbBase) -> Result<Distribution, String> {
    let mut parts = raw.split(':');
    let kind = parts.next().unwrap_or("");
    // without a value, fio takes its defaults: zipf 1.1, pareto 0.2, normal 0
    let num = |s: Option<&str>, default: f64| -> Result<f64, String> {
        let Some(s) = s else { return Ok(default) };
        s.trim().parse::<f64>().map_err(|_| format!("'{s}' is not a number")).and_then(|v| {
            if v.is_finite() {
                Ok(v)
            } else {
                Err(format!("'{s}' is not a finite number"))
            }
        })
    };
    let center = |s: Option<&str>| -> Result<f64, String> {
        match s {
            None => Ok(0.0),
            Some(c) => {
                let v: f64 = c.trim().parse().map_err(|_| format!("center '{c}' is not a number"))?;
                if (0.0..=1.0).contains(&v) {
                    Ok(v)
                } else {
                    Err(format!("center {c} is out of range 0..=1"))
                }
            }
        }
    };
    let d = match kind {
        "random" => Distribution::Uniform,
        "zipf" => {
            let theta = num(parts.next(), 1.1)?;
            if theta <= 0.0 || theta == 1.0 {
                return Err(format!("zipf theta {theta} must be > 0 and not 1"));
            }
            Distribution::Zipf { theta, center: center(parts.next())? }
        }
        "pareto" => {
            let h = num(parts.next(), 0.2)?;
            if !(h > 0.0 && h < 1.0) {
                return Err(format!("pareto h {h} must be in (0, 1)"));
            }
            Distribution::Pareto { h, center: center(parts.next())? }
        }
        "normal" | "gauss" => {
            let dev = num(parts.next(), 0.0)?;
            if !(0.0..=100.0).contains(&dev) {
                return Err(format!("normal deviation {dev} must be in 0..=100 (percent)"));
            }
            let c = parts.next();
            Distribution::Normal { dev_pct: dev, center: if c.is_some() { center(c)? } else { 0.5 } }
        }
        "zoned" | "zoned_abs" => return parse_zones(raw, kind == "zoned_abs", kb),
        "sequence" => {
            return Err(format!(
                "'{kind}' distributions are not supported; accepted: random, zipf, pareto, normal, zoned, zoned_abs"
            ))
        }
        other => {
            return Err(format!(
                "'{other}' is not a distribution; accepted: random, zipf:THETA, pareto:H, normal:DEV, zoned:A/S:..., zoned_abs:A/BYTES:..."
            ))
        }
    };
    if parts.next().is_some() {
        return Err(format!("'{raw}' has too many ':' fields"));
    }
    Ok(d)
}
