//! A scheduling policy written in Python: any object with `insert` and `dispatch` methods
//! (and, if it wants them, `complete`, `requeue`, `next_wakeup` and `report`), run by
//! the same engine as the built-in policies. This file only adapts the object to the
//! `Scheduler` trait; the engine's contract is the trait's.
//!
//! The policy sees each request as an `nvsched.Request` with read-only attributes, and
//! hands one back from `dispatch` to send it to the device. `insert` may return a queued
//! request instead of queuing the new one: the adapter checks that they can merge, grows
//! the queued request in place (the policy's own object changes) and tells the engine.
//! Times are integer nanoseconds. The adapter keeps the queued requests itself, so
//! `queued()` and the checks on what `dispatch` and `insert` return do not rely on the
//! Python side. A Python exception (or a request that is not
//! queued) stops the policy: it dispatches nothing more, and the run raises the error
//! (see [`raised`]).

use nvsched::policy::{
    CgroupModel, Completion, DeviceView, HostCost, Inserted, Nanos, Params, PolicyInfo, PolicyReport, Request,
    RequestId, Scheduler, TenantTree, MAX_MERGE_BYTES,
};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What the report and listings say of a Python policy; it is built from its object,
/// never from `--sched`, so `build` is not called.
pub static INFO: PolicyInfo = PolicyInfo {
    id: "python",
    summary: "a policy written in Python (nvsched.run(..., policy=obj))",
    source: "the Python object given",
    notes: "Host cost from the object's dispatch_cost_ns and complete_cost_ns attributes (default 0).",
    params: &[],
    host_cost: HostCost { dispatch: Nanos::ZERO, complete: Nanos::ZERO },
    example: "",
    validate: None,
    check_cgroups: None,
    cgroups: CgroupModel::Ignored,
    build: |_: &Params| unreachable!("a Python policy is built from its object"),
};

/// One request as the Python policy sees it. Its attributes are read-only; a merge
/// (see [`PyPolicy`]) grows the queued request the policy holds, in place.
#[pyclass(name = "Request", module = "nvsched")]
pub struct PyRequest {
    rq: Request,
}

#[pymethods]
impl PyRequest {
    /// Unique among the requests in the system at once.
    #[getter]
    fn id(&self) -> u64 {
        self.rq.id.0
    }
    /// "read", "write", "flush" or "discard".
    #[getter]
    fn op(&self) -> &'static str {
        self.rq.op.name()
    }
    #[getter]
    fn offset_bytes(&self) -> u64 {
        self.rq.offset_bytes
    }
    #[getter]
    fn len_bytes(&self) -> u32 {
        self.rq.len_bytes
    }
    /// A task waits on it (reads, O_SYNC/O_DSYNC and direct writes).
    #[getter]
    fn sync(&self) -> bool {
        self.rq.sync
    }
    /// Force unit access: the write completes once on stable media.
    #[getter]
    fn fua(&self) -> bool {
        self.rq.fua
    }
    /// "rt", "be", "idle" or "none" (then the kernel derives best-effort from `nice`).
    #[getter]
    fn prio_class(&self) -> &'static str {
        self.rq.prio.class.name()
    }
    /// 0 (most important) to 7.
    #[getter]
    fn prio_level(&self) -> u8 {
        self.rq.prio.level
    }
    #[getter]
    fn nice(&self) -> i8 {
        self.rq.nice
    }
    /// The submitting job clone, from 0 in job-file order.
    #[getter]
    fn job(&self) -> u32 {
        self.rq.job
    }
    #[getter]
    fn tenant(&self) -> u32 {
        self.rq.tenant
    }
    #[getter]
    fn tenant_weight(&self) -> u32 {
        self.rq.tenant_weight
    }
    /// When it entered the block layer, ns.
    #[getter]
    fn submit_ns(&self) -> u64 {
        self.rq.submit_time.0
    }
    /// Whether `other` may be merged into this request (returned from `insert` with this
    /// one): same direction, flags, priority and tenant, contiguous at either end, and
    /// together at most 512 KiB.
    fn can_merge(&self, other: &PyRequest) -> bool {
        self.rq.merge_side(&other.rq, MAX_MERGE_BYTES).is_some()
    }
    fn __repr__(&self) -> String {
        let rq = &self.rq;
        format!(
            "Request(id={}, op='{}', offset_bytes={}, len_bytes={}, prio='{}{}', job={})",
            rq.id.0,
            rq.op.name(),
            rq.offset_bytes,
            rq.len_bytes,
            rq.prio.class.name(),
            rq.prio.level,
            rq.job
        )
    }
}

impl PyRequest {
    fn of(rq: &Request) -> PyRequest {
        PyRequest { rq: *rq }
    }
}

/// The first error the Python side raised (with what was called), shared with the caller
/// (the policy itself is moved into the engine).
pub type PolicyError = Arc<Mutex<Option<(String, PyErr)>>>;

/// What the run raises for a policy's error: a `KeyboardInterrupt` as it is; anything
/// else as a RuntimeError naming the call, with the policy's traceback in its message and
/// the original exception as its cause.
pub fn raised(py: Python<'_>, what: &str, original: PyErr) -> PyErr {
    if original.is_instance_of::<PyKeyboardInterrupt>(py) {
        return original;
    }
    let trace = original.traceback(py).and_then(|t| t.format().ok()).unwrap_or_default();
    let e = PyRuntimeError::new_err(format!("python policy: {what}: {original}\n{trace}").trim_end().to_string());
    e.set_cause(py, Some(original));
    e
}

/// Which optional methods the object has (looked up once).
struct Methods {
    complete: bool,
    requeue: bool,
    next_wakeup: bool,
    report: bool,
    set_tenants: bool,
}

pub struct PyPolicy {
    obj: Py<PyAny>,
    methods: Methods,
    /// Inserted and not yet dispatched, by id, as the policy sees them.
    queued: HashMap<u64, Py<PyRequest>>,
    /// Dispatched and not yet completed (kept for a policy with `complete`, which gets
    /// the very object it dispatched, so it may keep requests in sets and dicts).
    dispatched: HashMap<u64, Py<PyRequest>>,
    error: PolicyError,
}

impl PyPolicy {
    /// Checks that `obj` has the two methods every policy needs; returns the policy, its
    /// name (the `name` attribute, else the class name) and its host cost.
    pub fn new(py: Python<'_>, obj: Py<PyAny>, error: PolicyError) -> PyResult<(PyPolicy, String, HostCost)> {
        let o = obj.bind(py);
        for required in ["insert", "dispatch"] {
            if !o.getattr(required).is_ok_and(|m| m.is_callable()) {
                return Err(PyTypeError::new_err(format!(
                    "policy object has no {required}() method: a policy needs insert(rq, now_ns) and dispatch(now_ns, inflight, queue_depth)"
                )));
            }
        }
        let has = |name: &str| o.getattr(name).is_ok_and(|m| m.is_callable());
        let methods = Methods {
            complete: has("complete"),
            requeue: has("requeue"),
            next_wakeup: has("next_wakeup"),
            report: has("report"),
            set_tenants: has("set_tenants"),
        };
        let name: String = match o.getattr("name") {
            Ok(n) if !n.is_none() => n.str()?.to_string(),
            _ => o.get_type().name()?.to_string(),
        };
        let cost = |attr: &str| -> PyResult<Nanos> {
            match o.getattr(attr) {
                Ok(v) if !v.is_none() => Ok(Nanos(v.extract::<u64>().map_err(|_| {
                    PyTypeError::new_err(format!(
                        "policy attribute {attr} must be a whole number of nanoseconds (>= 0)"
                    ))
                })?)),
                _ => Ok(Nanos::ZERO),
            }
        };
        let host_cost = HostCost { dispatch: cost("dispatch_cost_ns")?, complete: cost("complete_cost_ns")? };
        let policy = PyPolicy { obj, methods, queued: HashMap::new(), dispatched: HashMap::new(), error };
        Ok((policy, name, host_cost))
    }

    fn failed(&self) -> bool {
        self.error.lock().expect("policy error lock").is_some()
    }

    fn fail(&self, what: &str, e: PyErr) {
        let mut slot = self.error.lock().expect("policy error lock");
        if slot.is_none() {
            *slot = Some((what.to_string(), e));
        }
    }

    /// Queues `rq` and hands its object to `insert` (for `requeue` too, when the policy
    /// has no `requeue`: then `may_merge` is false, as the engine keeps a requeued
    /// request as its own); a queued request returned from it takes `rq` in (a merge).
    fn insert_as(&mut self, rq: Request, now: Nanos, may_merge: bool) -> Inserted {
        Python::attach(|py| {
            let Some(obj) = self.hold(py, rq) else { return Inserted::Queued };
            if self.failed() {
                return Inserted::Queued;
            }
            let Some(answer) = self.call(py, "insert", (obj, now.0)) else { return Inserted::Queued };
            if answer.is_none() {
                return Inserted::Queued;
            }
            let merged = if !may_merge {
                Err(PyValueError::new_err(
                    "insert() merged a request given back through requeue; define requeue() to take it back",
                ))
            } else {
                self.merge(&answer, &rq)
            };
            match merged {
                Ok(parent) => {
                    self.queued.remove(&rq.id.0);
                    Inserted::MergedInto(parent)
                }
                Err(e) => {
                    self.fail("insert", e);
                    Inserted::Queued
                }
            }
        })
    }

    /// Keeps `rq` as queued, with the object the policy sees.
    fn hold(&mut self, py: Python<'_>, rq: Request) -> Option<Py<PyRequest>> {
        match Py::new(py, PyRequest::of(&rq)) {
            Ok(obj) => {
                self.queued.insert(rq.id.0, obj.clone_ref(py));
                Some(obj)
            }
            Err(e) => {
                self.fail("insert", e);
                None
            }
        }
    }

    /// The id of a queued request the policy returned.
    fn queued_one(&self, returned: &Bound<'_, PyAny>) -> PyResult<u64> {
        let Ok(r) = returned.cast::<PyRequest>() else {
            let got = returned.get_type().name().map(|n| n.to_string()).unwrap_or_default();
            return Err(PyTypeError::new_err(format!("returned a {got}, not a Request or None")));
        };
        let id = r.borrow().rq.id.0;
        if !self.queued.contains_key(&id) {
            let why =
                format!("returned request {id}, which is not queued (already dispatched, merged, or never inserted)");
            return Err(PyValueError::new_err(why));
        }
        Ok(id)
    }

    /// `insert` returned `answer` for `rq`: grows that queued request to cover `rq`.
    fn merge(&self, answer: &Bound<'_, PyAny>, rq: &Request) -> PyResult<RequestId> {
        let parent_id = self.queued_one(answer)?;
        if parent_id == rq.id.0 {
            return Err(PyValueError::new_err(
                "returned the request being inserted: return None to queue it, or a queued request to merge it into",
            ));
        }
        let parent = self.queued[&parent_id].bind(answer.py()).clone();
        let mut parent = parent.borrow_mut();
        match parent.rq.absorb(rq, MAX_MERGE_BYTES) {
            Some(_) => Ok(parent.rq.id),
            None => Err(PyValueError::new_err(format!(
                "returned request {parent_id} to merge request {} into, but they cannot merge (Request.can_merge says why not: same op, flags, priority and tenant, contiguous, at most {} KiB together)",
                rq.id.0,
                MAX_MERGE_BYTES / 1024
            ))),
        }
    }

    /// Calls `method(args)` on the object; an exception stops the policy.
    fn call<'py, A>(&self, py: Python<'py>, method: &str, args: A) -> Option<Bound<'py, PyAny>>
    where
        A: pyo3::call::PyCallArgs<'py>,
    {
        match self.obj.bind(py).call_method1(method, args) {
            Ok(v) => Some(v),
            Err(e) => {
                self.fail(method, e);
                None
            }
        }
    }
}

impl Scheduler for PyPolicy {
    fn id(&self) -> &'static str {
        INFO.id
    }

    /// `set_tenants(tenants)`: a dict by tenant number of (name, parent tenant, weight,
    /// io.latency target in ns or None), the root (0) left out.
    fn set_tenants(&mut self, tree: &TenantTree) {
        if !self.methods.set_tenants || self.failed() {
            return;
        }
        Python::attach(|py| {
            let tenants = PyDict::new(py);
            for (tenant, node) in tree.cgroups() {
                let latency_target_ns = tree.latency_target(tenant).map(|t| t.0);
                let entry = (node.name.as_str(), node.parent, node.weight, latency_target_ns);
                if let Err(e) = tenants.set_item(tenant, entry) {
                    return self.fail("set_tenants", e);
                }
            }
            self.call(py, "set_tenants", (tenants,));
        });
    }

    fn insert(&mut self, rq: Request, now: Nanos) -> Inserted {
        self.insert_as(rq, now, true)
    }

    fn dispatch(&mut self, now: Nanos, device: DeviceView) -> Option<Request> {
        if self.failed() || self.queued.is_empty() {
            return None;
        }
        Python::attach(|py| {
            let chosen = self.call(py, "dispatch", (now.0, device.inflight, device.queue_depth))?;
            if chosen.is_none() {
                return None;
            }
            let id = match self.queued_one(&chosen) {
                Ok(id) => id,
                Err(e) => {
                    self.fail("dispatch", e);
                    return None;
                }
            };
            let obj = self.queued.remove(&id)?;
            let rq = obj.bind(py).borrow().rq;
            if self.methods.complete {
                self.dispatched.insert(id, obj);
            }
            Some(rq)
        })
    }

    fn complete(&mut self, done: &Completion<'_>) {
        if !self.methods.complete || !done.dispatched_by_policy || self.failed() {
            return;
        }
        Python::attach(|py| {
            let obj = match self.dispatched.remove(&done.rq.id.0) {
                Some(obj) => obj,
                None => match Py::new(py, PyRequest::of(done.rq)) {
                    Ok(obj) => obj,
                    Err(e) => return self.fail("complete", e),
                },
            };
            self.call(py, "complete", (obj, done.now.0, done.dispatched_at.0));
        });
    }

    fn requeue(&mut self, rq: Request, now: Nanos) {
        if !self.methods.requeue {
            let _ = self.insert_as(rq, now, false);
            return;
        }
        Python::attach(|py| {
            let Some(obj) = self.hold(py, rq) else { return };
            if !self.failed() {
                self.call(py, "requeue", (obj, now.0));
            }
        });
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        if !self.methods.next_wakeup || self.failed() {
            return None;
        }
        Python::attach(|py| {
            let at = self.call(py, "next_wakeup", ())?;
            if at.is_none() {
                return None;
            }
            match at.extract::<u64>() {
                Ok(ns) => Some(Nanos(ns)),
                Err(_) => {
                    let e = PyTypeError::new_err("returned neither None nor a whole number of nanoseconds");
                    self.fail("next_wakeup", e);
                    None
                }
            }
        })
    }

    fn queued(&self) -> usize {
        self.queued.len()
    }

    fn report(&self) -> PolicyReport {
        let mut report = PolicyReport::default();
        if !self.methods.report || self.failed() {
            return report;
        }
        Python::attach(|py| {
            let Some(counters) = self.call(py, "report", ()) else { return };
            let Ok(dict) = counters.cast::<PyDict>() else {
                self.fail("report", PyTypeError::new_err("returned something other than a dict of numbers"));
                return;
            };
            for (k, v) in dict.iter() {
                match (k.str(), v.extract::<f64>()) {
                    (Ok(name), Ok(value)) => report.counters.push((name.to_string(), value)),
                    _ => {
                        self.fail("report", PyTypeError::new_err("returned a dict whose values are not all numbers"));
                        return;
                    }
                }
            }
        });
        report
    }
}
