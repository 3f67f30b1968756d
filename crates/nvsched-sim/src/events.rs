//! The event queue: events ordered by (time, sequence number), so simultaneous events
//! run in the order they were scheduled and every run is reproducible.
//!
//! Events whose delay is the same constant every time (the submission path, the
//! dispatch path) arrive in time order by construction; they go to FIFO lanes instead
//! of the heap, which saves two heap operations per request. With one host CPU, work on
//! it ends in the order it was queued, so the events that follow CPU work (submission,
//! dispatch, completion) are in time order too and use the lanes.

use nvsched_core::Nanos;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A job may be able to issue (think time or rate pacing over).
    JobWake(u32),
    /// A job held back by flow control may be able to issue: another job of its flow
    /// group issued or finished.
    FlowWake(u32),
    /// A request reaches the scheduler (end of the submission path).
    Insert(u32),
    /// A dispatched request reaches the device.
    DeviceArrive(u32),
    /// The device finished a request; its completion now needs a host CPU.
    DeviceDone(u32),
    /// A request's completion reaches the host (end of the completion path).
    Complete(u32),
    /// The policy asked to be called at this time.
    PolicyWake,
    /// A buffered request served by the page cache returns to its job.
    CacheDone(u32),
    /// The flusher looks for pages dirty for too long.
    WritebackTimer,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub at: Nanos,
    seq: u64,
    pub kind: EventKind,
}

impl Event {
    /// Time, then scheduling order, in one integer: a single comparison per heap step.
    #[inline]
    fn key(&self) -> u128 {
        (u128::from(self.at.0) << 64) | u128::from(self.seq)
    }
}

impl Ord for Event {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse for earliest first.
        other.key().cmp(&self.key())
    }
}
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A FIFO lane for events scheduled with a constant delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    Submit = 0,
    Dispatch = 1,
    Complete = 2,
}

#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Event>,
    lanes: [VecDeque<Event>; 3],
    seq: u64,
    popped: u64,
}

impl EventQueue {
    #[inline]
    pub fn push(&mut self, at: Nanos, kind: EventKind) {
        self.seq += 1;
        self.heap.push(Event { at, seq: self.seq, kind });
    }

    /// Schedules on a FIFO lane; `at` must not be earlier than the lane's last event.
    #[inline]
    pub fn push_lane(&mut self, lane: Lane, at: Nanos, kind: EventKind) {
        self.seq += 1;
        let q = &mut self.lanes[lane as usize];
        debug_assert!(q.back().is_none_or(|e| e.at <= at), "lane {lane:?} out of order");
        q.push_back(Event { at, seq: self.seq, kind });
    }

    /// The earliest event, ties broken by scheduling order.
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        let mut best: Option<(Event, Option<usize>)> = self.heap.peek().map(|e| (*e, None));
        for (i, lane) in self.lanes.iter().enumerate() {
            if let Some(e) = lane.front() {
                if best.is_none_or(|(b, _)| e.key() < b.key()) {
                    best = Some((*e, Some(i)));
                }
            }
        }
        let (event, source) = best?;
        match source {
            None => {
                self.heap.pop();
            }
            Some(i) => {
                self.lanes[i].pop_front();
            }
        }
        self.popped += 1;
        Some(event)
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.lanes.iter().all(VecDeque::is_empty)
    }

    /// Events processed so far.
    pub fn processed(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_then_scheduling_order() {
        let mut q = EventQueue::default();
        q.push(Nanos(10), EventKind::JobWake(1));
        q.push_lane(Lane::Submit, Nanos(5), EventKind::Insert(1));
        q.push(Nanos(5), EventKind::JobWake(2));
        q.push_lane(Lane::Dispatch, Nanos(5), EventKind::DeviceArrive(3));
        q.push_lane(Lane::Submit, Nanos(10), EventKind::Insert(4));
        let order: Vec<EventKind> = std::iter::from_fn(|| q.pop()).map(|e| e.kind).collect();
        assert_eq!(
            order,
            vec![
                EventKind::Insert(1),
                EventKind::JobWake(2),
                EventKind::DeviceArrive(3),
                EventKind::JobWake(1),
                EventKind::Insert(4)
            ]
        );
        assert_eq!(q.processed(), 5);
        assert!(q.is_empty());
    }
}
