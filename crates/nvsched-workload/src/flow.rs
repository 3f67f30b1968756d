//! fio's `flow`: jobs that share a `flow_id` issue in proportion to their `flow` weights.
//!
//! As in fio (flow.c), a group counts the I/Os its members issued (starting from 1) and
//! the sum of their weights. A member whose share of the issued I/Os is above its share of
//! the weights is held back until the others catch up: it does not issue, and with
//! `flow_sleep` it lets what it has out complete and sleeps before it looks again.
//! A member leaves the group when it finishes, taking its I/Os and weight with it.

use crate::driver::JobDriver;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// The counts one `flow_id` shares. Atomics let the drivers that share it stay `Send`;
/// every engine drives its jobs from one thread, so `Relaxed` is enough.
#[derive(Debug)]
pub struct FlowGroup {
    /// I/Os issued by its members, plus one (fio's starting value).
    issued: AtomicU64,
    /// The members' weights, modulo 2^32 as fio's `unsigned int` sums them (a negative
    /// `flow`, stored as a weight near 2^32, makes it wrap).
    total_weight: AtomicU32,
}

impl Default for FlowGroup {
    fn default() -> FlowGroup {
        FlowGroup { issued: AtomicU64::new(1), total_weight: AtomicU32::new(0) }
    }
}

/// One job clone's membership in its flow group.
#[derive(Debug)]
pub struct FlowShare {
    group: Arc<FlowGroup>,
    weight: u32,
    issued: u64,
    joined: bool,
}

impl FlowShare {
    pub fn new(group: Arc<FlowGroup>, weight: u32) -> FlowShare {
        FlowShare { group, weight, issued: 0, joined: false }
    }

    /// The clone starts: its weight counts from now on.
    pub fn join(&mut self) {
        if !self.joined {
            self.joined = true;
            self.group.total_weight.fetch_add(self.weight, Ordering::Relaxed);
        }
    }

    /// The clone finished: its I/Os and its weight no longer count.
    pub fn leave(&mut self) {
        if std::mem::take(&mut self.joined) {
            self.group.issued.fetch_sub(self.issued, Ordering::Relaxed);
            self.group.total_weight.fetch_sub(self.weight, Ordering::Relaxed);
            self.issued = 0;
        }
    }

    /// fio's `flow_threshold_exceeded`: this member's share of the group's I/Os is above
    /// its share of the weights.
    pub fn held(&self) -> bool {
        let group_issued = self.group.issued.load(Ordering::Relaxed);
        let total_weight = self.group.total_weight.load(Ordering::Relaxed);
        // issued / group_issued > weight / total_weight, without division (a total of 0
        // is fio's infinite weight share: never held)
        u128::from(self.issued) * u128::from(total_weight) > u128::from(self.weight) * u128::from(group_issued)
    }

    /// One I/O issued.
    pub fn count(&mut self) {
        self.issued += 1;
        self.group.issued.fetch_add(1, Ordering::Relaxed);
    }
}

/// The flow groups of one run, by `flow_id`.
#[derive(Debug, Default)]
pub struct FlowGroups(BTreeMap<u32, Arc<FlowGroup>>);

impl FlowGroups {
    /// A share of its group for a clone with weight `flow` (none for 0: no flow control).
    pub fn share(&mut self, flow_id: u32, flow: u32) -> Option<FlowShare> {
        (flow > 0).then(|| FlowShare::new(self.0.entry(flow_id).or_default().clone(), flow))
    }

    /// Puts a new clone in its job's flow group, if its job has a `flow` weight.
    pub fn attach(&mut self, driver: &mut JobDriver) {
        if let Some(share) = self.share(driver.spec.flow_id, driver.spec.flow) {
            driver.set_flow(share);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Members issue whenever they are not held, round-robin: the counts follow the weights.
    #[test]
    fn members_issue_in_proportion_to_their_weights() {
        let mut groups = FlowGroups::default();
        let mut members: Vec<FlowShare> = [3, 2, 1].iter().map(|&w| groups.share(0, w).unwrap()).collect();
        members.iter_mut().for_each(FlowShare::join);
        let mut counts = [0u32; 3];
        for round in 0..6000 {
            let before = counts;
            for (m, count) in members.iter_mut().zip(&mut counts) {
                if !m.held() {
                    m.count();
                    *count += 1;
                }
            }
            assert_ne!(before, counts, "round {round}: the whole group is held");
        }
        let shares: Vec<f64> = counts.iter().map(|&c| f64::from(c) / f64::from(counts[2])).collect();
        assert!((shares[0] - 3.0).abs() < 0.01 && (shares[1] - 2.0).abs() < 0.01, "{counts:?}");
    }

    #[test]
    fn a_member_that_leaves_releases_the_others_and_groups_are_separate() {
        let mut groups = FlowGroups::default();
        let (mut a, mut b) = (groups.share(1, 1).unwrap(), groups.share(1, 1).unwrap());
        let mut other = groups.share(2, 1).unwrap();
        a.join();
        b.join();
        other.join();
        a.count();
        a.count();
        assert!(a.held(), "2 of 3 counted I/Os against half the weight");
        b.count();
        b.leave();
        assert!(!a.held(), "alone in the group");
        assert!(!other.held(), "flow_id 2 is a group of its own");
        assert!(groups.share(1, 0).is_none(), "flow=0: no flow control");
    }

    /// fio 3.33 stores flow=-2 as 2^32-2 and sums weights in an unsigned int: with a
    /// member of weight 2 the total wraps to 0 and neither is ever held; when the other
    /// leaves, the total is the weight again.
    #[test]
    fn weights_add_up_modulo_2_to_the_32_as_in_fio() {
        let mut groups = FlowGroups::default();
        let (mut a, mut b) = (groups.share(0, 2).unwrap(), groups.share(0, -2i32 as u32).unwrap());
        a.join();
        b.join();
        for _ in 0..100 {
            assert!(!a.held() && !b.held());
            a.count();
        }
        a.leave();
        assert!(!b.held());
        let mut c = groups.share(0, 1).unwrap();
        c.join();
        c.count();
        c.count();
        assert!(c.held(), "weight 1 of 2^32-1 and 2 of 3 counted I/Os");
    }
}
