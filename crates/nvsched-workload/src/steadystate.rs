//! fio's steady-state detection (`steadystate`/`ss`, `ss_dur`, `ss_ramp`): a job (or, with
//! `group_reporting`, its whole group) ends once its IOPS or bandwidth has been steady
//! for `ss_dur`. Throughput is sampled per second from `ss_ramp` on (from one second after
//! it, as fio begins recording); over the last `ss_dur` samples the criterion is either
//! the largest deviation from their mean or the slope of their least-squares line, in
//! absolute units or as a percentage of the mean, and it must fall below the limit.
//!
//! Samples are exact one-second buckets of completions, closed by the first completion
//! after each second; the decision comes with that completion.

use crate::driver::JobDriver;
use crate::spec::JobSpec;
use nvsched_core::{Nanos, Op};

/// What is measured for steady state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SsMetric {
    Iops,
    Bw,
}

/// A job's `steadystate`, `ss_dur` and `ss_ramp`.
#[derive(Clone, Debug, PartialEq)]
pub struct SteadyStateSpec {
    pub metric: SsMetric,
    /// The least-squares slope (else the largest deviation from the mean).
    pub slope: bool,
    pub limit: f64,
    /// `limit` is a percentage of the mean.
    pub percent: bool,
    /// `ss_dur` in whole seconds: how many samples are judged; 0 disables detection.
    pub duration_s: u32,
    /// `ss_ramp`: sampling starts one second after this.
    pub ramp: Nanos,
}

impl Default for SteadyStateSpec {
    /// fio's default criterion, `iops_slope:0.01%`, disabled until `ss_dur` is set.
    fn default() -> Self {
        SteadyStateSpec {
            metric: SsMetric::Iops,
            slope: true,
            limit: 0.01,
            percent: true,
            duration_s: 0,
            ramp: Nanos::ZERO,
        }
    }
}

impl SteadyStateSpec {
    /// Parses `METRIC[:LIMIT[%]]` with METRIC one of iops, iops_slope, bw, bw_slope.
    pub fn set_criterion(&mut self, v: &str) -> Result<(), String> {
        let (name, limit) = v.split_once(':').unwrap_or((v, ""));
        (self.metric, self.slope) = match name.trim() {
            "iops" => (SsMetric::Iops, false),
            "iops_slope" => (SsMetric::Iops, true),
            "bw" => (SsMetric::Bw, false),
            "bw_slope" => (SsMetric::Bw, true),
            other => return Err(format!("'{other}' is not one of iops, iops_slope, bw, bw_slope")),
        };
        let limit = limit.trim();
        if !limit.is_empty() {
            let (number, percent) = match limit.strip_suffix('%') {
                Some(n) => (n, true),
                None => (limit, false),
            };
            self.limit = number.trim().parse().map_err(|_| format!("limit '{limit}' is not a number"))?;
            if self.limit.is_nan() || self.limit < 0.0 {
                return Err(format!("limit '{limit}' is not a number of zero or more"));
            }
            self.percent = percent;
        }
        Ok(())
    }

    /// `%` when the limit is a percentage of the mean, else nothing.
    pub fn unit(&self) -> &'static str {
        if self.percent {
            "%"
        } else {
            ""
        }
    }

    /// fio's name for the criterion, as its JSON `ss` shows it: `iops_slope:0.010000%`.
    pub fn describe(&self) -> String {
        let metric = match (self.metric, self.slope) {
            (SsMetric::Iops, false) => "iops",
            (SsMetric::Iops, true) => "iops_slope",
            (SsMetric::Bw, false) => "bw",
            (SsMetric::Bw, true) => "bw_slope",
        };
        format!("{metric}:{:.6}{}", self.limit, self.unit())
    }
}

/// How steady-state detection went, for the report.
#[derive(Clone, Debug, PartialEq)]
pub struct SteadyStateReport {
    pub spec: SteadyStateSpec,
    pub attained: bool,
    /// The last judged criterion (a percentage when the limit is one).
    pub criterion: f64,
    pub max_deviation: f64,
    pub slope: f64,
    /// The last `ss_dur` samples, oldest first (zeros where none was taken yet).
    pub iops: Vec<u64>,
    /// Bytes per second.
    pub bw: Vec<u64>,
}

impl SteadyStateReport {
    pub fn bw_mean(&self) -> u64 {
        mean(&self.bw) as u64
    }
    pub fn iops_mean(&self) -> u64 {
        mean(&self.iops) as u64
    }
}

fn mean(xs: &[u64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<u64>() as f64 / xs.len() as f64
    }
}

const SECOND: Nanos = Nanos(1_000_000_000);

/// One job's (or group's) detector.
#[derive(Clone, Debug)]
pub struct SteadyState {
    spec: SteadyStateSpec,
    /// When the first sample's second begins (set by the first completion).
    sampling_from: Option<Nanos>,
    /// Seconds closed so far.
    closed: u64,
    bytes: u64,
    ios: u64,
    /// The last `duration_s` samples, (iops, bytes per second), oldest first.
    samples: std::collections::VecDeque<(u64, u64)>,
    attained: bool,
    criterion: f64,
    max_deviation: f64,
    slope: f64,
}

impl SteadyState {
    pub fn new(spec: SteadyStateSpec) -> SteadyState {
        SteadyState {
            spec,
            sampling_from: None,
            closed: 0,
            bytes: 0,
            ios: 0,
            samples: Default::default(),
            attained: false,
            criterion: 0.0,
            max_deviation: 0.0,
            slope: 0.0,
        }
    }

    /// A data request of `bytes` completed at `now` in a job that started at `job_start`.
    /// Returns true when this completion closes the second that makes the job steady.
    pub fn on_complete(&mut self, now: Nanos, job_start: Nanos, bytes: u64) -> bool {
        if self.attained {
            return false;
        }
        let from = *self.sampling_from.get_or_insert(if self.spec.ramp > Nanos::ZERO {
            job_start + self.spec.ramp + SECOND
        } else {
            job_start
        });
        if now < from {
            return false;
        }
        let second = (now - from).0 / SECOND.0;
        while self.closed < second {
            self.close_second();
            if self.attained {
                return true;
            }
        }
        self.bytes += bytes;
        self.ios += 1;
        false
    }

    fn close_second(&mut self) {
        self.closed += 1;
        let dur = self.spec.duration_s as usize;
        self.samples.push_back((std::mem::take(&mut self.ios), std::mem::take(&mut self.bytes)));
        if self.samples.len() > dur {
            self.samples.pop_front();
        }
        if self.samples.len() < dur {
            return;
        }
        let ys: Vec<f64> = self
            .samples
            .iter()
            .map(|&(iops, bw)| match self.spec.metric {
                SsMetric::Iops => iops as f64,
                SsMetric::Bw => bw as f64,
            })
            .collect();
        let n = ys.len() as f64;
        let mean = ys.iter().sum::<f64>() / n;
        let value = if self.spec.slope {
            // least squares over x = 0, 1, ..., n-1
            let sum_x = n * (n - 1.0) / 2.0;
            let sum_x2 = (n - 1.0) * n * (2.0 * n - 1.0) / 6.0;
            let sum_xy: f64 = ys.iter().enumerate().map(|(x, y)| x as f64 * y).sum();
            self.slope = (sum_xy - sum_x * mean) / (sum_x2 - sum_x * sum_x / n);
            self.slope
        } else {
            self.max_deviation = ys.iter().map(|y| (y - mean).abs()).fold(0.0, f64::max);
            self.max_deviation
        };
        self.criterion = if self.spec.percent { 100.0 * value / mean } else { value };
        // NaN (a one-second window's slope, an idle job's percentage) never passes
        self.attained = self.criterion.abs() < self.spec.limit;
    }

    pub fn report(&self) -> SteadyStateReport {
        let dur = self.spec.duration_s as usize;
        let mut iops: Vec<u64> = self.samples.iter().map(|s| s.0).collect();
        let mut bw: Vec<u64> = self.samples.iter().map(|s| s.1).collect();
        iops.resize(dur, 0);
        bw.resize(dur, 0);
        SteadyStateReport {
            spec: self.spec.clone(),
            attained: self.attained,
            criterion: self.criterion,
            max_deviation: self.max_deviation,
            slope: self.slope,
            iops,
            bw,
        }
    }
}

/// The detectors of a run: one per job clone, or one per group for jobs with
/// `group_reporting`, as fio keeps them.
#[derive(Debug, Default)]
pub struct SteadyStates {
    detectors: Vec<SteadyState>,
    /// Per clone, in the engine's order: its detector, if its job asks for one.
    detector_of: Vec<Option<u32>>,
    /// Per detector, the clones it ends.
    clones_of: Vec<Vec<u32>>,
}

impl SteadyStates {
    /// `clones` lists every clone in the engine's order with its job and fio group id.
    /// Jobs of one group that report together must agree on their options (fio rejects
    /// them otherwise).
    pub fn new<'a>(clones: impl IntoIterator<Item = (&'a JobSpec, u32)>) -> Result<SteadyStates, String> {
        let mut s = SteadyStates::default();
        let mut group_detector: Vec<(u32, u32)> = Vec::new();
        for (c, (spec, group)) in clones.into_iter().enumerate() {
            let ss = &spec.steadystate;
            if ss.duration_s == 0 {
                s.detector_of.push(None);
                continue;
            }
            let shared = spec.group_reporting.then(|| group_detector.iter().find(|(g, _)| *g == group)).flatten();
            let d = match shared {
                Some(&(_, d)) => {
                    if s.detectors[d as usize].spec != *ss {
                        return Err(format!(
                            "job '{}': steadystate options must be the same for every job of a reporting group",
                            spec.name
                        ));
                    }
                    d
                }
                None => {
                    s.detectors.push(SteadyState::new(ss.clone()));
                    s.clones_of.push(Vec::new());
                    let d = (s.detectors.len() - 1) as u32;
                    if spec.group_reporting {
                        group_detector.push((group, d));
                    }
                    d
                }
            };
            s.clones_of[d as usize].push(c as u32);
            s.detector_of.push(Some(d));
        }
        Ok(s)
    }

    /// Clone `clone` (run by `driver`) completed a request of `op` and `len_bytes` at
    /// `now`. When that makes its job or group steady, the clones that must now stop.
    /// Both engines call it for every completion; without detectors it is one test.
    #[inline]
    pub fn on_complete(
        &mut self,
        clone: u32,
        driver: &JobDriver,
        op: Op,
        len_bytes: u32,
        now: Nanos,
    ) -> Option<&[u32]> {
        if self.detectors.is_empty() || !op.is_data() {
            return None;
        }
        let d = (*self.detector_of.get(clone as usize)?)? as usize;
        let start = driver.started_at().unwrap_or(Nanos::ZERO);
        if self.detectors[d].on_complete(now, start, u64::from(len_bytes)) {
            Some(&self.clones_of[d])
        } else {
            None
        }
    }

    /// The report of clone `clone`'s detector, if its job has one.
    pub fn report(&self, clone: u32) -> Option<SteadyStateReport> {
        let d = (*self.detector_of.get(clone as usize)?)?;
        Some(self.detectors[d as usize].report())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(criterion: &str, duration_s: u32, ramp_s: u64) -> SteadyStateSpec {
        let mut s = SteadyStateSpec { duration_s, ramp: Nanos::from_secs(ramp_s), ..SteadyStateSpec::default() };
        s.set_criterion(criterion).unwrap();
        s
    }

    /// Feeds `ios_per_s(second)` 4 KiB completions per second until steady or `max_s`;
    /// returns the second at which steady state was attained.
    fn run(ss: &mut SteadyState, ios_per_s: impl Fn(u64) -> u64, max_s: u64) -> Option<u64> {
        for s in 0..max_s {
            let n = ios_per_s(s);
            for i in 0..n {
                let now = Nanos::from_secs(s) + Nanos(i * 1_000_000_000 / n);
                if ss.on_complete(now, Nanos::ZERO, 4096) {
                    return Some(s);
                }
            }
        }
        None
    }

    #[test]
    fn criteria_parse_and_print_as_fio_does() {
        let s = spec("iops:5%", 3, 0);
        assert_eq!((s.metric, s.slope, s.limit, s.percent), (SsMetric::Iops, false, 5.0, true));
        assert_eq!(s.describe(), "iops:5.000000%");
        assert_eq!(spec("bw_slope:100", 3, 0).describe(), "bw_slope:100.000000");
        assert_eq!(SteadyStateSpec::default().describe(), "iops_slope:0.010000%");
        let mut s = SteadyStateSpec::default();
        assert!(s.set_criterion("lat:1").unwrap_err().contains("not one of"));
        assert!(s.set_criterion("iops:x%").is_err());
    }

    #[test]
    fn a_steady_rate_is_found_once_the_window_is_full() {
        let mut ss = SteadyState::new(spec("iops:5%", 3, 0));
        // samples of seconds 0, 1, 2 are closed by the first completion of second 3
        assert_eq!(run(&mut ss, |_| 1000, 30), Some(3));
        let r = ss.report();
        assert!(r.attained && r.criterion < 5.0);
        assert_eq!(r.iops, [1000, 1000, 1000]);
        assert_eq!(r.bw_mean(), 4_096_000);
    }

    #[test]
    fn ss_ramp_delays_sampling_by_one_second_more() {
        let mut ss = SteadyState::new(spec("iops:5%", 3, 2));
        assert_eq!(run(&mut ss, |_| 1000, 30), Some(6), "ramp 2 s, then one second, then three samples");
    }

    #[test]
    fn a_falling_rate_is_not_steady_until_it_levels_off() {
        // IOPS fall by 10% a second for 10 s (a drive running out of clean blocks), then hold
        let rate = |s: u64| if s < 10 { 10_000 - 1_000 * s } else { 1_000 };
        let mut ss = SteadyState::new(spec("iops_slope:2%", 4, 0));
        let at = run(&mut ss, rate, 60).unwrap();
        assert!((13..=15).contains(&at), "steady only once four level seconds are in: {at}");
        let mut dev = SteadyState::new(spec("iops:10%", 4, 0));
        assert!(run(&mut dev, rate, 60).unwrap() >= 13);
        // deviation in absolute IOPS: 50 allowed, the noise is +-100
        let mut strict = SteadyState::new(spec("iops:50", 4, 0));
        assert_eq!(run(&mut strict, |s| 1_000 + if s % 2 == 0 { 100 } else { 0 }, 30), None);
        let r = strict.report();
        assert!(!r.attained && (r.criterion - 50.0).abs() < 1e-9, "{r:?}");
    }

    #[test]
    fn idle_seconds_count_as_zero_samples() {
        let mut ss = SteadyState::new(spec("iops:1%", 2, 0));
        ss.on_complete(Nanos::from_ms(500), Nanos::ZERO, 4096);
        assert!(
            !ss.on_complete(Nanos::from_secs(5), Nanos::ZERO, 4096),
            "0 and 0 are steady, but 0% of 0 is no number"
        );
        assert_eq!(ss.report().iops, [0, 0]);
    }
}
