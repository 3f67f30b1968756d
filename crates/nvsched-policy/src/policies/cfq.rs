//! `cfq`: completely fair queueing, the time-slice scheduler Linux used before blk-mq,
//! as the Veloces and MTS-CFQ papers compare against. One queue per tenant (cgroup) when
//! the request has one, else per process, split into sync and async; the active queue
//! owns the device for a time slice proportional to its weight (up to `quantum` requests
//! in flight), queues take turns round-robin, and real-time queues go first.

use crate::params::{ParamKind, ParamSpec, Params};
use crate::registry::{CgroupModel, PolicyInfo};
use crate::scheduler::{Completion, DeviceView, HostCost, Inserted, PolicyReport, Scheduler};
use crate::{Nanos, PrioClass, Request};
use nvsched_core::TenantTree;
use std::collections::{HashMap, VecDeque};

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "slice_sync",
        kind: ParamKind::Duration { min: Nanos(1_000), max: Nanos::from_secs(10) },
        default: "100ms",
        help: "time slice of a process's sync queue at ioprio level 4",
    },
    ParamSpec {
        name: "slice_async",
        kind: ParamKind::Duration { min: Nanos(1_000), max: Nanos::from_secs(10) },
        default: "40ms",
        help: "time slice of a process's async queue",
    },
    ParamSpec {
        name: "quantum",
        kind: ParamKind::Int { min: 1, max: 4096 },
        default: "8",
        help: "most requests of the active queue in flight",
    },
    ParamSpec {
        name: "group_idle",
        kind: ParamKind::Duration { min: Nanos::ZERO, max: Nanos::from_secs(1) },
        default: "8ms",
        help: "a tenant queue that runs empty keeps its slice this long waiting for its next request",
    },
    ParamSpec {
        name: "group_latency",
        kind: ParamKind::Duration { min: Nanos(1_000), max: Nanos::from_secs(10) },
        default: "300ms",
        help: "one round over the busy tenants (CFQ's target_latency): a tenant's slice is its share of it, by weight at each level of the cgroup tree",
    },
];

pub static INFO: PolicyInfo = PolicyInfo {
    id: "cfq",
    summary: "time slices per tenant/process queue, proportional to weight; RT queues first",
    source: "Linux block/cfq-iosched.c (removed in 5.0), as described in the MTS-CFQ and Veloces papers",
    notes: "slice_idle is 0 (flash), so an empty process queue expires at once; a tenant \
            (cgroup) queue keeps its slice while its requests are in flight and group_idle \
            after the last one, as CFQ's group idling does. Tenant queues \
            get slice = group_latency * the tenant's share, as cfq_group_slice does with \
            the group's vfraction: at each level of the cgroup tree, its weight over the \
            weights of the busy groups there (a cgroup's own jobs count at its level with \
            its weight, as CFQ's leaf_weight); process queues slice = base * (1 + (4 - \
            level) / 5). Each tenant's requests share one queue per direction class \
            (sync/async).",
    params: PARAMS,
    host_cost: HostCost { dispatch: Nanos(900), complete: Nanos(400) },
    example: "cfq",
    validate: None,
    check_cgroups: None,
    cgroups: CgroupModel::Nested,
    build: |p: &Params| Box::new(Cfq::from_params(p)),
};

#[derive(Debug)]
struct CfqQueue {
    tenant: u32,
    weight: u32,
    sync: bool,
    rt: bool,
    level: u8,
    fifo: VecDeque<Request>,
    inflight: u32,
}

/// The CFQ core, also used by `mts`.
#[derive(Debug)]
pub struct Cfq {
    slice_sync: Nanos,
    slice_async: Nanos,
    quantum: u32,
    queues: Vec<CfqQueue>,
    index: HashMap<(bool, u32, bool), usize>,
    /// Round-robin order over all queues ever seen.
    order: VecDeque<usize>,
    active: Option<usize>,
    /// The real-time and the other queue served last: each class takes turns from there,
    /// so a real-time queue's turn does not move the others' round on.
    last_rt: Option<usize>,
    last_other: Option<usize>,
    /// A queue a real-time queue preempted, and what was left of its slice: it resumes
    /// with that once no real-time queue has requests, as CFQ keeps a preempted queue's
    /// residual slice and places it by what it has left.
    preempted: Option<(usize, Nanos)>,
    slice_end: Nanos,
    /// Slice multiplier per tenant (MTS-CFQ adjusts these).
    scale: HashMap<u32, f64>,
    /// Bytes completed per tenant since the last `take_tenant_bytes`.
    tenant_bytes: HashMap<u32, (u32, u64)>,
    queued: usize,
    slices: u64,
    group_idle: Nanos,
    group_latency: Nanos,
    /// When the active tenant queue ran empty with nothing in flight.
    idle_since: Option<Nanos>,
    /// The cgroups as they nest (`set_tenants`); without it every tenant is a cgroup
    /// right below the root, as `mts` keeps them.
    tree: TenantTree,
}

impl Cfq {
    pub fn from_params(p: &Params) -> Cfq {
        Cfq {
            slice_sync: p.duration("slice_sync"),
            slice_async: p.duration("slice_async"),
            quantum: p.uint("quantum") as u32,
            queues: Vec::new(),
            index: HashMap::new(),
            order: VecDeque::new(),
            active: None,
            last_rt: None,
            last_other: None,
            preempted: None,
            slice_end: Nanos::ZERO,
            scale: HashMap::new(),
            tenant_bytes: HashMap::new(),
            queued: 0,
            slices: 0,
            group_idle: p.duration("group_idle"),
            group_latency: p.duration("group_latency"),
            idle_since: None,
            tree: TenantTree::default(),
        }
    }

    fn queue_for(&mut self, rq: &Request) -> usize {
        let prio = rq.effective_prio();
        let by_tenant = rq.tenant != 0;
        let key = (by_tenant, if by_tenant { rq.tenant } else { rq.job }, rq.sync);
        if let Some(&q) = self.index.get(&key) {
            return q;
        }
        self.queues.push(CfqQueue {
            tenant: rq.tenant,
            weight: rq.tenant_weight,
            sync: rq.sync,
            rt: prio.class == PrioClass::RealTime,
            level: prio.level,
            fifo: VecDeque::new(),
            inflight: 0,
        });
        let q = self.queues.len() - 1;
        self.index.insert(key, q);
        self.order.push_back(q);
        q
    }

    /// Sets the slice multiplier of a tenant (MTS-CFQ's correction).
    pub fn set_tenant_scale(&mut self, tenant: u32, scale: f64) {
        self.scale.insert(tenant, scale);
    }

    pub fn tenant_scale(&self, tenant: u32) -> f64 {
        self.scale.get(&tenant).copied().unwrap_or(1.0)
    }

    /// (tenant, weight, bytes completed) since the last call.
    pub fn take_tenant_bytes(&mut self) -> Vec<(u32, u32, u64)> {
        let mut v: Vec<(u32, u32, u64)> =
            self.tenant_bytes.iter_mut().map(|(&t, (w, b))| (t, *w, std::mem::take(b))).collect();
        v.sort_unstable();
        v
    }

    fn slice_of(&self, q: usize) -> Nanos {
        let queue = &self.queues[q];
        let base = if queue.sync { self.slice_sync } else { self.slice_async };
        let ns = if queue.tenant != 0 {
            self.group_latency.0 as f64 * self.tenant_share(q) * self.tenant_scale(queue.tenant)
        } else {
            base.0 as f64 * (1.0 + (4.0 - f64::from(queue.level)) / 5.0)
        };
        Nanos(ns.max(1_000.0).round() as u64)
    }

    /// The share of the device that the tenant of queue `q` gets among the busy tenants
    /// (those with requests queued or in flight, and `q`'s own, busy or not), as CFQ's
    /// vfraction: at each level from the root down, its group's weight over the weights of
    /// the busy groups at that level, where a cgroup's own jobs count as one more group
    /// of the cgroup's weight (CFQ's leaf_weight) beside its busy children.
    fn tenant_share(&self, q: usize) -> f64 {
        let own = self.queues[q].tenant;
        // each busy tenant and its weight, the parent from the tree (a tenant it does not
        // know sits below the root with its requests' weight)
        let mut busy: Vec<(u32, u32)> = self
            .queues
            .iter()
            .filter(|o| o.tenant != 0 && (o.tenant == own || !o.fifo.is_empty() || o.inflight > 0))
            .map(|o| (o.tenant, o.weight))
            .collect();
        busy.sort_unstable();
        busy.dedup_by_key(|(t, _)| *t);
        let place = |tenant: u32, weight: u32| -> (u32, u32) {
            let (up, weight) = self.tree.place(tenant, weight);
            (up.map_or(0, |(parent, _)| parent), weight.max(1))
        };
        // every cgroup with a busy tenant at or below it: (cgroup, parent, weight)
        let mut groups: Vec<(u32, u32, u32)> = Vec::new();
        for &(tenant, weight) in &busy {
            let (mut at, mut given) = (tenant, weight);
            while at != 0 && !groups.iter().any(|g| g.0 == at) {
                let (parent, weight) = place(at, given);
                groups.push((at, parent, weight));
                // an ancestor is in the tree, which gives its weight
                (at, given) = (parent, 1);
            }
        }
        let is_busy = |tenant: u32| busy.iter().any(|b| b.0 == tenant);
        let weight_of = |g: u32| groups.iter().find(|x| x.0 == g).map_or(1, |x| x.2);
        // the weights at the level below cgroup `p` (0: the root)
        let level_sum = |p: u32| -> f64 {
            let children: u32 = groups.iter().filter(|g| g.1 == p).map(|g| g.2).sum();
            let leaf = if p != 0 && is_busy(p) { weight_of(p) } else { 0 };
            f64::from((children + leaf).max(1))
        };
        let mut share = 1.0;
        let mut at = own;
        while at != 0 {
            let (_, parent, weight) = *groups.iter().find(|g| g.0 == at).expect("on a busy path");
            share *= f64::from(weight) / level_sum(parent);
            at = parent;
        }
        // the tenant's own jobs beside its busy children
        if groups.iter().any(|g| g.1 == own) {
            share *= f64::from(weight_of(own)) / level_sum(own);
        }
        share
    }

    /// Next queue to serve: real-time queues first, round-robin within each class; a
    /// queue a real-time one preempted resumes what was left of its slice.
    fn select(&mut self, now: Nanos) -> Option<usize> {
        let n = self.order.len();
        let start =
            |last: Option<usize>| last.and_then(|a| self.order.iter().position(|&q| q == a)).map_or(0, |p| p + 1);
        let (rt_start, other_start) = (start(self.last_rt), start(self.last_other));
        let waiting = |q: usize| !self.queues[q].fifo.is_empty();
        let rt = (0..n).map(|i| self.order[(rt_start + i) % n]).find(|&q| self.queues[q].rt && waiting(q));
        let (pick, slice) = if let Some(q) = rt {
            self.last_rt = Some(q);
            (q, self.slice_of(q))
        } else if let Some((q, left)) = self.preempted.take().filter(|&(q, _)| waiting(q)) {
            (q, left)
        } else {
            let q = (0..n).map(|i| self.order[(other_start + i) % n]).find(|&q| waiting(q))?;
            self.last_other = Some(q);
            (q, self.slice_of(q))
        };
        self.active = Some(pick);
        self.slice_end = now + slice;
        self.slices += 1;
        Some(pick)
    }

    fn others_waiting(&self, active: usize) -> bool {
        self.queues.iter().enumerate().any(|(i, q)| i != active && !q.fifo.is_empty())
    }
}

impl Scheduler for Cfq {
    fn id(&self) -> &'static str {
        "cfq"
    }

    fn insert(&mut self, rq: Request, _now: Nanos) -> Inserted {
        let q = self.queue_for(&rq);
        self.queues[q].fifo.push_back(rq);
        self.queued += 1;
        Inserted::Queued
    }

    fn dispatch(&mut self, now: Nanos, _device: DeviceView) -> Option<Request> {
        if self.queued == 0 {
            return None;
        }
        let expired = match self.active {
            None => true,
            Some(a) => {
                let q = &self.queues[a];
                // an RT queue preempts a best-effort slice
                let rt_waiting = !q.rt && self.queues.iter().any(|o| o.rt && !o.fifo.is_empty());
                let slice_over = now >= self.slice_end;
                let ran_empty = q.fifo.is_empty() && {
                    if q.tenant == 0 {
                        true
                    } else if q.inflight > 0 {
                        self.idle_since = None;
                        slice_over
                    } else {
                        let since = *self.idle_since.get_or_insert(now);
                        now >= since + self.group_idle || slice_over
                    }
                };
                if !q.fifo.is_empty() {
                    self.idle_since = None;
                }
                let expired = ran_empty || (slice_over && self.others_waiting(a));
                if rt_waiting && !expired {
                    self.preempted = Some((a, self.slice_end.saturating_sub(now)));
                }
                expired || rt_waiting
            }
        };
        if expired {
            self.idle_since = None;
        }
        let a = if expired { self.select(now)? } else { self.active.expect("active queue") };
        let q = &mut self.queues[a];
        if q.inflight >= self.quantum {
            return None;
        }
        let rq = q.fifo.pop_front()?;
        q.inflight += 1;
        self.queued -= 1;
        Some(rq)
    }

    fn complete(&mut self, done: &Completion<'_>) {
        if !done.dispatched_by_policy {
            return;
        }
        let by_tenant = done.rq.tenant != 0;
        let key = (by_tenant, if by_tenant { done.rq.tenant } else { done.rq.job }, done.rq.sync);
        if let Some(&q) = self.index.get(&key) {
            self.queues[q].inflight = self.queues[q].inflight.saturating_sub(1);
        }
        if done.rq.op.is_data() {
            let e = self.tenant_bytes.entry(done.rq.tenant).or_insert((done.rq.tenant_weight, 0));
            e.1 += u64::from(done.rq.len_bytes);
        }
    }

    fn requeue(&mut self, rq: Request, _now: Nanos) {
        let q = self.queue_for(&rq);
        self.queues[q].inflight = self.queues[q].inflight.saturating_sub(1);
        self.queues[q].fifo.push_front(rq);
        self.queued += 1;
    }

    fn set_tenants(&mut self, tree: &TenantTree) {
        self.tree = tree.clone();
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        // the slice ends (or group idling runs out) while others wait: switch even if no
        // completion comes
        let a = self.active?;
        if !self.others_waiting(a) {
            return None;
        }
        Some(match self.idle_since {
            Some(since) => self.slice_end.min(since + self.group_idle),
            None => self.slice_end,
        })
    }

    fn queued(&self) -> usize {
        self.queued
    }

    fn report(&self) -> PolicyReport {
        PolicyReport::default().counter("queues", self.queues.len() as f64).counter("slices", self.slices as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policies::testkit::Harness;
    use crate::IoPrio;

    fn cfq(params: &str) -> Cfq {
        Cfq::from_params(&Params::parse("cfq", PARAMS, params).unwrap())
    }

    #[test]
    fn active_queue_owns_the_device_for_its_slice() {
        let mut h = Harness::new(Box::new(cfq("quantum=4,group_latency=30ms")), 64);
        for i in 0..10 {
            h.insert(Request::read(i, 0).with_tenant(1, 200));
            h.insert(Request::read(100 + i, 0).with_tenant(2, 100));
        }
        let first: Vec<u64> = h.dispatch_all().iter().map(|r| r.id.0).collect();
        assert_eq!(first, vec![0, 1, 2, 3], "quantum 4 of tenant 1 only");
        while h.complete_oldest().is_some() {}
        h.advance(Nanos::from_ms(21));
        let next = h.dispatch_one().unwrap();
        assert!(next.id.0 >= 100, "after tenant 1's 20 ms slice, tenant 2");
    }

    #[test]
    fn rt_queue_preempts() {
        let mut h = Harness::new(Box::new(cfq("")), 64);
        h.insert(Request::read(1, 0).with_job(1));
        h.insert(Request::read(2, 0).with_job(1));
        assert_eq!(h.dispatch_one().unwrap().id.0, 1);
        h.insert(Request::read(3, 0).with_job(2).with_prio(IoPrio::rt(0)));
        assert_eq!(h.dispatch_one().unwrap().id.0, 3);
    }

    /// A real-time request every 2 ms preempts the best-effort slice each time; the
    /// preempted queue resumes what it had left, and the others still get their turns
    /// (a preempted queue used to restart a full slice and keep the device for good).
    #[test]
    fn preempted_queues_keep_their_residual_slice_and_others_get_turns() {
        let mut h = Harness::new(Box::new(cfq("slice_sync=20ms")), 64);
        let mut next_id = 0u64;
        let (mut served, mut queued) = ([0u32; 3], [0u32; 3]);
        for step in 0..1000u64 {
            // each best-effort job keeps 32 requests queued (more than the quantum, so its
            // queue never runs empty); 100 us per step
            for job in 1..=3u32 {
                while queued[job as usize - 1] < 32 {
                    next_id += 1;
                    h.insert(Request::read(next_id, 0).with_job(job));
                    queued[job as usize - 1] += 1;
                }
            }
            if step % 20 == 0 {
                next_id += 1;
                h.insert(Request::read(next_id, 0).with_job(9).with_prio(IoPrio::rt(0)));
            }
            for rq in h.dispatch_all() {
                if (1..=3).contains(&rq.job) {
                    queued[rq.job as usize - 1] -= 1;
                }
            }
            while let Some(done) = h.complete_oldest() {
                if (1..=3).contains(&done.job) {
                    served[done.job as usize - 1] += 1;
                }
            }
            h.advance(Nanos::from_us(100));
        }
        // 100 ms of 20 ms slices: every queue had turns, none more than twice another's
        let (min, max) = (*served.iter().min().unwrap(), *served.iter().max().unwrap());
        assert!(min > 0 && max <= 2 * min, "best-effort service {served:?}");
    }

    #[test]
    fn nested_cgroups_share_within_their_parents_share() {
        // db (200) beside web (100), which holds app (400) and logs (100)
        let mut tree = TenantTree::default();
        let db = tree.add("db", Some(200));
        let app = tree.add("web/app", Some(400));
        let logs = tree.add("web/logs", Some(100));
        let web = tree.add("web", None);
        let mut c = cfq("group_latency=300ms");
        c.set_tenants(&tree);
        let weight = |t: u32| tree.node(t).unwrap().weight;
        let queue = |c: &mut Cfq, id: u64, t: u32| {
            c.insert(Request::read(id, 0).with_tenant(t, weight(t)), Nanos::ZERO);
            c.queue_for(&Request::read(id, 0).with_tenant(t, weight(t)))
        };
        let (qdb, qapp, qlogs) = (queue(&mut c, 1, db), queue(&mut c, 2, app), queue(&mut c, 3, logs));
        // db 2/3; web 1/3, split 4:1 inside it
        assert_eq!(c.slice_of(qdb), Nanos::from_ms(200));
        assert_eq!(c.slice_of(qapp), Nanos::from_ms(80));
        assert_eq!(c.slice_of(qlogs), Nanos::from_ms(20));
        // a job in web itself counts at web's level with web's weight, beside app and logs
        let ms = |ms: f64| Nanos((ms * 1e6).round() as u64);
        let qweb = queue(&mut c, 4, web);
        assert_eq!(c.slice_of(qweb), ms(100.0 * 100.0 / 600.0));
        assert_eq!(c.slice_of(qapp), ms(100.0 * 400.0 / 600.0));
        assert_eq!(c.slice_of(qdb), Nanos::from_ms(200), "web's share does not change above it");
        // without the tree, every tenant is a cgroup below the root (as mts keeps them)
        let mut flat = cfq("group_latency=300ms");
        let (fdb, fapp, flogs) = (queue(&mut flat, 1, db), queue(&mut flat, 2, app), queue(&mut flat, 3, logs));
        assert_eq!(
            [flat.slice_of(fdb), flat.slice_of(fapp), flat.slice_of(flogs)],
            [ms(300.0 * 200.0 / 700.0), ms(300.0 * 400.0 / 700.0), ms(300.0 * 100.0 / 700.0)]
        );
    }

    #[test]
    fn a_tenant_slice_is_its_weight_share_of_one_round_over_busy_tenants() {
        let mut c = cfq("group_latency=300ms");
        let heavy = c.queue_for(&Request::read(0, 0).with_tenant(1, 200));
        let light = c.queue_for(&Request::read(1, 0).with_tenant(2, 100));
        c.insert(Request::read(2, 0).with_tenant(1, 200), Nanos::ZERO);
        c.insert(Request::read(3, 0).with_tenant(2, 100), Nanos::ZERO);
        assert_eq!(c.slice_of(heavy), Nanos::from_ms(200));
        assert_eq!(c.slice_of(light), Nanos::from_ms(100));
        // an idle tenant's weight does not shrink the busy ones' slices
        let idle = c.queue_for(&Request::read(4, 0).with_tenant(3, 300));
        assert_eq!(c.slice_of(heavy), Nanos::from_ms(200));
        assert_eq!(c.slice_of(idle), Nanos::from_ms(150), "weight 300 of 200 + 100 + 300");
    }

    #[test]
    fn slice_scale_lengthens_a_tenant_slice() {
        let mut c = cfq("");
        let a = c.queue_for(&Request::read(0, 0).with_tenant(1, 100));
        assert_eq!(c.slice_of(a), Nanos::from_ms(300), "alone: the whole round");
        c.set_tenant_scale(1, 1.5);
        assert_eq!(c.slice_of(a), Nanos::from_ms(450));
    }
}
