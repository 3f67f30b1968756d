//! `veloces`: "Veloces: An Efficient I/O Scheduler for Solid State Devices". An
//! SSD-aware elevator: reads are dispatched as they arrive (read preference); writes wait
//! in their own queue until they expire or no read is waiting; when a write goes, queued
//! writes to the same logical block ("buddies") follow it as a bundle; contiguous
//! requests are merged at the front as well as at the back.

use crate::params::{ParamKind, ParamSpec, Params};
use crate::registry::{CgroupModel, PolicyInfo};
use crate::scheduler::{Completion, DeviceView, HostCost, Inserted, PolicyReport, Scheduler};
use crate::{MergeSide, Nanos, Request, RequestId, MAX_MERGE_BYTES};
use std::collections::VecDeque;

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "write_expire",
        kind: ParamKind::Duration { min: Nanos(1_000), max: Nanos::from_secs(60) },
        default: "5ms",
        help: "a write waiting this long goes before reads (the paper gives no value)",
    },
    ParamSpec {
        name: "bundle_block",
        kind: ParamKind::Int { min: 4096, max: 1 << 30 },
        default: "524288",
        help: "logical block (bytes, aligned) whose queued writes are buddies",
    },
    ParamSpec {
        name: "bundle_max",
        kind: ParamKind::Int { min: 1, max: 1024 },
        default: "8",
        help: "most buddies dispatched behind one write",
    },
];

pub static INFO: PolicyInfo = PolicyInfo {
    id: "veloces",
    summary: "read preference, write expiry, write bundling by logical block, front+back merging",
    source: "\"Veloces: An Efficient I/O Scheduler for Solid State Devices\"",
    notes: "write_expire defaults to 5 ms (the paper leaves it open: long enough for reads to \
            overtake bursts of writes, short against starvation on NVMe). Merges stay within a \
            direction, priority and tenant, up to 512 KiB.",
    params: PARAMS,
    host_cost: HostCost { dispatch: Nanos(350), complete: Nanos(150) },
    example: "veloces",
    validate: None,
    check_cgroups: None,
    cgroups: CgroupModel::Ignored,
    build: |p: &Params| Box::new(Veloces::from_params(p)),
};

#[derive(Debug)]
pub struct Veloces {
    write_expire: Nanos,
    bundle_block: u64,
    bundle_max: usize,
    reads: VecDeque<Request>,
    writes: VecDeque<(Request, Nanos)>,
    other: VecDeque<Request>,
    bundle: VecDeque<Request>,
    front_merges: u64,
    back_merges: u64,
    bundled: u64,
    expired: u64,
}

impl Veloces {
    pub fn from_params(p: &Params) -> Veloces {
        Veloces {
            write_expire: p.duration("write_expire"),
            bundle_block: p.uint("bundle_block"),
            bundle_max: p.uint("bundle_max") as usize,
            reads: VecDeque::new(),
            writes: VecDeque::new(),
            other: VecDeque::new(),
            bundle: VecDeque::new(),
            front_merges: 0,
            back_merges: 0,
            bundled: 0,
            expired: 0,
        }
    }

    /// Front or back merge with a queued request of the same queue.
    fn merge<'a>(&mut self, queue: impl Iterator<Item = &'a mut Request>, rq: &Request) -> Option<RequestId> {
        for q in queue {
            match q.absorb(rq, MAX_MERGE_BYTES) {
                Some(MergeSide::Back) => self.back_merges += 1,
                Some(MergeSide::Front) => self.front_merges += 1,
                None => continue,
            }
            return Some(q.id);
        }
        None
    }

    fn take_write(&mut self, index: usize) -> Request {
        let (rq, _) = self.writes.remove(index).expect("index in range");
        let block = rq.offset_bytes / self.bundle_block;
        let mut i = 0;
        while i < self.writes.len() && self.bundle.len() < self.bundle_max {
            if self.writes[i].0.offset_bytes / self.bundle_block == block {
                let (buddy, _) = self.writes.remove(i).expect("index in range");
                self.bundle.push_back(buddy);
                self.bundled += 1;
            } else {
                i += 1;
            }
        }
        rq
    }
}

impl Scheduler for Veloces {
    fn id(&self) -> &'static str {
        "veloces"
    }

    fn insert(&mut self, rq: Request, now: Nanos) -> Inserted {
        if rq.is_read() {
            // split borrow: merge against the read queue
            let mut reads = std::mem::take(&mut self.reads);
            let merged = self.merge(reads.iter_mut().rev().take(64), &rq);
            self.reads = reads;
            if let Some(id) = merged {
                return Inserted::MergedInto(id);
            }
            self.reads.push_back(rq);
        } else if rq.is_write() {
            let mut writes = std::mem::take(&mut self.writes);
            let merged = self.merge(writes.iter_mut().rev().take(64).map(|(r, _)| r), &rq);
            self.writes = writes;
            if let Some(id) = merged {
                return Inserted::MergedInto(id);
            }
            self.writes.push_back((rq, now + self.write_expire));
        } else {
            self.other.push_back(rq);
        }
        Inserted::Queued
    }

    fn dispatch(&mut self, now: Nanos, _device: DeviceView) -> Option<Request> {
        if let Some(rq) = self.other.pop_front() {
            return Some(rq);
        }
        if let Some(rq) = self.bundle.pop_front() {
            return Some(rq);
        }
        if self.writes.front().is_some_and(|(_, deadline)| *deadline <= now) {
            self.expired += 1;
            return Some(self.take_write(0));
        }
        if let Some(rq) = self.reads.pop_front() {
            return Some(rq);
        }
        if !self.writes.is_empty() {
            return Some(self.take_write(0));
        }
        None
    }

    fn complete(&mut self, _done: &Completion<'_>) {}

    fn requeue(&mut self, rq: Request, now: Nanos) {
        if rq.is_read() {
            self.reads.push_front(rq);
        } else if rq.is_write() {
            self.writes.push_front((rq, now));
        } else {
            self.other.push_front(rq);
        }
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        // an expiring write must go even if no other event calls dispatch
        self.writes.front().map(|(_, d)| *d)
    }

    fn queued(&self) -> usize {
        self.reads.len() + self.writes.len() + self.other.len() + self.bundle.len()
    }

    fn report(&self) -> PolicyReport {
        PolicyReport::default()
            .counter("front_merges", self.front_merges as f64)
            .counter("back_merges", self.back_merges as f64)
            .counter("bundled_writes", self.bundled as f64)
            .counter("expired_writes", self.expired as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policies::testkit::Harness;

    fn veloces(params: &str) -> Harness {
        let p = Params::parse("veloces", PARAMS, params).unwrap();
        Harness::new(Box::new(Veloces::from_params(&p)), 1)
    }

    fn one(h: &mut Harness) -> u64 {
        let r = h.dispatch_one().unwrap();
        h.complete(r.id.0);
        r.id.0
    }

    #[test]
    fn a_queued_read_overtakes_unexpired_writes() {
        let mut h = veloces("");
        h.insert(Request::write(1, 0));
        h.insert(Request::write(2, 1 << 30));
        h.insert(Request::read(3, 1 << 20));
        assert_eq!(one(&mut h), 3);
    }

    #[test]
    fn expired_writes_go_first() {
        let mut h = veloces("write_expire=1ms");
        h.insert(Request::write(1, 0));
        h.advance(Nanos::from_ms(2));
        h.insert(Request::read(2, 1 << 20));
        assert_eq!(one(&mut h), 1);
        assert_eq!(one(&mut h), 2);
    }

    #[test]
    fn buddies_in_one_logical_block_dispatch_together() {
        let mut h = veloces("");
        h.insert(Request::write(1, 0));
        h.insert(Request::write(2, 1 << 30));
        h.insert(Request::write(3, 64 * 1024));
        h.insert(Request::write(4, 256 * 1024));
        let order: Vec<u64> = (0..4).map(|_| one(&mut h)).collect();
        assert_eq!(order, vec![1, 3, 4, 2]);
    }

    #[test]
    fn front_and_back_merges_happen_and_are_counted() {
        let p = Params::parse("veloces", PARAMS, "").unwrap();
        let mut v = Veloces::from_params(&p);
        assert_eq!(v.insert(Request::read(1, 8192), Nanos::ZERO), Inserted::Queued);
        assert_eq!(v.insert(Request::read(2, 4096), Nanos::ZERO), Inserted::MergedInto(RequestId(1)));
        assert_eq!(v.insert(Request::read(3, 12288), Nanos::ZERO), Inserted::MergedInto(RequestId(1)));
        let r = v.report();
        assert_eq!((r.get("front_merges"), r.get("back_merges")), (Some(1.0), Some(1.0)));
        let rq = v.dispatch(Nanos::ZERO, DeviceView { inflight: 0, queue_depth: 1 }).unwrap();
        assert_eq!((rq.offset_bytes, rq.len_bytes), (4096, 12288));
    }
}
