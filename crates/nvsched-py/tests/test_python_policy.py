"""Policies written in Python run in the same engine as the built-in ones: a FIFO gives
exactly `none`'s report, a bound on requests in flight holds, and a broken policy fails
the run with its own traceback."""

import collections
import pathlib
import subprocess
import sys

import pytest

import nvsched
from nvsched import sweep as sw

ROOT = pathlib.Path(__file__).resolve().parents[3]
K2_JOB = ROOT / "experiments" / "k2-analysis" / "k2.fio"
SHORT = {"OP": "randread", "RUNTIME": "300ms", "RAMP": "0"}
MIXED = ("[global]\nfilename=/dev/nvme0n1\nsize=64m\nbs=4k\nruntime=100ms\ntime_based\n"
         "ioengine=libaio\niodepth=16\n[a]\nrw=randread\n[b]\nrw=randwrite\n")


class Fifo:
    """Linux's `none`, in Python."""

    def __init__(self):
        self.queue = collections.deque()

    def insert(self, rq, now_ns):
        self.queue.append(rq)

    def dispatch(self, now_ns, inflight, queue_depth):
        return self.queue.popleft() if self.queue else None

    def requeue(self, rq, now_ns):
        self.queue.appendleft(rq)


class BoundedRtFirst:
    """K2's idea in a few lines: real-time requests first, at most `bound` in flight."""

    name = "bounded-rt-first"

    def __init__(self, bound):
        self.bound = bound
        self.rt, self.others = collections.deque(), collections.deque()
        self.inflight = 0
        self.most = 0

    def insert(self, rq, now_ns):
        (self.rt if rq.prio_class == "rt" else self.others).append(rq)

    def dispatch(self, now_ns, inflight, queue_depth):
        if self.inflight >= self.bound:
            return None
        queue = self.rt or self.others
        if not queue:
            return None
        self.inflight += 1
        self.most = max(self.most, self.inflight)
        return queue.popleft()

    def complete(self, rq, now_ns, dispatched_ns):
        assert now_ns >= dispatched_ns
        self.inflight -= 1

    def report(self):
        return {"most_in_flight": self.most}


def without_policy(report):
    rest = dict(report["nvsched"])
    del rest["policy"]
    return report["jobs"], rest


def test_a_python_fifo_gives_nones_report():
    py = nvsched.run(MIXED, policy=Fifo(), seed=3, timestamp_ms=0)
    builtin = nvsched.run(MIXED, "none", seed=3, timestamp_ms=0)
    assert without_policy(py) == without_policy(builtin)
    assert py["nvsched"]["policy"]["spec"] == "python:Fifo"
    assert py["nvsched"]["policy"]["id"] == "python"


def test_a_python_bound_holds_and_cuts_the_real_time_tail():
    kw = dict(vars=SHORT, precondition="partial:0.5", device_set={"host.cpus": 1}, timestamp_ms=0)
    bounded = BoundedRtFirst(2)
    r = nvsched.run(K2_JOB, policy=bounded, **kw)
    assert bounded.most == 2 and bounded.inflight == 0
    assert r["nvsched"]["policy"]["spec"] == "python:bounded-rt-first"
    assert r["nvsched"]["policy"]["counters"] == {"most_in_flight": 2.0}
    free = nvsched.run(K2_JOB, policy=Fifo(), **kw)
    rt_tail = lambda rep: nvsched.summary(rep)["jobs"][0]["read"]["p99_9_us"]
    assert rt_tail(r) < rt_tail(free) / 3


def test_host_cost_attributes_are_charged():
    class Slow(Fifo):
        dispatch_cost_ns = 20_000

    job = "[a]\nfilename=/dev/nvme0n1\nrw=randread\nsize=16m\nruntime=50ms\ntime_based\n"
    slow = nvsched.run(job, policy=Slow(), timestamp_ms=0)
    fast = nvsched.run(job, policy=Fifo(), timestamp_ms=0)
    assert slow["nvsched"]["policy"]["host_cost_ns"]["dispatch"] == 20_000
    mean = lambda rep: rep["jobs"][0]["read"]["clat_ns"]["mean"]
    assert mean(slow) >= mean(fast) + 19_000


def test_next_wakeup_releases_held_requests():
    class EveryMillisecond(Fifo):
        """Sends requests only at whole milliseconds: without a wake-up, nothing would
        call dispatch when one comes."""

        def dispatch(self, now_ns, inflight, queue_depth):
            return super().dispatch(now_ns, inflight, queue_depth) if now_ns % 1_000_000 == 0 else None

        def next_wakeup(self):
            return self.next_ms if self.queue else None

        def insert(self, rq, now_ns):
            super().insert(rq, now_ns)
            self.next_ms = (now_ns // 1_000_000 + 1) * 1_000_000

    job = "[a]\nfilename=/dev/nvme0n1\nrw=randread\nsize=16m\nnumber_ios=20\n"
    r = nvsched.run(job, policy=EveryMillisecond(), timestamp_ms=0)
    read = r["jobs"][0]["read"]
    assert read["total_ios"] == 20
    # each request waits for the next whole millisecond
    assert read["clat_ns"]["min"] >= 900_000


def test_a_broken_policy_fails_the_run_with_its_traceback():
    class Raises(Fifo):
        def dispatch(self, now_ns, inflight, queue_depth):
            raise KeyError("no such queue")

    with pytest.raises(RuntimeError, match=r"(?s)python policy: dispatch: KeyError: 'no such queue'.*Traceback") as e:
        nvsched.run(MIXED, policy=Raises(), timestamp_ms=0)
    assert isinstance(e.value.__cause__, KeyError)

    class Interrupted(Fifo):
        def insert(self, rq, now_ns):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        nvsched.run(MIXED, policy=Interrupted(), timestamp_ms=0)

    class Twice(Fifo):
        """Hands each request out twice."""

        again = None

        def dispatch(self, now_ns, inflight, queue_depth):
            rq, self.again = (self.again, None) if self.again else (super().dispatch(now_ns, inflight, queue_depth),) * 2
            return rq

    with pytest.raises(RuntimeError, match=r"dispatch: ValueError: returned request \d+, which is not queued"):
        nvsched.run(MIXED, policy=Twice(), timestamp_ms=0)

    class Wrong(Fifo):
        def dispatch(self, now_ns, inflight, queue_depth):
            return 7 if self.queue else None

    with pytest.raises(RuntimeError, match=r"returned a int, not a Request or None"):
        nvsched.run(MIXED, policy=Wrong(), timestamp_ms=0)


def test_what_a_policy_object_needs_is_checked_first():
    with pytest.raises(TypeError, match=r"no dispatch\(\) method"):
        nvsched.run(MIXED, policy=type("OnlyInsert", (), {"insert": lambda self, rq, now: None})())
    with pytest.raises(ValueError, match="either sched"):
        nvsched.run(MIXED, "none", policy=Fifo())
    with pytest.raises(TypeError, match="dispatch_cost_ns must be a whole number"):
        nvsched.run(MIXED, policy=type("Bad", (Fifo,), {"dispatch_cost_ns": -1})())
    job = MIXED.replace("[global]", "[global]\nioscheduler=mq-deadline")
    with pytest.warns(UserWarning, match=r"the policy object \(python:Fifo\) overrides the job file's ioscheduler=mq-deadline"):
        nvsched.run(job, policy=Fifo(), timestamp_ms=0)


def test_requests_carry_what_policies_decide_on():
    seen = []

    class Records(Fifo):
        def insert(self, rq, now_ns):
            seen.append(rq)
            super().insert(rq, now_ns)

    job = ("[global]\nfilename=/dev/nvme0n1\nsize=16m\nbs=8k\nnumber_ios=4\n"
           "[rt]\nrw=randread\nprioclass=1\nprio=2\n[w]\nrw=write\nnice=5\nsync=1\n")
    nvsched.run(job, policy=Records(), timestamp_ms=0)
    reads = [r for r in seen if r.op == "read"]
    writes = [r for r in seen if r.op == "write"]
    assert len(reads) == 4 and len(writes) == 4
    assert all((r.prio_class, r.prio_level, r.job, r.len_bytes) == ("rt", 2, 0, 8192) for r in reads)
    assert all((w.job, w.nice, w.fua, w.sync) == (1, 5, True, True) for w in writes)
    assert [w.offset_bytes for w in writes] == [0, 8192, 16384, 24576]
    assert len({r.id for r in seen}) <= len(seen) and "Request(id=" in repr(seen[0])
    with pytest.raises(AttributeError):
        seen[0].op = "write"


def test_the_example_runs_and_its_policy_cuts_the_tail():
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "python-policy.py")], check=True,
                         capture_output=True, text=True).stdout
    rows = {line[:28].strip(): line[28:].split() for line in out.splitlines()[1:]}
    assert list(rows) == ["none", "k2:bound=2", "python:rt-first-bounded(2)"]
    tail = {name: float(cols[0]) for name, cols in rows.items()}
    assert tail["python:rt-first-bounded(2)"] < tail["none"] / 5


def test_a_sweep_runs_python_policies_beside_built_in_ones():
    tasks = sw.plan(["none", ("python-fifo", Fifo), ("rt-first-2", lambda: BoundedRtFirst(2))], [1, 2], [SHORT])
    assert [t.sched for t in tasks] == ["none", "none", "python-fifo", "python-fifo", "rt-first-2", "rt-first-2"]
    runs = sw.sweep(K2_JOB, tasks, precondition="partial:0.5", device_set={"host.cpus": 1}, workers=2)
    by = {(r["sched"], r["seed"]): r["report"] for r in runs}
    for seed in (1, 2):
        assert without_policy(by[("python-fifo", seed)]) == without_policy(by[("none", seed)])
        assert by[("rt-first-2", seed)]["nvsched"]["policy"]["counters"] == {"most_in_flight": 2.0}


def device_or_skip(job, *args, **kw):
    """run_device, or a skip where this kernel refuses io_uring."""
    try:
        return nvsched.run_device(job, *args, **kw)
    except ValueError as e:
        if str(e).startswith(("io_uring unavailable", "io_uring needs Linux")):
            pytest.skip(str(e))
        raise


def test_a_python_policy_runs_on_a_real_file(tmp_path):
    data = tmp_path / "scratch.dat"
    job = f"[a]\nfilename={data}\nsize=4m\nrw=randrw\nbs=4k\nioengine=io_uring\niodepth=8\nnumber_ios=400\n"

    class Counting(Fifo):
        inserted = 0

        def insert(self, rq, now_ns):
            self.inserted += 1
            super().insert(rq, now_ns)

    policy = Counting()
    r = device_or_skip(job, policy=policy)
    assert r["nvsched"]["engine"] == "uring" and r["nvsched"]["policy"]["spec"] == "python:Counting"
    assert r["jobs"][0]["read"]["total_ios"] + r["jobs"][0]["write"]["total_ios"] == 400
    assert policy.inserted == 400 and not policy.queue
    assert not data.exists(), "the file nvsched created is removed"
    # a file nvsched did not create is written only with allow_destructive=True
    data.write_bytes(b"\x07" * (4 << 20))
    with pytest.raises(ValueError, match="allow_destructive=True"):
        device_or_skip(job, policy=Fifo())
    assert data.read_bytes() == b"\x07" * (4 << 20)
    r = device_or_skip(job, "k2:bound=2", allow_destructive=True)
    assert r["nvsched"]["policy"]["spec"] == "k2:bound=2"


def test_check_policy_passes_a_sound_policy_and_catches_unsound_ones():
    assert nvsched.check_policy(Fifo) == 8
    assert nvsched.check_policy(lambda: BoundedRtFirst(4), seeds=[3]) == 4

    class Unseeded(Fifo):
        """Holds back at random while something is in flight, drawing from the wall clock."""

        def dispatch(self, now_ns, inflight, queue_depth):
            import random
            import time
            if inflight > 0 and random.Random(time.perf_counter_ns()).random() < 0.5:
                return None
            return super().dispatch(now_ns, inflight, queue_depth)

    with pytest.raises(AssertionError, match=r"check workload \d of 2, seed \d: two runs with the same inputs differ"):
        nvsched.check_policy(Unseeded)

    class DropsTrims(Fifo):
        def insert(self, rq, now_ns):
            if rq.op != "discard":
                super().insert(rq, now_ns)

    with pytest.raises(AssertionError, match=r"check workload 1 of 2, seed 1: the run failed: .*stalled"):
        nvsched.check_policy(DropsTrims)


def test_the_sweep_command_takes_a_policy_from_a_file(tmp_path, capsys):
    example = ROOT / "examples" / "python-policy.py"
    code = sw.main(["--experiment", "k2-analysis:randread", "--seeds", "1", "--sched", "k2:bound=2",
                    "--policy", f"{example}:RtFirstBounded(2)"])
    assert code == 0
    rows = [line.split() for line in capsys.readouterr().out.strip().splitlines()[1:]]
    assert [r[0] for r in rows] == ["k2:bound=2", "python:RtFirstBounded(2)"]
    k2_tail, py_tail = float(rows[0][-1]), float(rows[1][-1])
    assert abs(py_tail - k2_tail) < 0.2 * k2_tail
    for spec, why in [(f"{example}:Nope", "NameError"), (str(tmp_path / "none.py") + ":X", "FileNotFoundError"),
                      ("nocolon", "expected FILE.py:EXPR")]:
        assert sw.main(["--experiment", "k2-analysis:randread", "--seeds", "1", "--policy", spec]) == 1
        assert why in capsys.readouterr().err


class MergingBound(BoundedRtFirst):
    """K2 with merge=1 for best-effort work: one FIFO, at most `bound` in flight, and a
    request merged into the newest queued one that can take it."""

    dispatch_cost_ns, complete_cost_ns = 150, 100
    largest = 0

    def dispatch(self, now_ns, inflight, queue_depth):
        rq = super().dispatch(now_ns, inflight, queue_depth)
        self.largest = max(self.largest, rq.len_bytes if rq else 0)
        return rq

    def insert(self, rq, now_ns):
        for queued in reversed(self.others):
            if queued.can_merge(rq):
                return queued
        self.others.append(rq)


SEQUENTIAL = ("[global]\nfilename=/dev/nvme0n1\nsize=64m\nbs=4k\nruntime=50ms\ntime_based\n"
              "ioengine=libaio\niodepth=8\n[a]\nrw=read\n[b]\nrw=write\noffset=128m\n")


def test_a_python_policy_merges_as_k2_does():
    policy = MergingBound(1)
    py = nvsched.run(SEQUENTIAL, policy=policy, timestamp_ms=0)
    k2 = nvsched.run(SEQUENTIAL, "k2:bound=1,merge=1", timestamp_ms=0)
    assert without_policy(py) == without_policy(k2)
    merges = py["nvsched"]["engine_counters"]["sched_merges"]
    assert merges > 1000
    assert py["jobs"][0]["read"]["total_ios"] > py["disk_util"][0]["read_ios"]
    # the policy saw the requests it merged into grow in place
    assert policy.largest >= 8 * 4096


def test_a_merge_the_request_cannot_take_fails_the_run():
    class MergesAnything(MergingBound):
        def insert(self, rq, now_ns):
            if self.others and not self.others[-1].can_merge(rq):
                return self.others[-1]
            self.others.append(rq)

    with pytest.raises(RuntimeError, match=r"insert: ValueError: returned request \d+ to merge request \d+ into, but they cannot merge"):
        nvsched.run(MIXED, policy=MergesAnything(1), timestamp_ms=0)

    class MergesIntoItself(Fifo):
        def insert(self, rq, now_ns):
            return rq

    with pytest.raises(RuntimeError, match=r"returned the request being inserted"):
        nvsched.run(MIXED, policy=MergesIntoItself(), timestamp_ms=0)


def test_complete_gets_the_object_dispatch_returned():
    class InFlightSet(Fifo):
        """Keeps what is at the device in a set, by object."""

        def __init__(self):
            super().__init__()
            self.at_device = set()
            self.completed = 0

        def dispatch(self, now_ns, inflight, queue_depth):
            rq = super().dispatch(now_ns, inflight, queue_depth)
            if rq is not None:
                self.at_device.add(rq)
            return rq

        def complete(self, rq, now_ns, dispatched_ns):
            self.at_device.remove(rq)  # KeyError for a stand-in object
            self.completed += 1

    policy = InFlightSet()
    nvsched.run(MIXED, policy=policy, timestamp_ms=0)
    assert policy.completed > 1000 and not policy.at_device


def test_a_python_policy_learns_the_cgroup_tree_before_the_first_request():
    class Tree(Fifo):
        def __init__(self):
            super().__init__()
            self.tenants, self.seen = None, set()

        def set_tenants(self, tenants):
            assert not self.seen, "set_tenants comes before the first insert"
            self.tenants = tenants

        def insert(self, rq, now_ns):
            self.seen.add(rq.tenant)
            super().insert(rq, now_ns)

    job = MIXED.replace("[a]\n", "[a]\ncgroup=web/app\ncgroup_weight=400\n").replace(
        "[b]\n", "[b]\ncgroup=db\ncgroup_io_latency=250us\n")
    policy = Tree()
    nvsched.run(job, policy=policy, timestamp_ms=0)
    assert policy.tenants == {1: ("web", 0, 100, None), 2: ("web/app", 1, 400, None), 3: ("db", 0, 100, 250_000)}
    assert policy.seen == {2, 3}
