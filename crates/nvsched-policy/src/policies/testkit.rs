//! A tiny device-free harness for policy unit tests: insert requests, call dispatch the
//! way engines do, complete requests by hand, advance time.

use crate::scheduler::{Completion, DeviceView, Inserted, Scheduler};
use crate::{Nanos, Request};

pub struct Harness {
    pub sched: Box<dyn Scheduler>,
    pub now: Nanos,
    pub queue_depth: u32,
    /// Dispatched, not completed, with their dispatch time.
    pub inflight: Vec<(Request, Nanos)>,
}

impl Harness {
    pub fn new(sched: Box<dyn Scheduler>, queue_depth: u32) -> Harness {
        Harness { sched, now: Nanos::ZERO, queue_depth, inflight: Vec::new() }
    }

    pub fn insert(&mut self, rq: Request) -> Inserted {
        let rq = Request { submit_time: self.now, ..rq };
        self.sched.insert(rq, self.now)
    }

    fn view(&self) -> DeviceView {
        DeviceView { inflight: self.inflight.len() as u32, queue_depth: self.queue_depth }
    }

    /// One dispatch call, as an engine makes it when the device has room.
    pub fn dispatch_one(&mut self) -> Option<Request> {
        if self.inflight.len() as u32 >= self.queue_depth {
            return None;
        }
        let rq = self.sched.dispatch(self.now, self.view())?;
        self.inflight.push((rq, self.now));
        Some(rq)
    }

    /// Dispatch until the policy holds back or the device is full.
    pub fn dispatch_all(&mut self) -> Vec<Request> {
        std::iter::from_fn(|| self.dispatch_one()).collect()
    }

    /// Completes the in-flight request with this id.
    pub fn complete(&mut self, id: u64) -> Request {
        let pos = self
            .inflight
            .iter()
            .position(|(r, _)| r.id.0 == id)
            .unwrap_or_else(|| panic!("request {id} is not in flight"));
        let (rq, dispatched_at) = self.inflight.remove(pos);
        self.sched.complete(&Completion { rq: &rq, dispatched_at, now: self.now, dispatched_by_policy: true });
        rq
    }

    /// Completes the oldest in-flight request.
    pub fn complete_oldest(&mut self) -> Option<Request> {
        let id = self.inflight.first()?.0.id.0;
        Some(self.complete(id))
    }

    pub fn advance(&mut self, by: Nanos) {
        self.now += by;
    }
}
