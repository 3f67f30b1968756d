//! A scheduling policy written in Python: any object with `insert` and `dispatch` methods
//! (and, if it wants them, `complete`, `requeue`, `next_wakeup` and `report`), run by
//! the same engine as the built-in policies. This file only adapts the object to the
//! `Scheduler` trait; the engine's contract is the trait's.
//!
//! The policy sees each request as an immutable `nvsched.Request`, and hands one back
//! from `dispatch` to send it to the device. Times are integer nanoseconds. The adapter
//! keeps the queued requests itself, so `queued()` and the checks on what `dispatch`
//! returns do not rely on the Python side. A Python exception (or a request that is not
//! queued) stops the policy: it dispatches nothing more, and the run raises the error
//! (see [`raised`]).

use nvsched::policy::{
    Completion, DeviceView, HostCost, Inserted, Nanos, Params, PolicyInfo, PolicyReport, Request, Scheduler,
};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyTypeError};
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
    build: |_: &Params| unreachable!("a Python policy is built from its object"),
};

/// One request as the Python policy sees it.
#[pyclass(frozen, name = "Request", module = "nvsched")]
pub struct PyRequest {
    /// Unique among the requests in the system at once.
    #[pyo3(get)]
    id: u64,
    /// "read", "write", "flush" or "discard".
    #[pyo3(get)]
    op: &'static str,
    #[pyo3(get)]
    offset_bytes: u64,
    #[pyo3(get)]
    len_bytes: u32,
    /// A task waits on it (reads, O_SYNC/O_DSYNC and direct writes).
    #[pyo3(get)]
    sync: bool,
    /// Force unit access: the write completes once on stable media.
    #[pyo3(get)]
    fua: bool,
    /// "rt", "be", "idle" or "none" (then the kernel derives best-effort from `nice`).
    #[pyo3(get)]
    prio_class: &'static str,
    /// 0 (most important) to 7.
    #[pyo3(get)]
    prio_level: u8,
    #[pyo3(get)]
    nice: i8,
    /// The submitting job clone, from 0 in job-file order.
    #[pyo3(get)]
    job: u32,
    #[pyo3(get)]
    tenant: u32,
    #[pyo3(get)]
    tenant_weight: u32,
    /// When it entered the block layer, ns.
    #[pyo3(get)]
    submit_ns: u64,
}

#[pymethods]
impl PyRequest {
    fn __repr__(&self) -> String {
        format!(
            "Request(id={}, op='{}', offset_bytes={}, len_bytes={}, prio='{}{}', job={})",
            self.id, self.op, self.offset_bytes, self.len_bytes, self.prio_class, self.prio_level, self.job
        )
    }
}

impl PyRequest {
    fn of(rq: &Request) -> PyRequest {
        PyRequest {
            id: rq.id.0,
            op: rq.op.name(),
            offset_bytes: rq.offset_bytes,
            len_bytes: rq.len_bytes,
            sync: rq.sync,
            fua: rq.fua,
            prio_class: rq.prio.class.name(),
            prio_level: rq.prio.level,
            nice: rq.nice,
            job: rq.job,
            tenant: rq.tenant,
            tenant_weight: rq.tenant_weight,
            submit_ns: rq.submit_time.0,
        }
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
}

pub struct PyPolicy {
    obj: Py<PyAny>,
    methods: Methods,
    /// Inserted and not yet dispatched, by id.
    queued: HashMap<u64, Request>,
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
        Ok((PyPolicy { obj, methods, queued: HashMap::new(), error }, name, host_cost))
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

    fn insert(&mut self, rq: Request, now: Nanos) -> Inserted {
        self.queued.insert(rq.id.0, rq);
        if !self.failed() {
            Python::attach(|py| {
                self.call(py, "insert", (PyRequest::of(&rq), now.0));
            });
        }
        Inserted::Queued
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
            let id = match chosen.cast::<PyRequest>() {
                Ok(r) => r.get().id,
                Err(_) => {
                    let got = chosen.get_type().name().map(|n| n.to_string()).unwrap_or_default();
                    self.fail("dispatch", PyTypeError::new_err(format!("returned a {got}, not a Request or None")));
                    return None;
                }
            };
            match self.queued.remove(&id) {
                Some(rq) => Some(rq),
                None => {
                    let why =
                        format!("returned request {id}, which is not queued (already dispatched, or never inserted)");
                    self.fail("dispatch", PyTypeError::new_err(why));
                    None
                }
            }
        })
    }

    fn complete(&mut self, done: &Completion<'_>) {
        if !self.methods.complete || !done.dispatched_by_policy || self.failed() {
            return;
        }
        Python::attach(|py| {
            self.call(py, "complete", (PyRequest::of(done.rq), done.now.0, done.dispatched_at.0));
        });
    }

    fn requeue(&mut self, rq: Request, now: Nanos) {
        if !self.methods.requeue {
            let _ = self.insert(rq, now);
            return;
        }
        self.queued.insert(rq.id.0, rq);
        if !self.failed() {
            Python::attach(|py| {
                self.call(py, "requeue", (PyRequest::of(&rq), now.0));
            });
        }
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
