//! fio options → [`JobSpec`]: what a job is (its types), `[global]` inheritance,
//! per-direction value lists, trace loading and the cross-option checks; the option table
//! itself (one entry per option, with its parser and help) is in [`options`].

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

pub mod options;
use options::apply_option;
pub use options::{find_option, unsupported_reason, why_not_an_option, OptionDef, OPTIONS};

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
    /// `cgroup_io_latency`: the io.latency target of the job's cgroup.
    pub cgroup_io_latency: Option<Nanos>,
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
    /// `unlink`: the job's regular files are removed when it finishes (see
    /// [`crate::file_setup::UnlinkedFiles`]).
    pub unlink: bool,
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
    /// The job's own option lines, their values expanded (fio's "job options").
    pub job_options: OptionLines,
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

/// A percentage `size` of a file of `file_bytes` worked on from `offset`: fio's
/// setup_files takes the percentage of the whole file (its io_size plus the offset), at
/// most what lies after the offset, rounded down to whole (smallest) blocks.
fn percent_of_file(percent: SizeOrPercent, file_bytes: u64, offset: u64, bs: u64) -> u64 {
    percent.resolve(file_bytes).min(file_bytes.saturating_sub(offset)) / bs * bs
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
            cgroup_io_latency: None,
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
            unlink: false,
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
        if let Some(empty) = self.region_past_end(offset, file_len) {
            return Ok(empty);
        }
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
                    Some(percent @ SizeOrPercent::Percent(_)) => percent_of_file(percent, file, offset, bs),
                    _ => file.saturating_sub(offset),
                }
            }
            (None, None) => file_len - offset,
            (None, Some(SizeOrPercent::Bytes(b))) => b,
            (None, Some(percent)) => percent_of_file(percent, file_len, offset, bs),
        }
        .min(file_len - offset);
        Ok(crate::Region {
            start: offset,
            len,
            offset_in_file: offset,
            file_bytes: file_len,
            later_offset_in_file: offset,
        })
    }

    /// Clone `clone`'s region in file `filenum` as fio's setup_files makes it, when the
    /// file holds `len_at_setup` bytes as the clone's turn comes (fio sets the clones up
    /// one after another: a later one finds what an earlier one laid out) and `file_len`
    /// once all are set up. A job that sizes the file (`filesize`, or `size` in bytes)
    /// takes a percentage `offset` of what the file holds at its turn (0 for a new file)
    /// and sees the file as long as it leaves it: what it held, or as far as the clone's
    /// region reaches (fio's `real_file_size` is the clone's own). With `file_append` (a
    /// regular file, not a block device) the region is `size` bytes from where the file
    /// ends at the clone's turn. Any other job's region is [`clone_region`]'s.
    ///
    /// [`clone_region`]: JobSpec::clone_region
    pub fn region_in(
        &self,
        clone: u32,
        filenum: u32,
        file_name: &str,
        regular_file: bool,
        len_at_setup: u64,
        file_len: u64,
    ) -> Result<crate::Region, String> {
        if self.file_append && regular_file {
            let len = match self.size_per_file() {
                Some(SizeOrPercent::Bytes(b)) => b.min(file_len.saturating_sub(len_at_setup)),
                _ => 0,
            };
            if len == 0 {
                return Err(format!(
                    "job '{}' ({}): file_append finds no room after the end of '{file_name}' ({file_len} bytes)",
                    self.name, self.at
                ));
            }
            let file_bytes = len_at_setup + len;
            return Ok(crate::Region {
                start: len_at_setup,
                len,
                offset_in_file: len_at_setup,
                file_bytes,
                later_offset_in_file: file_bytes,
            });
        }
        if !(regular_file && self.sizes_its_files()) || len_at_setup >= file_len {
            return self.clone_region(clone, filenum, file_name, file_len);
        }
        let offset = self.clone_offset(clone, len_at_setup);
        let beyond = |end: u64| {
            format!(
                "job '{}' ({}): offset {offset} is beyond the end of '{file_name}' ({end} bytes)",
                self.name, self.at
            )
        };
        let len = match (self.filesize, self.size_per_file()) {
            (Some(fs), size) => {
                let file = if fs.holds(len_at_setup) { len_at_setup } else { self.drawn_file_size(fs, clone, filenum) };
                if let Some(empty) = self.region_past_end(offset, len_at_setup) {
                    return Ok(empty);
                }
                if offset >= file {
                    return Err(beyond(file));
                }
                match size {
                    Some(percent @ SizeOrPercent::Percent(_)) => {
                        percent_of_file(percent, file, offset, u64::from(self.min_bs()).max(1))
                    }
                    _ => file - offset,
                }
            }
            (None, Some(SizeOrPercent::Bytes(b))) => b,
            (None, _) => return self.clone_region(clone, filenum, file_name, file_len),
        };
        let seen = len_at_setup.max(offset.saturating_add(len)).min(file_len);
        if offset >= seen {
            return Err(beyond(seen));
        }
        Ok(crate::Region {
            start: offset,
            len: len.min(seen - offset),
            offset_in_file: offset,
            file_bytes: seen,
            later_offset_in_file: self.clone_offset(clone, seen),
        })
    }

    /// The region of a clone whose offset lies at or past the end of a file of `file_len`
    /// bytes that already has a size in `filesize`'s range (an earlier clone laid it out,
    /// or it was there): fio's setup_files takes the file's size less the offset, 0 or a
    /// number that wraps around, and the clone runs without issuing anything (fio 3.33:
    /// no error, no I/O, for clones 2 and 3 of `size=32k filesize=256k
    /// offset_increment=50% numjobs=4`). At the very end that needs `size` in bytes:
    /// without, fio takes the job's size from the files, 0, and fails it ("blocksize is
    /// larger than data set range"). None in every other case, which nvsched refuses: an
    /// offset past a file fio lays out anew is an error in fio too, and with several
    /// files fio adds the wrapped sizes up to a total nvsched does not guess.
    fn region_past_end(&self, offset: u64, file_len: u64) -> Option<crate::Region> {
        let fs = self.filesize?;
        let past = offset > file_len || (offset == file_len && matches!(self.size, Some(SizeOrPercent::Bytes(_))));
        (fs.holds(file_len) && past && self.files_per_clone() == 1).then_some(crate::Region {
            start: offset,
            len: 0,
            offset_in_file: offset,
            file_bytes: file_len,
            later_offset_in_file: offset,
        })
    }

    /// Whether the job gives its files a size of its own (`filesize`, or `size` in bytes):
    /// fio lays such a file out (longer) where it holds less.
    pub fn sizes_its_files(&self) -> bool {
        self.filesize.is_some() || matches!(self.size_per_file(), Some(SizeOrPercent::Bytes(_)))
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
            let file = self.drawn_file_size(fs, clone, filenum);
            // a percentage size is of that file, and fio lays the file out only as far as
            // the I/O reaches (size=75% filesize=256k: 192 KiB)
            if let Some(percent @ SizeOrPercent::Percent(_)) = self.size_per_file() {
                let offset = self.clone_offset(clone, 0);
                let bs = u64::from(self.min_bs()).max(1);
                return Some((offset + percent_of_file(percent, file, offset, bs)).min(file));
            }
            return Some(file);
        }
        // a percentage offset needs the file's size first: it counts from 0 here; an
        // appending job's region starts at the file's end, which set_up_lens adds
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

    /// The job's clones in fio's order of its threads: the job itself (clone 0), then
    /// its copies from the last to the first (fio numbers them as it makes them, counting
    /// down: with `numjobs=3` the threads are clones 0, 2 and 1). fio sets their files up
    /// in this order, and reports and numbers their logs in it.
    pub fn clones_in_fio_order(&self) -> impl Iterator<Item = u32> {
        std::iter::once(0).chain((1..self.numjobs).rev()).take(self.numjobs as usize)
    }

    /// Where clone `clone` comes among the job's threads in fio's order, from 0
    /// ([`JobSpec::clones_in_fio_order`]): fio numbers log files by it.
    pub fn fio_thread_position(&self, clone: u32) -> u32 {
        if clone == 0 {
            0
        } else {
            self.numjobs.saturating_sub(clone)
        }
    }

    /// Every (clone, file number) of the job, clone by clone in fio's order
    /// ([`JobSpec::clones_in_fio_order`]).
    pub fn clone_files_in_fio_order(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.clones_in_fio_order().flat_map(move |clone| (0..self.files_per_clone()).map(move |f| (clone, f)))
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

/// Option lines in order: the key and the value after `=` with `${VAR}`s and keywords
/// expanded, as fio's JSON "job options" show it (`None` for a bare flag such as
/// `time_based`, which fio leaves out of them).
pub type OptionLines = Vec<(String, Option<String>)>;

/// A parsed job file.
#[derive(Clone, Debug, PartialEq)]
pub struct JobFile {
    pub jobs: Vec<JobSpec>,
    /// Options set in `[global]` sections, their values expanded (fio's "global options").
    pub global_options: OptionLines,
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

/// Parses a fio job file from disk.
pub fn parse_job_file(path: &Path, env: &dyn Environment, opts: ParseOptions) -> Result<JobFile, JobFileError> {
    parse_job_file_with(path, env, opts, &[])
}

/// Parses a fio job file from disk with `every_job` set in each job after its own options
/// (the command line's `--job-set`, from [`crate::jobfile::command_line_options`]).
pub fn parse_job_file_with(
    path: &Path,
    env: &dyn Environment,
    opts: ParseOptions,
    every_job: &[RawOption],
) -> Result<JobFile, JobFileError> {
    let mut sections = crate::jobfile::read_job_file(path, env)?;
    crate::jobfile::set_in_every_job(&mut sections, every_job);
    build_jobs(&sections, opts).map_err(|e| e.in_file(path))
}

/// Parses job-file text (named `path` in errors).
pub fn parse_job_str(
    text: &str,
    path: &Path,
    env: &dyn Environment,
    opts: ParseOptions,
) -> Result<JobFile, JobFileError> {
    parse_job_str_with(text, path, env, opts, &[])
}

/// Parses job-file text (named `path` in errors) with `every_job` set in each job after
/// its own options, as [`parse_job_file_with`].
pub fn parse_job_str_with(
    text: &str,
    path: &Path,
    env: &dyn Environment,
    opts: ParseOptions,
    every_job: &[RawOption],
) -> Result<JobFile, JobFileError> {
    let mut sections = crate::jobfile::parse_job_text(text, path, env)?;
    crate::jobfile::set_in_every_job(&mut sections, every_job);
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
                global_options.push((opt.key.clone(), opt.value.clone()));
            }
            continue;
        }
        let mut job = template.clone();
        job.name = section.name.clone();
        job.at = section.at.clone();
        job.job_options.clear();
        for opt in &section.options {
            apply_option(&mut job, opt, opts, &mut warnings)?;
            job.job_options.push((opt.key.clone(), opt.value.clone()));
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
    if job.cgroup_io_latency.is_some() && job.cgroup.is_none() {
        return Err(JobFileError::new(
            job.option_line("cgroup_io_latency"),
            Some("cgroup_io_latency"),
            "needs the job's cgroup (cgroup=NAME): the root cgroup has no io.latency",
        ));
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
    if job.rate_bps.iter().any(|&r| r > 0) && job.rate_iops.iter().any(|&r| r > 0) {
        // fio 3.33 refuses both in one job, whichever directions they pace
        let m = format!("job '{}': rate and rate_iops are mutually exclusive (as in fio)", job.name);
        return Err(JobFileError::new(job.option_line("rate_iops"), Some("rate_iops"), m));
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
