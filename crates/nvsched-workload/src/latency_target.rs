//! fio's latency-target profiling (`latency_target`, `latency_window`,
//! `latency_percentile`, `latency_run`): a job searches for the highest depth at which
//! its requests meet a latency target. It starts at depth 1 and judges each depth over a
//! window: a depth that holds is raised (doubled until one fails, then bisected towards
//! the lowest failing depth); one that fails is lowered (bisected towards the highest
//! depth that held), after the requests already out have completed. Once a depth holds
//! and would not change, the job's statistics restart and it runs one more window there;
//! if that holds too, the job ends. With `latency_run` the search never stops.
//!
//! A pure state machine: the driver feeds it completions and applies its verdicts.

use crate::spec::LatencyTargetSpec;
use nvsched_core::Nanos;

/// What the search decided after a completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing changes.
    Keep,
    /// The depth went up.
    Raised,
    /// The depth went down: issue nothing more until the requests out have completed.
    Lowered,
    /// The depth held and stays: drain, restart the statistics, run one more window.
    FinalRun,
    /// The final window held too: the job is done.
    Done,
    /// A request missed a 100% target at depth 1: fio fails the job (ETIMEDOUT).
    Failed,
}

/// One clone's search state.
#[derive(Clone, Debug)]
pub struct LatencyProbe {
    target: Nanos,
    window: Nanos,
    percentile: f64,
    keep_running: bool,
    max_depth: u32,
    depth: u32,
    /// The highest depth known to hold, and the lowest known to fail (`max_depth` until
    /// one has failed).
    low: u32,
    high: u32,
    /// Windows in a row that held just below `high` (after three, `high` creeps up by
    /// one, so a depth that failed once by bad luck is tried again).
    stable: u32,
    window_start: Nanos,
    window_ios: u64,
    window_missed: u64,
    final_run: bool,
}

impl LatencyProbe {
    /// The search for a job of depth `max_depth`, starting at `start`; `None` without a
    /// target.
    pub fn new(spec: &LatencyTargetSpec, max_depth: u32, start: Nanos) -> Option<LatencyProbe> {
        (spec.target > Nanos::ZERO).then(|| LatencyProbe {
            target: spec.target,
            window: spec.window,
            percentile: spec.percentile,
            keep_running: spec.keep_running,
            max_depth: max_depth.max(1),
            depth: 1,
            low: 1,
            high: max_depth.max(1),
            stable: 0,
            window_start: start,
            window_ios: 0,
            window_missed: 0,
            final_run: false,
        })
    }

    /// The depth the job may have in flight now.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// A data request completed at `now` after `latency` (issue to completion); only
    /// completions after `ramp_time` are judged.
    pub fn on_complete(&mut self, now: Nanos, latency: Nanos) -> Verdict {
        self.window_ios += 1;
        if latency > self.target {
            if self.percentile >= 100.0 {
                // one miss fails a 100% target at once
                return self.lower(now);
            }
            self.window_missed += 1;
        }
        if now - self.window_start < self.window {
            return Verdict::Keep;
        }
        let met_pct = (self.window_ios - self.window_missed) as f64 * 100.0 / self.window_ios as f64;
        if met_pct >= self.percentile {
            self.raise(now)
        } else {
            self.lower(now)
        }
    }

    /// Starts judging afresh at `now` (also once the requests issued at a depth that
    /// failed have drained).
    pub fn new_window(&mut self, now: Nanos) {
        self.window_start = now;
        self.window_ios = 0;
        self.window_missed = 0;
    }

    fn lower(&mut self, now: Nanos) -> Verdict {
        if self.depth == 1 {
            if self.percentile >= 100.0 {
                return Verdict::Failed;
            }
            // nothing lower to try: judge depth 1 again over a fresh window
            self.new_window(now);
            return Verdict::Keep;
        }
        self.high = self.depth;
        if self.low == self.depth {
            self.low -= 1;
        }
        self.depth = (self.depth + self.low) / 2;
        self.stable = 0;
        self.new_window(now);
        Verdict::Lowered
    }

    fn raise(&mut self, now: Nanos) -> Verdict {
        let before = self.depth;
        self.low = self.depth;
        if self.depth + 1 == self.high {
            self.stable += 1;
            if self.stable >= 3 {
                self.high += 1;
                self.stable = 0;
            }
        }
        self.depth = if self.high == self.max_depth { self.depth * 2 } else { (self.depth + self.high) / 2 };
        self.depth = self.depth.min(self.max_depth);
        self.new_window(now);
        if self.keep_running || self.depth != before {
            return if self.depth > before { Verdict::Raised } else { Verdict::Keep };
        }
        if self.final_run {
            Verdict::Done
        } else {
            self.final_run = true;
            Verdict::FinalRun
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1_000;

    fn probe(target_us: u64, window_us: u64, percentile: f64, keep_running: bool, max_depth: u32) -> LatencyProbe {
        let spec = LatencyTargetSpec {
            target: Nanos(target_us * US),
            window: Nanos(window_us * US),
            percentile,
            keep_running,
        };
        LatencyProbe::new(&spec, max_depth, Nanos::ZERO).unwrap()
    }

    /// Feeds one window at the probe's depth, each request taking `latency(depth)` µs, and
    /// returns the verdict that ends the window.
    fn window(p: &mut LatencyProbe, t: &mut u64, latency: impl Fn(u32) -> u64) -> Verdict {
        loop {
            *t += 10 * US;
            let v = p.on_complete(Nanos(*t), Nanos(latency(p.depth()) * US));
            if v != Verdict::Keep || (*t).is_multiple_of(100 * US) {
                return v;
            }
        }
    }

    #[test]
    fn no_target_no_search() {
        let spec =
            LatencyTargetSpec { target: Nanos::ZERO, window: Nanos::ZERO, percentile: 100.0, keep_running: false };
        assert!(LatencyProbe::new(&spec, 32, Nanos::ZERO).is_none());
    }

    #[test]
    fn doubles_while_the_target_holds_then_runs_a_final_window_and_stops() {
        let mut p = probe(1_000, 100, 100.0, false, 16);
        let mut t = 0;
        let mut depths = vec![p.depth()];
        let mut verdicts = Vec::new();
        loop {
            let v = window(&mut p, &mut t, |_| 50);
            verdicts.push(v);
            depths.push(p.depth());
            if v == Verdict::Done {
                break;
            }
        }
        assert_eq!(depths, [1, 2, 4, 8, 16, 16, 16]);
        assert_eq!(verdicts[4..], [Verdict::FinalRun, Verdict::Done]);
    }

    #[test]
    fn settles_on_the_highest_depth_that_meets_the_target() {
        // latency grows with depth: 100 us per request in flight, target 1000 us, so
        // depths up to 10 hold and 11 fails
        let mut p = probe(1_000, 100, 100.0, false, 64);
        let mut t = 0;
        let mut max_seen = 0;
        for _ in 0..200 {
            let v = window(&mut p, &mut t, |d| u64::from(d) * 100);
            max_seen = max_seen.max(p.depth());
            if v == Verdict::Done {
                break;
            }
        }
        assert_eq!(p.depth(), 10, "the search ends on the highest depth that holds");
        assert!(max_seen <= 32, "it never tried more than one doubling past the limit: {max_seen}");
    }

    #[test]
    fn a_percentile_tolerates_that_share_of_misses() {
        // one request in 50 misses: 98% meet the target
        let lat = |n: &mut u64| {
            *n += 1;
            if (*n).is_multiple_of(50) {
                5_000 * US
            } else {
                50 * US
            }
        };
        for (pct, depth) in [(97.0, 2), (99.0, 1)] {
            let mut p = probe(1_000, 1_000, pct, false, 8);
            let mut n = 0;
            // one window of 100 completions
            for t in 1..=100 {
                p.on_complete(Nanos(t * 10 * US), Nanos(lat(&mut n)));
            }
            assert_eq!(p.depth(), depth, "percentile {pct}");
        }
    }

    #[test]
    fn a_miss_at_depth_one_fails_a_hundred_percent_target_only() {
        let mut p = probe(100, 1_000, 100.0, false, 8);
        assert_eq!(p.on_complete(Nanos(10 * US), Nanos(500 * US)), Verdict::Failed);
        let mut p = probe(100, 1_000, 99.0, false, 8);
        let v = window(&mut p, &mut 0, |_| 500);
        assert_eq!((v, p.depth()), (Verdict::Keep, 1), "below 100% depth 1 is kept and judged again");
    }

    #[test]
    fn latency_run_keeps_searching_and_probes_upwards_again() {
        // depth 4 holds, 5 fails: with latency_run the probe never stops, and after three
        // windows at 4 it tries 5 again
        let mut p = probe(1_000, 100, 100.0, true, 16);
        let mut t = 0;
        let mut depths = Vec::new();
        for _ in 0..40 {
            let v = window(&mut p, &mut t, |d| if d <= 4 { 50 } else { 5_000 });
            assert!(!matches!(v, Verdict::Done | Verdict::FinalRun | Verdict::Failed), "{v:?}");
            depths.push(p.depth());
        }
        assert!(depths[10..].iter().all(|&d| d == 4 || d == 5), "{depths:?}");
        assert!(depths[10..].contains(&5), "it probes 5 again: {depths:?}");
        assert!(depths.iter().filter(|&&d| d == 4).count() > depths.len() / 2, "{depths:?}");
    }

    #[test]
    fn never_exceeds_the_job_depth() {
        let mut p = probe(1_000, 100, 100.0, true, 6);
        let mut t = 0;
        for _ in 0..30 {
            window(&mut p, &mut t, |_| 50);
            assert!(p.depth() <= 6);
        }
        assert_eq!(p.depth(), 6);
    }
}
