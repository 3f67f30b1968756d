//! `none`: first in, first out; no bound besides the device queue depth. Linux's default
//! for NVMe (`blk-mq` without an elevator).

use crate::params::{ParamSpec, Params};
use crate::registry::{CgroupModel, PolicyInfo};
use crate::scheduler::{Completion, DeviceView, HostCost, Inserted, Scheduler};
use crate::{Nanos, Request};
use std::collections::VecDeque;

pub const PARAMS: &[ParamSpec] = &[];

pub static INFO: PolicyInfo = PolicyInfo {
    id: "none",
    summary: "FIFO, no scheduling; only the device queue depth limits requests in flight",
    source: "Linux blk-mq without an elevator (the NVMe default)",
    notes: "The baseline every experiment compares to.",
    params: PARAMS,
    host_cost: HostCost { dispatch: Nanos::ZERO, complete: Nanos::ZERO },
    example: "none",
    validate: None,
    check_cgroups: None,
    cgroups: CgroupModel::Ignored,
    build: |_: &Params| Box::new(NoneFifo::default()),
};

#[derive(Default, Debug)]
pub struct NoneFifo {
    queue: VecDeque<Request>,
}

impl Scheduler for NoneFifo {
    fn id(&self) -> &'static str {
        "none"
    }

    fn insert(&mut self, rq: Request, _now: Nanos) -> Inserted {
        self.queue.push_back(rq);
        Inserted::Queued
    }

    fn dispatch(&mut self, _now: Nanos, _device: DeviceView) -> Option<Request> {
        self.queue.pop_front()
    }

    fn complete(&mut self, _done: &Completion<'_>) {}

    fn requeue(&mut self, rq: Request, _now: Nanos) {
        self.queue.push_front(rq);
    }

    fn queued(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policies::testkit::Harness;

    #[test]
    fn dispatches_in_arrival_order() {
        let mut h = Harness::new(Box::new(NoneFifo::default()), 64);
        for i in 0..10 {
            h.insert(Request::read(i, i * 4096));
        }
        let order: Vec<u64> = h.dispatch_all().iter().map(|r| r.id.0).collect();
        assert_eq!(order, (0..10).collect::<Vec<_>>());
    }
}
