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
"""

from __future__ import annotations

import argparse
import concurrent.futures
import itertools
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Sequence

import nvsched


@dataclass(frozen=True)
class Task:
    """One run of a sweep."""

    sched: str
    seed: int
    vars: Dict[str, str] = field(default_factory=dict)


def plan(scheds: Sequence[str], seeds: Sequence[int], var_sets: Sequence[Mapping[str, str]] = ({},)) -> List[Task]:
    """Every combination, policies outermost."""
    return [Task(s, int(seed), dict(v)) for s, v, seed in itertools.product(scheds, var_sets, seeds)]


def _run_task(job_text: str, task: Task, common: dict) -> dict:
    report = nvsched.run(job_text, task.sched, seed=task.seed, vars=task.vars, **common)
    return {"sched": task.sched, "seed": task.seed, "vars": task.vars, "report": report}


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
) -> List[dict]:
    """Runs every task; returns {sched, seed, vars, report} per task, in task order.

    backend: ``"local"`` (threads; ``workers`` of them, default one per core) or
    ``"ray"`` (``address`` of a running cluster, default: start a local one with
    ``workers`` CPUs). progress(done, total) is called as runs finish.
    """
    text, source = nvsched.job_text(job)
    if "\n" not in text:
        text += "\n"  # keep it job text, not a path, on the workers
    # One timestamp for the whole sweep: reports differ only where the inputs do.
    common = {
        "device": device,
        "device_set": dict(device_set or {}),
        "precondition": precondition,
        "timestamp_ms": nvsched._native.timestamp_ms(),
    }
    total = len(tasks)
    if backend == "local":
        return _sweep_local(text, tasks, common, workers, progress, total)
    if backend == "ray":
        return _sweep_ray(text, tasks, common, workers, address, progress, total)
    raise ValueError(f"backend {backend!r}: expected 'local' or 'ray'")


def _sweep_local(text, tasks, common, workers, progress, total):
    results: List[Optional[dict]] = [None] * total
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        futures = {pool.submit(_run_task, text, t, common): i for i, t in enumerate(tasks)}
        for done, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            results[futures[fut]] = fut.result()
            if progress:
                progress(done, total)
    return results  # type: ignore[return-value]


def _sweep_ray(text, tasks, common, workers, address, progress, total):
    try:
        import ray
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise RuntimeError("backend 'ray' needs Ray: pip install 'ray>=2.9'") from e
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=address, num_cpus=None if address else workers, include_dashboard=False,
                 log_to_driver=False, configure_logging=False)
    try:
        remote = ray.remote(num_cpus=1)(_run_task)
        text_ref = ray.put(text)
        pending = {remote.remote(text_ref, t, common): i for i, t in enumerate(tasks)}
        results: List[Optional[dict]] = [None] * total
        done = 0
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                results[pending.pop(ref)] = ray.get(ref)
                done += 1
                if progress:
                    progress(done, total)
        return results  # type: ignore[return-value]
    finally:
        if started_here:
            ray.shutdown()


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
        "in parallel threads or on a Ray cluster; print a table, write all reports as JSON.",
    )
    p.add_argument("jobfile", nargs="?", help="fio job file (or use --experiment)")
    p.add_argument("--experiment", metavar="NAME:VARIANT[:STATE]",
                   help="a reproduction's job, device and overrides, e.g. k2-analysis:randread")
    p.add_argument("--full", action="store_true", help="with --experiment: the paper's durations, not quick mode")
    p.add_argument("--sched", action="append", required=True, help="a policy, e.g. k2:bound=4 (repeatable)")
    p.add_argument("--seeds", type=_seeds, default=[0], help="N, N-M or a comma list (default 0)")
    p.add_argument("--var", type=_key_value, action="append", default=[], metavar="NAME=VALUE",
                   help="a ${NAME} of the job file (repeatable)")
    p.add_argument("--device", default="970evoplus-250g", help="profile name or TOML file")
    p.add_argument("--device-set", type=_key_value, action="append", default=[], metavar="KEY=VALUE",
                   help="profile override (repeatable)")
    p.add_argument("--precondition", help="clean, partial:FRACTION or full")
    p.add_argument("--backend", choices=["local", "ray"], default="local")
    p.add_argument("--workers", type=int, help="threads (local) or CPUs of a new local Ray instance")
    p.add_argument("--address", help="Ray cluster to join, e.g. auto or ray://host:10001")
    p.add_argument("--out", help="write every run's report here as JSON")
    args = p.parse_args(argv)
    if (args.jobfile is None) == (args.experiment is None):
        p.error("give a job file or --experiment NAME:VARIANT[:STATE], not both")
    job, device, device_set = args.jobfile, args.device, dict(args.device_set)
    if args.experiment:
        parts = args.experiment.split(":")
        if len(parts) not in (2, 3):
            p.error(f"--experiment {args.experiment!r}: expected NAME:VARIANT[:STATE], e.g. k2-analysis:randread")
        try:
            cell = nvsched.experiment_cell(*parts[:2], parts[2] if len(parts) == 3 else None, quick=not args.full)
        except ValueError as e:
            print(f"nvsched-sweep: {e}", file=sys.stderr)
            return 1
        job, device = cell["job"], cell["device"]
        device_set = {**cell["device_set"], **device_set}

    tasks = plan(args.sched, args.seeds, [dict(args.var)])
    started = time.monotonic()

    def show(done: int, total: int) -> None:
        if sys.stderr.isatty():
            print(f"\rnvsched-sweep: {done}/{total} runs", end="" if done < total else "\n", file=sys.stderr)

    try:
        results = sweep(job, tasks, device=device, device_set=device_set,
                        precondition=args.precondition, backend=args.backend, workers=args.workers,
                        address=args.address, progress=show)
    except (ValueError, OSError, RuntimeError) as e:
        print(f"nvsched-sweep: {e}", file=sys.stderr)
        return 1
    print(table(results))
    print(f"nvsched-sweep: {len(results)} runs on {args.backend} in {time.monotonic() - started:.1f}s",
          file=sys.stderr)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"tasks": [asdict(t) for t in tasks], "runs": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
