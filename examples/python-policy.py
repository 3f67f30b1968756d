"""A scheduling policy written in Python, run by nvsched's engine beside built-in ones.

RtFirstBounded is K2's idea in a few lines: real-time requests go first, and at most
`bound` requests are at the device at once. It runs on the K2 analysis' random-read mix
(one real-time reader every 2 ms, three best-effort readers at depth 32) on the
half-full 970 EVO Plus, next to `none` and the built-in `k2:bound=2`.

    make python && .venv/bin/python examples/python-policy.py
"""

import collections
import pathlib

import nvsched

ROOT = pathlib.Path(__file__).resolve().parents[1]


class RtFirstBounded:
    name = "rt-first-bounded"
    dispatch_cost_ns = 1_000  # host time per dispatch, as a kernel policy would spend

    def __init__(self, bound):
        self.bound = bound
        self.queues = {"rt": collections.deque(), "other": collections.deque()}
        self.inflight = 0

    def insert(self, rq, now_ns):
        self.queues["rt" if rq.prio_class == "rt" else "other"].append(rq)

    def dispatch(self, now_ns, inflight, queue_depth):
        if self.inflight >= self.bound:
            return None
        queue = self.queues["rt"] or self.queues["other"]
        if not queue:
            return None
        self.inflight += 1
        return queue.popleft()

    def complete(self, rq, now_ns, dispatched_ns):
        self.inflight -= 1


def main():
    cell = nvsched.experiment_cell("k2-analysis", "randread", "partial")
    kw = dict(device=cell["device"], device_set=cell["device_set"], seed=1, timestamp_ms=0,
              source=cell["job_path"])
    runs = [("none", nvsched.run(cell["job"], "none", **kw)),
            ("k2:bound=2", nvsched.run(cell["job"], "k2:bound=2", **kw)),
            ("python:rt-first-bounded(2)", nvsched.run(cell["job"], policy=RtFirstBounded(2), **kw))]
    print(f"{'policy':<28}{'RT p99.9 (us)':>15}{'total MB/s':>12}")
    for name, report in runs:
        s = nvsched.summary(report)
        print(f"{name:<28}{s['jobs'][0]['read']['p99_9_us']:>15.0f}{s['total_bw_mbps']:>12.1f}")


if __name__ == "__main__":
    main()
