"""nvsched from Python: fio job files through host I/O schedulers on a simulated NVMe SSD.

The engine, policies and device profiles are the ones of the ``nvsched`` command; a run
gives the same fio-compatible JSON as ``nvsched run --output-format json``, as a dict.

    >>> import nvsched
    >>> r = nvsched.run("experiments/k2-analysis/k2.fio", "k2:bound=4",
    ...                 vars={"OP": "randread", "RUNTIME": "2s", "RAMP": "0"},
    ...                 precondition="partial:0.5", seed=1)
    >>> nvsched.summary(r)["jobs"][0]["read"]["p99_9_us"]

Sweeps over policies and seeds run in parallel threads or on a Ray cluster: see
:func:`nvsched.sweep.sweep`.

A policy can be written in Python and run by the same engine: pass an object with
``insert(rq, now_ns)`` and ``dispatch(now_ns, inflight, queue_depth)`` methods as
``policy=`` (see :func:`run` and :class:`Request`).
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Mapping, Optional, Sequence, Tuple, Union

from . import _native

__version__ = _native.__version__

# Reproduction caches are keyed by build: here the build is this extension, not the
# interpreter that loads it.
_so = os.stat(_native.__file__)
_native.set_build_fingerprint(f"python-extension {_so.st_size}:{_so.st_mtime_ns}")
__all__ = ["run", "run_device", "check_policy", "tune_iocost", "policies", "devices", "experiments", "experiment_cell",
           "summary", "JobInput", "Request"]

#: A request as a Python policy sees it (read-only attributes; a merge grows a queued
#: one in place): ``id``, ``op`` ("read", "write",
#: "flush", "discard"), ``offset_bytes``, ``len_bytes``, ``sync``, ``fua``, ``prio_class``
#: ("rt", "be", "idle", "none"), ``prio_level`` (0-7), ``nice``, ``job`` (the submitting
#: job clone, from 0), ``tenant``, ``tenant_weight``, ``submit_ns``; and
#: ``can_merge(other)``.
Request = _native.Request

JobInput = Union[str, "os.PathLike[str]"]


def job_text(job: JobInput) -> Tuple[str, str]:
    """(text, name for messages) of a job given as a path, or as job-file text.

    A string with a newline in it is job-file text; anything else is a path.
    """
    if isinstance(job, str) and "\n" in job:
        return job, "<job text>"
    path = os.fspath(job)
    with open(path, encoding="utf-8") as f:
        return f.read(), path


def _pairs(mapping: Optional[Union[Mapping[str, object], Sequence[Tuple[str, object]]]]):
    if mapping is None:
        return []
    items = mapping.items() if isinstance(mapping, Mapping) else mapping
    return [(str(k), str(v)) for k, v in items]


def run(
    job: JobInput,
    sched: Optional[str] = None,
    *,
    policy: Optional[object] = None,
    device: str = "970evoplus-250g",
    device_set: Optional[Mapping[str, object]] = None,
    precondition: Optional[str] = None,
    vars: Optional[Mapping[str, object]] = None,
    seed: int = 0,
    timestamp_ms: Optional[int] = None,
    source: Optional[str] = None,
) -> dict:
    """Simulates one run and returns fio's JSON report as a dict.

    job: a job file's path, or job-file text. sched: a policy as ``--sched`` takes it
    (``"k2:bound=4"``); ``None``: the job file's ``ioscheduler=``, else ``none``. device: a shipped profile name or a TOML file. device_set:
    profile overrides, like ``--device-set`` (``{"host.cpus": 1}``). precondition:
    ``clean``, ``partial:FRACTION`` or ``full``, over the job file's own. vars: values of
    the job file's ``${NAME}`` variables (the process environment fills the rest).
    timestamp_ms: the time written into the report (default: ``SOURCE_DATE_EPOCH`` or
    now); it is the only thing that differs between two runs with the same inputs.
    source: with it, ``job`` is job-file text and ``source`` its name in messages (a file
    read once and run many times).

    policy: instead of ``sched``, a scheduling policy written in Python. The engine calls
    ``policy.insert(rq, now_ns)`` as each request (a :class:`Request`) enters the
    scheduler, and ``policy.dispatch(now_ns, inflight, queue_depth)`` after every insert,
    completion and wake-up until it returns ``None`` or the device queue is full; it
    returns one of the inserted requests to send it to the device, or ``None`` to hold
    back. ``insert`` returns ``None``, or a queued request to merge the new one into
    (``queued.can_merge(rq)`` says whether they can: same direction, flags, priority and
    tenant, contiguous, at most 512 KiB together); the queued request then grows in
    place, and the new one is never dispatched: it completes with the one it joined.
    Optional: ``complete(rq, now_ns, dispatched_ns)`` (``rq`` is the object ``dispatch``
    returned, so requests may be kept in sets and dicts), ``requeue(rq, now_ns)`` (default:
    insert again), ``next_wakeup()`` (ns or ``None``: when ``dispatch`` should
    be called with no other event), ``set_tenants(tenants)`` (called once before the
    first insert: a dict from tenant number, as ``rq.tenant`` gives it, to ``(cgroup path,
    parent tenant, weight, io.latency target in ns or None)``; 0, the root, is not in it), ``report()`` (a dict of counters for the report's
    ``nvsched.policy``), and the attributes ``name`` (default: the class name),
    ``dispatch_cost_ns`` and ``complete_cost_ns`` (host time per dispatch and completion,
    default 0). The report names it ``python:NAME``. An exception in the policy, a
    request returned that is not queued, or a merge of requests that cannot merge, fails
    the run with a RuntimeError carrying the policy's traceback (and the original
    exception as its cause); a KeyboardInterrupt the policy raises stops the run as it is.

    Raises ValueError with the message the command line would print (file, line, option).
    The command line's warnings (an option ignored, ``sched`` overriding the job file's
    ``ioscheduler=``) are issued as ``UserWarning``, with the file and line. Ctrl-C
    (SIGINT) stops the simulation and raises KeyboardInterrupt; SIGTERM stops it and then
    takes Python's own course (by default the process ends).
    """
    return _report(_native.simulate_json, job, source, vars, sched, policy, timestamp_ms,
                   device, _pairs(device_set), precondition, int(seed))


def run_device(
    job: JobInput,
    sched: Optional[str] = None,
    *,
    policy: Optional[object] = None,
    allow_destructive: bool = False,
    vars: Optional[Mapping[str, object]] = None,
    seed: int = 0,
    timestamp_ms: Optional[int] = None,
    source: Optional[str] = None,
) -> dict:
    """Runs the jobs on real files or block devices through io_uring, as ``nvsched run
    --engine uring`` does, and returns fio's JSON report as a dict.

    The same safety rules hold: a block device, or a file nvsched did not create, is
    written only with ``allow_destructive=True``; mounted devices are always refused;
    files nvsched creates are removed afterwards. ``sched``, ``policy`` (a policy written
    in Python, as for :func:`run`), ``vars``, ``timestamp_ms`` and ``source`` are as for
    :func:`run`; ``seed`` seeds the jobs' random offsets and data. The first I/O errors
    come as ``UserWarning``s; a verify failure raises ValueError. Ctrl-C (SIGINT) ends
    the run as on the command line (what is in flight completes, created files are
    removed) and raises KeyboardInterrupt; SIGTERM ends it the same way and then takes
    Python's own course (by default the process ends).
    """
    try:
        return _report(_native.device_json, job, source, vars, sched, policy, timestamp_ms,
                       bool(allow_destructive), int(seed))
    except ValueError as e:
        # the command line's flag, as this function spells it
        raise ValueError(str(e).replace("--allow-destructive", "allow_destructive=True")) from None


def _report(native, job, source, vars, sched, policy, timestamp_ms, *engine_args) -> dict:
    """Calls ``native`` (simulate_json or device_json) with the job's text and the run's
    common arguments, issues its warnings, and returns its report as a dict."""
    if policy is not None and sched is not None:
        raise ValueError("give either sched (a built-in policy) or policy (a Python object), not both")
    text, source = (str(job), source) if source is not None else job_text(job)
    if timestamp_ms is None:
        timestamp_ms = _native.timestamp_ms()
    out, notes = native(text, source, _pairs(vars), sched, policy, *engine_args, int(timestamp_ms))
    for note in notes:
        warnings.warn(note, UserWarning, stacklevel=3)
    return json.loads(out)


# Workloads check_policy runs a policy through: every kind of request (reads, writes,
# flushes, trims), every priority class, nice values, two weighted tenants, a queue
# deeper than the device's and bursts after think time.
_CHECK_JOBS = (
    "[global]\nfilename=/dev/nvme0n1\nsize=256m\nruntime=20ms\ntime_based\nioengine=libaio\n"
    "[rt]\nrw=randread\nbs=4k\nprioclass=1\nthinktime=200\n"
    "[be]\nrw=randrw\nbs=4k,16k\niodepth=32\nnice=5\n"
    "[idle]\nrw=read\nbs=128k\nprioclass=3\niodepth=4\n"
    "[w]\nrw=randwrite\nbs=8k\nfsync=4\niodepth=8\ncgroup=a\ncgroup_weight=300\n"
    "[t]\nrw=randtrim\nbs=64k\niodepth=2\ncgroup=b\ncgroup_weight=100\n"
    "[burst]\nrw=randread\nbs=4k\niodepth=64\nthinktime=2ms\nthinktime_blocks=64\nsync=1\n",
    "[global]\nfilename=/dev/nvme0n1\nsize=64m\nnumber_ios=300\nioengine=libaio\niodepth=16\n"
    "[seq]\nrw=write\nbs=4k\n[mix]\nrw=randrw\nrwmixread=70\nbssplit=4k/50:64k/50\nprioclass=2\nprio=0\n",
)


def check_policy(factory, *, seeds: Sequence[int] = (1, 2), device: str = "970evoplus-250g") -> int:
    """Checks a policy written in Python as nvsched's tests check its own: ``factory()``
    gives a fresh policy object, and each of a few varied workloads (all request kinds,
    priority classes, nice values, weighted tenants, deep queues, bursts) runs twice per
    seed. Raises AssertionError naming the workload and seed if a run fails (an
    exception in the policy, a request handed out twice, a request held for good) or if
    two runs with the same inputs give different reports. Returns the runs made.
    """
    made = 0
    for k, job in enumerate(_CHECK_JOBS):
        for seed in seeds:
            where = f"check workload {k + 1} of {len(_CHECK_JOBS)}, seed {seed}"
            try:
                first, again = (run(job, policy=factory(), device=device, seed=seed, timestamp_ms=0,
                                    source=f"<{where}>") for _ in range(2))
                made += 2
            except (RuntimeError, ValueError) as e:
                raise AssertionError(f"{where}: the run failed: {e}\njob:\n{job}") from e
            if first != again:
                raise AssertionError(f"{where}: two runs with the same inputs differ (is the policy "
                                     f"deterministic? an unseeded random draw, a set's order...)\njob:\n{job}")
    return made


def tune_iocost(
    job: Optional[JobInput] = None,
    *,
    filename: Optional[Union[str, "os.PathLike[str]"]] = None,
    size: str = "16g",
    allow_destructive: bool = False,
    seconds: int = 120,
    numjobs: int = 1,
    device: str = "970evoplus-250g",
    device_set: Optional[Mapping[str, object]] = None,
    precondition: Optional[str] = None,
    vars: Optional[Mapping[str, object]] = None,
) -> dict:
    """``nvsched tune iocost``: io.cost's linear cost model for the job file's simulated
    drive (its device and drive state; the jobs themselves are not run), measured as the
    kernel's ``tools/cgroup/iocost_coef_gen.py`` measures a real device: six runs of
    ``seconds`` each, alone on the drive, with ``numjobs`` jobs.

    With ``filename`` instead of ``job``, the runs go through io_uring to that real file or
    block device, within its first ``size`` bytes (``--filename``): a new file is laid out
    and removed afterwards; an existing one is only read (a ``UserWarning`` says so, and
    the model has no write coefficients) unless ``allow_destructive``.

    Returns {"model": {"rbps": bytes/s, "rseqiops": IOPS, ...}, "sched": the ``--sched``
    value that runs ``iocost`` with it, "model_line": the ``io.cost.model`` line, "table":
    the measurements as ``nvsched tune iocost`` prints them}. Raises ValueError with the
    command line's message.
    """
    if (job is None) == (filename is None):
        raise ValueError("tune_iocost: give a job (simulated drive) or a filename (real device), not both")
    if filename is not None:
        (model, sched, line, table), writes = _native.tune_iocost_device(
            os.fspath(filename), str(size), int(seconds), int(numjobs), bool(allow_destructive))
        if not writes:
            warnings.warn(f"{os.fspath(filename)} exists: measured reads only (allow_destructive=True to measure "
                          "writes too)", UserWarning, stacklevel=2)
    else:
        text, source = job_text(job)
        model, sched, line, table = _native.tune_iocost(text, source, _pairs(vars), device, _pairs(device_set),
                                                        precondition, int(seconds), int(numjobs))
    return {"model": dict(model), "sched": sched, "model_line": line, "table": table}


def policies() -> list:
    """The scheduling policies: id, summary, source paper, parameters with defaults."""
    return json.loads(_native.policies_json())["policies"]


def devices() -> list:
    """Names of the shipped device profiles."""
    return list(_native.devices())


def experiments() -> list:
    """Names of the paper reproductions (``nvsched repro NAME``) in ``experiments/``."""
    return list(_native.experiments())


def experiment_cell(name: str, variant: str, state: Optional[str] = None, *, quick: bool = True,
                    device: Optional[str] = None) -> dict:
    """One (variant, drive state) of a reproduction in ``experiments/``, as ``nvsched repro``
    runs it: ``{"job": text, "job_path": ..., "device": profile, "device_set": overrides,
    "seeds": [...]}`` (the manifest's device overrides and the state's precondition; the
    seeds of the mode's repetitions). ``quick``: the quick mode's durations and
    repetitions, else the paper's. ``device``: on that profile instead, with the
    manifest's host overrides (``host.*``) but not its drive's (as ``repro --device``). Pass ``job``, ``device`` and
    ``device_set`` on to :func:`run` or :func:`nvsched.sweep.sweep`.
    """
    text, path, device, overrides, seeds = _native.experiment_cell(name, variant, state, quick, device)
    return {"job": text, "job_path": path, "device": device, "device_set": dict(overrides), "seeds": list(seeds)}


def summary(report: dict) -> dict:
    """The numbers most comparisons need, from a run's report: per job and direction the
    bandwidth (MB/s), IOPS and completion-latency mean and percentiles (us), plus the
    total bandwidth of all jobs."""
    jobs = []
    total = 0.0
    for job in report["jobs"]:
        entry = {"name": job["jobname"]}
        for d in ("read", "write"):
            stats = job[d]
            if stats["total_ios"] == 0:
                continue
            clat = stats["clat_ns"]
            pct = clat.get("percentile", {})
            bw = stats["bw_bytes"] / 1e6
            total += bw
            entry[d] = {
                "bw_mbps": bw,
                "iops": stats["iops"],
                "mean_us": clat["mean"] / 1e3,
                "p50_us": pct.get("50.000000", 0) / 1e3,
                "p99_us": pct.get("99.000000", 0) / 1e3,
                "p99_9_us": pct.get("99.900000", 0) / 1e3,
            }
        jobs.append(entry)
    return {"total_bw_mbps": total, "jobs": jobs}
