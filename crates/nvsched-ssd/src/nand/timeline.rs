//! A shared resource (flash channel, host link) booked by intervals. Requests reach it
//! in booking order but not in time order (a read booked earlier may need the channel
//! later than one booked after it), so a booking takes the first gap long enough at or
//! after its ready time instead of queueing behind every earlier booking.

use nvsched_core::Nanos;
use std::collections::VecDeque;

#[derive(Clone, Debug, Default)]
pub struct GapTimeline {
    /// Busy intervals [start, end), sorted and disjoint.
    busy: VecDeque<(Nanos, Nanos)>,
    pub busy_total: Nanos,
}

impl GapTimeline {
    /// Books `duration` at the earliest time >= `ready` the resource is free for that
    /// long; returns the end of the booking. `now` is the current time: no booking
    /// starts before it, so intervals that ended by then are forgotten first.
    pub fn book(&mut self, now: Nanos, ready: Nanos, duration: Nanos) -> Nanos {
        debug_assert!(ready >= now, "a booking ready at {ready:?} before now {now:?}");
        self.prune(now);
        self.busy_total += duration;
        if duration == Nanos::ZERO {
            return ready;
        }
        let mut t = ready;
        // intervals are sorted and disjoint, so their ends are sorted too: skip those
        // that end by `ready` with a binary search
        let mut i = self.busy.partition_point(|&(_, e)| e <= t);
        while i < self.busy.len() {
            let (s, e) = self.busy[i];
            if s >= t + duration {
                break;
            }
            t = t.max(e);
            i += 1;
        }
        let end = t + duration;
        // insert at i, merging with touching neighbours to keep the list short
        let merge_prev = i > 0 && self.busy[i - 1].1 == t;
        let merge_next = i < self.busy.len() && self.busy[i].0 == end;
        match (merge_prev, merge_next) {
            (true, true) => {
                self.busy[i - 1].1 = self.busy[i].1;
                self.busy.remove(i);
            }
            (true, false) => self.busy[i - 1].1 = end,
            (false, true) => self.busy[i].0 = t,
            (false, false) => self.busy.insert(i, (t, end)),
        }
        end
    }

    /// Forgets intervals that ended by `now` (bookings never start before `now`).
    fn prune(&mut self, now: Nanos) {
        while self.busy.front().is_some_and(|&(_, e)| e <= now) {
            self.busy.pop_front();
        }
    }

    /// End of the last booking.
    pub fn last_end(&self) -> Nanos {
        self.busy.back().map_or(Nanos::ZERO, |&(_, e)| e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_booking_fills_an_earlier_gap() {
        let mut t = GapTimeline::default();
        assert_eq!(t.book(Nanos::ZERO, Nanos(100), Nanos(10)), Nanos(110));
        // ready earlier, fits before the first booking
        assert_eq!(t.book(Nanos::ZERO, Nanos(20), Nanos(10)), Nanos(30));
        // does not fit in [30, 100) when 80 long -> after 110
        assert_eq!(t.book(Nanos::ZERO, Nanos(30), Nanos(80)), Nanos(190));
        // fits exactly in [30, 100)
        assert_eq!(t.book(Nanos::ZERO, Nanos(30), Nanos(70)), Nanos(100));
        t.prune(Nanos(105));
        assert_eq!(t.last_end(), Nanos(190));
        assert_eq!(t.busy_total, Nanos(170));
    }

    #[test]
    fn back_to_back_bookings_merge() {
        let mut t = GapTimeline::default();
        for i in 0..100u64 {
            assert_eq!(t.book(Nanos::ZERO, Nanos(0), Nanos(5)), Nanos(5 * (i + 1)));
        }
        assert_eq!(t.busy.len(), 1);
    }

    #[test]
    fn pruning_never_changes_a_booking_made_at_or_after_it() {
        // A line forgets old intervals when it is booked (the device books a line for some
        // commands, not all); bookings come out as if it never forgot any, since no
        // booking starts before the current time.
        let mut rng = nvsched_core::SimRng::seed_from(5);
        let (mut pruned, mut never) = (GapTimeline::default(), GapTimeline::default());
        let mut now = Nanos::ZERO;
        for i in 0..20_000 {
            now += Nanos(rng.below(3_000));
            let ready = now + Nanos(rng.below(20_000));
            let duration = Nanos(rng.below(4_000));
            let end = never.book(Nanos::ZERO, ready, duration);
            assert_eq!(pruned.book(now, ready, duration), end, "booking {i}");
        }
        assert!(pruned.busy.len() < never.busy.len(), "pruning forgets old intervals");
    }
}
