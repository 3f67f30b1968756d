//! `k2-adaptive`: K2 whose bound is tuned online, as the K2 analysis proposes ("develop a
//! method that adaptively adjusts the queue length bound at runtime without relying on
//! previous experiment results").
//!
//! Control law. A miss is a real-time request slower than the target; growing needs
//! headroom under the goal, `margin * target`. The bound changes at the end of every
//! `window` and, for O1, also at once on a miss.
//! - O1 (`target_p999`): the largest real-time latency of a window is the tail signal
//!   (with about 100 real-time requests per window it sits near the p99; the last five
//!   windows are remembered, so one slow request holds the bound for a second).
//!   - A miss lowers the bound by a quarter (at least one) at
//!     once, not at the end of the window: every request that runs under a bound that is
//!     too large adds to the tail. A request counts only if it was dispatched after
//!     the last change of the bound. The bound that missed becomes a ceiling.
//!   - A window without a miss, with the remembered maxima under the goal, grows the
//!     bound: by half until the first miss (a slow start, as TCP's), then by an eighth
//!     (at least one). It reaches the ceiling again only after a back-off (2 windows,
//!     doubling after each probe that misses, at most 32) and only with headroom (the
//!     remembered maxima under 85% of the goal), so it settles just under the largest
//!     bound that meets the target.
//!   - Far below the goal (under 50%, as when the background load drops) the ceiling is
//!     forgotten and the bound grows by half per window.
//!   - After `patience` windows in a row without a miss (25: 5 s), the bound grows by a
//!     step even without headroom and may probe its ceiling (after the back-off). Where
//!     the tail is flat in the bound (sequential reads at bounds 1-16) or every bound sits
//!     close to the target, the recent maxima never leave headroom, and without this the
//!     bound would stay wherever the first misses left it for the rest of the run.
//!   - Misses at `min_bound` are not held against growing (no smaller bound avoids them:
//!     start-up bursts, device hiccups, or a tail that is not monotonic in the bound, as
//!     sequential reads and buffered writes on the K2 workload, where bound 1 has a longer
//!     tail than bound 2-4): windows of misses there do not count as remembered maxima,
//!     so the bound keeps probing upwards. O1 starts at `min_bound` unless
//!     `initial_bound` is set.
//!   - With `miss_budget` (a share of real-time requests, 0 by default), each real-time
//!     request earns that share of a miss, and a miss the earnings cover (one at most is
//!     saved) holds the bound for the window instead of cutting it. p99.9 allows 0.1% of
//!     requests over the target, and a budget spends some of it on bandwidth. With random
//!     reads on the K2 workload (targets at K2-4's and K2-16's own p99.9, 4 seeds), 0.001
//!     changes the bandwidth by -10% to +40% (median +3%; most where every miss at the
//!     target's own bound would set a ceiling there), and tails end up to 18% over the
//!     target (0: up to 8%).
//!
//!   This finds the largest bound whose real-time tail stays under the target, i.e. the
//!   most bandwidth the target allows, where the tail grows with the bound; where it
//!   does not (sequential reads at bounds 1-16 on the K2 workload), it ends where misses
//!   stop.
//! - O2 (`target_bw`): the window's total bandwidth is compared with the target. Below:
//!   the bound grows by 25% (at least one). Above 115% of it: the bound shrinks to 85%.
//!   This settles on the smallest bound that delivers the bandwidth, i.e. the lowest
//!   real-time tail the target allows. O2 starts at 8 unless `initial_bound` is set.
//!
//! Either objective grows the bound only in a window where it held requests back: under a
//! light load a larger bound changes nothing, and a bound grown far past the load would
//! let the next burst through unchecked (TCP's congestion-window validation, for the same
//! reason).
//!
//! The bound stays in [`min_bound`, `max_bound`]; the real-time class is always served
//! first (K2's strict priority), so it is never starved.

use crate::params::{ParamKind, ParamSpec, Params};
use crate::policies::k2::K2;
use crate::registry::{CgroupModel, PolicyInfo};
use crate::scheduler::{Completion, DeviceView, HostCost, Inserted, PolicyReport, Scheduler, TimeSeries};
use crate::{Nanos, PrioClass, Request};

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "target_p999",
        kind: ParamKind::Duration { min: Nanos::ZERO, max: Nanos::from_secs(10) },
        default: "0",
        help: "O1: keep the real-time p99.9 latency under this, with as much bandwidth as possible",
    },
    ParamSpec {
        name: "target_bw",
        kind: ParamKind::Rate { min: 0.0, max: 1e12 },
        default: "0",
        help: "O2: deliver at least this total bandwidth with the lowest real-time tail",
    },
    ParamSpec {
        name: "window",
        kind: ParamKind::Duration { min: Nanos::from_ms(1), max: Nanos::from_secs(10) },
        default: "200ms",
        help: "control period",
    },
    ParamSpec {
        name: "margin",
        kind: ParamKind::Float { min: 0.1, max: 1.0 },
        default: "0.95",
        help: "O1 grows the bound only while recent real-time maxima stay under margin * target (a window sees fewer samples than the whole run)",
    },
    ParamSpec {
        name: "initial_bound",
        kind: ParamKind::Int { min: 0, max: 65_536 },
        default: "0",
        help: "bound at start; 0: min_bound for O1 (start safe, grow), 8 for O2",
    },
    ParamSpec {
        name: "patience",
        kind: ParamKind::Int { min: 0, max: 1_000 },
        default: "25",
        help: "O1: windows in a row without a miss after which the bound grows by a step even without headroom, and may probe its ceiling (0: never)",
    },
    ParamSpec {
        name: "miss_budget",
        kind: ParamKind::Float { min: 0.0, max: 0.01 },
        default: "0",
        help: "O1: share of real-time requests that may exceed the target without lowering the bound (0: every miss lowers it)",
    },
    ParamSpec { name: "min_bound", kind: ParamKind::Int { min: 1, max: 65_536 }, default: "1", help: "smallest bound" },
    ParamSpec {
        name: "max_bound",
        kind: ParamKind::Int { min: 1, max: 65_536 },
        default: "256",
        help: "largest bound",
    },
];

/// Parameters of the latency objective's control law, which the bandwidth objective ignores.
const O1_ONLY: &[&str] = &["margin", "patience", "miss_budget"];

/// Windows whose real-time maxima the O1 signal remembers.
const TAIL_WINDOWS: usize = 5;
/// Longest wait, in windows, before probing a bound that missed the target.
const MAX_BACKOFF: u32 = 32;

pub static INFO: PolicyInfo = PolicyInfo {
    id: "k2-adaptive",
    summary: "K2 with an online controller of the bound for a latency (O1) or bandwidth (O2) target",
    source: "nvsched, after the outlook of the K2 analysis (Electronics 2021)",
    notes: "Give exactly one of target_p999 (O1) or target_bw (O2). See the module \
            documentation for the control law; the bound over time is reported as the series \
            'bound'.",
    params: PARAMS,
    host_cost: HostCost { dispatch: Nanos(150), complete: Nanos(120) },
    example: "k2-adaptive:target_p999=500us",
    validate: Some(|p: &Params| K2Adaptive::validate(p)),
    check_cgroups: None,
    cgroups: CgroupModel::Ignored,
    build: |p: &Params| Box::new(K2Adaptive::from_params(p)),
};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Objective {
    Latency(Nanos),
    Bandwidth(f64),
}

#[derive(Debug)]
pub struct K2Adaptive {
    k2: K2,
    objective: Objective,
    window: Nanos,
    margin: f64,
    min_bound: u32,
    max_bound: u32,
    window_end: Option<Nanos>,
    rt_max: Nanos,
    rt_samples: u64,
    /// Real-time maxima of the last windows (newest last): the tail signal.
    recent_max: std::collections::VecDeque<Nanos>,
    /// O1: the smallest bound seen to miss the target, probed again only after
    /// `backoff` windows (doubling after each failed probe).
    ceiling: Option<u32>,
    backoff: u32,
    wait: u32,
    /// O1: a miss already lowered the bound in this window.
    shrunk_early: bool,
    /// O1: when the bound last changed.
    last_change: Option<Nanos>,
    /// O1: no miss yet, so the bound grows fast.
    slow_start: bool,
    /// O1: windows in a row without a miss, and how many of them probing needs.
    quiet: u32,
    patience: u32,
    /// O1: misses the budget still allows (each real-time request earns `miss_budget`
    /// of one, at most one is saved), and whether this window spent one.
    miss_credit: f64,
    miss_budget: f64,
    tolerated: bool,
    /// The bound held requests back in this window (otherwise a larger bound would
    /// change nothing, and growing it only makes the next load step hit harder).
    bound_limited: bool,
    bytes: u64,
    series: TimeSeries,
    adjustments: u64,
}

impl K2Adaptive {
    pub fn from_params(p: &Params) -> K2Adaptive {
        let objective = if p.duration("target_p999") > Nanos::ZERO {
            Objective::Latency(p.duration("target_p999"))
        } else if p.float("target_bw") > 0.0 {
            Objective::Bandwidth(p.float("target_bw"))
        } else {
            // validated by `validate`; a policy without a target behaves as plain K2
            Objective::Bandwidth(0.0)
        };
        let (min_bound, max_bound) = (p.uint("min_bound") as u32, p.uint("max_bound") as u32);
        let initial = match (p.uint("initial_bound") as u32, objective) {
            (0, Objective::Latency(_)) => min_bound,
            (0, Objective::Bandwidth(_)) => 8,
            (b, _) => b,
        };
        K2Adaptive {
            k2: K2::new(initial.clamp(min_bound, max_bound.max(min_bound))),
            objective,
            window: p.duration("window"),
            margin: p.float("margin"),
            min_bound,
            max_bound: max_bound.max(min_bound),
            window_end: None,
            rt_max: Nanos::ZERO,
            rt_samples: 0,
            recent_max: std::collections::VecDeque::new(),
            ceiling: None,
            backoff: 2,
            wait: 0,
            shrunk_early: false,
            slow_start: true,
            quiet: 0,
            patience: p.uint("patience") as u32,
            miss_credit: 0.0,
            miss_budget: p.float("miss_budget"),
            tolerated: false,
            bound_limited: false,
            last_change: None,
            bytes: 0,
            series: TimeSeries::new("bound", "requests"),
            adjustments: 0,
        }
    }

    /// Checks that exactly one objective is given (the registry calls this).
    pub fn validate(p: &Params) -> Result<(), String> {
        let lat = p.duration("target_p999") > Nanos::ZERO;
        let bw = p.float("target_bw") > 0.0;
        match (lat, bw) {
            (true, false) => Ok(()),
            (false, true) => match O1_ONLY.iter().find(|name| p.is_given(name)) {
                // silently ignoring it would leave the user believing it acts
                Some(name) => Err(format!(
                    "policy 'k2-adaptive': '{name}' applies to the latency objective (target_p999) only, not to target_bw"
                )),
                None => Ok(()),
            },
            _ => {
                Err("policy 'k2-adaptive' needs exactly one of target_p999=DURATION (O1) or target_bw=RATE (O2)".into())
            }
        }
    }

    pub fn bound(&self) -> u32 {
        self.k2.bound()
    }

    /// O1's answer to a miss: a quarter down, and the bound that missed becomes a
    /// ceiling probed again only after a back-off (doubled if the probe itself missed).
    fn step_down(&mut self, b: u32) -> u32 {
        self.slow_start = false;
        if self.ceiling.is_some_and(|c| b >= c) {
            self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        }
        self.ceiling = Some(self.ceiling.map_or(b, |c| c.min(b)));
        self.wait = self.backoff;
        b - (b / 4).max(1).min(b - 1)
    }

    fn adjust(&mut self, at: Nanos) {
        let b = self.k2.bound();
        let next = match self.objective {
            Objective::Latency(target) => {
                let goal = target.0 as f64 * self.margin;
                let missed = self.rt_samples > 0 && self.rt_max > target;
                // a miss at the smallest bound says nothing about the bound (no bound
                // would have avoided it: start-up bursts, device hiccups), so it is not
                // remembered against growing
                if self.rt_samples > 0 && !(missed && b <= self.min_bound) {
                    self.recent_max.push_back(self.rt_max);
                    if self.recent_max.len() > TAIL_WINDOWS {
                        self.recent_max.pop_front();
                    }
                }
                // the tail is rare: remember it for a few windows (None: only misses at
                // `min_bound` so far, nothing that speaks against growing)
                let seen = self.recent_max.iter().max().map(|m| m.0 as f64);
                self.quiet = if missed || self.shrunk_early { 0 } else { self.quiet + 1 };
                let patient = self.patience > 0 && self.quiet >= self.patience;
                if self.shrunk_early || self.tolerated {
                    // this window's miss was already answered when it happened, or the
                    // budget allowed it: hold
                    b
                } else if missed && b > self.min_bound {
                    self.step_down(b)
                } else if seen.is_some_and(|s| s < 0.5 * goal) {
                    // far below the target (e.g. the background load dropped): the old
                    // ceiling no longer holds
                    self.ceiling = None;
                    self.backoff = 2;
                    b + (b / 2).max(1)
                } else if seen.is_none_or(|s| s <= goal) || patient {
                    // grow: with headroom under the goal or, with `patience`, after
                    // windows without a miss (where the tail is flat in the bound, a
                    // larger bound costs nothing). Until the first miss by half per
                    // window (a slow start, as TCP's); then by an eighth.
                    let step = if self.slow_start { (b / 2).max(1) } else { (b / 8).max(1) };
                    let next = b + step;
                    // the ceiling is probed again only after the back-off, and only with
                    // headroom (close to the goal, a larger bound would miss; each probe
                    // that misses adds a sample to the tail) or patience
                    let may_probe = self.wait == 0 && (patient || seen.is_none_or(|s| s < 0.85 * goal));
                    let next = match self.ceiling {
                        Some(c) if next >= c && !may_probe => {
                            self.wait = self.wait.saturating_sub(1);
                            b
                        }
                        Some(c) if next >= c => {
                            self.ceiling = None;
                            next.min(c)
                        }
                        _ => next,
                    };
                    if next != b {
                        self.quiet = 0;
                    }
                    next
                } else {
                    b
                }
            }
            Objective::Bandwidth(target) => {
                let bw = self.bytes as f64 / self.window.as_secs_f64();
                if bw < target {
                    ((f64::from(b) * 1.25).ceil() as u32).max(b + 1)
                } else if bw > 1.15 * target {
                    ((f64::from(b) * 0.85) as u32).min(b.saturating_sub(1))
                } else {
                    b
                }
            }
        };
        // grow only a bound that limits: while the load is light, leave it where it is
        let next = if next > b && !self.bound_limited { b } else { next };
        let next = next.clamp(self.min_bound, self.max_bound);
        if next != b {
            self.adjustments += 1;
            self.k2.set_bound(next, at);
            self.last_change = Some(at);
        }
        self.series.push(at, f64::from(next));
        self.shrunk_early = false;
        self.tolerated = false;
        self.bound_limited = false;
        self.rt_max = Nanos::ZERO;
        self.rt_samples = 0;
        self.bytes = 0;
    }
}

impl Scheduler for K2Adaptive {
    fn id(&self) -> &'static str {
        "k2-adaptive"
    }

    fn insert(&mut self, rq: Request, now: Nanos) -> Inserted {
        if self.window_end.is_none() {
            self.window_end = Some(now + self.window);
            self.series.push(now, f64::from(self.k2.bound()));
        }
        self.k2.insert(rq, now)
    }

    fn dispatch(&mut self, now: Nanos, device: DeviceView) -> Option<Request> {
        while let Some(end) = self.window_end.filter(|&e| now >= e) {
            self.adjust(end);
            self.window_end = Some(end + self.window);
        }
        let rq = self.k2.dispatch(now, device);
        if rq.is_none() && self.k2.queued() > 0 {
            self.bound_limited = true;
        }
        rq
    }

    fn complete(&mut self, done: &Completion<'_>) {
        if done.rq.op.is_data() {
            self.bytes += u64::from(done.rq.len_bytes);
        }
        if done.rq.effective_prio().class == PrioClass::RealTime {
            let latency = done.total_latency();
            // a request dispatched before the last change of the bound tells about the
            // old bound (or the switch between them), not about this one
            let under_current = self.last_change.is_none_or(|at| done.dispatched_at >= at);
            if under_current {
                self.rt_max = self.rt_max.max(latency);
                self.rt_samples += 1;
                self.miss_credit = (self.miss_credit + self.miss_budget).min(1.0);
            }
            // a miss is answered at once, not at the end of the window: each further
            // request at a bound that is too large adds to the tail
            if let Objective::Latency(target) = self.objective {
                let b = self.k2.bound();
                if under_current && latency > target && b > self.min_bound {
                    if self.miss_credit >= 1.0 - 1e-9 {
                        // the budget covers it: hold the bound for this window
                        self.miss_credit -= 1.0;
                        self.tolerated = true;
                        self.slow_start = false;
                    } else {
                        let next = self.step_down(b).max(self.min_bound);
                        self.shrunk_early = true;
                        self.last_change = Some(done.now);
                        self.adjustments += 1;
                        self.k2.set_bound(next, done.now);
                        self.series.push(done.now, f64::from(next));
                    }
                }
            }
        }
        self.k2.complete(done);
    }

    fn requeue(&mut self, rq: Request, now: Nanos) {
        self.k2.requeue(rq, now);
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        (self.k2.queued() > 0).then_some(self.window_end).flatten()
    }

    fn queued(&self) -> usize {
        self.k2.queued()
    }

    fn report(&self) -> PolicyReport {
        let mut r = self.k2.report();
        r = r.counter("adjustments", self.adjustments as f64).with_series(self.series.clone());
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adaptive(params: &str) -> K2Adaptive {
        let p = Params::parse("k2-adaptive", PARAMS, params).unwrap();
        K2Adaptive::validate(&p).unwrap();
        K2Adaptive::from_params(&p)
    }

    /// A controller with more best-effort requests queued than any bound it reaches here
    /// lets through, and a roomy device.
    fn started(params: &str) -> (K2Adaptive, DeviceView) {
        let mut k = adaptive(params);
        for i in 0..300 {
            k.insert(Request::read(i, i * 4096), Nanos::ZERO);
        }
        let view = DeviceView { inflight: 0, queue_depth: 1024 };
        tick(&mut k, Nanos::ZERO, view);
        (k, view)
    }

    /// Dispatches at `now` until the bound holds requests back (the engine's `kick`).
    fn tick(k: &mut K2Adaptive, now: Nanos, view: DeviceView) {
        while k.dispatch(now, view).is_some() {}
    }

    fn rt_done(k: &mut K2Adaptive, latency: Nanos, now: Nanos) {
        let rq = Request::read(1, 0).with_prio(crate::IoPrio::rt(0)).at(now - latency);
        k.complete(&Completion { rq: &rq, dispatched_at: now - latency, now, dispatched_by_policy: false });
    }

    #[test]
    fn o1_shrinks_on_a_miss_and_grows_with_headroom() {
        let (mut k, view) = started("target_p999=1ms,window=10ms,initial_bound=16");
        rt_done(&mut k, Nanos::from_ms(2), Nanos::from_ms(5));
        tick(&mut k, Nanos::from_ms(10), view);
        assert_eq!(k.bound(), 12, "-1/4");
        // 800 us: below 85% of the 900 us goal, but the 2 ms miss is still remembered
        rt_done(&mut k, Nanos::from_us(800), Nanos::from_ms(15));
        tick(&mut k, Nanos::from_ms(20), view);
        assert_eq!(k.bound(), 12, "the miss of the last windows holds it");
        for i in 3..10 {
            rt_done(&mut k, Nanos::from_us(700), Nanos::from_ms(10 * i - 5));
            tick(&mut k, Nanos::from_ms(10 * i), view);
        }
        assert!(k.bound() > 12 && k.bound() <= 16, "grows back under the ceiling: {}", k.bound());
    }

    #[test]
    fn o1_a_miss_is_over_the_target_and_counts_only_under_the_current_bound() {
        let (mut k, view) = started("target_p999=1ms,window=10ms,initial_bound=16");
        // between the goal (950 us) and the target: no miss, but no headroom to grow either
        rt_done(&mut k, Nanos::from_us(980), Nanos::from_ms(5));
        tick(&mut k, Nanos::from_ms(10), view);
        assert_eq!(k.bound(), 16);
        rt_done(&mut k, Nanos::from_ms(2), Nanos::from_ms(12));
        assert_eq!(k.bound(), 12, "a miss lowers the bound at once");
        // dispatched before that change: says nothing about bound 12
        rt_done(&mut k, Nanos::from_ms(3), Nanos::from_ms(13));
        assert_eq!(k.bound(), 12);
        // dispatched after it: a miss of bound 12
        rt_done(&mut k, Nanos::from_ms(1) + Nanos(500_000), Nanos::from_ms(15));
        assert_eq!(k.bound(), 9);
    }

    #[test]
    fn o1_a_miss_budget_lets_one_miss_through_per_share_of_requests() {
        // 1% budget: 100 requests under the target earn one miss that does not cut the bound
        let (mut k, view) = started("target_p999=1ms,window=10ms,initial_bound=16,miss_budget=0.01");
        rt_done(&mut k, Nanos::from_ms(2), Nanos::from_ms(3));
        assert_eq!(k.bound(), 12, "nothing earned yet: the first miss cuts");
        for i in 0..100 {
            rt_done(&mut k, Nanos::from_us(300), Nanos::from_ms(4) + Nanos::from_us(i));
        }
        rt_done(&mut k, Nanos::from_ms(2), Nanos::from_ms(6));
        assert_eq!(k.bound(), 12, "the budget allows this one");
        tick(&mut k, Nanos::from_ms(10), view);
        assert_eq!(k.bound(), 12, "and the window holds the bound rather than growing it");
        rt_done(&mut k, Nanos::from_ms(2), Nanos::from_ms(12));
        assert_eq!(k.bound(), 9, "the budget is spent: the next miss cuts");
    }

    #[test]
    fn o1_misses_at_the_smallest_bound_do_not_stop_it_growing() {
        let (mut k, view) = started("target_p999=1ms,window=10ms");
        rt_done(&mut k, Nanos::from_ms(2), Nanos::from_ms(5));
        tick(&mut k, Nanos::from_ms(10), view);
        assert_eq!(k.bound(), 2, "probes past bound 1's miss");
        rt_done(&mut k, Nanos::from_us(500), Nanos::from_ms(15));
        tick(&mut k, Nanos::from_ms(20), view);
        assert_eq!(k.bound(), 3, "and keeps growing where bound 2 meets the target");
    }

    #[test]
    fn o1_without_headroom_probes_a_larger_bound_after_patience_windows_without_a_miss() {
        for (patience, grown) in [(0u32, false), (3, true)] {
            let (mut k, view) = started(&format!("target_p999=1ms,window=10ms,initial_bound=8,patience={patience}"));
            // 980 us: under the target (no miss) but above the 950 us goal (no headroom)
            for i in 1..=3 {
                rt_done(&mut k, Nanos::from_us(980), Nanos::from_ms(10 * i - 5));
                tick(&mut k, Nanos::from_ms(10 * i), view);
            }
            assert_eq!(k.bound() > 8, grown, "patience {patience}: bound {}", k.bound());
            if grown {
                assert_eq!(k.bound(), 12, "one step: by half before the first miss");
                // a miss still cuts it by a quarter at once
                rt_done(&mut k, Nanos::from_ms(2), Nanos::from_ms(35));
                assert_eq!(k.bound(), 9);
            }
        }
    }

    #[test]
    fn the_bound_grows_only_while_it_holds_requests_back() {
        let mut k = adaptive("target_p999=1ms,window=10ms,initial_bound=8");
        let view = DeviceView { inflight: 0, queue_depth: 1024 };
        // a light load: three requests, all let through at once
        for i in 0..3 {
            k.insert(Request::read(i, i * 4096), Nanos::ZERO);
        }
        for i in 1..=5 {
            rt_done(&mut k, Nanos::from_us(100), Nanos::from_ms(10 * i - 5));
            tick(&mut k, Nanos::from_ms(10 * i), view);
        }
        assert_eq!(k.bound(), 8, "far under the target, but a larger bound would change nothing");
        // the load rises past the bound
        for i in 3..100 {
            k.insert(Request::read(i, i * 4096), Nanos::from_ms(50));
        }
        tick(&mut k, Nanos::from_ms(51), view);
        rt_done(&mut k, Nanos::from_us(100), Nanos::from_ms(55));
        tick(&mut k, Nanos::from_ms(60), view);
        assert!(k.bound() > 8, "grows once it limits: {}", k.bound());
    }

    #[test]
    fn o2_grows_until_the_bandwidth_target_is_met() {
        let (mut k, view) = started("target_bw=100MB/s,window=10ms,initial_bound=4");
        k.bytes = 500_000; // 50 MB/s
        tick(&mut k, Nanos::from_ms(10), view);
        assert_eq!(k.bound(), 5);
        k.bytes = 2_000_000; // 200 MB/s
        tick(&mut k, Nanos::from_ms(20), view);
        assert_eq!(k.bound(), 4);
    }

    #[test]
    fn exactly_one_objective() {
        for bad in
            ["", "target_p999=1ms,target_bw=1MB/s", "target_bw=1MB/s,miss_budget=0.001", "target_bw=1MB/s,margin=0.9"]
        {
            let p = Params::parse("k2-adaptive", PARAMS, bad).unwrap();
            assert!(K2Adaptive::validate(&p).is_err());
        }
    }
}
