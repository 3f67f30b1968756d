//! What a job asks fio-style log files for (`write_*_log` options); nvsched-report writes them.

/// What a job asks to log (from its job options).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRequest {
    /// `write_lat_log` prefix: `PREFIX_lat.N.log`, `_clat`, `_slat`.
    pub lat: Option<String>,
    /// `write_bw_log` prefix: `PREFIX_bw.N.log`.
    pub bw: Option<String>,
    /// `write_iops_log` prefix: `PREFIX_iops.N.log`.
    pub iops: Option<String>,
    /// `log_avg_msec`: 0 logs every I/O.
    pub avg_msec: u32,
    /// `log_offset`: add each I/O's offset.
    pub offset: bool,
    /// `log_max_value`: a latency log's window line holds the window's largest latency,
    /// not its mean.
    pub max_value: bool,
    /// `log_prio`: the last column is each I/O's priority value (`0x2004`: best effort,
    /// level 4), not whether it was `cmdprio`'s.
    pub prio: bool,
    /// `write_hist_log` prefix: `PREFIX_clat_hist.N.log`, completion-latency histograms.
    pub hist: Option<String>,
    /// `log_hist_msec`: time between histogram samples (0: none).
    pub hist_msec: u32,
    /// `log_hist_coarseness`: each column sums 2^this of fio's histogram buckets (0-6).
    pub hist_coarseness: u8,
    /// `per_job_logs` (default true): each clone's logs carry its job number; false: every
    /// job appends to one file per prefix.
    pub per_job: bool,
    /// `log_unix_epoch`: times are Unix times in milliseconds, not milliseconds from the
    /// start of the job's statistics.
    pub unix_epoch: bool,
    /// `log_alternate_epoch` with `log_alternate_epoch_clock_id`: times are that clock's
    /// (a `clock_gettime` id; 0 is `CLOCK_REALTIME`), in milliseconds; it wins over
    /// `unix_epoch`, as in fio.
    pub alternate_clock: Option<i32>,
}

impl LogRequest {
    /// The clock log times count from, if not the start of the job's statistics.
    pub fn clock(&self) -> Option<LogClock> {
        match self.alternate_clock {
            Some(id) => Some(LogClock::Id(id)),
            None => self.unix_epoch.then_some(LogClock::Unix),
        }
    }
}

/// A clock log times can count from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogClock {
    /// Unix time (`log_unix_epoch`).
    Unix,
    /// A `clock_gettime` clock (`log_alternate_epoch_clock_id`).
    Id(i32),
}

impl Default for LogRequest {
    fn default() -> LogRequest {
        LogRequest {
            lat: None,
            bw: None,
            iops: None,
            avg_msec: 0,
            offset: false,
            max_value: false,
            prio: false,
            hist: None,
            hist_msec: 0,
            hist_coarseness: 0,
            per_job: true,
            unix_epoch: false,
            alternate_clock: None,
        }
    }
}

impl LogRequest {
    pub fn any(&self) -> bool {
        self.lat.is_some() || self.bw.is_some() || self.iops.is_some() || self.hist.is_some()
    }
}
