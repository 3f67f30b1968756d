//! Per-job statistics that engines fill as requests complete, in bounded memory:
//! summary moments, a fio histogram, and per-window counters.

use crate::hist::FioHistogram;
use nvsched_core::{IoPrio, Nanos, Op};
use nvsched_workload::steadystate::SteadyStateReport;

/// fio's `bwavgtime`/`iopsavgtime` default: bandwidth samples every 500 ms.
pub const BW_WINDOW: Nanos = Nanos::from_ms(500);
/// The per-second time series.
pub const SERIES_WINDOW: Nanos = Nanos::from_secs(1);

/// min/max/mean/stddev of latency samples in ns. Sums are kept relative to the first
/// sample so the variance does not cancel catastrophically.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatStats {
    pub n: u64,
    pub min: u64,
    pub max: u64,
    shift: u64,
    sum: f64,
    sum_sq: f64,
}

impl LatStats {
    #[inline]
    pub fn record(&mut self, v: u64) {
        if self.n == 0 {
            self.min = v;
            self.max = v;
            self.shift = v;
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.n += 1;
        let d = v as f64 - self.shift as f64;
        self.sum += d;
        self.sum_sq += d * d;
    }

    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.shift as f64 + self.sum / self.n as f64
        }
    }

    /// Sample standard deviation (n - 1), as fio prints.
    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        let n = self.n as f64;
        let var = (self.sum_sq - self.sum * self.sum / n) / (n - 1.0);
        var.max(0.0).sqrt()
    }

    pub fn merge(&mut self, other: &LatStats) {
        if other.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = other.clone();
            return;
        }
        // re-express other's sums around self.shift
        let delta = other.shift as f64 - self.shift as f64;
        let on = other.n as f64;
        self.sum_sq += other.sum_sq + 2.0 * delta * other.sum + on * delta * delta;
        self.sum += other.sum + on * delta;
        self.n += other.n;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }
}

/// Counters per fixed window of time since the job's statistics began.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Windows {
    pub bytes: Vec<u64>,
    pub ios: Vec<u64>,
}

impl Windows {
    #[inline]
    fn add(&mut self, index: usize, bytes: u64) {
        if index >= self.bytes.len() {
            self.bytes.resize(index + 1, 0);
            self.ios.resize(index + 1, 0);
        }
        self.bytes[index] += bytes;
        self.ios[index] += 1;
    }

    fn merge(&mut self, other: &Windows) {
        if other.bytes.len() > self.bytes.len() {
            self.bytes.resize(other.bytes.len(), 0);
            self.ios.resize(other.ios.len(), 0);
        }
        for (i, (b, n)) in other.bytes.iter().zip(&other.ios).enumerate() {
            self.bytes[i] += b;
            self.ios[i] += n;
        }
    }
}

fn samples(runtime: Nanos, window: Nanos) -> (usize, f64) {
    let window_ns = window.0.max(1);
    ((runtime.0.saturating_sub(1) / window_ns) as usize, 1e9 / window_ns as f64)
}

/// Latency of one priority within a direction (fio's `prios[]`): completion latency, or
/// total latency under `lat_percentiles` (as fio).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PrioStats {
    pub prio: IoPrio,
    pub latency: LatStats,
    pub hist: FioHistogram,
}

/// Which latencies get percentiles: fio's `slat_percentiles`, `clat_percentiles` (on by
/// default) and `lat_percentiles`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PercentileKinds {
    pub slat: bool,
    pub clat: bool,
    pub lat: bool,
}

impl Default for PercentileKinds {
    fn default() -> Self {
        PercentileKinds { slat: false, clat: true, lat: false }
    }
}

impl PercentileKinds {
    /// What per-priority entries measure: `"lat"` under `lat_percentiles`, else `"clat"`.
    pub fn prio_kind(self) -> &'static str {
        if self.lat {
            "lat"
        } else {
            "clat"
        }
    }
}

/// Statistics of one direction (read, write or trim) of a job.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DirStats {
    pub io_bytes: u64,
    pub total_ios: u64,
    pub slat: LatStats,
    pub clat: LatStats,
    pub lat: LatStats,
    /// Always kept: the reproductions and the tuner read completion-latency percentiles.
    pub clat_hist: FioHistogram,
    /// Kept only when asked for (`slat_percentiles`, `lat_percentiles`).
    pub slat_hist: Option<FioHistogram>,
    pub lat_hist: Option<FioHistogram>,
    /// Bytes and I/Os per `bwavgtime` window (bw min, max, mean, stddev, samples; and
    /// the same for IOPS while `iopsavgtime` is the same).
    pub bw_windows: Windows,
    /// Per `iopsavgtime` window, when it differs from `bwavgtime` (else empty).
    pub iops_windows: Windows,
    /// 1 s windows (the time series).
    pub series: Windows,
    /// Per priority, when a group mixes priorities.
    pub prios: Vec<PrioStats>,
}

impl DirStats {
    /// `bwavgtime`/`iopsavgtime` set: their own windows. Out of line: most jobs keep
    /// fio's 500 ms.
    #[cold]
    #[inline(never)]
    fn add_to_set_windows(&mut self, since_start: Nanos, bytes: u64, bw_window: Nanos, iops_window: Nanos) {
        self.bw_windows.add((since_start.0 / bw_window.0) as usize, bytes);
        if iops_window != bw_window {
            self.iops_windows.add((since_start.0 / iops_window.0) as usize, bytes);
        }
    }

    /// I/Os per `iopsavgtime` window of a job sampling over `bw_window` and `iops_window`.
    pub fn ios_per_iops_window(&self, bw_window: Nanos, iops_window: Nanos) -> &[u64] {
        if iops_window == bw_window {
            &self.bw_windows.ios
        } else {
            &self.iops_windows.ios
        }
    }

    /// Kept out of line: only jobs that ask for submission or total latency percentiles
    /// keep these histograms.
    #[cold]
    #[inline(never)]
    fn record_optional_hists(&mut self, slat: Option<Nanos>, lat_ns: u64) {
        if let (Some(h), Some(s)) = (&mut self.slat_hist, slat) {
            h.record(s.0);
        }
        if let Some(h) = &mut self.lat_hist {
            h.record(lat_ns);
        }
    }

    pub fn merge(&mut self, other: &DirStats) {
        self.io_bytes += other.io_bytes;
        self.total_ios += other.total_ios;
        self.slat.merge(&other.slat);
        self.clat.merge(&other.clat);
        self.lat.merge(&other.lat);
        self.clat_hist.merge(&other.clat_hist);
        merge_optional(&mut self.slat_hist, &other.slat_hist);
        merge_optional(&mut self.lat_hist, &other.lat_hist);
        self.bw_windows.merge(&other.bw_windows);
        self.iops_windows.merge(&other.iops_windows);
        self.series.merge(&other.series);
        for p in &other.prios {
            match self.prios.iter_mut().find(|q| q.prio == p.prio) {
                Some(q) => {
                    q.latency.merge(&p.latency);
                    q.hist.merge(&p.hist);
                }
                None => self.prios.push(p.clone()),
            }
        }
    }
}

fn merge_optional(into: &mut Option<FioHistogram>, from: &Option<FioHistogram>) {
    match (into.as_mut(), from) {
        (Some(a), Some(b)) => a.merge(b),
        (None, Some(b)) => *into = Some(b.clone()),
        (_, None) => {}
    }
}

/// fio's `iodepth_level` buckets: 1, 2, 4, 8, 16, 32, >=64.
pub fn depth_bucket(depth: u32) -> usize {
    match depth {
        0..=1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

/// fio's `iodepth_submit`/`iodepth_complete` buckets: 0, 4, 8, 16, 32, 64, >=64.
pub fn batch_bucket(n: u32) -> usize {
    match n {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// The call a job's counted flushes are: `fsync=N`, `fdatasync=N` or `sync_file_range=`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FlushCall {
    #[default]
    Fsync,
    Fdatasync,
    SyncFileRange,
}

/// Everything recorded for one job (or, merged, one reporting group).
#[derive(Clone, Debug, PartialEq)]
pub struct JobStats {
    pub name: String,
    pub groupid: u32,
    /// Clones merged into this entry.
    pub clones: u32,
    pub description: Option<String>,
    pub job_options: nvsched_workload::OptionLines,
    /// Indexed by [`Op::index`]: read, write, trim.
    pub dirs: [DirStats; 3],
    /// A group's bandwidth and IOPS samples per direction, summed over its members as
    /// fio sums them; `None` for a single job, whose windows give them.
    pub group_samples: Option<[[SampleSum; 2]; 3]>,
    /// fsync/fdatasync latencies, and their histogram for fio's sync percentiles.
    pub sync: LatStats,
    pub sync_hist: FioHistogram,
    /// Which call the job's counted flushes are (set by the recorder), and how many
    /// fdatasyncs and sync_file_ranges were recorded. fio 3.33 puts them in the sync
    /// latencies but counts them one slot past its sync counter (an index beyond the
    /// array): as short reads (fdatasync) or short writes (sync_file_range), not in the
    /// syncs' `total_ios`.
    pub flush_call: FlushCall,
    pub datasyncs: u64,
    pub range_syncs: u64,
    /// Reads that stopped short at the end of a file (one made anew after `unlink=1`):
    /// fio counts each as a short read and as one more read issued.
    pub short_reads: u64,
    pub depth_levels: [u64; 7],
    pub submit_levels: [u64; 7],
    pub complete_levels: [u64; 7],
    /// Time the statistics cover (after ramp), longest clone for merged entries.
    pub runtime: Nanos,
    /// A merged entry's members' runtimes added up (fio's `total_run_time`, the JSON's
    /// `job_runtime`: 4005 ms for two clones of 2 s); None for one job.
    pub summed_runtime: Option<Nanos>,
    /// Where the job's `runtime` limit falls within `runtime`, if it has one: fio takes
    /// no bandwidth or IOPS sample after it, though the last I/Os complete later.
    pub runtime_limit: Option<Nanos>,
    /// How long each direction ran, where that is not `runtime` (fio times a verifying
    /// job's reads over its read-backs, its writes over its write phases).
    pub dir_runtimes: Option<[Nanos; 3]>,
    /// When the statistics and the per-second series start on the run's clock (the job's
    /// start plus `ramp_time`; the earliest clone's for merged entries).
    pub stats_start: Nanos,
    pub percentile_list: Vec<f64>,
    /// Decimals of each percentile in the normal output (fio's `percentile_precision`).
    pub percentile_precision: u8,
    /// Which latencies get percentiles (set with [`JobStats::set_percentile_kinds`]).
    pub percentile_kinds: PercentileKinds,
    /// The iodepth configured (fio's `latency_depth`).
    pub iodepth: u32,
    /// How many of this entry's completions happened during ramp and were dropped.
    pub ramp_dropped: u64,
    /// How many were recorded and then discarded when the latency search's final window
    /// restarted the statistics (`latency_target`).
    pub restart_dropped: u64,
    /// Completions fio does not count: the flushes of `end_fsync` and `fsync_on_close`,
    /// and what lands after the job failed.
    pub uncounted: u64,
    /// `unified_rw_reporting=mixed`: every direction was folded into `dirs[0]`.
    pub unified: bool,
    /// fio's `unified_rw_reporting=both`: the directions apart, then their sum as
    /// "mixed" ([`JobStats::mixed`]).
    pub also_mixed: bool,
    /// `latency_target` (ns), `latency_window` (µs) and `latency_percentile`, as fio
    /// reports them beside `latency_depth`.
    pub latency_target_ns: u64,
    pub latency_window_us: u64,
    pub latency_percentile: f64,
    /// Why the job failed, if it did (the first clone's error in a merged entry).
    pub error: Option<JobError>,
    /// Failed I/Os the job went on after (`continue_on_error`): how many, and the first
    /// one's errno; `None` without `continue_on_error` (fio reports them only with it).
    pub io_errors: Option<ErrorCount>,
    /// `steadystate` detection, for jobs that ask for it (per group under
    /// `group_reporting`, so every clone of a group carries the same).
    pub steadystate: Option<SteadyStateReport>,
    /// fio's `bwavgtime` and `iopsavgtime`: the windows bandwidth and IOPS samples
    /// average over (500 ms by default).
    pub bw_window: Nanos,
    pub iops_window: Nanos,
    /// `significant_figures` of the normal output's IOPS, bandwidth and sizes (fio's 4).
    pub sig_figs: u8,
    /// `unit_base=1`: the normal output's bandwidth in bits per second.
    pub bandwidth_in_bits: bool,
    /// Host CPU the job used (real devices; zero in simulation).
    pub cpu: CpuUsage,
}

/// CPU time a job used, as fio reports it (`usr_cpu`, `sys_cpu`, `ctx`): merged entries
/// add times, context switches and runtimes, and the percentages are of the summed
/// runtime, as fio computes them for a group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuUsage {
    pub user: Nanos,
    pub sys: Nanos,
    /// Voluntary and involuntary context switches.
    pub ctx: u64,
    /// Major and minor page faults.
    pub majf: u64,
    pub minf: u64,
    /// The runtime the times are shares of.
    pub runtime: Nanos,
}

impl CpuUsage {
    /// User and system time as percentages of the runtime.
    pub fn percentages(&self) -> (f64, f64) {
        if self.runtime == Nanos::ZERO {
            return (0.0, 0.0);
        }
        let pct = |t: Nanos| t.0 as f64 * 100.0 / self.runtime.0 as f64;
        (pct(self.user), pct(self.sys))
    }

    fn add(&mut self, other: &CpuUsage) {
        self.user += other.user;
        self.sys += other.sys;
        self.ctx += other.ctx;
        self.majf += other.majf;
        self.minf += other.minf;
        self.runtime += other.runtime;
    }
}

/// A job that failed, as fio reports it: `err=110 (func=max latency exceeded,
/// error=Connection timed out)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobError {
    pub errno: i32,
    /// What failed, in fio's words.
    pub func: &'static str,
    /// `strerror(errno)`.
    pub error: String,
    /// The message fio prints when it happens.
    pub detail: String,
}

impl JobError {
    /// fio's EIO from `check_min_rate`: the job was slower than `rate_min`/`rate_iops_min`.
    pub fn min_rate(detail: String) -> JobError {
        JobError { errno: 5, func: "check_min_rate", error: strerror(5), detail }
    }

    /// fio's ETIMEDOUT: a request took longer than `max_latency` (or `latency_target`).
    pub fn latency_exceeded(
        latency: Nanos,
        limit: Nanos,
        file: &str,
        op: Op,
        offset_bytes: u64,
        len_bytes: u32,
    ) -> JobError {
        JobError {
            errno: 110,
            func: "max latency exceeded",
            error: strerror(110),
            detail: format!(
                "latency of {} nsec exceeds specified max ({} nsec): {file} {} {offset_bytes} {len_bytes}",
                latency.0,
                limit.0,
                op.fio_name()
            ),
        }
    }

    /// fio's EILSEQ from a block that failed verification: the job fails (and, as in
    /// fio without `verify_fatal`, its other blocks are still checked). `sync_engine`:
    /// fio names its completion path after the engine kind.
    pub fn verify(detail: String, sync_engine: bool) -> JobError {
        let func = if sync_engine { "io_u_sync_complete" } else { "io_u_queued_complete" };
        JobError { errno: 84, func, error: strerror(84), detail }
    }

    /// fio's failed open at a clone's start: an earlier job removed the file (`unlink=1`)
    /// and this one does not write, so it does not make the file anew: ENOENT.
    pub fn missing_file(file: &str) -> JobError {
        let error = strerror(2);
        let detail = format!("open({file}): {error}: an earlier job removed it (unlink=1) and this job only reads it");
        JobError { errno: 2, func: "open", error, detail }
    }

    /// fio's EIO "full resid" of a synchronous engine: a read at the end of a file
    /// returned nothing (after a short read, if it began before the end).
    pub fn full_resid(file: &str, op: Op, offset_bytes: u64, len_bytes: u32) -> JobError {
        let error = strerror(5);
        let detail = format!(
            "{} of file {file} at offset={offset_bytes}, buflen={len_bytes} got nothing past the file's end: {error}",
            op.fio_name()
        );
        JobError { errno: 5, func: "full resid", error, detail }
    }

    /// fio's `io_u error`: a request failed with `errno` (real devices).
    pub fn io(errno: i32, file: &str, op: Op, offset_bytes: u64, len_bytes: u32) -> JobError {
        let error = strerror(errno);
        let detail =
            format!("io_u error on file {file}: {error}: {} offset={offset_bytes}, buflen={len_bytes}", op.fio_name());
        JobError { errno, func: "io_u error", error, detail }
    }
}

/// Failed I/Os a job went on after, as fio counts them (`total_err`, `first_error`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ErrorCount {
    pub total: u64,
    /// The first failure's errno (0 while there is none).
    pub first: i32,
}

impl ErrorCount {
    pub fn add(&mut self, errno: i32) {
        self.merge(ErrorCount { total: 1, first: errno });
    }

    /// Adds a later clone's counts; the first error stays the first one seen.
    pub fn merge(&mut self, later: ErrorCount) {
        if self.total == 0 {
            self.first = later.first;
        }
        self.total += later.total;
    }
}

/// The C library's message for `errno` (Rust's, without its " (os error N)").
pub fn strerror(errno: i32) -> String {
    let text = std::io::Error::from_raw_os_error(errno).to_string();
    match text.rfind(" (os error") {
        Some(cut) => text[..cut].to_string(),
        None => text,
    }
}

impl JobStats {
    /// fio's `IO depths`: each issued I/O counted at the depth it was issued at, flushes
    /// included, in percent of the reads, writes and trims issued, so a job with
    /// `fsync=4` shows `1=125.0%` as fio does.
    pub fn depth_percentages(&self) -> [f64; 7] {
        crate::fio_json::level_percentages(&self.depth_levels, self.dirs.iter().map(|d| d.total_ios).sum())
    }

    /// Flushes fio counts as issued (`sync.total_ios`, the fourth of "issued rwts"):
    /// fsyncs, not fdatasyncs or sync_file_ranges.
    pub fn sync_total_ios(&self) -> u64 {
        self.sync.n - self.datasyncs - self.range_syncs
    }

    /// What fio 3.33 reports as short I/Os of direction `dir` (read, write, trim): the
    /// reads cut short at a file's end, and its fdatasyncs and sync_file_ranges, see
    /// [`JobStats::flush_call`].
    pub fn short_ios(&self, dir: usize) -> u64 {
        match dir {
            0 => self.short_reads + self.datasyncs,
            1 => self.range_syncs,
            _ => 0,
        }
    }

    pub fn new(name: impl Into<String>, groupid: u32, percentile_list: Vec<f64>, iodepth: u32) -> JobStats {
        JobStats {
            name: name.into(),
            groupid,
            clones: 1,
            description: None,
            job_options: Vec::new(),
            dirs: Default::default(),
            group_samples: None,
            sync: LatStats::default(),
            sync_hist: FioHistogram::default(),
            flush_call: FlushCall::Fsync,
            datasyncs: 0,
            range_syncs: 0,
            short_reads: 0,
            depth_levels: [0; 7],
            submit_levels: [0; 7],
            complete_levels: [0; 7],
            runtime: Nanos::ZERO,
            summed_runtime: None,
            runtime_limit: None,
            dir_runtimes: None,
            stats_start: Nanos::ZERO,
            percentile_list,
            percentile_precision: 2,
            percentile_kinds: PercentileKinds::default(),
            iodepth,
            ramp_dropped: 0,
            restart_dropped: 0,
            uncounted: 0,
            unified: false,
            also_mixed: false,
            latency_target_ns: 0,
            latency_window_us: 0,
            latency_percentile: 100.0,
            error: None,
            io_errors: None,
            steadystate: None,
            bw_window: BW_WINDOW,
            iops_window: BW_WINDOW,
            sig_figs: 4,
            bandwidth_in_bits: false,
            cpu: CpuUsage::default(),
        }
    }

    /// How many bandwidth windows give a sample, and the factor from a window's count to
    /// a rate per second: the whole windows that end before the job does, or before its
    /// `runtime` limit if that comes first. fio takes a sample when a window has passed
    /// and the job goes on, so a window that ends with the job gives none (a 3 s
    /// time-based job at the default 500 ms: 5 samples, as fio 3.33 reports, though its
    /// last I/Os complete after 3 s).
    pub fn bw_samples(&self) -> (usize, f64) {
        samples(self.sampled_time(), self.bw_window)
    }
    /// The same for IOPS windows (`iopsavgtime`).
    pub fn iops_samples(&self) -> (usize, f64) {
        samples(self.sampled_time(), self.iops_window)
    }

    /// How long direction `d` ran: its rates are its bytes and I/Os over this.
    pub fn dir_runtime(&self, d: usize) -> Nanos {
        self.dir_runtimes.map_or(self.runtime, |r| r[d])
    }

    fn sampled_time(&self) -> Nanos {
        self.runtime_limit.map_or(self.runtime, |limit| self.runtime.min(limit))
    }

    /// fio's `error`: the failed job's errno, 0 when it did not fail.
    pub fn errno(&self) -> i32 {
        self.error.as_ref().map_or(0, |e| e.errno)
    }

    /// Forgets everything measured so far, as fio's `reset_all_stats` does when the
    /// latency search starts its final window; what describes the job stays.
    pub fn restart(&mut self) {
        self.restart_dropped += self.recorded();
        let kinds = self.percentile_kinds;
        self.dirs = Default::default();
        self.set_percentile_kinds(kinds);
        self.sync = LatStats::default();
        // how many of `sync` were fdatasyncs and sync_file_ranges (left alone, they would
        // outnumber it)
        self.datasyncs = 0;
        self.range_syncs = 0;
        self.short_reads = 0;
        self.sync_hist = FioHistogram::default();
        self.depth_levels = [0; 7];
        self.submit_levels = [0; 7];
        self.complete_levels = [0; 7];
        self.runtime = Nanos::ZERO;
        self.summed_runtime = None;
        self.runtime_limit = None;
        self.dir_runtimes = None;
    }

    /// fio's `unified_rw_reporting=mixed`: reads, writes and trims become one direction,
    /// reported in `dirs[0]` as "mixed".
    pub fn unify_directions(&mut self) {
        if self.unified {
            return;
        }
        // fio sums the directions' bandwidth and IOPS samples as it sums a group's
        // (read and write one sample each: samples=2, min = the two minima's sum)
        let [mut mixed, rest @ ..] = self.sample_sums();
        for [bw, iops] in rest {
            mixed[0].add(bw);
            mixed[1].add(iops);
        }
        self.group_samples = Some([mixed, Default::default(), Default::default()]);
        // and runs it as long as its longest direction
        self.dir_runtimes = self.dir_runtimes.map(|r| [r.into_iter().max().unwrap_or(Nanos::ZERO); 3]);
        let [first, rest @ ..] = &mut self.dirs;
        for d in rest.iter_mut() {
            first.merge(d);
            *d = DirStats::default();
        }
        self.unified = true;
    }

    /// Chooses which latencies get percentiles; keeps the histograms they need.
    pub fn set_percentile_kinds(&mut self, kinds: PercentileKinds) {
        self.percentile_kinds = kinds;
        for d in &mut self.dirs {
            d.slat_hist = kinds.slat.then(FioHistogram::default);
            d.lat_hist = kinds.lat.then(FioHistogram::default);
        }
    }

    /// Records one completed request. `since_start` is its completion time relative to
    /// the start of statistics (end of ramp).
    #[inline]
    pub fn record(&mut self, op: Op, bytes: u64, slat: Option<Nanos>, clat: Nanos, since_start: Nanos) {
        if op == Op::Flush {
            let latency = clat.0 + slat.map_or(0, |s| s.0);
            self.sync.record(latency);
            self.sync_hist.record(latency);
            match self.flush_call {
                FlushCall::Fsync => {}
                FlushCall::Fdatasync => self.datasyncs += 1,
                FlushCall::SyncFileRange => self.range_syncs += 1,
            }
            return;
        }
        let d = &mut self.dirs[op.index()];
        d.io_bytes += bytes;
        d.total_ios += 1;
        let lat = clat.0 + slat.map_or(0, |s| s.0);
        if let Some(s) = slat {
            d.slat.record(s.0);
        }
        d.clat.record(clat.0);
        d.lat.record(lat);
        d.clat_hist.record(clat.0);
        if self.percentile_kinds.slat || self.percentile_kinds.lat {
            d.record_optional_hists(slat, lat);
        }
        if self.bw_window == BW_WINDOW && self.iops_window == BW_WINDOW {
            // the default: a division by a constant, which is a multiplication
            d.bw_windows.add((since_start.0 / BW_WINDOW.0) as usize, bytes);
        } else {
            d.add_to_set_windows(since_start, bytes, self.bw_window, self.iops_window);
        }
        d.series.add((since_start.0 / SERIES_WINDOW.0) as usize, bytes);
    }

    /// Records the latency of one priority (for `prios[]`): completion latency, or total
    /// latency under `lat_percentiles`.
    pub fn record_prio(&mut self, op: Op, prio: IoPrio, slat: Option<Nanos>, clat: Nanos) {
        if !op.is_data() && op != Op::Discard {
            return;
        }
        let value = if self.percentile_kinds.lat { clat.0 + slat.map_or(0, |s| s.0) } else { clat.0 };
        let d = &mut self.dirs[op.index()];
        let entry = match d.prios.iter().position(|p| p.prio == prio) {
            Some(i) => &mut d.prios[i],
            None => {
                d.prios.push(PrioStats { prio, ..PrioStats::default() });
                d.prios.last_mut().expect("just pushed")
            }
        };
        entry.latency.record(value);
        entry.hist.record(value);
    }

    #[inline]
    pub fn record_issue_depth(&mut self, depth: u32) {
        self.depth_levels[depth_bucket(depth)] += 1;
    }

    #[inline]
    pub fn record_submit_batch(&mut self, n: u32) {
        self.submit_levels[batch_bucket(n)] += 1;
    }

    #[inline]
    pub fn record_complete_batch(&mut self, n: u32) {
        self.complete_levels[batch_bucket(n)] += 1;
    }

    /// Bandwidth samples of direction `d` in KiB/s: the job's own windows, or a group's
    /// sums ([`SampleSum`]).
    pub fn bw_summary(&self, d: usize) -> SampleSummary {
        match &self.group_samples {
            Some(sums) => sums[d][0].summary(),
            None => {
                let (windows, per_sec) = self.bw_samples();
                window_summary(&self.dirs[d].bw_windows.bytes, windows, per_sec / 1024.0)
            }
        }
    }

    /// IOPS samples of direction `d`, as [`JobStats::bw_summary`].
    pub fn iops_summary(&self, d: usize) -> SampleSummary {
        match &self.group_samples {
            Some(sums) => sums[d][1].summary(),
            None => {
                let (windows, per_sec) = self.iops_samples();
                window_summary(self.dirs[d].ios_per_iops_window(self.bw_window, self.iops_window), windows, per_sec)
            }
        }
    }

    fn sample_sums(&self) -> [[SampleSum; 2]; 3] {
        self.group_samples.unwrap_or_else(|| {
            std::array::from_fn(|d| [SampleSum::of(self.bw_summary(d)), SampleSum::of(self.iops_summary(d))])
        })
    }

    /// The entry with its directions summed into one, "mixed" (`unified_rw_reporting=both`
    /// shows it after the directions).
    pub fn mixed(&self) -> JobStats {
        let mut mixed = self.clone();
        mixed.unify_directions();
        mixed
    }

    /// Folds another clone or job into this entry (group reporting).
    pub fn merge(&mut self, other: &JobStats) {
        self.also_mixed |= other.also_mixed;
        if self.unified != other.unified {
            // a group with unified and separate jobs reports unified
            self.unify_directions();
            let mut unified = other.clone();
            unified.unify_directions();
            return self.merge(&unified);
        }
        let mut sums = self.sample_sums();
        for (mine, theirs) in sums.iter_mut().zip(other.sample_sums()) {
            mine[0].add(theirs[0]);
            mine[1].add(theirs[1]);
        }
        self.group_samples = Some(sums);
        for (a, b) in self.dirs.iter_mut().zip(&other.dirs) {
            a.merge(b);
        }
        self.sync.merge(&other.sync);
        self.sync_hist.merge(&other.sync_hist);
        self.datasyncs += other.datasyncs;
        self.range_syncs += other.range_syncs;
        self.short_reads += other.short_reads;
        for i in 0..7 {
            self.depth_levels[i] += other.depth_levels[i];
            self.submit_levels[i] += other.submit_levels[i];
            self.complete_levels[i] += other.complete_levels[i];
        }
        if self.dir_runtimes.is_some() || other.dir_runtimes.is_some() {
            // fio's group entry: each direction's longest
            self.dir_runtimes = Some(std::array::from_fn(|d| self.dir_runtime(d).max(other.dir_runtime(d))));
        }
        self.summed_runtime = Some(self.total_runtime() + other.total_runtime());
        self.runtime = self.runtime.max(other.runtime);
        self.runtime_limit = self.runtime_limit.zip(other.runtime_limit).map(|(a, b)| a.max(b));
        self.stats_start = self.stats_start.min(other.stats_start);
        self.clones += other.clones;
        self.ramp_dropped += other.ramp_dropped;
        self.restart_dropped += other.restart_dropped;
        self.uncounted += other.uncounted;
        self.cpu.add(&other.cpu);
        if self.error.is_none() {
            self.error.clone_from(&other.error);
        }
        if let Some(theirs) = other.io_errors {
            self.io_errors.get_or_insert_with(ErrorCount::default).merge(theirs);
        }
        if self.steadystate.is_none() {
            self.steadystate.clone_from(&other.steadystate);
        }
        // fio's entry keeps its first member's name but its last member's job options
        self.job_options.clone_from(&other.job_options);
    }

    /// The runtime fio reports as `job_runtime`: a merged entry's members' added up.
    pub fn total_runtime(&self) -> Nanos {
        self.summed_runtime.unwrap_or(self.runtime)
    }

    /// All completions over all directions' histograms (fio's latency_* maps).
    pub fn all_clat_hist(&self) -> FioHistogram {
        let mut h = FioHistogram::default();
        for d in &self.dirs {
            h.merge(&d.clat_hist);
        }
        h
    }

    pub fn total_ios(&self) -> u64 {
        self.dirs.iter().map(|d| d.total_ios).sum()
    }

    /// The requests the statistics hold: data requests and syncs (a short read counts
    /// twice in `total_ios`, as in fio, but is one request).
    pub fn recorded(&self) -> u64 {
        self.total_ios() - self.short_reads + self.sync.n
    }

    /// Completions the report leaves out: during ramp, before a latency search's final
    /// window, or not counted by fio at all.
    pub fn discarded(&self) -> u64 {
        self.ramp_dropped + self.restart_dropped + self.uncounted
    }
}

/// (min, max, mean, standard deviation, samples) of a series of samples.
pub type SampleSummary = (f64, f64, f64, f64, u64);

/// Bandwidth or IOPS samples as fio adds them up over a `group_reporting` entry (its
/// `sum_stat` with `pure_sum`): the members' minima, maxima, means, squared deviations
/// and sample counts each summed, so the entry shows the group's total, not the spread
/// of its members.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SampleSum {
    min: f64,
    max: f64,
    mean: f64,
    squares: f64,
    samples: u64,
}

impl SampleSum {
    fn of((min, max, mean, dev, samples): SampleSummary) -> SampleSum {
        SampleSum { min, max, mean, squares: dev * dev * samples.saturating_sub(1) as f64, samples }
    }

    fn add(&mut self, other: SampleSum) {
        if other.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = other;
            return;
        }
        self.min += other.min;
        self.max += other.max;
        self.mean += other.mean;
        self.squares += other.squares;
        self.samples += other.samples;
    }

    fn summary(&self) -> SampleSummary {
        let dev = if self.samples > 1 { (self.squares / (self.samples - 1) as f64).sqrt() } else { 0.0 };
        (self.min, self.max, self.mean, dev, self.samples)
    }
}

/// min, max, mean, sample stddev and count of the complete windows of a series, scaled
/// by `scale` (e.g. bytes per window → KiB/s).
pub fn window_summary(values: &[u64], complete: usize, scale: f64) -> SampleSummary {
    let xs: Vec<f64> = values.iter().take(complete).map(|&v| v as f64 * scale).collect();
    if xs.is_empty() {
        return (0.0, 0.0, 0.0, 0.0, 0);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = if xs.len() > 1 { xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (min, max, mean, var.sqrt(), xs.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_and_merge() {
        let mut a = LatStats::default();
        let mut b = LatStats::default();
        let mut all = LatStats::default();
        for v in [100u64, 200, 300, 1000] {
            a.record(v);
            all.record(v);
        }
        for v in [5u64, 7_000_000] {
            b.record(v);
            all.record(v);
        }
        a.merge(&b);
        assert_eq!((a.n, a.min, a.max), (all.n, all.min, all.max));
        assert!((a.mean() - all.mean()).abs() < 1e-6);
        assert!((a.stddev() - all.stddev()).abs() / all.stddev() < 1e-9);
        let mut s = LatStats::default();
        for v in [2u64, 4, 4, 4, 5, 5, 7, 9] {
            s.record(v);
        }
        assert!((s.mean() - 5.0).abs() < 1e-12);
        assert!((s.stddev() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn cpu_of_a_group_is_its_summed_time_over_its_summed_runtime() {
        let mut a = JobStats::new("a", 0, Vec::new(), 1);
        let mut b = a.clone();
        let secs = Nanos::from_secs;
        a.cpu = CpuUsage {
            user: Nanos::from_ms(100),
            sys: Nanos::from_ms(400),
            ctx: 10,
            runtime: secs(1),
            ..CpuUsage::default()
        };
        b.cpu =
            CpuUsage { user: Nanos::from_ms(300), sys: Nanos::ZERO, ctx: 5, runtime: secs(3), ..CpuUsage::default() };
        assert_eq!(a.cpu.percentages(), (10.0, 40.0));
        a.merge(&b);
        assert_eq!(a.cpu.percentages(), (10.0, 10.0));
        assert_eq!(a.cpu.ctx, 15);
        assert_eq!(CpuUsage::default().percentages(), (0.0, 0.0), "no runtime: 0%, as in simulation");
    }

    #[test]
    fn a_restart_counts_what_it_discards() {
        let mut j = JobStats::new("a", 0, Vec::new(), 1);
        for op in [Op::Read, Op::Write, Op::Read] {
            j.record(op, 4096, None, Nanos(1000), Nanos(2000));
        }
        j.flush_call = FlushCall::Fdatasync;
        j.record(Op::Flush, 0, None, Nanos(500), Nanos(2000));
        j.ramp_dropped = 2;
        j.restart();
        j.record(Op::Read, 4096, None, Nanos(1000), Nanos(3000));
        assert_eq!((j.total_ios(), j.sync.n, j.restart_dropped, j.discarded()), (1, 0, 4, 6));
        assert_eq!(j.recorded(), 1);
        assert_eq!(j.sync_total_ios(), 0, "the fdatasync went with the sync statistics");
        let mut group = j.clone();
        group.merge(&j);
        assert_eq!(group.discarded(), 12, "a group entry sums its members'");
    }

    #[test]
    fn a_group_entry_reports_its_members_runtimes_added_up_as_job_runtime() {
        // fio 3.33 (group_reporting, numjobs=2, runtime=2s): read.runtime 2006 ms, the
        // longest member's; job_runtime 4005 ms, the members' total_run_time added up
        let mut a = JobStats::new("a", 0, Vec::new(), 1);
        a.runtime = Nanos::from_ms(2006);
        let mut b = a.clone();
        b.runtime = Nanos::from_ms(1999);
        assert_eq!(a.total_runtime(), Nanos::from_ms(2006), "one job: its runtime");
        let mut group = a.clone();
        group.merge(&b);
        group.merge(&b);
        assert_eq!((group.runtime, group.total_runtime()), (Nanos::from_ms(2006), Nanos::from_ms(6004)));
    }

    #[test]
    fn a_sample_per_window_that_ends_before_the_job() {
        let mut j = JobStats::new("a", 0, Vec::new(), 1);
        for (runtime_ms, samples) in [(3000, 5), (3200, 6), (499, 0), (501, 1), (0, 0)] {
            j.runtime = Nanos::from_ms(runtime_ms);
            assert_eq!(j.bw_samples().0, samples, "{runtime_ms} ms");
        }
        // a 3 s time-based job whose last I/Os complete after its runtime: fio 3.33 gives 5
        j.runtime = Nanos::from_ms(3000) + Nanos(40_000);
        assert_eq!(j.bw_samples().0, 6);
        j.runtime_limit = Some(Nanos::from_secs(3));
        assert_eq!(j.bw_samples().0, 5);
        j.runtime = Nanos::from_secs(3);
        (j.bw_window, j.iops_window) = (Nanos::from_ms(250), Nanos::from_secs(1));
        assert_eq!((j.bw_samples(), j.iops_samples()), ((11, 4.0), (2, 1.0)));
        // each request lands in its byte window and its I/O window
        j.record(Op::Read, 4096, None, Nanos(1), Nanos::from_ms(600));
        let d = &j.dirs[0];
        assert_eq!((d.bw_windows.bytes.len(), d.ios_per_iops_window(j.bw_window, j.iops_window).len()), (3, 1));
    }

    #[test]
    fn a_group_entry_takes_each_directions_longest_runtime() {
        let mut a = JobStats::new("a", 0, vec![50.0], 1);
        let mut b = a.clone();
        (a.runtime, b.runtime) = (Nanos::from_ms(10), Nanos::from_ms(8));
        b.dir_runtimes = Some([Nanos::from_ms(5), Nanos::from_ms(3), Nanos::ZERO]);
        assert_eq!(b.dir_runtime(0), Nanos::from_ms(5));
        a.merge(&b);
        assert_eq!(a.dir_runtimes, Some([Nanos::from_ms(10), Nanos::from_ms(10), Nanos::from_ms(10)]));
        let mut c = b.clone();
        c.merge(&b);
        assert_eq!((c.dir_runtimes, c.runtime), (b.dir_runtimes, Nanos::from_ms(8)));
    }

    #[test]
    fn depths_are_shares_of_the_reads_writes_and_trims_issued() {
        let mut j = JobStats::new("a", 0, vec![50.0], 1);
        for i in 0..16 {
            j.record_issue_depth(1);
            j.record(Op::Write, 4096, None, Nanos(1000), Nanos(i));
        }
        // four flushes, issued at depth 1 too, are not in fio's denominator
        for _ in 0..4 {
            j.record_issue_depth(1);
        }
        j.record_issue_depth(2);
        assert_eq!(j.depth_percentages(), [125.0, 6.25, 0.0, 0.0, 0.0, 0.0, 0.0]);
        j.submit_levels = [0, 3, 0, 0, 0, 0, 1];
        assert_eq!(crate::fio_json::batch_percentages(&j.submit_levels), [0.0, 75.0, 0.0, 0.0, 0.0, 0.0, 25.0]);
    }

    #[test]
    fn windows_and_buckets() {
        let mut j = JobStats::new("a", 0, vec![50.0], 1);
        j.record(Op::Read, 4096, None, Nanos(1000), Nanos::from_ms(100));
        j.record(Op::Read, 4096, None, Nanos(1000), Nanos::from_ms(700));
        j.record(Op::Write, 8192, Some(Nanos(10)), Nanos(1000), Nanos::from_ms(1200));
        assert_eq!(j.dirs[0].bw_windows.bytes, vec![4096, 4096]);
        assert_eq!(j.dirs[0].series.ios, vec![2]);
        assert_eq!(j.dirs[1].series.bytes, vec![0, 8192]);
        assert_eq!(j.dirs[1].lat.max, 1010);
        assert_eq!(depth_bucket(32), 5);
        assert_eq!(batch_bucket(1), 1);
        let (min, max, mean, _, n) = window_summary(&[10, 20, 30], 2, 1.0);
        assert_eq!((min, max, mean, n), (10.0, 20.0, 15.0, 2));
    }

    #[test]
    fn unified_directions_fold_into_one_also_in_group_merges() {
        let mut j = JobStats::new("a", 0, vec![50.0], 1);
        j.record(Op::Read, 4096, None, Nanos(1000), Nanos::ZERO);
        j.record(Op::Write, 8192, None, Nanos(3000), Nanos::ZERO);
        let separate = j.clone();
        j.unify_directions();
        assert_eq!((j.dirs[0].total_ios, j.dirs[0].io_bytes, j.dirs[0].clat.max), (2, 12288, 3000));
        assert_eq!(j.dirs[1].total_ios, 0);
        let mut group = separate.clone();
        group.merge(&j);
        assert!(group.unified);
        assert_eq!((group.dirs[0].total_ios, group.dirs[1].total_ios), (4, 0));
    }

    /// fio 3.33 sums a group's bandwidth samples member by member: two clones with one
    /// 500 ms sample each (571 and 571 MiB/s) show min = max = 1142, samples = 2.
    #[test]
    fn a_groups_bandwidth_samples_are_its_members_summed() {
        let clone = |kib_per_window: [u64; 3]| {
            let mut j = JobStats::new("a", 0, vec![50.0], 1);
            j.bw_window = Nanos::from_ms(500);
            j.iops_window = Nanos::from_ms(500);
            for (w, kib) in kib_per_window.iter().enumerate() {
                let at = Nanos::from_ms(500 * w as u64 + 100);
                j.record(Op::Read, kib * 1024, None, Nanos(1000), at);
            }
            j.runtime = Nanos::from_ms(1500);
            j
        };
        let (a, b) = (clone([100, 300, 999]), clone([200, 200, 999]));
        // each clone: two whole windows before its end, in KiB/s
        assert_eq!(a.bw_summary(0), (200.0, 600.0, 400.0, (2.0f64 * 200.0 * 200.0).sqrt(), 2));
        let mut group = a.clone();
        group.merge(&b);
        let (min, max, mean, dev, samples) = group.bw_summary(0);
        assert_eq!((min, max, mean, samples), (600.0, 1000.0, 800.0, 4));
        // squared deviations add: (80,000 + 0) over 3 degrees of freedom
        assert!((dev - (80_000.0f64 / 3.0).sqrt()).abs() < 1e-9, "{dev}");
        assert_eq!(group.iops_summary(0).4, 4);
        let mut three = group.clone();
        three.merge(&clone([50, 50, 999]));
        assert_eq!(three.bw_summary(0).0, 700.0, "every member adds its minimum");
    }

    #[test]
    fn percentile_kinds_keep_the_histograms_they_need_and_survive_group_merges() {
        let mut plain = JobStats::new("a", 0, vec![50.0], 1);
        plain.record(Op::Read, 4096, Some(Nanos(500)), Nanos(1000), Nanos::ZERO);
        assert!(plain.dirs[0].slat_hist.is_none() && plain.dirs[0].lat_hist.is_none(), "fio's default: clat only");
        let mut all = JobStats::new("b", 0, vec![50.0], 1);
        all.set_percentile_kinds(PercentileKinds { slat: true, clat: true, lat: true });
        all.record(Op::Read, 4096, Some(Nanos(500)), Nanos(1000), Nanos::ZERO);
        all.record_prio(Op::Read, IoPrio::rt(0), Some(Nanos(500)), Nanos(1000));
        let read = &all.dirs[0];
        // fio's buckets are within 1% of the value
        let near = |h: &Option<FioHistogram>, v: f64| {
            h.as_ref().is_some_and(|h| (h.percentile(50.0) as f64 / v - 1.0).abs() < 0.01)
        };
        assert!(near(&read.slat_hist, 500.0), "submission latency");
        assert!(near(&read.lat_hist, 1500.0), "total latency");
        assert_eq!(read.prios[0].latency.max, 1500, "per-priority total latency under lat_percentiles");
        // a group entry starts from its first clone: its kinds and histograms carry over
        let mut group = all.clone();
        group.merge(&all);
        assert_eq!(group.dirs[0].lat_hist.as_ref().map(FioHistogram::total), Some(2));
        let mut from_plain = plain.clone();
        from_plain.merge(&all);
        assert_eq!(from_plain.dirs[0].lat_hist.as_ref().map(FioHistogram::total), Some(1));
    }
}
