//! `mq-deadline`: Linux's deadline scheduler for blk-mq (`block/mq-deadline.c`), with its
//! ioprio support: per class (RT, BE, IDLE) and direction a sector-sorted tree and a FIFO
//! with expiry times; batches of `fifo_batch` requests in sector order; reads preferred
//! until writes have been passed over `writes_starved` times; a lower class is served
//! only when the higher ones have nothing outstanding, unless it aged past
//! `prio_aging_expire`.

use crate::params::{ParamKind, ParamSpec, Params};
use crate::registry::{CgroupModel, PolicyInfo};
use crate::scheduler::{Completion, DeviceView, HostCost, Inserted, PolicyReport, Scheduler};
use crate::{Nanos, Op, PrioClass, Request, RequestId, MAX_MERGE_BYTES};
use std::collections::{BTreeMap, HashMap, VecDeque};

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "read_expire",
        kind: ParamKind::Duration { min: Nanos(1_000), max: Nanos::from_secs(60) },
        default: "500ms",
        help: "deadline of a read",
    },
    ParamSpec {
        name: "write_expire",
        kind: ParamKind::Duration { min: Nanos(1_000), max: Nanos::from_secs(600) },
        default: "5s",
        help: "deadline of a write",
    },
    ParamSpec {
        name: "fifo_batch",
        kind: ParamKind::Int { min: 1, max: 1024 },
        default: "16",
        help: "requests dispatched in a row from one direction",
    },
    ParamSpec {
        name: "writes_starved",
        kind: ParamKind::Int { min: 0, max: 1024 },
        default: "2",
        help: "times reads may be preferred over waiting writes",
    },
    ParamSpec {
        name: "front_merges",
        kind: ParamKind::Bool,
        default: "1",
        help: "merge a request in front of a queued one",
    },
    ParamSpec {
        name: "prio_aging_expire",
        kind: ParamKind::Duration { min: Nanos(1_000), max: Nanos::from_secs(3600) },
        default: "10s",
        help: "a lower class waiting this long is served despite higher ones",
    },
];

pub static INFO: PolicyInfo = PolicyInfo {
    id: "mq-deadline",
    summary: "Linux deadline: sector-sorted batches, FIFO expiry, read preference, ioprio classes",
    source: "Linux block/mq-deadline.c (6.x)",
    notes: "Only the ioprio class is used (unset -> BE), as in Linux. Merges are back and \
            (with front_merges) front merges within one class and direction, up to 512 KiB; \
            the merged request keeps the earlier deadline. Flushes bypass the sorted queues.",
    params: PARAMS,
    host_cost: HostCost { dispatch: Nanos(400), complete: Nanos(150) },
    example: "mq-deadline",
    validate: None,
    check_cgroups: None,
    cgroups: CgroupModel::Ignored,
    build: |p: &Params| Box::new(MqDeadline::from_params(p)),
};

const CLASSES: usize = 3;

#[derive(Debug)]
struct Entry {
    rq: Request,
    dir: usize,
    deadline: Nanos,
    inserted: Nanos,
}

#[derive(Debug, Default)]
struct PerPrio {
    sorted: [BTreeMap<(u64, u64), ()>; 2],
    fifo: [VecDeque<u64>; 2],
    latest_pos: [u64; 2],
    queued: usize,
    /// Dispatched and not completed.
    inflight: usize,
}

#[derive(Debug)]
pub struct MqDeadline {
    read_expire: Nanos,
    write_expire: Nanos,
    fifo_batch: u32,
    writes_starved: u32,
    front_merges: bool,
    aging: Nanos,
    entries: HashMap<u64, Entry>,
    prios: [PerPrio; CLASSES],
    dispatch_list: VecDeque<Request>,
    last_dir: usize,
    batching: u32,
    starved: u32,
    // counters
    merges: u64,
    expired_dispatches: u64,
    aged_dispatches: u64,
    dispatched: [u64; CLASSES],
}

fn class_index(rq: &Request) -> usize {
    match rq.prio.class {
        PrioClass::RealTime => 0,
        PrioClass::None | PrioClass::BestEffort => 1,
        PrioClass::Idle => 2,
    }
}

impl MqDeadline {
    pub fn from_params(p: &Params) -> MqDeadline {
        MqDeadline {
            read_expire: p.duration("read_expire"),
            write_expire: p.duration("write_expire"),
            fifo_batch: p.uint("fifo_batch") as u32,
            writes_starved: p.uint("writes_starved") as u32,
            front_merges: p.flag("front_merges"),
            aging: p.duration("prio_aging_expire"),
            entries: HashMap::new(),
            prios: Default::default(),
            dispatch_list: VecDeque::new(),
            last_dir: 0,
            // no batch to continue before the first decision
            batching: u32::MAX,
            starved: 0,
            merges: 0,
            expired_dispatches: 0,
            aged_dispatches: 0,
            dispatched: [0; CLASSES],
        }
    }

    fn try_merge(&mut self, rq: &Request, class: usize, dir: usize) -> Option<RequestId> {
        let tree = &self.prios[class].sorted[dir];
        // back merge: the queued request just before ends where this one starts
        if let Some((&(_, id), _)) = tree.range(..(rq.offset_bytes, 0)).next_back() {
            let e = self.entries.get_mut(&id).expect("tree entries exist");
            if e.rq.can_back_merge(rq, MAX_MERGE_BYTES) {
                e.rq.len_bytes += rq.len_bytes;
                return Some(e.rq.id);
            }
        }
        if self.front_merges {
            if let Some((&(off, id), _)) = tree.range((rq.end_offset(), 0)..).next() {
                if off == rq.end_offset() {
                    let e = self.entries.get_mut(&id).expect("tree entries exist");
                    if rq.can_back_merge(&e.rq, MAX_MERGE_BYTES) {
                        let old_key = (e.rq.offset_bytes, id);
                        e.rq.offset_bytes = rq.offset_bytes;
                        e.rq.len_bytes += rq.len_bytes;
                        let new_key = (e.rq.offset_bytes, id);
                        let tree = &mut self.prios[class].sorted[dir];
                        tree.remove(&old_key);
                        tree.insert(new_key, ());
                        return Some(RequestId(id));
                    }
                }
            }
        }
        None
    }

    fn has_dir(&self, class: usize, dir: usize) -> bool {
        !self.prios[class].sorted[dir].is_empty()
    }

    /// The next request at or after the last dispatched position in sector order.
    fn next_sorted(&self, class: usize, dir: usize) -> Option<u64> {
        let p = &self.prios[class];
        p.sorted[dir].range((p.latest_pos[dir], 0)..).next().map(|(&(_, id), _)| id)
    }

    fn fifo_head(&mut self, class: usize, dir: usize) -> Option<u64> {
        let fifo = &mut self.prios[class].fifo[dir];
        while let Some(&id) = fifo.front() {
            if self.entries.contains_key(&id) {
                return Some(id);
            }
            fifo.pop_front(); // dispatched through the sorted path or merged away
        }
        None
    }

    /// Linux's `__dd_dispatch_request`: `latest_start` filters requests inserted later
    /// (the aging pass).
    fn dispatch_class(&mut self, class: usize, now: Nanos, latest_start: Nanos) -> Option<Request> {
        // continue the current batch
        if self.batching < self.fifo_batch {
            if let Some(id) = self.next_sorted(class, self.last_dir) {
                return self.take(class, id, latest_start, false);
            }
        }
        let reads = self.has_dir(class, 0);
        let writes = self.has_dir(class, 1);
        let dir = if reads {
            if writes && self.starved >= self.writes_starved {
                self.starved = 0;
                1
            } else {
                if writes {
                    self.starved += 1;
                }
                0
            }
        } else if writes {
            self.starved = 0;
            1
        } else {
            return None;
        };
        let head = self.fifo_head(class, dir).expect("non-empty direction has a FIFO head");
        let expired = self.entries[&head].deadline <= now;
        let id = match self.next_sorted(class, dir) {
            Some(next) if !expired => next,
            _ => head,
        };
        self.last_dir = dir;
        self.batching = 0;
        self.take(class, id, latest_start, expired && id == head)
    }

    fn take(&mut self, class: usize, id: u64, latest_start: Nanos, expired: bool) -> Option<Request> {
        if self.entries[&id].inserted > latest_start {
            return None;
        }
        let e = self.entries.remove(&id).expect("exists");
        let p = &mut self.prios[class];
        p.sorted[e.dir].remove(&(e.rq.offset_bytes, id));
        p.latest_pos[e.dir] = e.rq.offset_bytes;
        p.queued -= 1;
        p.inflight += 1;
        self.batching += 1;
        self.dispatched[class] += 1;
        if expired {
            self.expired_dispatches += 1;
        }
        Some(e.rq)
    }

    fn outstanding(&self, class: usize) -> usize {
        self.prios[class].queued + self.prios[class].inflight
    }
}

impl Scheduler for MqDeadline {
    fn id(&self) -> &'static str {
        "mq-deadline"
    }

    fn insert(&mut self, rq: Request, now: Nanos) -> Inserted {
        if !rq.op.is_data() {
            self.dispatch_list.push_back(rq);
            return Inserted::Queued;
        }
        let class = class_index(&rq);
        let dir = usize::from(rq.op == Op::Write);
        if let Some(parent) = self.try_merge(&rq, class, dir) {
            self.merges += 1;
            return Inserted::MergedInto(parent);
        }
        let expire = if dir == 0 { self.read_expire } else { self.write_expire };
        let id = rq.id.0;
        self.prios[class].sorted[dir].insert((rq.offset_bytes, id), ());
        self.prios[class].fifo[dir].push_back(id);
        self.prios[class].queued += 1;
        self.entries.insert(id, Entry { rq, dir, deadline: now + expire, inserted: now });
        Inserted::Queued
    }

    fn dispatch(&mut self, now: Nanos, _device: DeviceView) -> Option<Request> {
        if let Some(rq) = self.dispatch_list.pop_front() {
            return Some(rq);
        }
        // the kernel's dd_queued(): inserted and not yet completed, in flight included
        let busy_classes = (0..CLASSES).filter(|&c| self.outstanding(c) > 0).count();
        if busy_classes >= 2 && now > self.aging {
            let latest = now.saturating_sub(self.aging);
            for class in 1..CLASSES {
                if self.prios[class].queued > 0 {
                    if let Some(rq) = self.dispatch_class(class, now, latest) {
                        self.aged_dispatches += 1;
                        return Some(rq);
                    }
                }
            }
        }
        for class in 0..CLASSES {
            if let Some(rq) = self.dispatch_class(class, now, now) {
                return Some(rq);
            }
            if self.outstanding(class) > 0 {
                return None;
            }
        }
        None
    }

    fn complete(&mut self, done: &Completion<'_>) {
        if !done.dispatched_by_policy || !done.rq.op.is_data() {
            return;
        }
        let p = &mut self.prios[class_index(done.rq)];
        p.inflight = p.inflight.saturating_sub(1);
    }

    fn requeue(&mut self, rq: Request, _now: Nanos) {
        if rq.op.is_data() {
            let p = &mut self.prios[class_index(&rq)];
            p.inflight = p.inflight.saturating_sub(1);
        }
        self.dispatch_list.push_front(rq);
    }

    fn queued(&self) -> usize {
        self.dispatch_list.len() + self.prios.iter().map(|p| p.queued).sum::<usize>()
    }

    fn report(&self) -> PolicyReport {
        PolicyReport::default()
            .counter("merges", self.merges as f64)
            .counter("expired_dispatches", self.expired_dispatches as f64)
            .counter("aged_dispatches", self.aged_dispatches as f64)
            .counter("dispatched_rt", self.dispatched[0] as f64)
            .counter("dispatched_be", self.dispatched[1] as f64)
            .counter("dispatched_idle", self.dispatched[2] as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policies::testkit::Harness;
    use crate::IoPrio;

    fn dd(params: &str) -> Harness {
        let p = Params::parse("mq-deadline", PARAMS, params).unwrap();
        Harness::new(Box::new(MqDeadline::from_params(&p)), 1)
    }

    fn run_order(h: &mut Harness) -> Vec<u64> {
        let mut order = Vec::new();
        while let Some(r) = h.dispatch_one() {
            order.push(r.id.0);
            h.complete(r.id.0);
        }
        order
    }

    #[test]
    fn sorted_batches_in_sector_order() {
        let mut h = dd("front_merges=0");
        for (id, off) in [(1, 40), (2, 10), (3, 30), (4, 20)] {
            h.insert(Request::read(id, off * 8192));
        }
        // the first is the FIFO head (nothing dispatched yet at or after position 0 ... the
        // tree's lowest), then ascending sectors
        assert_eq!(run_order(&mut h), vec![2, 4, 3, 1]);
    }

    #[test]
    fn an_expired_request_is_served_before_sorted_order() {
        let mut h = dd("read_expire=1ms,fifo_batch=1,front_merges=0");
        h.insert(Request::read(1, 900 * 8192)); // oldest, highest sector
        h.advance(Nanos::from_us(500));
        for (id, off) in [(2, 10), (3, 20), (4, 30)] {
            h.insert(Request::read(id, off * 8192));
        }
        assert_eq!(h.dispatch_one().unwrap().id.0, 2, "not expired yet: sector order");
        h.complete(2);
        h.advance(Nanos::from_ms(1));
        assert_eq!(h.dispatch_one().unwrap().id.0, 1, "expired FIFO head first");
    }

    #[test]
    fn writes_starved_is_honoured() {
        let mut h = dd("writes_starved=2,fifo_batch=1,front_merges=0");
        for i in 0..6 {
            h.insert(Request::read(i, i * 8192));
        }
        h.insert(Request::write(100, 1 << 30));
        let order = run_order(&mut h);
        let pos = order.iter().position(|&id| id == 100).unwrap();
        assert_eq!(pos, 2, "the write goes after reads were preferred twice: {order:?}");
    }

    #[test]
    fn rt_class_before_be_and_be_waits_while_rt_is_outstanding() {
        let mut h =
            Harness::new(Box::new(MqDeadline::from_params(&Params::parse("mq-deadline", PARAMS, "").unwrap())), 8);
        h.insert(Request::read(1, 0));
        h.insert(Request::read(2, 8192).with_prio(IoPrio::rt(3)));
        h.insert(Request::read(3, 16384).with_prio(IoPrio::rt(0)));
        let first = h.dispatch_one().unwrap();
        assert!(matches!(first.id.0, 2 | 3));
        let second = h.dispatch_one().unwrap();
        assert!(matches!(second.id.0, 2 | 3));
        assert!(h.dispatch_one().is_none(), "BE waits while RT requests are in flight");
        h.complete(first.id.0);
        h.complete(second.id.0);
        assert_eq!(h.dispatch_one().unwrap().id.0, 1);
    }

    #[test]
    fn aging_serves_a_starved_lower_class() {
        let p = Params::parse("mq-deadline", PARAMS, "prio_aging_expire=10ms").unwrap();
        let mut h = Harness::new(Box::new(MqDeadline::from_params(&p)), 8);
        h.insert(Request::read(1, 0));
        h.insert(Request::read(2, 8192).with_prio(IoPrio::rt(0)));
        h.advance(Nanos::from_ms(20));
        h.insert(Request::read(3, 16384).with_prio(IoPrio::rt(0)));
        assert_eq!(h.dispatch_one().unwrap().id.0, 1, "aged BE request first");

        // a real-time request in flight (none queued) still counts as a busy class, as in
        // the kernel's dd_queued(): the aged BE request goes, past the in-flight RT one
        let mut h = Harness::new(Box::new(MqDeadline::from_params(&p)), 8);
        h.insert(Request::read(1, 0));
        h.insert(Request::read(2, 8192).with_prio(IoPrio::rt(0)));
        assert_eq!(h.dispatch_one().unwrap().id.0, 2, "real-time first");
        h.advance(Nanos::from_ms(20));
        assert_eq!(h.dispatch_one().map(|r| r.id.0), Some(1), "aged past the real-time request in flight");
    }

    #[test]
    fn merges_keep_classes_apart_and_count() {
        let p = Params::parse("mq-deadline", PARAMS, "").unwrap();
        let mut s = MqDeadline::from_params(&p);
        assert_eq!(s.insert(Request::read(1, 8192), Nanos::ZERO), Inserted::Queued);
        assert_eq!(s.insert(Request::read(2, 12288), Nanos::ZERO), Inserted::MergedInto(RequestId(1)));
        assert_eq!(s.insert(Request::read(3, 4096), Nanos::ZERO), Inserted::MergedInto(RequestId(1)));
        assert_eq!(s.insert(Request::read(4, 0).with_prio(IoPrio::rt(0)), Nanos::ZERO), Inserted::Queued);
        let view = DeviceView { inflight: 0, queue_depth: 8 };
        assert_eq!(s.dispatch(Nanos::ZERO, view).unwrap().id.0, 4);
        s.complete(&Completion {
            rq: &Request::read(4, 0).with_prio(IoPrio::rt(0)),
            dispatched_at: Nanos::ZERO,
            now: Nanos(1),
            dispatched_by_policy: true,
        });
        let merged = s.dispatch(Nanos(1), view).unwrap();
        assert_eq!((merged.offset_bytes, merged.len_bytes), (4096, 12288));
        assert_eq!(s.report().get("merges"), Some(2.0));
    }
}
