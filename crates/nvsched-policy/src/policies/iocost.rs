//! `iocost`: Linux's cgroup v2 `io.cost` controller (`block/blk-iocost.c`, Tejun Heo and
//! Andy Newell, 2019; the IOCost paper, ASPLOS'22) over a FIFO (`none`): each cgroup gets
//! a share of the device's time in proportion to its `io.weight`, where a request's time
//! is estimated by a linear cost model, and shares a cgroup leaves unused are donated to
//! the others.
//!
//! Groups are the job file's cgroups (`cgroup=`, weight `cgroup_weight=`, default 100),
//! nested as their paths say: `cgroup=web/app` is `app` within `web`, and shares `web`'s
//! share with `web`'s other children (the engine hands the tree over in `set_tenants`).
//! Hierarchical weights are products of each level's share among the active siblings; as
//! in the kernel, only a cgroup with nothing active above or below it issues as itself
//! (a job in `web` while `web/app` is active issues as the root). Requests outside any
//! cgroup belong to the root, which io.cost never throttles. Without cgroups, `iocost` is
//! `none`.
//!
//! Control, as in the kernel (vtime: 2^37 units per second of device time):
//! - **Cost.** A read or write costs a base (random when it starts more than 16 MiB from
//!   where the cgroup's last one ended, else sequential) plus a per-4-KiB-page cost, both
//!   from the model's `rbps`/`rseqiops`/`rrandiops` and `w...` (defaults: the kernel's
//!   built-in set for fast SSDs, see `autop`). Flushes and discards cost nothing and pass.
//! - **Budget.** The device vtime advances at `vrate` (100%: one second per second). A
//!   cgroup is charged cost / its hierarchical weight in use (hweight_inuse), and may issue
//!   while its own vtime stays behind the device's; otherwise its requests wait, in order,
//!   until the device vtime catches up. A cgroup that becomes active starts with half a
//!   period of budget.
//! - **Period** = 2 x max(rlat, wlat) (more for percentiles under 90), 1 ms..1 s. At each
//!   period's end: idle cgroups are deactivated and give their weight back; cgroups using
//!   less than their share donate the surplus (their inuse weight is lowered so that their
//!   hweight_inuse is usage / (1 - 50% + the budget left), the rest going to the others in
//!   proportion to what they had, at every level of the tree: `transfer_surpluses`' global
//!   donation rate and per-level weight sums); budget above half a period is thrown away
//!   (and made up for by a temporarily higher vrate).
//! - **vrate.** The device is busy when requests waited for a device slot more than 5% of
//!   the period, or when more than `100 - rpct`% of reads (writes) took longer than `rlat`
//!   (`wlat`) from admission, less their size cost. Busy periods lower vrate, periods with
//!   cgroups short of budget and the targets met with 25% to spare raise it: nothing for
//!   three periods in a row, then 1% per period for 16 periods, 2% for 16, 4% for 8, 8% for
//!   8, then 16%, within `min`..`max`. The QoS percentiles are 0 by default, as in the
//!   kernel: then only slot waits slow it down.
//! - **Snap-back.** A donor whose budget runs low takes its weight back, in steps of a
//!   quarter, when it issues; one that has to wait gets it all back at once.
//!
//! - **Parameter sets** (`autop`). The kernel starts every SSD on its default set
//!   (SSD_DFL: 8.5K random read IOPS, 25 ms latency targets) and moves to the fast set
//!   (SSD_FAST: 778K IOPS, 5 ms) once vrate has stayed at 500% or more for 10 s, back once it
//!   has stayed at 10% or less for 10 s, starting vrate again at 100% at each move; a
//!   model or QoS written by the user stops the moves. `autop=auto` does that; the default,
//!   `fast`, starts where the kernel settles on a fast NVMe drive; `dfl` stays on the
//!   default set.
//!
//! On NVMe the device queue rarely fills, so with the default QoS nothing slows vrate down:
//! cgroups short of budget push it up until nobody is throttled, and the weights stop
//! mattering. The kernel's answer, and nvsched's, is a cost model fitted to the device
//! (`rbps=...`) or latency QoS (`rpct=95,rlat=...`).
//!
//! Left out: debt and the induced delay (they charge I/O issued as root on a cgroup's
//! behalf, such as swap, which the simulator has none of), and merges' charging.

use crate::params::{ParamKind, ParamSpec, Params};
use crate::registry::{CgroupModel, PolicyInfo};
use crate::scheduler::{Completion, DeviceView, HostCost, Inserted, PolicyReport, Scheduler, TimeSeries};
use crate::{Nanos, Op, Request, RequestId};
use nvsched_core::TenantTree;
use std::collections::{HashMap, VecDeque};

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "autop",
        kind: ParamKind::Choice(&["fast", "dfl", "auto"]),
        default: "fast",
        help: "the kernel's built-in set that the model and rlat/wlat come from where not given: fast (SSD_FAST, \
               where the kernel settles on a fast NVMe drive), dfl (SSD_DFL, where it starts on any SSD), auto \
               (start at dfl; to fast after 10 s at vrate >= 500%, back after 10 s at <= 10%, resetting vrate \
               to 100%; as in the kernel, only while no model or QoS parameter is given)",
    },
    ParamSpec {
        name: "rbps",
        kind: ParamKind::Rate { min: 4096.0, max: 1e13 },
        default: "3102524156",
        help: "cost model: sequential read bandwidth (io.cost.model rbps=). The six model defaults shown are autop=fast's; autop=dfl and auto start from rbps 488636629, rseqiops 8932, rrandiops 8518, wbps 427891549, wseqiops 28755, wrandiops 21940",
    },
    ParamSpec {
        name: "rseqiops",
        kind: ParamKind::Int { min: 1, max: 100_000_000 },
        default: "724816",
        help: "cost model: sequential 4 KiB read IOPS",
    },
    ParamSpec {
        name: "rrandiops",
        kind: ParamKind::Int { min: 1, max: 100_000_000 },
        default: "778122",
        help: "cost model: random 4 KiB read IOPS",
    },
    ParamSpec {
        name: "wbps",
        kind: ParamKind::Rate { min: 4096.0, max: 1e13 },
        default: "1742780862",
        help: "cost model: sequential write bandwidth",
    },
    ParamSpec {
        name: "wseqiops",
        kind: ParamKind::Int { min: 1, max: 100_000_000 },
        default: "425702",
        help: "cost model: sequential 4 KiB write IOPS",
    },
    ParamSpec {
        name: "wrandiops",
        kind: ParamKind::Int { min: 1, max: 100_000_000 },
        default: "443193",
        help: "cost model: random 4 KiB write IOPS",
    },
    ParamSpec {
        name: "rpct",
        kind: ParamKind::Float { min: 0.0, max: 100.0 },
        default: "0",
        help: "QoS: the read latency percentile that must stay under rlat (io.cost.qos rpct=; 0: reads' latency is not watched)",
    },
    ParamSpec {
        name: "rlat",
        kind: ParamKind::Duration { min: Nanos::from_us(1), max: Nanos::from_secs(10) },
        default: "5ms",
        help: "QoS: read latency target, from admission to completion less the size cost (autop=dfl: 25ms)",
    },
    ParamSpec {
        name: "wpct",
        kind: ParamKind::Float { min: 0.0, max: 100.0 },
        default: "0",
        help: "QoS: the write latency percentile that must stay under wlat (0: not watched)",
    },
    ParamSpec {
        name: "wlat",
        kind: ParamKind::Duration { min: Nanos::from_us(1), max: Nanos::from_secs(10) },
        default: "5ms",
        help: "QoS: write latency target (autop=dfl: 25ms)",
    },
    ParamSpec {
        name: "min",
        kind: ParamKind::Float { min: 1.0, max: 10_000.0 },
        default: "1",
        help: "QoS: lowest vrate, in % of the cost model",
    },
    ParamSpec {
        name: "max",
        kind: ParamKind::Float { min: 1.0, max: 10_000.0 },
        default: "10000",
        help: "QoS: highest vrate, in % of the cost model",
    },
];

pub static INFO: PolicyInfo = PolicyInfo {
    id: "iocost",
    summary: "Linux io.cost: cgroups share device time by weight, costed by a linear model, with donation",
    source: "Linux block/blk-iocost.c (cgroup v2 io.cost, io.weight), over the none FIFO",
    notes: "Cgroups (cgroup=, cgroup_weight=) nested as their paths say (web/app within web); \
            the root is never throttled. Budget: vtime at vrate, cost / hweight_inuse per request. Each \
            period (2 x max(rlat, wlat), 1 ms..1 s) idle cgroups leave, under-users donate \
            (usage / (1 - 50% + budget left)), and vrate falls when slots are waited for \
            over 5% of the period or QoS misses exceed 100-rpct%, rises when cgroups are \
            short and targets are met. Defaults: the kernel's fast-SSD set (autop=fast); \
            autop=auto starts on its default SSD set and switches as the kernel does. No \
            debt or delay.",
    params: PARAMS,
    // an estimate: the kernel computes a cost and, rarely, walks the weights at each
    // submission, and counts each completion against its latency target
    host_cost: HostCost { dispatch: Nanos(200), complete: Nanos(100) },
    example: "iocost:rpct=95,rlat=1ms",
    validate: Some(|p: &Params| {
        if p.float("min") <= p.float("max") {
            Ok(())
        } else {
            Err("policy 'iocost': min (the lowest vrate) must not exceed max".into())
        }
    }),
    check_cgroups: Some(|_: &Params, tree: &TenantTree| {
        tree.cgroups().next().is_none().then(|| {
            "policy 'iocost': no job sets cgroup=, so every request is the root's, which io.cost never throttles"
                .to_string()
        })
    }),
    cgroups: CgroupModel::Nested,
    build: |p: &Params| Box::new(IoCost::from_params(p)),
};

const VTIME_PER_SEC: i64 = 1 << 37;
const VTIME_PER_USEC: i64 = VTIME_PER_SEC / 1_000_000;
const VTIME_PER_NSEC: i64 = VTIME_PER_SEC / 1_000_000_000;
const WEIGHT_ONE: i64 = 1 << 16;
const PAGE_BYTES: u64 = 4096;
/// Farther than this from the cgroup's last request: a random I/O.
const RANDIO_PAGES: u64 = 4096;
const MILLION: i64 = 1_000_000;
const MIN_PERIOD_US: i64 = 1_000;
const MAX_PERIOD_US: i64 = 1_000_000;
const MARGIN_MIN_PCT: i64 = 10;
const MARGIN_LOW_PCT: i64 = 20;
const MARGIN_TARGET_PCT: i64 = 50;
const INUSE_ADJ_STEP_PCT: i64 = 25;
const TIMER_SLACK_PCT: i64 = 1;
const VRATE_CLAMP_ADJ_PCT: i64 = 4;
const RQ_WAIT_BUSY_PCT: i64 = 5;
const UNBUSY_THR_PCT: i64 = 75;
const MAX_LAGGING_PERIODS: i64 = 10;
/// vrate steps by busy level: none for three periods, then 1%, 2%, 4%, 8%, 16%.
const VRATE_ADJ_PCT: [i64; 53] = [
    0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 4, 4,
    4, 4, 4, 4, 4, 4, 8, 8, 8, 8, 8, 8, 8, 8, 16,
];

fn div_round_up(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// Costs are kept below this (about six days of device time), so that absurd models
/// (a byte per second) or huge requests cannot overflow vtime arithmetic.
const MAX_COST: i64 = 1 << 56;

/// `a * b / c`, rounded up, in 128 bits, capped at [`MAX_COST`].
fn mul_div_round_up(a: i64, b: i64, c: i64) -> i64 {
    let (a, b, c) = (i128::from(a), i128::from(b), i128::from(c.max(1)));
    ((a * b + c - 1) / c).min(i128::from(MAX_COST)) as i64
}

/// Cost of `abs_cost` for a cgroup with hierarchical weight `hw_inuse`: the lower the
/// weight, the more vtime each request takes. Rounds up, as the kernel.
fn abs_cost_to_cost(abs_cost: i64, hw_inuse: i64) -> i64 {
    mul_div_round_up(abs_cost, WEIGHT_ONE, hw_inuse)
}

fn cost_to_abs_cost(cost: i64, hw_inuse: i64) -> i64 {
    mul_div_round_up(cost, hw_inuse, WEIGHT_ONE)
}

/// The kernel's built-in parameter sets for a queueing non-rotational device (`autop[]`):
/// both leave the QoS percentiles at 0 and vrate free from 1% to 10000%.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ParamSet {
    /// `AUTOP_SSD_DFL`, where the kernel starts on any SSD.
    SsdDfl,
    /// `AUTOP_SSD_FAST`, where it moves after 10 s at 5x the DFL model.
    SsdFast,
}

/// A set's cost model, in the order of [`MODEL_PARAMS`], and its rlat = wlat.
struct SetValues {
    model: [f64; 6],
    lat: Nanos,
}

/// The cost model's parameters: bytes/s, sequential IOPS, random IOPS; reads, writes.
const MODEL_PARAMS: [&str; 6] = ["rbps", "rseqiops", "rrandiops", "wbps", "wseqiops", "wrandiops"];
/// The parameters of `io.cost.qos`: giving any of them stops the automatic switch.
const QOS_PARAMS: [&str; 6] = ["rpct", "rlat", "wpct", "wlat", "min", "max"];
/// A set's vrate must stay past its switch threshold this long (`AUTOP_CYCLE_NSEC`).
const AUTOP_CYCLE: Nanos = Nanos::from_secs(10);
/// vrate, in %, at or above which the DFL set is too slow a model: switch to FAST.
const DFL_TOO_FAST_VRATE_PCT: i64 = 500;
/// vrate, in %, at or below which the FAST set is too fast a model: back to DFL.
const FAST_TOO_SLOW_VRATE_PCT: i64 = 10;

impl ParamSet {
    fn values(self) -> SetValues {
        match self {
            ParamSet::SsdDfl => SetValues {
                model: [488_636_629.0, 8_932.0, 8_518.0, 427_891_549.0, 28_755.0, 21_940.0],
                lat: Nanos::from_ms(25),
            },
            ParamSet::SsdFast => SetValues {
                model: [3_102_524_156.0, 724_816.0, 778_122.0, 1_742_780_862.0, 425_702.0, 443_193.0],
                lat: Nanos::from_ms(5),
            },
        }
    }
}

/// The linear model's coefficients for one direction, in vtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Coefs {
    page: i64,
    seqio: i64,
    randio: i64,
}

impl Coefs {
    /// `calc_lcoefs`: per page 1 s / (bps / 4 KiB); a base of 1 s / iops less a page.
    fn new(bytes_per_sec: f64, seqiops: u64, randiops: u64) -> Coefs {
        let bps_pages = (bytes_per_sec as u64).div_ceil(PAGE_BYTES).max(1) as i64;
        let page = div_round_up(VTIME_PER_SEC, bps_pages);
        let base = |iops: u64| (div_round_up(VTIME_PER_SEC, iops.max(1) as i64) - page).max(0);
        Coefs { page, seqio: base(seqiops), randio: base(randiops) }
    }
}

/// One cgroup (`ioc_gq`). Weights are in 1/65536 units, as the kernel's.
#[derive(Debug)]
struct Group {
    tenant: u32,
    /// The group above it; `None`: the root.
    parent: Option<usize>,
    weight: i64,
    /// Zero while inactive. A cgroup above an active one is active too.
    active: i64,
    /// `active` less what it donates; above an active cgroup, `active` in the ratio of
    /// its children's sums.
    inuse: i64,
    /// On the active list: it issues I/O (only a cgroup with no active one below it).
    listed: bool,
    /// Sums over the groups right below it.
    child_active_sum: i64,
    child_inuse_sum: i64,
    last_inuse: i64,
    saved_margin: i64,
    /// Where its last request ended, in 512-byte sectors; 0: none yet.
    cursor_sector: u64,
    vtime: i64,
    done_vtime: i64,
    active_period: u64,
    activated_at: Nanos,
    abs_vusage: i64,
    last_abs_vusage: i64,
    usage_delta_us: i64,
    /// Waiting requests and their absolute costs, in submission order.
    waiting: VecDeque<(Request, i64)>,
    wake_at: Option<Nanos>,
    hweight_inuse_series: TimeSeries,
    waits: u64,
}

/// A cgroup that donates this period.
#[derive(Clone, Copy, Debug)]
struct Donor {
    group: usize,
    hwa: i64,
    /// The hweight_inuse it keeps.
    after: i64,
}

/// A request admitted past the throttle.
#[derive(Clone, Copy, Debug)]
struct Admitted {
    group: Option<usize>,
    cost: i64,
    at: Nanos,
}

#[derive(Debug)]
pub struct IoCost {
    params: Params,
    set: ParamSet,
    /// `autop=auto` and no model or QoS parameter given: the set follows vrate.
    autop: bool,
    too_fast_at: Option<Nanos>,
    too_slow_at: Option<Nanos>,
    autop_switches: u64,
    coefs: [Coefs; 2],
    /// QoS: allowed miss fraction in ppm (read, write), latency targets.
    ppm_thr: [i64; 2],
    lat: [Nanos; 2],
    qos_enabled: bool,
    period_us: i64,
    timer_slack: Nanos,
    vrate_min: i64,
    vrate_max: i64,
    // device vtime
    running: bool,
    vtime_base_rate: i64,
    vtime_rate: i64,
    vtime_err: i64,
    period_at: Nanos,
    period_at_vtime: i64,
    cur_period: u64,
    busy_level: i64,
    // latency statistics of the current period
    nr_met: [u64; 2],
    nr_missed: [u64; 2],
    rq_wait_ns: u64,
    groups: Vec<Group>,
    /// The root's `child_active_sum` and `child_inuse_sum`.
    sum_active: i64,
    sum_inuse: i64,
    /// The cgroups the jobs are in, from the engine; a tenant it does not know is a
    /// cgroup right below the root with its requests' weight.
    tree: TenantTree,
    /// Below the throttle: admitted requests in order.
    fifo: VecDeque<Request>,
    admitted: HashMap<RequestId, Admitted>,
    vrate_series: TimeSeries,
    /// The latest time the policy saw: the series' values hold until then.
    last_seen: Nanos,
    // counters
    periods: u64,
    busy_periods: u64,
    donations: u64,
}

impl IoCost {
    pub fn from_params(p: &Params) -> IoCost {
        let set = if p.choice("autop") == "fast" { ParamSet::SsdFast } else { ParamSet::SsdDfl };
        let user_set = MODEL_PARAMS.iter().chain(&QOS_PARAMS).any(|name| p.is_given(name));
        let mut policy = IoCost {
            params: p.clone(),
            set,
            autop: p.choice("autop") == "auto" && !user_set,
            too_fast_at: None,
            too_slow_at: None,
            autop_switches: 0,
            coefs: [Coefs::new(1.0, 1, 1); 2],
            ppm_thr: [MILLION; 2],
            lat: [Nanos::ZERO; 2],
            qos_enabled: false,
            period_us: MIN_PERIOD_US,
            timer_slack: Nanos::ZERO,
            vrate_min: 0,
            vrate_max: 0,
            running: false,
            vtime_base_rate: VTIME_PER_USEC,
            vtime_rate: VTIME_PER_USEC,
            vtime_err: 0,
            period_at: Nanos::ZERO,
            period_at_vtime: 0,
            cur_period: 0,
            busy_level: 0,
            nr_met: [0; 2],
            nr_missed: [0; 2],
            rq_wait_ns: 0,
            groups: Vec::new(),
            sum_active: 0,
            sum_inuse: 0,
            tree: TenantTree::default(),
            fifo: VecDeque::new(),
            admitted: HashMap::new(),
            vrate_series: TimeSeries::new("vrate", "%"),
            last_seen: Nanos::ZERO,
            periods: 0,
            busy_periods: 0,
            donations: 0,
        };
        policy.apply_set(set);
        policy
    }

    /// `ioc_refresh_params`' second half: the model, QoS, period and vrate bounds from the
    /// parameters given, the rest from `set`.
    fn apply_set(&mut self, set: ParamSet) {
        let p = &self.params;
        let values = set.values();
        let model: [f64; 6] = std::array::from_fn(|k| {
            let name = MODEL_PARAMS[k];
            match (p.is_given(name), k % 3) {
                (false, _) => values.model[k],
                (true, 0) => p.float(name),
                (true, _) => p.uint(name) as f64,
            }
        });
        let read = Coefs::new(model[0], model[1] as u64, model[2] as u64);
        let write = Coefs::new(model[3], model[4] as u64, model[5] as u64);
        let ppm = |name: &str| (p.float(name) * 1e4).round() as i64;
        let (rppm, wppm) = (ppm("rpct"), ppm("wpct"));
        let lat_of = |name: &str| if p.is_given(name) { p.duration(name) } else { values.lat };
        let lat = [lat_of("rlat"), lat_of("wlat")];
        // `ioc_refresh_period_us`: a multiple of the larger latency target
        let (pick_ppm, pick_lat) = if lat[0] >= lat[1] { (rppm, lat[0]) } else { (wppm, lat[1]) };
        let multi = if pick_ppm > 0 { ((MILLION - pick_ppm) / 50_000).max(2) } else { 2 };
        let period_us = (multi * (pick_lat.0 / 1000) as i64).clamp(MIN_PERIOD_US, MAX_PERIOD_US);
        let vrate_bound = |pct: f64| div_round_up((pct * 1e4).round() as i64 * VTIME_PER_USEC, MILLION);
        self.set = set;
        self.coefs = [read, write];
        self.ppm_thr = [MILLION - rppm, MILLION - wppm];
        self.lat = lat;
        self.qos_enabled = rppm > 0 || wppm > 0;
        self.period_us = period_us;
        self.timer_slack = Nanos((period_us * 1000 * TIMER_SLACK_PCT / 100) as u64);
        self.vrate_min = vrate_bound(p.float("min"));
        self.vrate_max = vrate_bound(p.float("max"));
    }

    /// `ioc_autop_idx` and the switch in `ioc_refresh_params`, at a period's end: a set
    /// whose vrate has stayed past its threshold for 10 s gives way to the other, and
    /// vrate starts again from 100%.
    fn refresh_params(&mut self, now: Nanos) {
        if !self.autop {
            return;
        }
        let vrate_pct = self.vtime_base_rate * 100 / VTIME_PER_USEC;
        let past = |since: &mut Option<Nanos>, beyond: bool| -> bool {
            if !beyond {
                *since = None;
                return false;
            }
            now.saturating_sub(*since.get_or_insert(now)) >= AUTOP_CYCLE
        };
        let next = match self.set {
            ParamSet::SsdDfl => {
                past(&mut self.too_fast_at, vrate_pct >= DFL_TOO_FAST_VRATE_PCT).then_some(ParamSet::SsdFast)
            }
            ParamSet::SsdFast => {
                past(&mut self.too_slow_at, vrate_pct <= FAST_TOO_SLOW_VRATE_PCT).then_some(ParamSet::SsdDfl)
            }
        };
        if let Some(set) = next {
            self.vtime_base_rate = VTIME_PER_USEC;
            self.vtime_rate = VTIME_PER_USEC;
            self.too_fast_at = None;
            self.too_slow_at = None;
            self.autop_switches += 1;
            self.apply_set(set);
        }
    }

    /// A margin of `pct`% of a period's vtime at the base rate (the kernel's min 10%, low
    /// 20% and target 50%).
    fn margin(&self, pct: i64) -> i64 {
        self.period_us * pct / 100 * self.vtime_base_rate
    }

    /// The device vtime now.
    fn vnow(&self, now: Nanos) -> i64 {
        let since_ns = now.saturating_sub(self.period_at).0 as i128;
        self.period_at_vtime + (since_ns * self.vtime_rate as i128 / 1000) as i64
    }

    fn period_end(&self) -> Nanos {
        self.period_at + Nanos::from_us(self.period_us as u64)
    }

    fn group_index(&mut self, rq: &Request) -> usize {
        self.group_of(rq.tenant, rq.tenant_weight)
    }

    /// The group of `tenant`, made on first sight with the groups above it.
    fn group_of(&mut self, tenant: u32, weight: u32) -> usize {
        if let Some(i) = self.groups.iter().position(|g| g.tenant == tenant) {
            return i;
        }
        let (up, weight) = self.tree.place(tenant, weight);
        let parent = up.map(|(up, up_weight)| self.group_of(up, up_weight));
        self.groups.push(Group {
            tenant,
            parent,
            weight: i64::from(weight.clamp(1, 10_000)) * WEIGHT_ONE,
            active: 0,
            inuse: 0,
            listed: false,
            child_active_sum: 0,
            child_inuse_sum: 0,
            last_inuse: 0,
            saved_margin: 0,
            cursor_sector: 0,
            vtime: 0,
            done_vtime: 0,
            active_period: 0,
            activated_at: Nanos::ZERO,
            abs_vusage: 0,
            last_abs_vusage: 0,
            usage_delta_us: 0,
            waiting: VecDeque::new(),
            wake_at: None,
            hweight_inuse_series: TimeSeries::new(format!("hweight:tenant{tenant}"), "%"),
            waits: 0,
        });
        self.groups.len() - 1
    }

    /// The sums right below `parent` (`None`: the root): (active, inuse).
    fn child_sums(&self, parent: Option<usize>) -> (i64, i64) {
        match parent {
            Some(p) => (self.groups[p].child_active_sum, self.groups[p].child_inuse_sum),
            None => (self.sum_active, self.sum_inuse),
        }
    }

    /// Group `i` and the groups above it, from the top down.
    fn path(&self, i: usize) -> Vec<usize> {
        let mut path = vec![i];
        while let Some(p) = self.groups[*path.last().unwrap()].parent {
            path.push(p);
        }
        path.reverse();
        path
    }

    /// `current_hweight`: (hweight_active, hweight_inuse) of group `i`, the product of its
    /// and its ancestors' shares among their siblings.
    fn hweights(&self, i: usize) -> (i64, i64) {
        if self.groups[i].active == 0 {
            return (WEIGHT_ONE, WEIGHT_ONE);
        }
        let (hwa, hwi) = self.shares_down_to(i);
        (hwa.max(1), hwi.max(1))
    }

    /// The products of the shares from the top level down to group `j`'s, in the kernel's
    /// order (each level's division rounds down).
    fn shares_down_to(&self, j: usize) -> (i64, i64) {
        let g = &self.groups[j];
        let (hwa, hwi) = match g.parent {
            Some(p) => self.shares_down_to(p),
            None => (WEIGHT_ONE, WEIGHT_ONE),
        };
        let (active_sum, inuse_sum) = self.child_sums(g.parent);
        if active_sum == 0 || inuse_sum == 0 {
            return (hwa, hwi);
        }
        (hwa * g.active / active_sum.max(g.active), hwi * g.inuse / inuse_sum.max(g.inuse))
    }

    /// `current_hweight_max`: the hweight_inuse group `i` would get with inuse = active.
    fn hweight_max(&self, i: usize) -> i64 {
        let mut hwm = WEIGHT_ONE;
        let mut inuse = self.groups[i].active;
        let mut child = i;
        loop {
            let parent = self.groups[child].parent;
            let (active_sum, inuse_sum) = self.child_sums(parent);
            let inuse_sum = inuse_sum + inuse - self.groups[child].inuse;
            hwm = hwm * inuse / inuse_sum.max(1);
            let Some(p) = parent else { break };
            inuse = mul_div_round_up(self.groups[p].active, inuse_sum, active_sum.max(1));
            child = p;
        }
        hwm.max(1)
    }

    /// `propagate_weights`: sets group `i`'s weights and carries the change up: a group
    /// above an active one has its weight as `active` and its children's inuse-to-active
    /// ratio as `inuse`.
    fn propagate(&mut self, i: usize, active: i64, inuse: i64, save: bool, vnow: i64) {
        let g = &mut self.groups[i];
        let mut inuse = if !g.listed && g.child_active_sum > 0 {
            mul_div_round_up(active, g.child_inuse_sum, g.child_active_sum)
        } else if active == 0 {
            0
        } else {
            inuse.clamp(1, active)
        };
        g.last_inuse = g.inuse;
        if save {
            g.saved_margin = vnow - g.vtime;
        }
        let mut active = active;
        let mut child = i;
        while active != self.groups[child].active || inuse != self.groups[child].inuse {
            let (old_active, old_inuse) = (self.groups[child].active, self.groups[child].inuse);
            self.groups[child].active = active;
            self.groups[child].inuse = inuse;
            let Some(p) = self.groups[child].parent else {
                self.sum_active += active - old_active;
                self.sum_inuse += inuse - old_inuse;
                return;
            };
            let up = &mut self.groups[p];
            up.child_active_sum += active - old_active;
            up.child_inuse_sum += inuse - old_inuse;
            (active, inuse) = if up.child_active_sum > 0 {
                (up.weight, mul_div_round_up(up.weight, up.child_inuse_sum, up.child_active_sum))
            } else {
                (0, 0)
            };
            child = p;
        }
    }

    /// `iocg_activate`: false when the group may not issue as itself (a cgroup below it
    /// or above it is active), and its request goes as the root's.
    fn activate(&mut self, i: usize, now: Nanos) -> bool {
        self.groups[i].active_period = self.cur_period;
        if self.groups[i].listed {
            return true;
        }
        let path = self.path(i);
        if self.groups[i].child_active_sum > 0 || path[..path.len() - 1].iter().any(|&j| self.groups[j].listed) {
            return false;
        }
        let vnow = self.vnow(now);
        let vtarget = vnow - self.margin(MARGIN_TARGET_PCT);
        let g = &mut self.groups[i];
        let shift = vtarget - g.vtime;
        g.vtime += shift;
        g.done_vtime += shift;
        g.activated_at = now;
        g.listed = true;
        let (weight, inuse) = (g.weight, if g.last_inuse > 0 { g.last_inuse } else { g.weight });
        self.propagate(i, weight, inuse, true, vnow);
        if !self.running {
            self.running = true;
            self.start_period(now, vnow);
        }
        true
    }

    fn start_period(&mut self, now: Nanos, vnow: i64) {
        self.period_at = now;
        self.period_at_vtime = vnow;
    }

    fn abs_cost(&mut self, i: usize, rq: &Request) -> i64 {
        let dir = match rq.op {
            Op::Read => 0,
            Op::Write => 1,
            _ => return 0,
        };
        if rq.len_bytes == 0 {
            return 0;
        }
        let c = self.coefs[dir];
        let g = &mut self.groups[i];
        let sector = rq.offset_bytes / 512;
        let seek_pages = if g.cursor_sector > 0 { sector.abs_diff(g.cursor_sector) >> 3 } else { 0 };
        g.cursor_sector = rq.end_offset() / 512;
        let pages = (u64::from(rq.len_bytes) / PAGE_BYTES).max(1) as i64;
        let base = if seek_pages > RANDIO_PAGES { c.randio } else { c.seqio };
        base + mul_div_round_up(pages, c.page, 1)
    }

    /// The size part of a request's cost, in ns (subtracted from its latency).
    fn size_cost(&self, rq: &Request) -> Nanos {
        let dir = if rq.is_read() { 0 } else { 1 };
        let pages = (u64::from(rq.len_bytes) / PAGE_BYTES) as i64;
        Nanos((mul_div_round_up(pages, self.coefs[dir].page, 1) / VTIME_PER_NSEC) as u64)
    }

    /// `adjust_inuse_and_calc_cost`: a donor whose budget runs low takes weight back, a
    /// quarter of its active weight at a time, until the request fits.
    fn cost_with_snapback(&mut self, i: usize, abs_cost: i64, vnow: i64) -> i64 {
        let vtime = self.groups[i].vtime;
        let mut cost = abs_cost_to_cost(abs_cost, self.hweights(i).1);
        let margin = vnow - vtime - cost;
        let g = &self.groups[i];
        if margin >= g.saved_margin || margin >= self.margin(MARGIN_LOW_PCT) || g.inuse == g.active {
            return cost;
        }
        let (active, step) = (g.active, div_round_up(g.active * INUSE_ADJ_STEP_PCT, 100));
        let mut inuse = g.inuse;
        loop {
            inuse += step;
            self.propagate(i, active, inuse, true, vnow);
            cost = abs_cost_to_cost(abs_cost, self.hweights(i).1);
            if vtime + cost <= vnow || self.groups[i].inuse == active {
                return cost;
            }
        }
    }

    /// Admits a request no cgroup is charged for (the root's, flushes).
    fn pass(&mut self, rq: Request, now: Nanos) {
        self.admitted.insert(rq.id, Admitted { group: None, cost: 0, at: now });
        self.fifo.push_back(rq);
    }

    fn commit(&mut self, i: usize, rq: Request, abs_cost: i64, cost: i64, now: Nanos) {
        let g = &mut self.groups[i];
        g.vtime = g.vtime.saturating_add(cost);
        g.abs_vusage = g.abs_vusage.saturating_add(abs_cost);
        self.admitted.insert(rq.id, Admitted { group: Some(i), cost, at: now });
        self.fifo.push_back(rq);
    }

    /// `iocg_kick_waitq`: admits waiting requests while the budget lasts, and sets the
    /// group's timer for when the next one will fit.
    fn kick_waitq(&mut self, i: usize, now: Nanos) {
        let vnow = self.vnow(now);
        let hwi = self.hweights(i).1;
        let mut vbudget = vnow - self.groups[i].vtime;
        while let Some(&(rq, abs_cost)) = self.groups[i].waiting.front() {
            let cost = abs_cost_to_cost(abs_cost, hwi);
            vbudget -= cost;
            if vbudget < 0 {
                break;
            }
            self.groups[i].waiting.pop_front();
            self.commit(i, rq, abs_cost, cost, now);
        }
        let g = &mut self.groups[i];
        g.wake_at = if g.waiting.is_empty() {
            None
        } else {
            let wait_us = div_round_up(-vbudget, self.vtime_base_rate);
            Some(now + Nanos::from_us(wait_us as u64) + self.timer_slack)
        };
    }

    /// `ioc_rqos_throttle`, for a request of a cgroup.
    fn throttle(&mut self, rq: Request, now: Nanos) {
        let i = self.group_index(&rq);
        let abs_cost = self.abs_cost(i, &rq);
        if abs_cost == 0 {
            self.pass(rq, now);
            return;
        }
        if !self.activate(i, now) {
            self.pass(rq, now);
            return;
        }
        let vnow = self.vnow(now);
        let cost = self.cost_with_snapback(i, abs_cost, vnow);
        let g = &self.groups[i];
        if g.waiting.is_empty() && g.vtime + cost <= vnow {
            self.commit(i, rq, abs_cost, cost, now);
            return;
        }
        // a group with waiters gets its whole weight back
        let (active, inuse) = (g.active, g.inuse);
        if inuse != active {
            self.propagate(i, active, active, true, vnow);
        }
        let g = &mut self.groups[i];
        g.waits += 1;
        g.waiting.push_back((rq, abs_cost));
        self.kick_waitq(i, now);
    }

    /// `hweight_after_donation`: the hweight_inuse group `i` keeps, throwing away budget
    /// above the target margin. `hwm` means no donation.
    fn hweight_after_donation(&mut self, i: usize, old_hwi: i64, hwm: i64, usage: i64, vnow: i64) -> i64 {
        let (min, target) = (self.margin(MARGIN_MIN_PCT), self.margin(MARGIN_TARGET_PCT));
        let g = &mut self.groups[i];
        if !g.waiting.is_empty() || g.vtime > vnow - min {
            return hwm;
        }
        let excess = vnow - g.vtime - target;
        if excess > 0 {
            g.vtime += excess;
            g.done_vtime += excess;
            self.vtime_err -= excess * old_hwi / WEIGHT_ONE;
        }
        let delta = WEIGHT_ONE * (vnow - g.vtime) / (vnow - self.period_at_vtime).max(1);
        let target_frac = WEIGHT_ONE * MARGIN_TARGET_PCT / 100;
        let new_hwi = WEIGHT_ONE * usage / (WEIGHT_ONE - target_frac + delta).max(1);
        new_hwi.clamp(1, hwm)
    }

    /// `transfer_surpluses`: sets each donor's inuse so that its hweight_inuse is its
    /// target, the groups that do not donate keeping their shares' ratios at every level
    /// (the kernel's method: a global donation rate, then per-level weight sums).
    fn transfer_surpluses(&mut self, donors: &mut [Donor], vnow: i64) {
        self.donations += 1;
        let after_sum: i64 = donors.iter().map(|d| d.after).sum();
        if after_sum >= WEIGHT_ONE {
            // scale down those over their full share so that the targets sum under one
            let over_sum: i64 = donors.iter().filter(|d| d.after > d.hwa).map(|d| d.after).sum();
            let over_target = over_sum - (after_sum - (WEIGHT_ONE - 1));
            for d in donors.iter_mut().filter(|d| d.after > d.hwa) {
                d.after = d.after * over_target / over_sum.max(1);
            }
        }
        // The donors' ancestors, parents before children; `ROOT` stands for the root.
        const ROOT: usize = usize::MAX;
        let mut walk: Vec<usize> = vec![ROOT];
        for d in donors.iter() {
            let path = self.path(d.group);
            for &j in &path[..path.len() - 1] {
                if !walk.contains(&j) {
                    walk.push(j);
                }
            }
        }
        let parent = |g: &[Group], j: usize| g[j].parent.unwrap_or(ROOT);
        // per inner node: budget (hweight_active), donating part, what it keeps
        // (hweight_after_donation), adjusted hweight_inuse and child weight sum
        #[derive(Clone, Copy, Default)]
        struct Inner {
            hwa: i64,
            donating: i64,
            after: i64,
            hwi: i64,
            adjusted_sum: i64,
        }
        let mut inner: HashMap<usize, Inner> =
            walk.iter().map(|&j| (j, Inner { hwa: WEIGHT_ONE, hwi: WEIGHT_ONE, ..Inner::default() })).collect();
        for d in donors.iter() {
            let up = inner.get_mut(&parent(&self.groups, d.group)).expect("on the walk");
            up.donating += d.hwa;
            up.after += d.after;
        }
        for &j in walk.iter().skip(1).rev() {
            let (donating, after) = (inner[&j].donating, inner[&j].after);
            let up = inner.get_mut(&parent(&self.groups, j)).expect("on the walk");
            up.donating += donating;
            up.after += after;
        }
        for &j in &walk {
            if j != ROOT {
                let p = parent(&self.groups, j);
                let sum = self.child_sums(self.groups[j].parent).0;
                let hwa = mul_div_round_up(inner[&p].hwa, self.groups[j].active, sum.max(1));
                inner.get_mut(&j).expect("on the walk").hwa = hwa;
            }
            let n = inner.get_mut(&j).expect("on the walk");
            n.donating = n.donating.min(n.hwa);
            n.after = n.after.min(n.donating - 1).max(1);
        }
        // the rate that scales what nobody donates: gamma = (1 - t_r') / (1 - t_r)
        let root = inner[&ROOT];
        let gamma =
            div_round_up((WEIGHT_ONE - root.after) * WEIGHT_ONE, WEIGHT_ONE - root.donating.min(WEIGHT_ONE - 1));
        for &j in &walk {
            if j == ROOT {
                let n = inner.get_mut(&ROOT).expect("on the walk");
                n.adjusted_sum =
                    mul_div_round_up(self.sum_active, WEIGHT_ONE - n.donating, (WEIGHT_ONE - n.after).max(1));
                continue;
            }
            let up = inner[&parent(&self.groups, j)];
            let n = inner[&j];
            let (active, child_active_sum) = (self.groups[j].active, self.groups[j].child_active_sum);
            // b' = gamma * b_f + b'_t; w' = s'_p * b' / b'_p
            let hwi = mul_div_round_up(gamma, n.hwa - n.donating, WEIGHT_ONE) + n.after;
            let inuse = mul_div_round_up(up.adjusted_sum, hwi, up.hwi.max(1));
            // s' = s_f + s_t * w'_t / w_t
            let st = mul_div_round_up(child_active_sum, n.donating, n.hwa.max(1));
            let wpt = mul_div_round_up(active, n.donating, n.hwa.max(1));
            let wptp = mul_div_round_up(inuse, n.after, hwi.max(1));
            let m = inner.get_mut(&j).expect("on the walk");
            m.hwi = hwi;
            m.adjusted_sum = child_active_sum - st + mul_div_round_up(st, wptp, wpt.max(1));
        }
        for d in donors.iter() {
            let up = inner[&parent(&self.groups, d.group)];
            let inuse = mul_div_round_up(up.adjusted_sum, d.after, up.hwi.max(1));
            let active = self.groups[d.group].active;
            self.propagate(d.group, active, inuse, true, vnow);
        }
    }

    /// `ioc_timer_fn`: the end of a period.
    fn end_period(&mut self, now: Nanos) {
        self.periods += 1;
        let missed_ppm: [i64; 2] = std::array::from_fn(|rw| {
            let total = (self.nr_met[rw] + self.nr_missed[rw]) as i64;
            if total > 0 {
                div_round_up(self.nr_missed[rw] as i64 * MILLION, total)
            } else {
                0
            }
        });
        let nr_done: u64 = self.nr_met.iter().chain(&self.nr_missed).sum();
        let rq_wait_pct = self.rq_wait_ns as i64 * 100 / (self.period_us * 1000);
        self.nr_met = [0; 2];
        self.nr_missed = [0; 2];
        self.rq_wait_ns = 0;

        let vnow = self.vnow(now);
        let period_vtime = (vnow - self.period_at_vtime).max(1);

        // `ioc_check_iocgs`: wake waiters (vrate may have risen), deactivate the idle
        for i in 0..self.groups.len() {
            if !self.groups[i].listed {
                continue;
            }
            if !self.groups[i].waiting.is_empty() {
                self.kick_waitq(i, now);
            } else if self.groups[i].active_period != self.cur_period
                && self.groups[i].done_vtime == self.groups[i].vtime
            {
                let excess = vnow - self.groups[i].vtime - self.margin(MARGIN_TARGET_PCT);
                if excess > 0 {
                    self.vtime_err -= excess * self.hweights(i).1 / WEIGHT_ONE;
                }
                self.propagate(i, 0, 0, false, vnow);
                self.groups[i].listed = false;
            }
        }
        // usage during the period, in µs of device time
        for g in self.groups.iter_mut().filter(|g| g.listed) {
            g.usage_delta_us = (g.abs_vusage - g.last_abs_vusage) / self.vtime_base_rate;
            g.last_abs_vusage = g.abs_vusage;
        }

        // who has surplus, who is short; weights as they stood at the period's end
        // (hweight_active, hweight_inuse) as committed before the loop, as the kernel's
        // cached values; hweight_max sees the loop's own resets
        let snapshot: Vec<(i64, i64)> = (0..self.groups.len()).map(|i| self.hweights(i)).collect();
        let (mut nr_shortages, mut nr_lagging) = (0, 0);
        let mut donors: Vec<Donor> = Vec::new();
        let since_period_us = ((now.saturating_sub(self.period_at)).0 / 1000).max(1) as i64;
        for (i, &(hwa, hwi)) in snapshot.iter().enumerate() {
            let g = &self.groups[i];
            if !g.listed {
                continue;
            }
            let (vdone, vtime) = (g.done_vtime, g.vtime);
            if self.qos_enabled
                && vtime > vdone
                && vtime > vnow - MAX_LAGGING_PERIODS * period_vtime
                && vdone < vnow - period_vtime
            {
                nr_lagging += 1;
            }
            if hwi < hwa || (g.waiting.is_empty() && vtime < vnow - self.margin(MARGIN_LOW_PCT)) {
                let mut usage_us = g.usage_delta_us;
                if vdone != vtime {
                    let inflight_us = div_round_up(cost_to_abs_cost(vtime - vdone, hwi), self.vtime_base_rate);
                    usage_us = usage_us.max(inflight_us);
                }
                let usage_dur_us = if g.activated_at > self.period_at {
                    ((now.saturating_sub(g.activated_at)).0 / 1000).max(1) as i64
                } else {
                    since_period_us
                };
                let usage = div_round_up(usage_us * WEIGHT_ONE, usage_dur_us).clamp(1, WEIGHT_ONE);
                let hwm = self.hweight_max(i);
                let new_hwi = self.hweight_after_donation(i, hwi, hwm, usage, vnow);
                if new_hwi < hwm && hwa >= 2 {
                    donors.push(Donor { group: i, hwa, after: new_hwi });
                } else {
                    let active = self.groups[i].active;
                    self.propagate(i, active, active, true, vnow);
                    nr_shortages += 1;
                }
            } else {
                nr_shortages += 1;
            }
        }
        if !donors.is_empty() && nr_shortages > 0 {
            self.transfer_surpluses(&mut donors, vnow);
        }

        // busy or not: too many slot waits or QoS misses slow vrate down
        if nr_done == 0 && nr_lagging > 0 {
            // no completions but I/O in flight for over a period: keep the level
        } else if rq_wait_pct > RQ_WAIT_BUSY_PCT || missed_ppm[0] > self.ppm_thr[0] || missed_ppm[1] > self.ppm_thr[1] {
            self.busy_level = self.busy_level.max(0) + 1;
        } else if rq_wait_pct <= RQ_WAIT_BUSY_PCT * UNBUSY_THR_PCT / 100
            && missed_ppm[0] <= self.ppm_thr[0] * UNBUSY_THR_PCT / 100
            && missed_ppm[1] <= self.ppm_thr[1] * UNBUSY_THR_PCT / 100
        {
            if nr_shortages > 0 {
                self.busy_level = self.busy_level.min(0);
                if nr_lagging == 0 {
                    self.busy_level -= 1;
                }
            } else {
                self.busy_level = 0;
            }
        } else {
            self.busy_level = 0;
        }
        self.busy_level = self.busy_level.clamp(-1000, 1000);
        if self.busy_level > 0 {
            self.busy_periods += 1;
        }
        self.adjust_base_vrate(nr_lagging);
        self.refresh_params(now);

        self.cur_period += 1;
        if self.groups.iter().any(|g| g.active > 0) {
            self.start_period(now, vnow);
        } else {
            self.busy_level = 0;
            self.vtime_err = 0;
            self.running = false;
        }
        self.refresh_vrate(now);
        self.record(now);
    }

    /// `ioc_adjust_base_vrate`.
    fn adjust_base_vrate(&mut self, nr_lagging: u32) {
        if self.busy_level == 0 || (self.busy_level < 0 && nr_lagging > 0) {
            return;
        }
        let vrate = self.vtime_base_rate;
        let vrate = if vrate < self.vrate_min {
            (vrate * (100 + VRATE_CLAMP_ADJ_PCT) / 100).min(self.vrate_min)
        } else if vrate > self.vrate_max {
            (vrate * (100 - VRATE_CLAMP_ADJ_PCT) / 100).max(self.vrate_max)
        } else {
            let adj = VRATE_ADJ_PCT[(self.busy_level.unsigned_abs() as usize).min(VRATE_ADJ_PCT.len() - 1)];
            let pct = if self.busy_level > 0 { 100 - adj } else { 100 + adj };
            div_round_up(vrate * pct, 100).clamp(self.vrate_min, self.vrate_max)
        };
        self.vtime_base_rate = vrate;
    }

    /// `ioc_refresh_vrate`: budget thrown away is made up for by a faster vrate this
    /// period (by at most the base rate, or half of it slower).
    fn refresh_vrate(&mut self, now: Nanos) {
        let base = self.vtime_base_rate;
        let pleft_us = (self.period_end().0 as i64 - now.0 as i64) / 1000;
        if pleft_us > 0 {
            let vcomp = (-self.vtime_err / pleft_us).clamp(-(base >> 1), base);
            self.vtime_err += vcomp * pleft_us;
            self.vtime_rate = base + vcomp;
        }
        let vperiod = self.period_us * base;
        self.vtime_err = self.vtime_err.clamp(-vperiod, vperiod);
    }

    fn record(&mut self, now: Nanos) {
        let pct = self.vtime_base_rate as f64 * 100.0 / VTIME_PER_USEC as f64;
        if self.vrate_series.points.last().is_none_or(|&(_, v)| v != pct) {
            self.vrate_series.push(now, pct);
        }
        for i in 0..self.groups.len() {
            let pct =
                if self.groups[i].active > 0 { self.hweights(i).1 as f64 * 100.0 / WEIGHT_ONE as f64 } else { 0.0 };
            let s = &mut self.groups[i].hweight_inuse_series;
            if s.points.last().is_none_or(|&(_, v)| v != pct) {
                s.push(now, pct);
            }
        }
    }

    #[cfg(test)]
    fn group(&self, tenant: u32) -> &Group {
        self.groups.iter().find(|g| g.tenant == tenant).expect("a group of the tenant")
    }

    #[cfg(test)]
    fn waits_of(&self, tenant: u32) -> u64 {
        self.groups.iter().find(|g| g.tenant == tenant).map_or(0, |g| g.waits)
    }

    /// Runs every timer due by `now`, earliest first: waiters' wake-ups and period ends.
    /// Each runs at `now`, as the kernel's timers read the clock when they fire: a late
    /// wake-up must not count as time its requests waited for a device slot (real devices'
    /// engines call the policy some microseconds after a timer is due).
    fn run_timers(&mut self, now: Nanos) {
        self.last_seen = self.last_seen.max(now);
        loop {
            let period = self.running.then(|| self.period_end()).filter(|&t| t <= now);
            let waiter = (0..self.groups.len())
                .filter_map(|i| self.groups[i].wake_at.filter(|&t| t <= now).map(|t| (t, i)))
                .min();
            match (period, waiter) {
                (Some(p), Some((w, i))) if w < p => self.kick_waitq(i, now),
                (Some(_), _) => self.end_period(now),
                (None, Some((_, i))) => self.kick_waitq(i, now),
                (None, None) => return,
            }
        }
    }
}

impl Scheduler for IoCost {
    fn id(&self) -> &'static str {
        "iocost"
    }

    fn set_tenants(&mut self, tree: &TenantTree) {
        self.tree = tree.clone();
    }

    fn insert(&mut self, rq: Request, now: Nanos) -> Inserted {
        self.run_timers(now);
        if rq.tenant == 0 {
            // the root cgroup is never throttled
            self.pass(rq, now);
        } else {
            self.throttle(rq, now);
        }
        Inserted::Queued
    }

    fn dispatch(&mut self, now: Nanos, _device: DeviceView) -> Option<Request> {
        self.run_timers(now);
        self.fifo.pop_front()
    }

    fn complete(&mut self, done: &Completion<'_>) {
        if !done.dispatched_by_policy {
            return;
        }
        self.run_timers(done.now);
        let rq = done.rq;
        let Some(a) = self.admitted.remove(&rq.id) else { return };
        if let Some(i) = a.group {
            self.groups[i].done_vtime = self.groups[i].done_vtime.saturating_add(a.cost);
        }
        // `ioc_rqos_done`: latency from admission, less the size cost, against the target
        let dir = match rq.op {
            Op::Read => 0,
            Op::Write => 1,
            _ => return,
        };
        let on_queue = done.now.saturating_sub(a.at);
        let size = self.size_cost(rq);
        if on_queue <= size || on_queue - size <= self.lat[dir] {
            self.nr_met[dir] += 1;
        } else {
            self.nr_missed[dir] += 1;
        }
        self.rq_wait_ns += done.dispatched_at.saturating_sub(a.at).0;
    }

    fn requeue(&mut self, rq: Request, _now: Nanos) {
        // already admitted and charged
        self.fifo.push_front(rq);
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        let period = self.running.then(|| self.period_end());
        self.groups.iter().filter_map(|g| g.wake_at).chain(period).min()
    }

    fn queued(&self) -> usize {
        self.fifo.len() + self.groups.iter().map(|g| g.waiting.len()).sum::<usize>()
    }

    fn report(&self) -> PolicyReport {
        let mut r = PolicyReport::default()
            .counter("periods", self.periods as f64)
            .counter("period_us", self.period_us as f64)
            .counter("busy_periods", self.busy_periods as f64)
            .counter("donations", self.donations as f64)
            .counter("vrate_pct", self.vtime_base_rate as f64 * 100.0 / VTIME_PER_USEC as f64)
            .counter("autop_fast", f64::from(u8::from(self.set == ParamSet::SsdFast)))
            .counter("autop_switches", self.autop_switches as f64)
            .with_series(self.vrate_series.held_until(self.last_seen));
        for g in &self.groups {
            r = r
                .counter(format!("waits_tenant{}", g.tenant), g.waits as f64)
                .with_series(g.hweight_inuse_series.held_until(self.last_seen));
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(list: &str) -> IoCost {
        IoCost::from_params(&Params::parse("iocost", PARAMS, list).unwrap())
    }

    /// A 4 KiB random read of `tenant` (weight `weight`), far from any other.
    fn rd(id: u64, tenant: u32, weight: u32) -> Request {
        Request::read(id, id * (64 << 20)).with_tenant(tenant, weight)
    }

    const VIEW: DeviceView = DeviceView { inflight: 0, queue_depth: 1 << 20 };

    /// Drives `p` for `duration` on an instant device: every `step` each tenant of
    /// `tenants` (tenant, weight, requests per step) submits, everything admitted is
    /// dispatched and completed at once. Returns the requests dispatched per tenant.
    fn drive(p: &mut IoCost, tenants: &[(u32, u32, u64)], duration: Nanos, step: Nanos, next_id: &mut u64) -> Vec<u64> {
        let mut done = vec![0u64; tenants.len()];
        let end = p.period_at.max(Nanos(1)) + duration;
        let mut now = end - duration;
        while now < end {
            for &(tenant, weight, n) in tenants {
                for _ in 0..n {
                    *next_id += 1;
                    p.insert(Request { submit_time: now, ..rd(*next_id, tenant, weight) }, now);
                }
            }
            while let Some(rq) = p.dispatch(now, VIEW) {
                if let Some(k) = tenants.iter().position(|t| t.0 == rq.tenant) {
                    done[k] += 1;
                }
                p.complete(&Completion { rq: &rq, dispatched_at: now, now, dispatched_by_policy: true });
            }
            now += step;
        }
        done
    }

    #[test]
    fn the_linear_model_follows_the_kernel_formulas() {
        // 1000 pages/s: a page costs a millisecond of vtime; 500 IOPS: a base of the rest
        let c = Coefs::new(4096.0 * 1000.0, 500, 250);
        assert_eq!(c.page, div_round_up(VTIME_PER_SEC, 1000));
        assert_eq!(c.seqio, div_round_up(VTIME_PER_SEC, 500) - c.page);
        assert_eq!(c.randio, div_round_up(VTIME_PER_SEC, 250) - c.page);
        // faster IOPS than pages: no base cost
        assert_eq!(Coefs::new(4096.0 * 1000.0, 2000, 2000).seqio, 0);
        // the kernel's fast-SSD set: a 4 KiB read costs about 1.32 us of device time
        let p = policy("");
        assert_eq!(p.coefs[0].page / VTIME_PER_NSEC, 1324);
        assert_eq!(p.period_us, 10_000, "2 x 5 ms");
        assert_eq!(policy("rpct=50,rlat=1ms").period_us, 10_000, "10 x at p50");
        assert_eq!(policy("rlat=100us,wlat=100us").period_us, MIN_PERIOD_US);
    }

    /// Keeps `depth` requests of one cgroup queued for `duration`, in steps of `step`, on a
    /// device that completes each at once but makes it wait `slot_wait` for a slot first.
    fn saturate(p: &mut IoCost, duration: Nanos, step: Nanos, depth: usize, slot_wait: Nanos, next_id: &mut u64) {
        let end = p.last_seen.max(Nanos(1)) + duration;
        let mut now = end - duration;
        while now < end {
            while p.queued() < depth {
                *next_id += 1;
                p.insert(Request { submit_time: now, ..rd(*next_id, 1, 100) }, now);
            }
            while let Some(rq) = p.dispatch(now, VIEW) {
                let at = now + slot_wait;
                p.complete(&Completion { rq: &rq, dispatched_at: at, now: at, dispatched_by_policy: true });
            }
            now += step;
        }
    }

    /// When vrate first reached `pct`% and when it next came back to 100% from above.
    fn vrate_reached_and_reset(p: &IoCost, pct: f64) -> (Nanos, Option<Nanos>) {
        let points = &p.vrate_series.points;
        let first = points.iter().position(|&(_, v)| v >= pct).expect("vrate reached the threshold");
        let reset = points[first..].iter().find(|&&(_, v)| v == 100.0).map(|&(at, _)| Nanos(at));
        (Nanos(points[first].0), reset)
    }

    #[test]
    fn the_listed_defaults_are_the_fast_sets() {
        // `nvsched policies` shows PARAMS' defaults; the policy takes the set's values
        let p = Params::parse("iocost", PARAMS, "").unwrap();
        let fast = ParamSet::SsdFast.values();
        for (k, name) in MODEL_PARAMS.iter().enumerate() {
            let listed = if k % 3 == 0 { p.float(name) } else { p.uint(name) as f64 };
            assert_eq!(listed, fast.model[k], "{name}");
        }
        assert_eq!([p.duration("rlat"), p.duration("wlat")], [fast.lat; 2]);
    }

    #[test]
    fn the_dfl_set_is_the_kernels_default_ssd_model() {
        let p = policy("autop=dfl");
        assert_eq!(p.set, ParamSet::SsdDfl);
        assert_eq!(p.period_us, 50_000, "2 x 25 ms");
        // a 4 KiB random read: 1 s / 8518 IOPS, about 117 us of device time
        assert_eq!((p.coefs[0].page + p.coefs[0].randio) / VTIME_PER_USEC, 117);
        // what is given wins over the set
        let p = policy("autop=dfl,rbps=4096000000,rrandiops=250000,rlat=1ms");
        assert_eq!((p.coefs[0].page + p.coefs[0].randio) / VTIME_PER_USEC, 4);
        // the set's rbps where only the IOPS are given: a page alone costs 8.4 us
        assert_eq!(policy("autop=dfl,rrandiops=250000").coefs[0].page / VTIME_PER_USEC, 8);
        assert_eq!((p.lat, p.period_us), ([Nanos::from_ms(1), Nanos::from_ms(25)], 50_000));
    }

    #[test]
    fn auto_moves_to_the_fast_set_after_ten_seconds_at_five_times_the_dfl_model() {
        let mut p = policy("autop=auto");
        let mut id = 0;
        // one cgroup always short of budget: vrate climbs past 500% within a few seconds
        saturate(&mut p, Nanos::from_secs(16), Nanos::from_us(200), 256, Nanos::ZERO, &mut id);
        let (past_500, reset) = vrate_reached_and_reset(&p, 500.0);
        let reset = reset.expect("vrate starts again from 100% after the switch");
        assert!(past_500 < Nanos::from_secs(5), "vrate 500% at {past_500}");
        // checked at period ends (50 ms at DFL)
        let after = reset - past_500;
        assert!(after >= AUTOP_CYCLE && after <= AUTOP_CYCLE + Nanos::from_ms(100), "switched {after} after 500%");
        assert_eq!((p.set, p.autop_switches, p.period_us), (ParamSet::SsdFast, 1, 10_000));

        // given a model or QoS parameter, the kernel keeps the set it has: no switch
        for list in ["autop=auto,rpct=0", "autop=auto,rbps=1000000000", "autop=dfl"] {
            let mut p = policy(list);
            saturate(&mut p, Nanos::from_secs(16), Nanos::from_us(200), 256, Nanos::ZERO, &mut id);
            assert_eq!((p.set, p.autop_switches), (ParamSet::SsdDfl, 0), "{list}");
        }
    }

    #[test]
    fn auto_goes_back_to_the_dfl_set_after_ten_seconds_at_a_tenth_of_the_fast_model() {
        let mut p = policy("autop=auto");
        p.apply_set(ParamSet::SsdFast);
        let mut id = 0;
        // every request waits 1 ms for a device slot, 10% of each 10 ms period: busy
        saturate(&mut p, Nanos::from_secs(12), Nanos::from_ms(2), 8, Nanos::from_ms(1), &mut id);
        assert_eq!((p.set, p.autop_switches, p.period_us), (ParamSet::SsdDfl, 1, 50_000));
        let points = &p.vrate_series.points;
        let low = points.iter().position(|&(_, v)| v <= 10.0).expect("vrate fell to 10%");
        let back = points[low..].iter().find(|&&(_, v)| v == 100.0).expect("vrate reset to 100%");
        let after = Nanos(back.0) - Nanos(points[low].0);
        assert!(after >= AUTOP_CYCLE && after <= AUTOP_CYCLE + Nanos::from_ms(20), "switched {after} after 10%");
    }

    #[test]
    fn requests_more_than_16_mib_apart_are_random() {
        let mut p = policy("rseqiops=1000,rrandiops=100,rbps=4096000");
        let i = p.group_index(&rd(1, 1, 100));
        let c = p.coefs[0];
        let at = |id, offset_bytes: u64| Request::read(id, offset_bytes).with_tenant(1, 100);
        assert_eq!(p.abs_cost(i, &at(1, 0)), c.seqio + c.page, "the first request has no cursor");
        assert_eq!(p.abs_cost(i, &at(2, 4096)), c.seqio + c.page);
        assert_eq!(p.abs_cost(i, &at(3, 8192 + (16 << 20))), c.seqio + c.page, "exactly 16 MiB on");
        assert_eq!(p.abs_cost(i, &at(4, 1 << 30)), c.randio + c.page);
        assert_eq!(p.abs_cost(i, &at(5, (1 << 30) + 4096).with_len(65536)), c.seqio + 16 * c.page);
        let flush = Request { op: Op::Flush, len_bytes: 0, ..at(6, 0) };
        assert_eq!(p.abs_cost(i, &flush), 0, "flushes cost nothing");
    }

    /// Two backlogged cgroups get device time in proportion to their weights (vrate pinned:
    /// this instant device never says it is busy, so vrate would rise until nobody waits).
    #[test]
    fn backlogged_cgroups_share_by_weight() {
        let mut p = policy("min=100,max=100");
        let mut id = 0;
        let done = drive(&mut p, &[(1, 400, 20), (2, 100, 20)], Nanos::from_secs(1), Nanos::from_us(20), &mut id);
        let ratio = done[0] as f64 / done[1] as f64;
        assert!((ratio - 4.0).abs() < 0.2, "dispatched {done:?}: ratio {ratio:.2}, weights 4:1");
        assert!(p.waits_of(2) > 0 && p.waits_of(1) > 0, "both were throttled");
    }

    /// `a` (weight 100) holds `a/x` (100) and `a/y` (300); `b` (300) is beside `a`:
    /// tenants 1 (a), 2 (a/x), 3 (a/y), 4 (b).
    fn nested() -> IoCost {
        let mut tree = TenantTree::default();
        for (path, weight) in [("a", 100), ("a/x", 100), ("a/y", 300), ("b", 300)] {
            tree.add(path, Some(weight));
        }
        let mut p = policy("min=100,max=100");
        p.set_tenants(&tree);
        p
    }

    #[test]
    fn nested_cgroups_share_within_their_parents_share() {
        let mut p = nested();
        let mut id = 0;
        // every 20 us: 15 reads fit, a/x and a/y offer 8 each, b 40
        let busy = [(2, 100, 8), (3, 300, 8), (4, 300, 40)];
        let done = drive(&mut p, &busy, Nanos::from_ms(100), Nanos::from_us(20), &mut id);
        let total: u64 = done.iter().sum();
        let shares: Vec<f64> = done.iter().map(|&d| d as f64 / total as f64).collect();
        // a gets a quarter (100 of 400), split 1:3 inside; flat, they would get 1:3:3
        for (share, want) in shares.iter().zip([0.0625, 0.1875, 0.75]) {
            assert!((share - want).abs() < 0.01, "shares {shares:?}, want 1/16, 3/16, 3/4");
        }
        assert_eq!(p.group(1).active, 100 * WEIGHT_ONE, "a is active as the parent of two");
        assert_eq!(p.hweights(p.groups.iter().position(|g| g.tenant == 2).unwrap()).0, WEIGHT_ONE / 16);
        // a/y stops; once its backlog has drained and it has left, a/x has a's quarter
        let rest = [(2, 100, 8), (4, 300, 40)];
        drive(&mut p, &rest, Nanos::from_ms(400), Nanos::from_us(20), &mut id);
        assert!(!p.group(3).listed && p.group(3).active == 0, "a/y left");
        let done = drive(&mut p, &rest, Nanos::from_ms(200), Nanos::from_us(20), &mut id);
        let share = done[0] as f64 / (done[0] + done[1]) as f64;
        assert!((share - 0.25).abs() < 0.01, "a/x alone in a: {done:?} ({share:.3})");
    }

    /// A light cgroup's unused share goes to the others in proportion to their budgets at
    /// every level: a/y and b keep 1:4 (3/16 : 3/4) between them.
    #[test]
    fn a_nested_donor_leaves_the_others_ratios_as_they_were() {
        let mut p = nested();
        let mut id = 0;
        // 4 KiB reads cost 1.32 us: 1 per 66 us is 2% of the device (a/x's budget: 6.25%)
        let done =
            drive(&mut p, &[(2, 100, 1), (3, 300, 100), (4, 300, 100)], Nanos::from_secs(2), Nanos(66_000), &mut id);
        let capacity = 2e9 / 1324.0;
        assert!(done[0] as f64 > 0.019 * capacity, "the light cgroup keeps its rate: {done:?}");
        let ratio = done[2] as f64 / done[1] as f64;
        assert!((ratio - 4.0).abs() < 0.2, "b : a/y {ratio:.2}, want 4: {done:?}");
        assert!((done.iter().sum::<u64>() as f64) > 0.95 * capacity, "the surplus is used: {done:?}");
        assert!(p.donations > 0 && p.waits_of(2) == 0);
    }

    /// The kernel lets only a cgroup with nothing active below or above it issue as
    /// itself; a job in `a` while `a/x` is active goes as the root's, unthrottled.
    #[test]
    fn a_cgroup_above_an_active_one_issues_as_the_root() {
        let mut p = nested();
        let mut id = 0;
        drive(&mut p, &[(2, 100, 20)], Nanos::from_ms(100), Nanos::from_us(20), &mut id);
        let waits = p.waits_of(1);
        drive(&mut p, &[(1, 100, 20), (2, 100, 20)], Nanos::from_ms(100), Nanos::from_us(20), &mut id);
        assert_eq!(p.waits_of(1), waits, "a's own requests are never held");
        assert!(!p.group(1).listed);
    }

    /// With vrate pinned at 100%, a cgroup using a tenth of the device donates the rest of
    /// its half: the other gets far more than half, and the light one is still served.
    #[test]
    fn unused_share_is_donated() {
        let mut p = policy("min=100,max=100");
        let mut id = 0;
        // 4 KiB reads cost 1.32 us: 1 per 13.2 us is a tenth of the device
        let done = drive(&mut p, &[(1, 100, 1), (2, 100, 20)], Nanos::from_secs(1), Nanos(13_200), &mut id);
        let capacity = 1e9 / 1324.0;
        assert!(done[0] as f64 > 0.095 * capacity, "the light cgroup keeps its rate: {done:?}");
        assert!(done[1] as f64 > 0.75 * capacity, "the heavy one takes most of the rest: {done:?}");
        assert!(p.donations > 0);
        assert!(p.hweights(0).1 < WEIGHT_ONE / 2, "the light one's weight in use is below its half");
        assert_eq!(p.waits_of(1), 0, "the light one never waited");
    }

    #[test]
    fn an_idle_cgroup_leaves_and_its_weight_goes_to_the_others() {
        let mut p = policy("min=100,max=100");
        let mut id = 0;
        drive(&mut p, &[(1, 100, 20), (2, 300, 20)], Nanos::from_ms(100), Nanos::from_us(20), &mut id);
        assert_eq!(p.hweights(0).0, WEIGHT_ONE / 4);
        // tenant 2 stops submitting; its backlog drains, then it leaves
        drive(&mut p, &[(1, 100, 20)], Nanos::from_ms(200), Nanos::from_us(20), &mut id);
        assert_eq!(p.groups[1].active, 0, "tenant 2 deactivated");
        assert_eq!(p.hweights(0), (WEIGHT_ONE, WEIGHT_ONE));
        let done = drive(&mut p, &[(1, 100, 20)], Nanos::from_ms(100), Nanos::from_us(20), &mut id);
        let capacity = 0.1e9 / 1324.0;
        assert!(done[0] as f64 > 0.9 * capacity, "tenant 1 alone gets the device: {done:?}");
    }

    #[test]
    fn the_root_and_flushes_are_never_throttled() {
        let mut p = policy("");
        let mut id = 0;
        drive(&mut p, &[(1, 100, 50)], Nanos::from_ms(30), Nanos::from_us(20), &mut id);
        assert!(p.groups[0].waiting.len() > 100, "tenant 1 is throttled hard");
        let now = Nanos::from_ms(31);
        for k in 0..10_000 {
            p.insert(rd(1_000_000 + k, 0, 100), now);
        }
        let flush = Request { op: Op::Flush, len_bytes: 0, ..rd(999_998, 1, 100) };
        p.insert(flush, now);
        let out: Vec<u64> = std::iter::from_fn(|| p.dispatch(now, VIEW)).map(|r| r.id.0).collect();
        assert!(out.contains(&999_998), "the flush passed");
        assert_eq!(
            out.iter().filter(|&&id| id >= 1_000_000).count(),
            10_000,
            "every root request passed, 13 ms of device time at once"
        );
    }

    /// Busy periods (QoS misses) lower vrate: nothing for three periods, then 1% each.
    #[test]
    fn qos_misses_slow_vrate_down_after_three_periods() {
        let mut p = policy("rpct=90,rlat=100us");
        let slow = Nanos::from_us(500);
        let mut vrates = Vec::new();
        let mut now = Nanos::from_us(1);
        for k in 0..8u64 {
            for j in 0..10 {
                let rq = rd(k * 100 + j, 1, 100);
                p.insert(Request { submit_time: now, ..rq }, now);
                let got = p.dispatch(now, VIEW).expect("budget for ten reads");
                let at = now + slow;
                p.complete(&Completion { rq: &got, dispatched_at: now, now: at, dispatched_by_policy: true });
            }
            now = p.period_end() + Nanos(1);
            p.run_timers(now);
            vrates.push(p.vtime_base_rate * 100 / VTIME_PER_USEC);
        }
        assert_eq!(vrates, [100, 100, 100, 99, 98, 97, 96, 95], "vrate in %: {vrates:?}");
        assert_eq!(p.busy_level, 8);
    }

    /// A donor of `p` (tenant 1, index 0) after 200 ms of using a tenth of the device.
    fn donor() -> (IoCost, u64) {
        let mut p = policy("min=100,max=100");
        let mut id = 0;
        drive(&mut p, &[(1, 100, 1), (2, 100, 20)], Nanos::from_ms(200), Nanos(13_200), &mut id);
        assert!(p.groups[0].inuse < p.groups[0].active / 2, "tenant 1 donates");
        (p, id)
    }

    /// A donor whose budget runs low takes weight back a quarter at a time, as far as the
    /// request needs, and issues without waiting.
    #[test]
    fn a_donor_low_on_budget_takes_back_quarters() {
        let (mut p, id) = donor();
        let now = p.period_at + Nanos::from_us(100);
        let vnow = p.vnow(now);
        let (before, active) = (p.groups[0].inuse, p.groups[0].active);
        let step = div_round_up(active * INUSE_ADJ_STEP_PCT, 100);
        // budget for the request at the weight one step up, a margin below low
        let one_up = WEIGHT_ONE * (before + step) / (p.sum_inuse + step);
        let g = &mut p.groups[0];
        g.vtime = vnow - abs_cost_to_cost(p.coefs[0].randio + p.coefs[0].page, one_up);
        g.saved_margin = i64::MAX;
        p.insert(rd(id + 1, 1, 100), now);
        let g = &p.groups[0];
        assert!(g.waiting.is_empty(), "issued at once");
        assert_eq!(g.inuse, before + step, "one quarter of {active} back, from {before}");
        assert!(g.inuse < g.active);
    }

    /// A donor that has to wait gets its whole weight back at once.
    #[test]
    fn a_donor_that_has_to_wait_takes_all_its_weight_back() {
        let (mut p, id) = donor();
        let now = p.period_at + Nanos::from_us(100);
        let vnow = p.vnow(now);
        let g = &mut p.groups[0];
        // no budget at all, and a margin no worse than before: no quarter steps
        g.vtime = vnow + VTIME_PER_SEC;
        g.saved_margin = i64::MIN;
        p.insert(rd(id + 1, 1, 100), now);
        let g = &p.groups[0];
        assert_eq!(g.waiting.len(), 1);
        assert_eq!(g.inuse, g.active);
    }

    /// The slowest model there is and the largest requests: costs are capped, nothing
    /// overflows, the requests still come out.
    #[test]
    fn absurd_models_do_not_overflow() {
        let mut p = policy("rbps=4096,rseqiops=1,rrandiops=1,wbps=4096,wseqiops=1,wrandiops=1");
        let big = |id: u64, tenant: u32| rd(id, tenant, if tenant == 1 { 1 } else { 10_000 }).with_len(!4095);
        let mut now = Nanos::from_us(1);
        for id in 0..6 {
            p.insert(big(id, 1 + (id % 2) as u32), now);
        }
        let mut out = 0;
        while out < 6 {
            while let Some(rq) = p.dispatch(now, VIEW) {
                out += 1;
                p.complete(&Completion { rq: &rq, dispatched_at: now, now, dispatched_by_policy: true });
            }
            now = p.next_wakeup().map_or(now, |t| t.max(now));
        }
    }

    /// A wake-up handled late (a real device's engine calls the policy when it gets to it)
    /// admits at the time it runs: the lateness must not count as waiting for a slot,
    /// which would mark the device busy.
    #[test]
    fn a_late_wake_up_admits_at_the_time_it_runs() {
        let mut p = policy("min=100,max=100");
        let now = Nanos::from_us(1);
        for id in 0..10_000 {
            p.insert(rd(id, 1, 100), now);
        }
        let first: Vec<Request> = std::iter::from_fn(|| p.dispatch(now, VIEW)).collect();
        assert!(!first.is_empty() && p.groups[0].waiting.len() > 1000, "the budget ran out");
        let due = p.groups[0].wake_at.unwrap();
        let late = due + Nanos::from_us(300);
        let admitted: Vec<Request> = std::iter::from_fn(|| p.dispatch(late, VIEW)).collect();
        assert!(!admitted.is_empty());
        assert!(admitted.iter().all(|r| p.admitted[&r.id].at == late), "admitted at {late}, not at {due}");
    }

    #[test]
    fn min_may_not_exceed_max() {
        let p = Params::parse("iocost", PARAMS, "min=200,max=100").unwrap();
        assert!((INFO.validate.unwrap())(&p).is_err());
    }

    proptest::proptest! {
        /// After every step of a random run, flat or nested (tenant 2 below tenant 1, which
        /// issues too): every level's weight sums match its cgroups', inuse never exceeds
        /// active, only a cgroup with nothing active below it issues, a cgroup with waiters
        /// has a wake-up set, and every request comes out exactly once.
        #[test]
        fn weights_stay_consistent_and_nothing_is_lost(
            ops in proptest::collection::vec((0u8..4, 0u32..4, 0u64..3_000), 1..600),
            nested in proptest::bool::ANY,
        ) {
            let mut p = policy("rpct=90,rlat=50us,rrandiops=20000,rbps=100MB/s");
            if nested {
                let mut tree = TenantTree::default();
                for path in ["a", "a/x", "b"] {
                    tree.add(path, None);
                }
                p.set_tenants(&tree);
            }
            let (mut now, mut next_id) = (Nanos::ZERO, 0u64);
            let mut inflight: Vec<(Request, Nanos)> = Vec::new();
            let mut given = std::collections::HashSet::new();
            for (op, tenant, micros) in ops {
                now += Nanos::from_us(micros);
                if op < 2 {
                    next_id += 1;
                    p.insert(Request { submit_time: now, ..rd(next_id, tenant, 100 * (tenant + 1)) }, now);
                } else if op == 2 && !inflight.is_empty() {
                    let (rq, at) = inflight.remove(micros as usize % inflight.len());
                    p.complete(&Completion { rq: &rq, dispatched_at: at, now, dispatched_by_policy: true });
                } else if let Some(t) = p.next_wakeup() {
                    now = now.max(t);
                }
                while let Some(d) = p.dispatch(now, VIEW) {
                    proptest::prop_assert!(given.insert(d.id), "gave {} twice", d.id.0);
                    inflight.push((d, now));
                }
                for parent in std::iter::once(None).chain((0..p.groups.len()).map(Some)) {
                    let below = || p.groups.iter().filter(|g| g.parent == parent);
                    let sums = (below().map(|g| g.active).sum::<i64>(), below().map(|g| g.inuse).sum::<i64>());
                    proptest::prop_assert_eq!(p.child_sums(parent), sums);
                }
                for g in &p.groups {
                    proptest::prop_assert!(g.inuse <= g.active);
                    proptest::prop_assert!(!g.listed || g.child_active_sum == 0);
                    proptest::prop_assert!(g.waiting.is_empty() || g.wake_at.is_some(), "waiters without a wake-up");
                }
            }
            // drain by the policy's own timers
            let mut guard = 0;
            while p.queued() > 0 || !inflight.is_empty() {
                guard += 1;
                proptest::prop_assert!(guard < 1_000_000, "does not drain");
                if let Some((rq, at)) = inflight.pop() {
                    p.complete(&Completion { rq: &rq, dispatched_at: at, now, dispatched_by_policy: true });
                } else {
                    let t = p.next_wakeup();
                    proptest::prop_assert!(t.is_some(), "requests held with no wake-up");
                    now = now.max(t.unwrap());
                }
                while let Some(d) = p.dispatch(now, VIEW) {
                    proptest::prop_assert!(given.insert(d.id));
                    inflight.push((d, now));
                }
            }
            proptest::prop_assert_eq!(given.len() as u64, next_id);
        }
    }
}
