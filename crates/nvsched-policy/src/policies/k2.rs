//! `k2`: the work-constraining scheduler of "K2: Work-Constraining Scheduling of
//! NVMe-Attached Storage" (Miemietz et al., RTSS 2019), as analysed in "Analysis of the
//! K2 Scheduler for a Real-Time System with an SSD" (Electronics, 2021).
//!
//! Nine FIFO staging queues (real-time levels 0..7, then everything else), strict
//! priority, and one device-wide count of requests in flight that may not exceed
//! `bound`. Holding requests back keeps the device queue short, so a real-time request
//! waits behind at most `bound` others.

use crate::params::{ParamKind, ParamSpec, Params};
use crate::registry::{CgroupModel, PolicyInfo};
use crate::scheduler::{Completion, DeviceView, HostCost, Inserted, PolicyReport, Scheduler};
use crate::{Nanos, Op, PrioClass, Request, MAX_MERGE_BYTES};
use std::collections::VecDeque;

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "bound",
        kind: ParamKind::Int { min: 1, max: 65_536 },
        default: "32",
        help: "most requests in flight at the device (the paper's queue length bound, sysfs max_inflight)",
    },
    ParamSpec {
        name: "merge",
        kind: ParamKind::Bool,
        default: "0",
        help: "front/back-merge contiguous requests waiting in the same queue",
    },
    ParamSpec {
        name: "budget",
        kind: ParamKind::Choice(&["count", "latency"]),
        default: "count",
        help:
            "count: bound the number in flight; latency: bound the sum of estimated service times (Grassnick's variant)",
    },
    ParamSpec {
        name: "latency_budget",
        kind: ParamKind::Duration { min: Nanos(1_000), max: Nanos::from_secs(1) },
        default: "250us",
        help: "with budget=latency: most estimated service time in flight (2 requests always admitted)",
    },
    ParamSpec {
        name: "level_bug",
        kind: ParamKind::Bool,
        default: "0",
        help: "reproduce the original code's bug that put every real-time request in queue 4",
    },
];

pub static INFO: PolicyInfo = PolicyInfo {
    id: "k2",
    summary: "work-constraining: strict RT-level priority, at most `bound` requests in flight",
    source: "Miemietz et al., RTSS 2019; analysis in Electronics 10(22) 2021; github.com/TUD-OS/k2-scheduler",
    notes: "RT requests go to the queue of their own level (the original put all in queue 4; \
            level_bug=1 restores that). No aging: BE can starve. Completions the policy did \
            not dispatch never drive the counter negative. merge=1 merges only within one \
            queue, so never across priorities (the original did not check).",
    params: PARAMS,
    host_cost: HostCost { dispatch: Nanos(150), complete: Nanos(100) },
    example: "k2:bound=4",
    validate: None,
    check_cgroups: None,
    cgroups: CgroupModel::Ignored,
    build: |p: &Params| Box::new(K2::from_params(p)),
};

/// Queue index of the combined best-effort / idle / unset queue.
const OTHER_QUEUE: usize = 8;
/// Largest request a merge may build.
/// `budget=latency` always admits this many, so a large request cannot stall the queue.
const LATENCY_MIN_INFLIGHT: u32 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Budget {
    Count,
    Latency(Nanos),
}

#[derive(Debug)]
pub struct K2 {
    queues: [VecDeque<Request>; 9],
    queued: usize,
    bound: u32,
    budget: Budget,
    merge: bool,
    level_bug: bool,
    inflight: u32,
    inflight_est: Nanos,
    // counters
    dispatched: u64,
    merged: u64,
    held_back: u64,
    max_inflight_seen: u32,
    at_bound_since: Option<Nanos>,
    time_at_bound: Nanos,
    last_event: Nanos,
}

impl K2 {
    pub fn new(bound: u32) -> K2 {
        K2 {
            queues: Default::default(),
            queued: 0,
            bound: bound.max(1),
            budget: Budget::Count,
            merge: false,
            level_bug: false,
            inflight: 0,
            inflight_est: Nanos::ZERO,
            dispatched: 0,
            merged: 0,
            held_back: 0,
            max_inflight_seen: 0,
            at_bound_since: None,
            time_at_bound: Nanos::ZERO,
            last_event: Nanos::ZERO,
        }
    }

    pub fn from_params(p: &Params) -> K2 {
        let mut k2 = K2::new(p.uint("bound") as u32);
        k2.merge = p.flag("merge");
        k2.level_bug = p.flag("level_bug");
        if p.choice("budget") == "latency" {
            k2.budget = Budget::Latency(p.duration("latency_budget"));
        }
        k2
    }

    pub fn bound(&self) -> u32 {
        self.bound
    }

    /// Changes the bound while running (the sysfs write, or an online controller).
    /// Clamped to at least 1: a bound of 0 would block all dispatch.
    pub fn set_bound(&mut self, bound: u32, now: Nanos) {
        self.bound = bound.max(1);
        self.note_bound_state(now);
    }

    pub fn inflight(&self) -> u32 {
        self.inflight
    }

    fn queue_index(&self, rq: &Request) -> usize {
        let prio = rq.effective_prio();
        match prio.class {
            PrioClass::RealTime if self.level_bug => 4,
            PrioClass::RealTime => usize::from(prio.level.min(7)),
            _ => OTHER_QUEUE,
        }
    }

    fn try_merge(&mut self, q: usize, rq: &Request) -> Option<crate::RequestId> {
        self.queues[q].iter_mut().rev().find_map(|queued| queued.absorb(rq, MAX_MERGE_BYTES).map(|_| queued.id))
    }

    fn admits(&self, rq: &Request) -> bool {
        match self.budget {
            Budget::Count => self.inflight < self.bound,
            Budget::Latency(budget) => {
                self.inflight < LATENCY_MIN_INFLIGHT || self.inflight_est + estimated_service(rq) <= budget
            }
        }
    }

    /// The estimated service time that counts against a latency budget; a count budget
    /// never reads the sum, so it is not worked out.
    fn estimate(&self, rq: &Request) -> Nanos {
        match self.budget {
            Budget::Count => Nanos::ZERO,
            Budget::Latency(_) => estimated_service(rq),
        }
    }

    fn note_bound_state(&mut self, now: Nanos) {
        self.last_event = self.last_event.max(now);
        let at_bound = self.inflight >= self.bound;
        match (at_bound, self.at_bound_since) {
            (true, None) => self.at_bound_since = Some(now),
            (false, Some(since)) => {
                self.time_at_bound += now.saturating_sub(since);
                self.at_bound_since = None;
            }
            _ => {}
        }
    }
}

/// Estimated device service time by operation and size: the piecewise-linear table of
/// Grassnick's K2 fork (measured on a Samsung 970 EVO Plus), used by `budget=latency`.
pub fn estimated_service(rq: &Request) -> Nanos {
    // (size bytes, ns) knots for reads and writes
    const READ: [(f64, f64); 3] = [(512.0, 61_570.0), (32_768.0, 70_900.0), (2_097_152.0, 686_000.0)];
    const WRITE: [(f64, f64); 3] = [(512.0, 68_300.0), (32_768.0, 76_300.0), (2_097_152.0, 707_000.0)];
    let knots = match rq.op {
        Op::Read => &READ,
        Op::Write => &WRITE,
        Op::Flush | Op::Discard => return Nanos::ZERO,
    };
    let size = f64::from(rq.len_bytes).max(knots[0].0);
    let (lo, hi) = if size <= knots[1].0 { (knots[0], knots[1]) } else { (knots[1], knots[2]) };
    let t = (size - lo.0) / (hi.0 - lo.0);
    Nanos((lo.1 + t * (hi.1 - lo.1)).round() as u64)
}

impl Scheduler for K2 {
    fn id(&self) -> &'static str {
        "k2"
    }

    fn insert(&mut self, rq: Request, now: Nanos) -> Inserted {
        self.last_event = self.last_event.max(now);
        let q = self.queue_index(&rq);
        if self.merge {
            if let Some(parent) = self.try_merge(q, &rq) {
                self.merged += 1;
                return Inserted::MergedInto(parent);
            }
        }
        self.queues[q].push_back(rq);
        self.queued += 1;
        Inserted::Queued
    }

    fn dispatch(&mut self, now: Nanos, _device: DeviceView) -> Option<Request> {
        if self.queued == 0 {
            return None;
        }
        let q = self.queues.iter().position(|q| !q.is_empty())?;
        let head = self.queues[q].front().expect("non-empty queue");
        if !self.admits(head) {
            self.held_back += 1;
            return None;
        }
        let rq = self.queues[q].pop_front().expect("non-empty queue");
        self.queued -= 1;
        self.inflight += 1;
        self.inflight_est += self.estimate(&rq);
        debug_assert!(self.budget != Budget::Count || self.inflight <= self.bound, "k2 exceeded its bound");
        self.dispatched += 1;
        self.max_inflight_seen = self.max_inflight_seen.max(self.inflight);
        self.note_bound_state(now);
        Some(rq)
    }

    fn complete(&mut self, done: &Completion<'_>) {
        if done.dispatched_by_policy && self.inflight > 0 {
            self.inflight -= 1;
            self.inflight_est = self.inflight_est.saturating_sub(self.estimate(done.rq));
        }
        self.note_bound_state(done.now);
    }

    fn requeue(&mut self, rq: Request, now: Nanos) {
        if self.inflight > 0 {
            self.inflight -= 1;
            self.inflight_est = self.inflight_est.saturating_sub(self.estimate(&rq));
        }
        let q = self.queue_index(&rq);
        self.queues[q].push_front(rq);
        self.queued += 1;
        self.note_bound_state(now);
    }

    fn queued(&self) -> usize {
        self.queued
    }

    fn report(&self) -> PolicyReport {
        let open = self.at_bound_since.map_or(Nanos::ZERO, |s| self.last_event.saturating_sub(s));
        let at_bound = self.time_at_bound + open;
        let frac = if self.last_event.0 > 0 { at_bound.as_secs_f64() / self.last_event.as_secs_f64() } else { 0.0 };
        PolicyReport::default()
            .counter("bound", f64::from(self.bound))
            .counter("dispatched", self.dispatched as f64)
            .counter("merged", self.merged as f64)
            .counter("held_back", self.held_back as f64)
            .counter("max_inflight", f64::from(self.max_inflight_seen))
            .counter("time_at_bound_s", at_bound.as_secs_f64())
            .counter("time_at_bound_fraction", frac)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policies::testkit::Harness;
    use crate::IoPrio;

    fn k2(bound: u32) -> Harness {
        Harness::new(Box::new(K2::new(bound)), 1024)
    }

    #[test]
    fn never_more_than_bound_in_flight() {
        let mut h = k2(3);
        for i in 0..20 {
            h.insert(Request::read(i, i * 8192));
        }
        assert_eq!(h.dispatch_all().len(), 3);
        h.complete_oldest();
        assert_eq!(h.dispatch_all().len(), 1);
        assert_eq!(h.inflight.len(), 3);
    }

    #[test]
    fn rt_levels_before_be_and_lower_levels() {
        let mut h = k2(1);
        h.insert(Request::read(1, 0));
        h.insert(Request::read(2, 0).with_prio(IoPrio::rt(5)));
        h.insert(Request::read(3, 0).with_prio(IoPrio::rt(0)));
        h.insert(Request::read(4, 0).with_prio(IoPrio::be(0)));
        let mut order = Vec::new();
        while let Some(r) = h.dispatch_one() {
            order.push(r.id.0);
            h.complete(r.id.0);
        }
        assert_eq!(order, vec![3, 2, 1, 4]);
    }

    #[test]
    fn level_bug_puts_all_rt_in_one_fifo() {
        let p = Params::parse("k2", PARAMS, "bound=1,level_bug=1").unwrap();
        let mut h = Harness::new(Box::new(K2::from_params(&p)), 1024);
        h.insert(Request::read(1, 0).with_prio(IoPrio::rt(5)));
        h.insert(Request::read(2, 0).with_prio(IoPrio::rt(0)));
        let first = h.dispatch_one().unwrap();
        assert_eq!(first.id.0, 1, "with the bug, RT levels share queue 4 in FIFO order");
    }

    #[test]
    fn queued_rt_takes_first_free_slot() {
        let mut h = k2(2);
        for i in 0..10 {
            h.insert(Request::read(i, i * 4096));
        }
        h.dispatch_all();
        h.insert(Request::read(100, 0).with_prio(IoPrio::rt(0)));
        assert!(h.dispatch_one().is_none(), "bound reached");
        h.complete_oldest();
        assert_eq!(h.dispatch_one().unwrap().id.0, 100);
    }

    #[test]
    fn raising_the_bound_while_saturated_never_stalls() {
        let mut sched = K2::new(2);
        let view = DeviceView { inflight: 0, queue_depth: 1024 };
        for i in 0..10 {
            sched.insert(Request::read(i, i * 4096), Nanos::ZERO);
        }
        assert!(sched.dispatch(Nanos::ZERO, view).is_some());
        assert!(sched.dispatch(Nanos::ZERO, view).is_some());
        assert!(sched.dispatch(Nanos::ZERO, view).is_none());
        sched.set_bound(6, Nanos(10));
        let more = std::iter::from_fn(|| sched.dispatch(Nanos(10), view)).count();
        assert_eq!(more, 4);
        assert_eq!(sched.inflight(), 6);
    }

    #[test]
    fn unknown_completions_do_not_underflow() {
        let mut sched = K2::new(1);
        let rq = Request::read(9, 0);
        sched.complete(&Completion { rq: &rq, dispatched_at: Nanos::ZERO, now: Nanos(5), dispatched_by_policy: false });
        sched.complete(&Completion { rq: &rq, dispatched_at: Nanos::ZERO, now: Nanos(5), dispatched_by_policy: true });
        assert_eq!(sched.inflight(), 0);
        sched.insert(Request::read(1, 0), Nanos(6));
        let view = DeviceView { inflight: 0, queue_depth: 8 };
        assert!(sched.dispatch(Nanos(6), view).is_some());
        assert!(sched.dispatch(Nanos(6), view).is_none());
    }

    #[test]
    fn merges_within_a_queue_only() {
        let p = Params::parse("k2", PARAMS, "bound=1,merge=1").unwrap();
        let mut sched = K2::from_params(&p);
        assert_eq!(sched.insert(Request::read(1, 4096), Nanos::ZERO), Inserted::Queued);
        // back merge onto 1
        assert_eq!(sched.insert(Request::read(2, 8192), Nanos::ZERO), Inserted::MergedInto(crate::RequestId(1)));
        // front merge onto 1
        assert_eq!(sched.insert(Request::read(3, 0), Nanos::ZERO), Inserted::MergedInto(crate::RequestId(1)));
        // contiguous but RT: different queue, no merge
        assert_eq!(sched.insert(Request::read(4, 12288).with_prio(IoPrio::rt(0)), Nanos::ZERO), Inserted::Queued);
        let view = DeviceView { inflight: 0, queue_depth: 8 };
        let rt = sched.dispatch(Nanos::ZERO, view).unwrap();
        assert_eq!(rt.id.0, 4);
        let done = Completion { rq: &rt, dispatched_at: Nanos::ZERO, now: Nanos(1), dispatched_by_policy: true };
        sched.complete(&done);
        let merged = sched.dispatch(Nanos(1), view).unwrap();
        assert_eq!((merged.offset_bytes, merged.len_bytes), (0, 12288));
    }

    #[test]
    fn latency_budget_admits_two_then_by_estimate() {
        let p = Params::parse("k2", PARAMS, "budget=latency,latency_budget=200us").unwrap();
        let mut sched = K2::from_params(&p);
        let view = DeviceView { inflight: 0, queue_depth: 64 };
        for i in 0..10 {
            sched.insert(Request::read(i, i * 4096), Nanos::ZERO);
        }
        // 4 KiB read ~62.6us: two always, a third fits in 200us, a fourth does not
        let n = std::iter::from_fn(|| sched.dispatch(Nanos::ZERO, view)).count();
        assert_eq!(n, 3);
    }

    #[test]
    fn service_estimate_interpolates() {
        assert_eq!(estimated_service(&Request::read(0, 0).with_len(512)), Nanos(61_570));
        assert_eq!(estimated_service(&Request::read(0, 0).with_len(32_768)), Nanos(70_900));
        let w = estimated_service(&Request::write(0, 0).with_len(2 * 1024 * 1024));
        assert_eq!(w, Nanos(707_000));
    }
}
