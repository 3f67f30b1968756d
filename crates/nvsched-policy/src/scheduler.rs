use crate::request::{Request, RequestId};
use nvsched_core::{Nanos, TenantTree};
use serde::Serialize;

/// What a policy may know about the device below it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceView {
    /// Requests dispatched (by any policy or path) and not yet completed.
    pub inflight: u32,
    /// The device's queue depth; engines never call `dispatch` when it is full.
    pub queue_depth: u32,
}

/// Result of handing a request to a policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inserted {
    /// The request is queued and will come back from `dispatch`.
    Queued,
    /// The request was merged into an already queued one, which now covers it; the engine
    /// completes it when that one completes.
    MergedInto(RequestId),
}

/// Host CPU/path time a policy adds to each dispatch and each completion. Each policy
/// declares its own in its [`crate::PolicyInfo`] (users may override it with the
/// `dispatch_cost`/`complete_cost` parameters); engines charge it on the simulated host
/// path, so heavier bookkeeping costs latency.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HostCost {
    pub dispatch: Nanos,
    pub complete: Nanos,
}

/// A completion as the policy sees it.
#[derive(Clone, Copy, Debug)]
pub struct Completion<'a> {
    /// The request as it was dispatched (merged requests cover their children).
    pub rq: &'a Request,
    pub dispatched_at: Nanos,
    pub now: Nanos,
    /// False when this policy never dispatched the request (a flush the engine issued
    /// itself, a request from before a policy switch): counters must not go negative.
    pub dispatched_by_policy: bool,
}

impl Completion<'_> {
    /// Time from dispatch to completion (device + paths below the scheduler).
    pub fn io_latency(&self) -> Nanos {
        self.now.saturating_sub(self.dispatched_at)
    }
    /// Time from entering the block layer to completion.
    pub fn total_latency(&self) -> Nanos {
        self.now.saturating_sub(self.rq.submit_time)
    }
}

/// One scheduling policy. The engine contract:
///
/// - after every `insert`, every completion and at `next_wakeup`, the engine calls
///   `dispatch` until it returns `None` or the device queue is full;
/// - `dispatch` may return `None` with work queued (work-constraining policies);
/// - every request returned by `dispatch` is later passed to `complete` exactly once, or
///   given back through `requeue`.
pub trait Scheduler: Send {
    /// The registry id (`none`, `k2`, ...).
    fn id(&self) -> &'static str;

    /// The cgroup tree the jobs run in, which engines give once, before the first
    /// `insert`. Requests name their tenant and its weight; policies that share by the
    /// hierarchy read the ancestors and their weights here. The default ignores it.
    fn set_tenants(&mut self, _tree: &TenantTree) {}

    /// A request enters the scheduler.
    fn insert(&mut self, rq: Request, now: Nanos) -> Inserted;

    /// The next request for the device, or `None` to hold back.
    fn dispatch(&mut self, now: Nanos, device: DeviceView) -> Option<Request>;

    /// A request completed.
    fn complete(&mut self, done: &Completion<'_>);

    /// A dispatched request comes back undone (the device refused it). The default puts
    /// it back through `insert`; policies that count in-flight requests must release
    /// their slot or token first.
    fn requeue(&mut self, rq: Request, now: Nanos) {
        let _ = self.insert(rq, now);
    }

    /// The earliest time the policy wants `dispatch` called with no other event, if any.
    /// A time already past gets one retry a nanosecond later; if `dispatch` still returns
    /// nothing, the engine waits for the next arrival or completion (and reports a stall
    /// if none comes) rather than ask again every nanosecond.
    fn next_wakeup(&self) -> Option<Nanos> {
        None
    }

    /// Requests held in the scheduler (inserted, not dispatched, not merged away).
    fn queued(&self) -> usize;

    /// Counters and time series for the results' `nvsched.policy` section.
    fn report(&self) -> PolicyReport {
        PolicyReport::default()
    }
}

/// Named counters and time series a policy reports.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct PolicyReport {
    pub counters: Vec<(String, f64)>,
    pub series: Vec<TimeSeries>,
}

impl PolicyReport {
    pub fn counter(mut self, name: impl Into<String>, value: f64) -> Self {
        self.counters.push((name.into(), value));
        self
    }
    pub fn with_series(mut self, series: TimeSeries) -> Self {
        self.series.push(series);
        self
    }
    pub fn get(&self, name: &str) -> Option<f64> {
        self.counters.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
    pub fn series(&self, name: &str) -> Option<&TimeSeries> {
        self.series.iter().find(|s| s.name == name)
    }
}

/// Samples of one quantity over simulated time.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct TimeSeries {
    pub name: String,
    pub unit: String,
    /// (time since start in ns, value)
    pub points: Vec<(u64, f64)>,
}

impl TimeSeries {
    pub fn new(name: impl Into<String>, unit: impl Into<String>) -> TimeSeries {
        TimeSeries { name: name.into(), unit: unit.into(), points: Vec::new() }
    }
    pub fn push(&mut self, at: Nanos, value: f64) {
        self.points.push((at.0, value));
    }
    /// For a series recorded at changes: a copy whose last value is repeated at `at`
    /// (if later), so that plots show it holding to there.
    pub fn held_until(&self, at: Nanos) -> TimeSeries {
        let mut s = self.clone();
        if let Some(&(last, v)) = s.points.last() {
            if last < at.0 {
                s.push(at, v);
            }
        }
        s
    }
}
