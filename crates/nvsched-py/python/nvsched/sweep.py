"""Sweeps: one job file over policies x seeds (x variable sets), in parallel on this
machine's threads or on a Ray cluster.

Every run is independent and deterministic, so a sweep is a bag of tasks: Ray spreads them
over a cluster's cores (``backend="ray"``; ``address`` names an existing cluster, else a
local one starts), threads spread them over this machine's (``backend="local"``; the
simulator releases the GIL). Both give the same reports, in the order of the inputs.

    python -m nvsched.sweep experiments/k2-analysis/k2.fio \\
        --sched none --sched k2:bound=1 --sched k2:bound=8 --seeds 1-3 \\
        --var OP=randread --var RUNTIME=2s --var RAMP=0 --precondition partial:0.5 \\
        --backend ray --out sweep.json
    python -m nvsched.sweep --experiment k2-analysis:randread --sched k2:bound=4 --seeds 1-5
    python -m nvsched.sweep --repro tabs --backend ray --address auto
    python -m nvsched.sweep --experiment k2-analysis:randread --tune-k2 latency:50% --backend ray
    python -m nvsched.sweep examples/k2-mix.fio --tune iolatency --param target=100us,200us,1ms \
        --objective latency:90% --backend ray
"""

from __future__ import annotations

import argparse
import concurrent.futures
import itertools
import json
import os
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import nvsched


@dataclass(frozen=True)
class Task:
    """One run of a sweep. ``sched`` is a built-in policy as ``--sched`` takes it, or,
    with ``policy``, the label of a policy written in Python: ``policy()`` makes a fresh
    policy object for the run (see :func:`nvsched.run`)."""

    sched: str
    seed: int
    vars: Dict[str, str] = field(default_factory=dict)
    policy: Optional[Callable[[], object]] = None


PolicyChoice = Union[str, Tuple[str, Callable[[], object]]]


def plan(scheds: Sequence[PolicyChoice], seeds: Sequence[int],
         var_sets: Sequence[Mapping[str, str]] = ({},)) -> List[Task]:
    """Every combination, policies outermost. A policy is a ``--sched`` string, or
    ``(label, factory)`` for one written in Python (``factory()`` gives a fresh policy
    object per run; on Ray it must pickle, as a class or function at module level does)."""

    def split(s: PolicyChoice) -> Tuple[str, Optional[Callable[[], object]]]:
        return (s, None) if isinstance(s, str) else (str(s[0]), s[1])

    tasks = []
    for s, v, seed in itertools.product(scheds, var_sets, seeds):
        label, factory = split(s)
        tasks.append(Task(label, int(seed), dict(v), factory))
    return tasks


class PolicyFromFile:
    """A factory of a policy written in Python, for sweeps from the shell
    (``--policy FILE.py:EXPR``): ``EXPR`` (``RtFirstBounded(2)``) evaluated in the module
    that ``FILE.py`` defines (run under the name ``nvsched_policy``, so its ``main`` does
    not run). It pickles as its path and expression, so Ray workers load the file where
    they run: on a cluster, the path must exist there too."""

    _modules: Dict[str, dict] = {}

    def __init__(self, spec: str):
        path, sep, expr = spec.rpartition(":")
        if not sep or not path or not expr.strip():
            raise ValueError(f"--policy {spec!r}: expected FILE.py:EXPR, e.g. examples/python-policy.py:RtFirstBounded(2)")
        self.path, self.expr = os.path.abspath(path), expr.strip()
        self.label = f"python:{self.expr}"

    def __call__(self) -> object:
        import runpy
        module = self._modules.get(self.path)
        if module is None:
            module = self._modules[self.path] = runpy.run_path(self.path, run_name="nvsched_policy")
        return eval(self.expr, module)  # noqa: S307 - the user's own policy file and expression


def _run_task(job_text: str, task: Task, common: dict) -> dict:
    if task.policy is not None:
        report = nvsched.run(job_text, policy=task.policy(), seed=task.seed, vars=task.vars, **common)
    else:
        report = nvsched.run(job_text, task.sched, seed=task.seed, vars=task.vars, **common)
    return {"sched": task.sched, "seed": task.seed, "vars": task.vars, "report": report}


def _workload(job, device, device_set, precondition):
    """(job text, the run options every task shares), read once and shipped to workers."""
    text, source = nvsched.job_text(job)
    device_set = {str(k): str(v) for k, v in (device_set or {}).items()}
    return text, {"source": source, "device": device, "device_set": device_set, "precondition": precondition}


def sweep(
    job: nvsched.JobInput,
    tasks: Sequence[Task],
    *,
    device: str = "970evoplus-250g",
    device_set: Optional[Mapping[str, object]] = None,
    precondition: Optional[str] = None,
    backend: str = "local",
    workers: Optional[int] = None,
    address: Optional[str] = None,
    progress: Optional[Callable[[int, int], None]] = None,
    filename: Optional[str] = None,
    engine: Optional[str] = None,
    allow_destructive: bool = False,
) -> List[dict]:
    """Runs every task; returns {sched, seed, vars, report} per task, in task order.

    backend: ``"local"`` (threads; ``workers`` of them, default one per core) or
    ``"ray"`` (``address`` of a running cluster, default: start a local one with
    ``workers`` CPUs). progress(done, total) is called as runs finish.

    ``filename`` (every job's file) or ``engine="uring"`` (the job file's own files) runs
    the tasks on a real file or device through io_uring instead, as ``nvsched sweep
    --filename``: one run at a time, seeds outermost, a file the first run creates
    removed at the end; writing to an existing file or a block device needs
    ``allow_destructive``. Policies written in Python run on a device with
    :func:`nvsched.run_device`, one run at a time.
    """
    on_device = _on_device(filename, engine, allow_destructive)
    if on_device is not None:
        _check_device_runs(device, device_set, precondition, backend)
        labels = [t.sched for t in tasks if t.policy is not None]
        if labels:
            raise ValueError(f"{labels[0]}: a policy written in Python runs on a device with nvsched.run_device()")
        text, source = nvsched.job_text(job)
        runs = [(t.sched, int(t.seed), [(str(k), str(v)) for k, v in t.vars.items()]) for t in tasks]
        reports, notes = nvsched._native.sweep_device(text, source, runs, on_device[0], on_device[1],
                                                      nvsched._native.timestamp_ms())
        for note in notes:
            warnings.warn(note, UserWarning, stacklevel=2)
        if progress is not None:
            progress(len(tasks), len(tasks))
        return [{"sched": t.sched, "seed": t.seed, "vars": t.vars, "report": json.loads(r)}
                for t, r in zip(tasks, reports)]
    text, common = _workload(job, device, device_set, precondition)
    # One timestamp for the whole sweep: reports differ only where the inputs do.
    common["timestamp_ms"] = nvsched._native.timestamp_ms()
    return run_all(_run_task, [(text, t, common) for t in tasks], backend, workers, address, progress)


def run_all(fn, calls, backend="local", workers=None, address=None, progress=None) -> list:
    """fn(*args) for every args in calls, in parallel; results in the order of calls.

    fn must be a module-level function (Ray ships it to other processes by name)."""
    if backend == "local":
        return _run_local(fn, calls, workers, progress)
    if backend == "ray":
        return _run_ray(fn, calls, workers, address, progress)
    raise ValueError(f"backend {backend!r}: expected 'local' or 'ray'")


def _run_local(fn, calls, workers, progress):
    results: list = [None] * len(calls)
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        futures = {pool.submit(fn, *args): i for i, args in enumerate(calls)}
        try:
            for done, fut in enumerate(concurrent.futures.as_completed(futures), 1):
                results[futures[fut]] = fut.result()
                if progress:
                    progress(done, len(calls))
        except BaseException:
            # a failed run or Ctrl-C (KeyboardInterrupt from a run it stopped) ends the
            # sweep: the runs not started yet never start
            for fut in futures:
                fut.cancel()
            raise
    return results


def _run_ray(fn, calls, workers, address, progress):
    try:
        import ray
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise RuntimeError("backend 'ray' needs Ray: pip install 'ray>=2.9'") from e
    started_here = not ray.is_initialized()
    if started_here:
        # workers may start in another directory: give them the experiments the driver sees
        experiments = os.path.abspath(nvsched._native.experiments_dir())
        ray.init(address=address, num_cpus=None if address else workers, include_dashboard=False,
                 log_to_driver=False, configure_logging=False,
                 runtime_env={"env_vars": {"NVSCHED_EXPERIMENTS": experiments}})
    try:
        remote = ray.remote(num_cpus=1)(fn)
        pending = {remote.remote(*args): i for i, args in enumerate(calls)}
        results: list = [None] * len(calls)
        done = 0
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                results[pending.pop(ref)] = ray.get(ref)
                done += 1
                if progress:
                    progress(done, len(calls))
        return results
    finally:
        if started_here:
            ray.shutdown()


def _simulate_planned(name: str, quick: bool, indices: List[int], device: Optional[str] = None,
                      device_set: Sequence[Tuple[str, str]] = ()) -> List[str]:
    return nvsched._native.repro_simulate(name, quick, indices, device, list(device_set))


def _batches(runs: Sequence[dict], size: int) -> List[List[dict]]:
    """Runs grouped by drive state (a task preconditions its state once), in batches."""
    by_state: Dict[str, List[dict]] = {}
    for r in runs:
        by_state.setdefault(r["state"], []).append(r)
    return [group[i:i + size] for group in by_state.values() for i in range(0, len(group), size)]


def repro(
    name: str,
    *,
    quick: bool = True,
    out: Optional[str] = None,
    backend: str = "local",
    workers: Optional[int] = None,
    address: Optional[str] = None,
    force: bool = False,
    plots: bool = True,
    progress: Optional[Callable[[int, int], None]] = None,
    runs_per_task: int = 4,
    device: Optional[str] = None,
    device_set: Optional[Mapping[str, object]] = None,
) -> dict:
    """A paper's reproduction (``nvsched repro NAME``) with its runs spread over threads or
    a Ray cluster: the runs not yet in ``out``'s cache (all with ``force``) are simulated
    by the backend and stored there, then the table, results.json, report.md and plots
    are written as the command line writes them. Returns {"table": text, "runs": n,
    "simulated": n, "claims": [...]}. A task simulates up to ``runs_per_task`` runs of
    one drive state, so that they share its preconditioning (seconds for a full drive);
    progress counts tasks. ``device`` and ``device_set`` move the experiment to another
    drive as ``repro --device PROFILE --device-set KEY=VALUE`` does.
    """
    out = out or os.path.join("results", name)
    if device is not None and os.path.isfile(device):
        device = os.path.abspath(device)  # Ray's workers may start elsewhere
    pairs = [(str(k), str(v)) for k, v in (device_set or {}).items()]
    # a local backend holds every drive state in this process (Ray's workers each their own)
    memory = nvsched._native.repro_memory_warning(name, (workers or os.cpu_count() or 1) if backend == "local" else 1,
                                                  device, pairs)
    if memory:
        warnings.warn(memory.replace("-j 1", "workers=1"), stacklevel=2)
    plan = json.loads(nvsched._native.repro_plan(name, quick, out, device, pairs))
    todo = [p for p in plan if force or not p["cached"]]
    batches = _batches(todo, max(1, runs_per_task))
    entries = run_all(_simulate_planned, [(name, quick, [p["index"] for p in b], device, pairs) for b in batches],
                      backend, workers, address, progress)
    for batch, batch_entries in zip(batches, entries):
        for p, entry in zip(batch, batch_entries):
            nvsched._native.repro_store(out, p["hash"], entry)
    table, claims = nvsched._native.repro_report(name, quick, out, plots, device, pairs)
    return {"table": table, "runs": len(plan), "simulated": len(todo), "claims": json.loads(claims)}


def repro_targets(name: str, out: Optional[str] = None) -> List[Tuple[str, str]]:
    """(reproduction, results directory) pairs for ``name``, or for every reproduction
    when ``name`` is ``all``, laid out as ``nvsched repro`` lays them out: ``out`` itself
    for one reproduction, ``out/NAME`` for each of ``all``; ``results/NAME`` by default."""
    return nvsched._native.repro_targets(name, out)


def _tune_measure(text: str, vars: Dict[str, str], common: dict, seed: int, bound: Optional[int],
                  policy: Optional[str] = None, latency_job: Optional[str] = None):
    return nvsched._native.tune_measure(text, common["source"], list(vars.items()), common["device"],
                                        list(common["device_set"].items()), common["precondition"], seed, bound,
                                        policy, latency_job)


_DEFAULT_DEVICE = "970evoplus-250g"


def _on_device(filename: Optional[str], engine: Optional[str],
               allow_destructive: bool) -> Optional[Tuple[Optional[str], bool]]:
    """(filename, allow_destructive) where a tuning sweep runs on a real device
    (``filename``, or ``engine="uring"`` for the job file's own files), else None."""
    if engine not in (None, "sim", "uring"):
        raise ValueError(f"engine: {engine!r}: expected 'sim' or 'uring'")
    if filename is not None and engine == "sim":
        raise ValueError("filename= runs on a real device: leave out engine='sim'")
    if filename is None and engine != "uring":
        if allow_destructive:
            raise ValueError("allow_destructive is for real devices: give filename= or engine='uring'")
        return None
    return (None if filename is None else str(filename)), allow_destructive


def _check_device_runs(device, device_set, precondition, backend) -> None:
    """Refuses the simulated drive's settings, and other backends, for runs on a real device."""
    simulated = [("device", device != _DEFAULT_DEVICE), ("device_set", bool(device_set)),
                 ("precondition", precondition is not None)]
    given = [name for name, set_ in simulated if set_]
    if given:
        raise ValueError(f"{given[0]} describes the simulated drive; these runs are on a real one")
    if backend != "local":
        raise ValueError("runs on a real device go one at a time on this machine: leave backend='local'")


def _tune_runs(job, configs, seed, seeds, vars, device, device_set, precondition, backend, workers, address,
               progress, on_device=None) -> list:
    """One row per configuration (bound, policy spec, latency-critical job) and seed, seeds
    innermost, as the command line's tuner runs them. ``on_device`` (filename or None,
    allow_destructive) runs them on a real device, one at a time, seeds outermost."""
    seed_list = [int(s) for s in seeds] if seeds is not None else [int(seed)]
    if not seed_list:
        raise ValueError("seeds: give at least one seed")
    var_map = {str(k): str(v) for k, v in (vars or {}).items()}
    if on_device is not None:
        _check_device_runs(device, device_set, precondition, backend)
        filename, allow_destructive = on_device
        text, source = nvsched.job_text(job)
        latency_job = configs[0][2]
        pairs = [(bound, policy) for bound, policy, _ in configs]
        rows, notes = nvsched._native.tune_device(text, source, list(var_map.items()), pairs, seed_list,
                                                  latency_job, filename, allow_destructive)
        for note in notes:
            warnings.warn(note, UserWarning, stacklevel=3)
        if progress is not None:
            progress(len(rows), len(rows))
        return rows
    text, common = _workload(job, device, device_set, precondition)
    calls = [(text, var_map, common, s, *config) for config in configs for s in seed_list]
    return run_all(_tune_measure, calls, backend, workers, address, progress)


def tune_k2(
    job: nvsched.JobInput,
    objective: str,
    *,
    bounds: Sequence[int] = (1, 2, 4, 8, 16, 32, 64),
    seed: int = 0,
    seeds: Optional[Sequence[int]] = None,
    vars: Optional[Mapping[str, str]] = None,
    device: str = "970evoplus-250g",
    device_set: Optional[Mapping[str, object]] = None,
    precondition: Optional[str] = None,
    backend: str = "local",
    workers: Optional[int] = None,
    address: Optional[str] = None,
    progress: Optional[Callable[[int, int], None]] = None,
    center: Optional[str] = None,
    filename: Optional[str] = None,
    engine: Optional[str] = None,
    allow_destructive: bool = False,
) -> dict:
    """``nvsched tune k2`` with its runs spread over threads or Ray: sweeps ``none`` and K2
    at each bound, then applies the K2 analysis' rule for ``objective`` (``latency:50%``
    or ``bandwidth:90%``). With ``seeds`` (instead of ``seed``) every configuration runs
    once per seed and the rule applies to the means (``center="median"``: the medians), as
    ``nvsched tune k2 --seeds``. ``filename`` (every job's file) or ``engine="uring"``
    (the job file's own files) runs on a real file or device through io_uring instead, as
    ``nvsched tune k2 --filename``: one run at a time, seeds outermost, on the medians
    unless ``center`` says otherwise, a file the first run creates removed at the end;
    writing to an existing file or a block device needs ``allow_destructive``. Returns
    {"chosen": bound or None, "why": sentence, "table": text, "rows": [(policy, bound,
    rt_p999_us, total_bw_mbps), ...]} (one row per run).
    """
    if not bounds or any(int(b) < 1 for b in bounds):
        raise ValueError("bounds: give bounds >= 1")
    on_device = _on_device(filename, engine, allow_destructive)
    center = center or ("median" if on_device else "mean")
    nvsched._native.tune_choose([], objective, center)  # a bad objective fails before the sweep
    configs = [(b, None, None) for b in [None, *[int(b) for b in bounds]]]
    rows = _tune_runs(job, configs, seed, seeds, vars, device, device_set, precondition, backend, workers, address,
                      progress, on_device)
    chosen, why, table_text = nvsched._native.tune_choose(rows, objective, center)
    return {"chosen": chosen, "why": why, "table": table_text, "rows": rows}


def tune(
    job: nvsched.JobInput,
    policy: str,
    params: Union[Mapping[str, Sequence[object]], Sequence[str]],
    objective: str,
    *,
    latency_job: Optional[str] = None,
    seed: int = 0,
    seeds: Optional[Sequence[int]] = None,
    vars: Optional[Mapping[str, str]] = None,
    device: str = "970evoplus-250g",
    device_set: Optional[Mapping[str, object]] = None,
    precondition: Optional[str] = None,
    backend: str = "local",
    workers: Optional[int] = None,
    address: Optional[str] = None,
    progress: Optional[Callable[[int, int], None]] = None,
    center: Optional[str] = None,
    filename: Optional[str] = None,
    engine: Optional[str] = None,
    allow_destructive: bool = False,
) -> dict:
    """``nvsched tune POLICY --param ...`` with its runs spread over threads or Ray: runs
    ``none`` and ``policy`` (``ID`` or ``ID:key=value,...``) with every combination of
    ``params`` ({name: [values]}, or ["name=v1,v2", ...]), then picks for ``objective``:
    ``latency:ALPHA%`` the most bandwidth among the settings whose p99.9 is within ALPHA of
    none's, ``bandwidth:BETA%`` the lowest p99.9 among those that keep BETA of none's
    bandwidth. The p99.9 is ``latency_job``'s, else the real-time job's. With ``seeds``
    the rule applies to each setting's means (``center="median"``: medians). ``filename``,
    ``engine`` and ``allow_destructive`` run on a real device, as in :func:`tune_k2`. Returns
    {"chosen": spec or None, "why": sentence, "table": text, "settings": [spec, ...],
    "rows": [(policy, None, p999_us, total_bw_mbps), ...]} (one row per run).
    """
    if isinstance(params, Mapping):
        params = [f"{name}={','.join(str(v) for v in values)}" for name, values in params.items()]
    if not params:
        raise ValueError("params: give at least one parameter and its values")
    settings = nvsched._native.tune_grid(policy, [str(p) for p in params])
    on_device = _on_device(filename, engine, allow_destructive)
    center = center or ("median" if on_device else "mean")
    nvsched._native.tune_choose_setting([], objective, None, center)  # a bad objective fails before the sweep
    configs = [(None, spec, latency_job) for spec in [None, *settings]]
    rows = _tune_runs(job, configs, seed, seeds, vars, device, device_set, precondition, backend, workers, address,
                      progress, on_device)
    chosen, why, table_text = nvsched._native.tune_choose_setting(rows, objective, latency_job, center)
    return {"chosen": chosen, "why": why, "table": table_text, "settings": settings, "rows": rows}


def table(results: Sequence[dict]) -> str:
    """One line per run: policy, seed, variables, total bandwidth and the first job's
    p99.9 completion latency (the K2 experiments' real-time job)."""
    rows = [("policy", "seed", "vars", "total MB/s", "job 1 p99.9 (us)")]
    for r in results:
        s = nvsched.summary(r["report"])
        first = s["jobs"][0] if s["jobs"] else {}
        d = first.get("read") or first.get("write") or {}
        rows.append((
            r["sched"], str(r["seed"]), ",".join(f"{k}={v}" for k, v in sorted(r["vars"].items())) or "-",
            f"{s['total_bw_mbps']:.1f}", f"{d.get('p99_9_us', 0):.1f}",
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
                     for row in rows)


def _seeds(spec: str) -> List[int]:
    seeds: List[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        try:
            seeds.extend(range(int(lo), int(hi) + 1) if hi else [int(lo)])
        except ValueError:
            raise argparse.ArgumentTypeError(f"--seeds {spec!r}: expected N, N-M or a comma list of them") from None
    return seeds


def _key_value(spec: str):
    key, sep, value = spec.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{spec!r}: expected KEY=VALUE")
    return key.strip(), value.strip()


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="nvsched-sweep",
        description="Run one fio job file over policies x seeds on nvsched's simulated SSD, "
        "or a paper's whole reproduction (--repro), in parallel threads or on a Ray cluster.",
    )
    p.add_argument("jobfile", nargs="?", help="fio job file (or --experiment, or --repro)")
    p.add_argument("--experiment", metavar="NAME:VARIANT[:STATE]",
                   help="a reproduction's job, device and overrides, e.g. k2-analysis:randread")
    p.add_argument("--repro", metavar="NAME",
                   help="run reproduction NAME, or all of them (as `nvsched repro NAME|all`), its runs spread "
                        "over the backend")
    p.add_argument("--full", action="store_true",
                   help="with --experiment or --repro: the paper's durations, not quick mode")
    p.add_argument("--sched", action="append", default=[], help="a policy, e.g. k2:bound=4 (repeatable)")
    p.add_argument("--policy", action="append", default=[], metavar="FILE.py:EXPR",
                   help="a policy written in Python: EXPR evaluated in FILE.py makes one, e.g. "
                        "examples/python-policy.py:RtFirstBounded(2) (repeatable; see nvsched.run)")
    p.add_argument("--seeds", type=_seeds, default=None,
                   help="N, N-M or a comma list (default 0; with --experiment the reproduction's seeds)")
    p.add_argument("--var", type=_key_value, action="append", default=[], metavar="NAME=VALUE",
                   help="a ${NAME} of the job file (repeatable)")
    p.add_argument("--device", help="profile name or TOML file (default 970evoplus-250g; with --repro: the "
                   "experiment on this drive instead of its own)")
    p.add_argument("--device-set", type=_key_value, action="append", default=[], metavar="KEY=VALUE",
                   help="profile override (repeatable)")
    p.add_argument("--precondition", help="clean, partial:FRACTION or full")
    p.add_argument("--backend", choices=["local", "ray"], default="local",
                   help="local: threads on this machine (default); ray: tasks on a Ray cluster")
    p.add_argument("--workers", type=int, help="threads (local) or CPUs of a new local Ray instance")
    p.add_argument("--address", help="Ray cluster to join, e.g. auto or ray://host:10001")
    p.add_argument("--out", help="sweeps: write every run's report here as JSON; "
                   "--repro: the results directory (default results/NAME)")
    p.add_argument("--tune-k2", metavar="OBJECTIVE",
                   help="instead of --sched: sweep none and K2's bounds and choose one for latency:ALPHA%% or "
                   "bandwidth:BETA%% (as `nvsched tune k2`)")
    p.add_argument("--bounds", default="1,2,4,8,16,32,64", help="with --tune-k2: the bounds to sweep")
    p.add_argument("--tune", metavar="POLICY",
                   help="instead of --sched: sweep none and POLICY (ID or ID:key=value,...) over --param's values "
                   "and choose for --objective (as `nvsched tune POLICY --param ...`)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=V1,V2,...",
                   help="with --tune: a parameter and the values to try (repeatable: every combination)")
    p.add_argument("--objective", metavar="OBJECTIVE", help="with --tune: latency:ALPHA%% or bandwidth:BETA%%")
    p.add_argument("--job", metavar="NAME",
                   help="with --tune: the job whose p99.9 the objective is about (default: the real-time job)")
    p.add_argument("--filename", metavar="PATH",
                   help="run on this real file or block device through io_uring (every job's file), one run at a "
                        "time, as `nvsched sweep --filename` and `nvsched tune --filename`")
    p.add_argument("--engine", choices=["sim", "uring"],
                   help="uring: run on the job file's own files or devices")
    p.add_argument("--allow-destructive", action="store_true",
                   help="on a real device: let the runs write to an existing file or a block device")
    p.add_argument("--center", choices=["mean", "median"],
                   help="with --tune-k2 or --tune: choose on each setting's mean (default) or median over --seeds")
    p.add_argument("--force", action="store_true", help="with --repro: ignore cached runs")
    p.add_argument("--runs-per-task", type=int, default=4,
                   help="with --repro: runs of one drive state per task (they share its preconditioning)")
    args = p.parse_args(argv)
    if sum(x is not None for x in (args.jobfile, args.experiment, args.repro)) != 1:
        p.error("give one of: a job file, --experiment NAME:VARIANT[:STATE], --repro NAME")
    if args.repro is None and not args.sched and not args.policy and not args.tune_k2 and not args.tune:
        p.error("--sched or --policy (or --tune-k2, or --tune) is required for a sweep")
    if (args.tune_k2 or args.tune) and (args.sched or args.policy):
        p.error("--tune-k2 and --tune choose the policies themselves: drop --sched and --policy")
    if args.tune_k2 and args.tune:
        p.error("give --tune-k2 or --tune, not both")
    if args.tune and (not args.param or not args.objective):
        p.error("--tune needs --param NAME=V1,V2,... and --objective latency:ALPHA% or bandwidth:BETA%")
    if not args.tune and (args.param or args.objective or args.job):
        p.error("--param, --objective and --job go with --tune")
    if args.center and not (args.tune or args.tune_k2):
        p.error("--center goes with --tune-k2 or --tune")
    if (args.filename or args.engine or args.allow_destructive) and (args.repro or args.experiment):
        p.error("--filename, --engine and --allow-destructive run a job file on a real device: not with --repro "
                "or --experiment")
    if args.repro is not None and (args.sched or args.policy or args.var or args.precondition
                                   or args.tune_k2 or args.tune):
        p.error("--repro takes its policies, variables and drive states from the experiment's manifest")
    started = time.monotonic()

    def show_warning(message, category, filename, lineno, file=None, line=None):  # noqa: ARG001 - warnings' hook
        print(f"nvsched-sweep: warning: {message}", file=sys.stderr)

    warnings.showwarning = show_warning
    unit = "tasks" if args.repro else "runs"

    def show(done: int, total: int) -> None:
        if sys.stderr.isatty():
            print(f"\rnvsched-sweep: {done}/{total} {unit}", end="" if done < total else "\n", file=sys.stderr)

    try:
        if args.repro:
            for name, out in repro_targets(args.repro, args.out):
                started = time.monotonic()
                r = repro(name, quick=not args.full, out=out, backend=args.backend, workers=args.workers,
                          address=args.address, force=args.force, progress=show, runs_per_task=args.runs_per_task,
                          device=args.device, device_set=dict(args.device_set))
                print(r["table"])
                print(f"nvsched-sweep: {name}: {r['runs']} runs ({r['simulated']} simulated on {args.backend}) "
                      f"in {time.monotonic() - started:.1f}s; results in {out}", file=sys.stderr)
            return 0
        job, device, device_set = args.jobfile, args.device or _DEFAULT_DEVICE, dict(args.device_set)
        seeds = args.seeds if args.seeds is not None else [0]
        if args.experiment:
            parts = args.experiment.split(":")
            if len(parts) not in (2, 3):
                p.error(f"--experiment {args.experiment!r}: expected NAME:VARIANT[:STATE], e.g. k2-analysis:randread")
            cell = nvsched.experiment_cell(*parts[:2], parts[2] if len(parts) == 3 else None, quick=not args.full,
                                           device=args.device)
            job, device = cell["job"], cell["device"]
            device_set = {**cell["device_set"], **device_set}
            if args.seeds is None:  # the reproduction's own runs
                seeds = cell["seeds"]
        if args.tune_k2:
            try:
                bounds = [int(b) for b in args.bounds.split(",")]
            except ValueError:
                p.error(f"--bounds {args.bounds!r}: expected a comma list of integers")
            t = tune_k2(job, args.tune_k2, bounds=bounds, seeds=seeds, vars=dict(args.var), device=device,
                        device_set=device_set, precondition=args.precondition, backend=args.backend,
                        workers=args.workers, address=args.address, progress=show, center=args.center,
                        filename=args.filename, engine=args.engine, allow_destructive=args.allow_destructive)
            print(t["table"], end="")
            print(f"\n{t['why']}")
            if t["chosen"] is not None:
                print(f"Use: --sched k2:bound={t['chosen']}")
            return 0
        if args.tune:
            t = tune(job, args.tune, args.param, args.objective, latency_job=args.job, seeds=seeds,
                     vars=dict(args.var), device=device, device_set=device_set, precondition=args.precondition,
                     backend=args.backend, workers=args.workers, address=args.address, progress=show,
                     center=args.center,
                        filename=args.filename, engine=args.engine, allow_destructive=args.allow_destructive)
            print(t["table"], end="")
            print(f"\n{t['why']}")
            if t["chosen"] is not None:
                print(f"Use: --sched {t['chosen']}")
            return 0
        from_files = []
        for spec in args.policy:
            factory = PolicyFromFile(spec)
            try:
                factory()  # a missing file, a syntax error or a bad expression fails before the sweep
            except Exception as e:  # noqa: BLE001 - whatever the user's file raises
                raise ValueError(f"--policy {spec!r}: {type(e).__name__}: {e}") from e
            from_files.append((factory.label, factory))
        tasks = plan([*args.sched, *from_files], seeds, [dict(args.var)])
        results = sweep(job, tasks, device=device, device_set=device_set, precondition=args.precondition,
                        backend=args.backend, workers=args.workers, address=args.address, progress=show,
                        filename=args.filename, engine=args.engine, allow_destructive=args.allow_destructive)
    except (ValueError, OSError, RuntimeError) as e:
        print(f"nvsched-sweep: {e}", file=sys.stderr)
        return 1
    print(table(results))
    print(f"nvsched-sweep: {len(results)} runs on {args.backend} in {time.monotonic() - started:.1f}s",
          file=sys.stderr)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            kept = [{k: v for k, v in asdict(t).items() if k != "policy"} for t in tasks]
            json.dump({"tasks": kept, "runs": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
