//! Where a job clone's completed I/Os go: its statistics, its per-priority statistics
//! when its group reports them, and its log files. Both engines record through one
//! [`JobRecorder`], so a completion counts the same in simulation and on a real device.

use crate::iolog::{IoLogs, IssueLog};
use crate::stats::{ErrorCount, FlushCall, JobError, JobStats, PercentileKinds};
use nvsched_core::{IoPrio, LogClock, Nanos, Op};
use nvsched_workload::steadystate::SteadyStateReport;
use nvsched_workload::{EngineKind, Failure, IoUnit, JobDriver, JobSpec};
use std::path::Path;

/// One completed request as an engine saw it.
#[derive(Clone, Copy, Debug)]
pub struct CompletedIo {
    pub op: Op,
    pub len_bytes: u32,
    pub offset_bytes: u64,
    /// Which of the clone's files (0 unless the job has several).
    pub file: u16,
    pub prio: IoPrio,
    /// When the job issued it.
    pub created: Nanos,
    /// When it reached the scheduler (the end of fio's submission latency).
    pub inserted: Nanos,
}

/// A job clone's statistics and logs, and how its completions are recorded.
pub struct JobRecorder {
    pub stats: JobStats,
    /// fio-style log files the job asked for.
    pub logs: Option<Box<IoLogs>>,
    /// `write_iolog`: the clone's issued I/Os.
    pub issue_log: Option<Box<IssueLog>>,
    /// Also record completion latency per priority (fio's `prios` blocks).
    per_prio: bool,
    /// Synchronous engines have no submission latency: all of it is completion latency.
    sync_engine: bool,
    /// Completions not yet counted as a reap: a full queue waiting for
    /// `iodepth_batch_complete_min` of them reaps them together.
    reap_pending: u32,
    /// `log_unix_epoch` or `log_alternate_epoch`: the clock's time, in milliseconds, at the
    /// engine's time zero (its logs count from it); `None` without.
    log_clock_ms: Option<u64>,
    /// The clone has stopped: its statistics' times are final.
    has_stopped: bool,
}

/// Writes the blktrace a job's `merge_blktrace_file` merged (what its clones replay);
/// returns the path written, or `None` for a job that merges nothing.
pub fn write_merged_blktrace(spec: &JobSpec) -> Result<Option<&str>, String> {
    let (Some(path), Some(merged)) = (&spec.replay.merge_file, &spec.replay.merged) else { return Ok(None) };
    check_output_path(spec, "merge_blktrace_file", path)?;
    std::fs::write(path, merged.as_slice())
        .map_err(|e| format!("job '{}': cannot write merge_blktrace_file '{path}': {e}", spec.name))?;
    Ok(Some(path))
}

/// Refuses an output `path` that is anything but a plain file (a device, a directory) or
/// that is one of the job's data files: an output must not overwrite data.
fn check_output_path(spec: &JobSpec, option: &str, path: &str) -> Result<(), String> {
    let not_plain = std::fs::metadata(path).is_ok_and(|m| !m.is_file());
    let data_file = spec.clone_files().any(|(clone, k)| Path::new(path) == Path::new(&spec.file_name_of(clone, k)));
    if not_plain || data_file {
        return Err(format!(
            "job '{}': {option} '{path}' is not a plain file of its own (a device, a directory or the job's data file); refusing to overwrite it",
            spec.name
        ));
    }
    Ok(())
}

impl JobRecorder {
    pub fn new(stats: JobStats, logs: Option<Box<IoLogs>>, per_prio: bool, sync_engine: bool) -> JobRecorder {
        JobRecorder {
            stats,
            logs,
            issue_log: None,
            per_prio,
            sync_engine,
            reap_pending: 0,
            log_clock_ms: None,
            has_stopped: false,
        }
    }

    /// A job with `log_unix_epoch` or `log_alternate_epoch` writes its log times from its
    /// clock's time at the engine's time zero, which `ms_at_zero` reads, in milliseconds.
    /// Both engines call it for every clone; the others ignore it.
    pub fn set_log_clock(&mut self, spec: &JobSpec, ms_at_zero: impl Fn(LogClock) -> u64) {
        if let (Some(at), Some(clock)) = (&mut self.log_clock_ms, spec.logs.clock()) {
            *at = ms_at_zero(clock);
        }
    }

    /// The recorder of one clone of `spec`, as both engines set it up: its statistics
    /// with the job's reporting options, and the log files it asked for (fio's job
    /// number `job_number`, in the working directory).
    pub fn for_job(
        spec: &JobSpec,
        reporting_group: u32,
        job_number: u32,
        per_prio: bool,
    ) -> Result<JobRecorder, String> {
        let mut stats = JobStats::new(spec.name.clone(), reporting_group, spec.percentile_list.clone(), spec.iodepth);
        stats.percentile_precision = spec.percentile_precision;
        stats.description = spec.description.clone();
        stats.job_options = spec.job_options.clone();
        stats.flush_call = match (spec.fdatasync_every > 0, spec.sync_file_range.is_some()) {
            (true, _) => FlushCall::Fdatasync,
            (_, true) => FlushCall::SyncFileRange,
            _ => FlushCall::Fsync,
        };
        stats.latency_target_ns = spec.latency.target.0;
        stats.latency_window_us = spec.latency.window.0 / 1_000;
        stats.latency_percentile = spec.latency.percentile;
        stats.bw_window = spec.bw_avg_time;
        stats.iops_window = spec.iops_avg_time;
        stats.sig_figs = spec.significant_figures;
        stats.bandwidth_in_bits = spec.bandwidth_in_bits;
        stats.io_errors = spec.on_error.counts_errors().then(ErrorCount::default);
        stats.set_percentile_kinds(PercentileKinds {
            slat: spec.slat_percentiles,
            clat: spec.clat_percentiles,
            lat: spec.lat_percentiles,
        });
        let logs = IoLogs::create(&spec.logs, job_number, Path::new("."), spec.ioprio())?;
        let sync_engine = spec.engine_kind == EngineKind::Sync;
        let mut rec = JobRecorder::new(stats, logs, per_prio, sync_engine);
        rec.log_clock_ms = (spec.logs.clock().is_some() && rec.logs.is_some()).then_some(0);
        Ok(rec)
    }

    /// Creates what the job writes as clone `clone` starts: its `write_iolog`, and for
    /// clone 0 the blktrace `merge_blktrace_file` merged (what the clones replay). The
    /// clone's files start at `file_starts` on the device (each 0 on real files).
    /// Refuses a path that is anything but a plain file or that is one of the job's data
    /// files (see `check_output_path`).
    pub fn open_outputs(&mut self, spec: &JobSpec, clone: u32, file_starts: &[u64]) -> Result<(), String> {
        let files: Vec<(String, u64)> =
            file_starts.iter().enumerate().map(|(k, &start)| (spec.file_name_of(clone, k as u32), start)).collect();
        if clone == 0 {
            write_merged_blktrace(spec)?;
        }
        let Some(path) = spec.write_iolog_path(clone) else { return Ok(()) };
        check_output_path(spec, "write_iolog", &path)?;
        self.issue_log = Some(IssueLog::create(Path::new(&path), files)?);
        Ok(())
    }

    /// An I/O issued at `now`: into the `write_iolog`, if there is one.
    #[inline]
    pub fn on_issue(&mut self, now: Nanos, unit: &IoUnit) {
        // fio's write_iolog leaves sync_file_range out
        if let Some(log) = self.issue_log.as_mut().filter(|_| unit.sync_range.is_fsync()) {
            log.issue(now, unit.op, unit.file, unit.offset_bytes, unit.len_bytes);
        }
    }

    /// The clone is over at `end`: the depth its latency search settled on (fio's
    /// `latency_depth`) and its job's steady-state detection go into its statistics, and
    /// its log files close; the first write error.
    pub fn finish(
        &mut self,
        driver: &JobDriver,
        end: Nanos,
        steadystate: Option<SteadyStateReport>,
    ) -> Result<(), String> {
        if let Some(depth) = driver.latency_depth() {
            self.stats.iodepth = depth;
        }
        self.stats.steadystate = steadystate;
        let completed = self.logs.take().map_or(Ok(()), |l| l.finish());
        let issued = self.issue_log.take().map_or(Ok(()), |l| (*l).finish(end));
        completed.and(issued)
    }

    /// The clone stopped at `end`: its statistics cover the time from the warm-up's end
    /// (on the run's clock) to then, its samples stop at its `runtime` limit, and its
    /// directions ran as long as its driver's phases say.
    pub fn stopped(&mut self, driver: &JobDriver, end: Nanos) {
        set_times(&mut self.stats, driver, end);
        self.has_stopped = true;
    }

    /// The clone's statistics so far, at `now` (`--status-interval`): a stopped clone's as
    /// they are, a running one's as if it stopped now.
    pub fn snapshot(&self, driver: &JobDriver, now: Nanos) -> JobStats {
        let mut stats = self.stats.clone();
        if !self.has_stopped {
            set_times(&mut stats, driver, now);
        }
        stats
    }

    /// `n` of the clone's requests completed at one instant: one reap in fio's
    /// completion-batch counts (`iodepth_complete`), unless a full queue still waits for
    /// `iodepth_batch_complete_min` completions, which fio reaps together.
    pub fn reaped(&mut self, driver: &JobDriver, n: u32) {
        self.reap_pending += n;
        if self.reap_pending > 0 && !driver.defers_reap(self.reap_pending) {
            self.stats.record_complete_batch(std::mem::take(&mut self.reap_pending));
        }
    }

    /// One of the clone's requests completed at `now`: its driver learns of it (depth,
    /// latency target, `max_latency`, `rate_min`) and, if it counts, the statistics record
    /// it. Both engines complete requests through here.
    #[inline]
    pub fn complete(&mut self, driver: &mut JobDriver, io: &CompletedIo, now: Nanos) {
        self.complete_moving(driver, io, now, io.len_bytes);
    }

    /// [`JobRecorder::complete`] of a request that moved `moved_bytes` of its length.
    #[inline]
    fn complete_moving(&mut self, driver: &mut JobDriver, io: &CompletedIo, now: Nanos, moved_bytes: u32) {
        let ramp_end = driver.ramp_end();
        driver.landed(io.op, io.file, io.offset_bytes, io.len_bytes);
        let done = driver.on_complete(now, io.op, moved_bytes, now - io.created);
        if done.counted {
            self.record(&CompletedIo { len_bytes: moved_bytes, ..*io }, now, ramp_end);
        } else {
            self.stats.uncounted += 1;
        }
        if done.restart_stats || done.failed.is_some() {
            self.job_event(driver, io, now, done.restart_stats, done.failed, false);
        }
    }

    /// One of the clone's reads reached past the end of its file (a file made anew after
    /// `unlink=1`); `straddled`: it began before the end. As in fio 3.33,
    /// a read that began before the end counts as a short read and one more read issued,
    /// and what it got is not counted; then nothing more comes, as for a read wholly past
    /// the end: a synchronous engine fails the job with EIO ("full resid"), an
    /// asynchronous one completes the read with no bytes.
    #[cold]
    pub fn complete_past_end(&mut self, driver: &mut JobDriver, io: &CompletedIo, now: Nanos, straddled: bool) {
        if straddled && now >= driver.ramp_end() && self.stats.error.is_none() {
            self.stats.short_reads += 1;
            self.stats.dirs[Op::Read.index()].total_ios += 1;
        }
        if self.sync_engine {
            self.fail_request(driver, io, now, 5, true);
        } else {
            self.complete_moving(driver, io, now, 0);
        }
    }

    /// The clone could not open `file` as it started (an earlier job removed it with
    /// `unlink=1`): it ends at once, without I/O, with fio's ENOENT.
    pub fn failed_to_open(&mut self, driver: &mut JobDriver, now: Nanos, file: &str) {
        driver.fail_at_start(now);
        self.stats.error = Some(JobError::missing_file(file));
    }

    /// One of the clone's requests failed with `errno` (real devices): nothing is
    /// recorded but the failure, which fails the job unless `continue_on_error` covers
    /// it; with `continue_on_error` it counts in `total_err`.
    #[cold]
    pub fn complete_failed(&mut self, driver: &mut JobDriver, io: &CompletedIo, now: Nanos, errno: i32) {
        self.fail_request(driver, io, now, errno, false);
    }

    /// [`JobRecorder::complete_failed`]; `full_resid`: the failure is a synchronous read
    /// that got nothing at a file's end.
    fn fail_request(&mut self, driver: &mut JobDriver, io: &CompletedIo, now: Nanos, errno: i32, full_resid: bool) {
        driver.landed(io.op, io.file, io.offset_bytes, io.len_bytes);
        let done = driver.on_error(now, io.op, errno);
        // fio counts the error that failed the job too, but nothing after it; the I/O is
        // one of the direction's total_ios (and IOPS), without bytes or latency. What it
        // leaves out is still accounted for: during ramp as dropped, otherwise (after the
        // job failed, or a flush) as uncounted.
        if self.stats.error.is_none() {
            if let Some(count) = &mut self.stats.io_errors {
                count.add(errno);
            }
            match io.op.data_index() {
                Some(_) if now < driver.ramp_end() => self.stats.ramp_dropped += 1,
                Some(d) => self.stats.dirs[d].total_ios += 1,
                None => self.stats.uncounted += 1,
            }
        } else {
            self.stats.uncounted += 1;
        }
        if done.restart_stats || done.failed.is_some() {
            self.job_event(driver, io, now, done.restart_stats, done.failed, full_resid);
        }
    }

    /// The latency search's final window starts (statistics restart), or the job failed.
    #[cold]
    fn job_event(
        &mut self,
        driver: &JobDriver,
        io: &CompletedIo,
        now: Nanos,
        restart: bool,
        failed: Option<Failure>,
        full_resid: bool,
    ) {
        if restart {
            self.stats.restart();
        }
        if self.stats.error.is_some() {
            return;
        }
        self.stats.error = failed.map(|f| match f {
            Failure::Latency(limit) => {
                let file = driver.spec.file_name_of(driver.clone_index, u32::from(io.file));
                JobError::latency_exceeded(now - io.created, limit, &file, io.op, io.offset_bytes, io.len_bytes)
            }
            Failure::MinRate(detail) => JobError::min_rate(detail),
            Failure::Io(errno) => {
                let file = driver.spec.file_name_of(driver.clone_index, u32::from(io.file));
                if full_resid {
                    JobError::full_resid(&file, io.op, io.offset_bytes, io.len_bytes)
                } else {
                    JobError::io(errno, &file, io.op, io.offset_bytes, io.len_bytes)
                }
            }
        });
    }

    /// Records `io`, completed at `now`; completions before `ramp_end` are warm-up
    /// (`ramp_time`) and only counted as dropped.
    #[inline]
    pub fn record(&mut self, io: &CompletedIo, now: Nanos, ramp_end: Nanos) {
        if now < ramp_end {
            self.stats.ramp_dropped += 1;
            return;
        }
        let latency = now - io.created;
        let (slat, clat) = if self.sync_engine {
            (None, latency)
        } else {
            let s = io.inserted.saturating_sub(io.created);
            (Some(s), latency - s)
        };
        let since_start = now - ramp_end;
        self.stats.record(io.op, u64::from(io.len_bytes), slat, clat, since_start);
        if self.per_prio {
            self.stats.record_prio(io.op, io.prio, slat, clat);
        }
        if let Some(logs) = &mut self.logs {
            if let Some(clock_ms) = self.log_clock_ms {
                logs.set_epoch_ms(clock_ms + ramp_end.0 / 1_000_000);
            }
            logs.record(since_start, io.op, io.len_bytes, io.offset_bytes, io.prio, slat, clat);
        }
    }
}

/// The times of statistics that run from the clone's warm-up end to `end`.
fn set_times(s: &mut JobStats, driver: &JobDriver, end: Nanos) {
    let ramp_end = driver.ramp_end();
    s.stats_start = ramp_end;
    s.runtime = end.saturating_sub(ramp_end);
    s.runtime_limit = driver.end().map(|t| t.saturating_sub(ramp_end));
    s.dir_runtimes = driver.direction_runtimes(s.runtime, end);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(op: Op, prio: IoPrio) -> CompletedIo {
        CompletedIo {
            op,
            len_bytes: 4096,
            offset_bytes: 0,
            file: 0,
            prio,
            created: Nanos(1_000),
            inserted: Nanos(3_000),
        }
    }

    fn recorder(per_prio: bool, sync_engine: bool) -> JobRecorder {
        JobRecorder::new(JobStats::new("j".to_string(), 0, vec![50.0], 1), None, per_prio, sync_engine)
    }

    #[test]
    fn splits_submission_from_completion_latency_unless_synchronous() {
        let mut r = recorder(false, false);
        r.record(&io(Op::Read, IoPrio::be(4)), Nanos(10_000), Nanos::ZERO);
        let read = &r.stats.dirs[0];
        assert_eq!((read.slat.max, read.clat.max, read.lat.max), (2_000, 7_000, 9_000));
        let mut r = recorder(false, true);
        r.record(&io(Op::Read, IoPrio::be(4)), Nanos(10_000), Nanos::ZERO);
        let read = &r.stats.dirs[0];
        assert_eq!((read.slat.n, read.clat.max, read.lat.max), (0, 9_000, 9_000));
    }

    #[test]
    fn warm_up_is_dropped_and_priorities_recorded_only_when_asked() {
        let mut r = recorder(true, false);
        r.record(&io(Op::Write, IoPrio::rt(0)), Nanos(10_000), Nanos(20_000));
        assert_eq!((r.stats.dirs[1].total_ios, r.stats.ramp_dropped), (0, 1));
        r.record(&io(Op::Write, IoPrio::rt(0)), Nanos(30_000), Nanos(20_000));
        assert_eq!(r.stats.dirs[1].total_ios, 1);
        assert_eq!(r.stats.dirs[1].prios.len(), 1, "per-priority latency recorded");
        let text = "[j]\nrw=write\nramp_time=20us\nruntime=1ms\n";
        let spec = nvsched_workload::parse_job_str(
            text,
            Path::new("t.fio"),
            &nvsched_workload::HostEnvironment,
            Default::default(),
        );
        let spec = std::sync::Arc::new(spec.unwrap().jobs.remove(0));
        let mut driver = JobDriver::new(spec, 0, &[nvsched_workload::Region::new(0, 1 << 20)], 1).unwrap();
        driver.start(Nanos::ZERO);
        r.stopped(&driver, Nanos(50_000));
        assert_eq!(r.stats.stats_start, Nanos(20_000), "statistics start when the warm-up ends, on the run's clock");
        assert_eq!(r.stats.runtime, Nanos(30_000));
        assert_eq!((r.stats.runtime_limit, r.stats.dir_runtimes), (Some(Nanos::from_ms(1)), None));
        let mut r = recorder(false, false);
        r.record(&io(Op::Write, IoPrio::rt(0)), Nanos(30_000), Nanos(20_000));
        assert!(r.stats.dirs[1].prios.is_empty());
    }
}
