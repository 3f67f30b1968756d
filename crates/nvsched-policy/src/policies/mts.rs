//! `mts`: MTS-CFQ from "SSD Bandwidth Distributing I/O Scheduler Considering Garbage
//! Collection". CFQ's time slices give time, not bandwidth: on an aged SSD, garbage
//! collection makes one tenant's slice worth less than another's. Every second a manager
//! measures each tenant's bandwidth over the last `bw_window` seconds and scales the
//! slices of all tenants but the lowest-weight one (the TVM, whose slice never changes)
//! so that measured proportions approach the weights.

use crate::params::{ParamKind, ParamSpec, Params};
use crate::policies::cfq::{self, Cfq};
use crate::registry::{cgroup_list, CgroupModel, PolicyInfo};
use crate::scheduler::{Completion, DeviceView, HostCost, Inserted, PolicyReport, Scheduler, TimeSeries};
use crate::{Nanos, Request, TenantTree};
use std::collections::{BTreeMap, VecDeque};

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "bw_window",
        kind: ParamKind::Int { min: 1, max: 600 },
        default: "10",
        help: "seconds of bandwidth history the correction uses (the paper found 10 better than 5 or 20)",
    },
    ParamSpec {
        name: "dead_band",
        kind: ParamKind::Float { min: 0.0, max: 0.5 },
        default: "0.03",
        help: "no correction while a tenant's measured proportion is within this of its ideal",
    },
    ParamSpec {
        name: "max_step",
        kind: ParamKind::Float { min: 0.01, max: 1.0 },
        default: "0.2",
        help: "largest relative change of a slice scale per second (smoothing)",
    },
    // CFQ's own parameters: MTS runs CFQ underneath
    cfq::PARAMS[0],
    cfq::PARAMS[1],
    cfq::PARAMS[2],
    cfq::PARAMS[3],
    cfq::PARAMS[4],
];

pub static INFO: PolicyInfo = PolicyInfo {
    id: "mts",
    summary: "MTS-CFQ: CFQ slices rescaled every second so tenant bandwidth follows weight, GC or not",
    source: "\"SSD Bandwidth Distributing I/O Scheduler Considering Garbage Collection\" (MTS-CFQ)",
    notes: "Control law: every second, for each tenant i other than the lowest-weight TVM, \
            F_i = (w_i / w_TVM) / (BW_i / BW_TVM) over the window; outside a dead band of \
            +-dead_band the slice scale is multiplied by sqrt(F), limited to +-max_step per \
            second and clamped to [0.1, 10]. The paper says the slice is scaled by the \
            average F, smoothed so it never jumps; the multiplicative form keeps the \
            correction once proportions are met, the square root and dead band keep the \
            window's lag and noise from making it oscillate.",
    params: PARAMS,
    host_cost: HostCost { dispatch: Nanos(950), complete: Nanos(450) },
    example: "mts",
    validate: None,
    check_cgroups: Some(|_: &Params, tree: &TenantTree| {
        (tree.cgroups().count() < 2).then(|| {
            format!(
                "policy 'mts': the jobs are in {}; it rescales slices between two or more tenants, so here it runs as cfq",
                cgroup_list(tree)
            )
        })
    }),
    cgroups: CgroupModel::Flat,
    build: |p: &Params| Box::new(Mts::from_params(p)),
};

const PERIOD: Nanos = Nanos::from_secs(1);

#[derive(Debug)]
pub struct Mts {
    cfq: Cfq,
    window: usize,
    dead_band: f64,
    max_step: f64,
    next_tick: Nanos,
    started: bool,
    /// Per tenant: (weight, bytes per second, newest last).
    history: BTreeMap<u32, (u32, VecDeque<u64>)>,
    scale_series: BTreeMap<u32, TimeSeries>,
    ticks: u64,
}

impl Mts {
    pub fn from_params(p: &Params) -> Mts {
        Mts {
            // CFQ's parameters are part of MTS's own list
            cfq: Cfq::from_params(p),
            window: p.uint("bw_window") as usize,
            dead_band: p.float("dead_band"),
            max_step: p.float("max_step"),
            next_tick: Nanos::ZERO,
            started: false,
            history: BTreeMap::new(),
            scale_series: BTreeMap::new(),
            ticks: 0,
        }
    }

    fn tick(&mut self, now: Nanos) {
        self.ticks += 1;
        for (tenant, weight, bytes) in self.cfq.take_tenant_bytes() {
            if tenant == 0 {
                continue;
            }
            let e = self.history.entry(tenant).or_insert((weight, VecDeque::new()));
            e.1.push_back(bytes);
            while e.1.len() > self.window {
                e.1.pop_front();
            }
        }
        // proportions are only meaningful over whole slice rounds: wait for a full window
        if self.history.values().any(|(_, h)| h.len() < self.window) {
            return;
        }
        let bw = |h: &VecDeque<u64>| h.iter().sum::<u64>() as f64;
        // the TVM: smallest weight among tenants that moved data in the window
        let Some((&tvm, &(w_tvm, ref h_tvm))) =
            self.history.iter().filter(|(_, (_, h))| bw(h) > 0.0).min_by_key(|(t, (w, _))| (*w, **t))
        else {
            return;
        };
        let bw_tvm = bw(h_tvm);
        let updates: Vec<(u32, f64)> = self
            .history
            .iter()
            .filter(|(t, (_, h))| **t != tvm && bw(h) > 0.0)
            .map(|(&t, (w, h))| {
                let ideal = f64::from(*w) / f64::from(w_tvm);
                let measured = bw(h) / bw_tvm;
                (t, ideal / measured)
            })
            .collect();
        for (t, f) in updates {
            if (f - 1.0).abs() <= self.dead_band {
                continue;
            }
            // half the correction per second: the window still holds older measurements
            let step = f.sqrt().clamp(1.0 - self.max_step, 1.0 + self.max_step);
            let scale = (self.cfq.tenant_scale(t) * step).clamp(0.1, 10.0);
            self.cfq.set_tenant_scale(t, scale);
            self.scale_series
                .entry(t)
                .or_insert_with(|| TimeSeries::new(format!("slice_scale_tenant_{t}"), "x"))
                .push(now, scale);
        }
    }
}

impl Scheduler for Mts {
    fn id(&self) -> &'static str {
        "mts"
    }

    fn insert(&mut self, rq: Request, now: Nanos) -> Inserted {
        if !self.started {
            self.started = true;
            self.next_tick = now + PERIOD;
        }
        self.cfq.insert(rq, now)
    }

    fn dispatch(&mut self, now: Nanos, device: DeviceView) -> Option<Request> {
        while self.started && now >= self.next_tick {
            let at = self.next_tick;
            self.tick(at);
            self.next_tick += PERIOD;
        }
        self.cfq.dispatch(now, device)
    }

    fn complete(&mut self, done: &Completion<'_>) {
        self.cfq.complete(done);
    }

    fn requeue(&mut self, rq: Request, now: Nanos) {
        self.cfq.requeue(rq, now);
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        let tick = (self.started && self.cfq.queued() > 0).then_some(self.next_tick);
        match (self.cfq.next_wakeup(), tick) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn queued(&self) -> usize {
        self.cfq.queued()
    }

    fn report(&self) -> PolicyReport {
        let mut r = self.cfq.report().counter("manager_ticks", self.ticks as f64);
        for (t, s) in &self.scale_series {
            r = r.counter(format!("slice_scale_tenant_{t}"), self.cfq.tenant_scale(*t)).with_series(s.clone());
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn underserved_tenant_gets_a_longer_slice_and_the_tvm_never_changes() {
        let mut m = Mts::from_params(&Params::parse("mts", PARAMS, "bw_window=1").unwrap());
        let view = DeviceView { inflight: 0, queue_depth: 64 };
        m.insert(Request::read(0, 0).with_tenant(1, 400), Nanos::ZERO);
        // tenant 1 (weight 400) moved only 2x the TVM's (weight 100) bytes: under-served
        for (tenant, weight, n) in [(1u32, 400u32, 200u64), (2, 100, 100)] {
            for i in 0..n {
                let rq = Request::read(i, 0).with_tenant(tenant, weight);
                m.complete(&Completion {
                    rq: &rq,
                    dispatched_at: Nanos::ZERO,
                    now: Nanos(1),
                    dispatched_by_policy: true,
                });
            }
        }
        m.dispatch(Nanos::from_secs(1), view);
        assert!(
            (m.cfq.tenant_scale(1) - 2f64.sqrt().min(1.2)).abs() < 1e-9,
            "F = 2, sqrt, limited to +20%: {}",
            m.cfq.tenant_scale(1)
        );
        assert_eq!(m.cfq.tenant_scale(2), 1.0, "the TVM keeps its slice");
        m.insert(Request::read(9, 0).with_tenant(2, 100), Nanos::from_secs(1));
        m.insert(Request::read(10, 0).with_tenant(1, 400), Nanos::from_secs(1));
        assert!(m.next_wakeup().is_some(), "ticks while work is queued");
    }
}
