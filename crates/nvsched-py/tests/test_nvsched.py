"""The Python package: same reports as the command line, clear errors, sweeps on threads
and on Ray that agree run for run."""

import json
import os
import pathlib
import subprocess
import sys
import warnings

import pytest

import nvsched
from nvsched import sweep as sw

ROOT = pathlib.Path(__file__).resolve().parents[3]
K2_JOB = ROOT / "experiments" / "k2-analysis" / "k2.fio"
SHORT = {"OP": "randread", "RUNTIME": "300ms", "RAMP": "0"}
STAMP_S = 1_700_000_000


def cli() -> pathlib.Path:
    path = pathlib.Path(os.environ.get("NVSCHED_BIN", ROOT / "target" / "debug" / "nvsched"))
    assert path.exists(), f"{path}: build the CLI first (cargo build), or set NVSCHED_BIN"
    return path


def test_a_run_gives_the_command_lines_report():
    args = ["--sched", "k2:bound=2", "--precondition", "partial:0.5", "--seed", "3",
            "--device-set", "host.cpus=1", "--output-format", "json", "-q"]
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(STAMP_S), **SHORT)
    out = subprocess.run([str(cli()), "run", str(K2_JOB), *args], env=env, check=True,
                         capture_output=True, text=True).stdout
    py = nvsched.run(K2_JOB, "k2:bound=2", precondition="partial:0.5", seed=3,
                     device_set={"host.cpus": 1}, vars=SHORT, timestamp_ms=STAMP_S * 1000)
    assert json.loads(out) == py


def test_same_inputs_same_report_and_the_seed_matters():
    job = "[global]\nrw=randread\nbs=4k\nsize=1g\nprecondition=partial:0.5\nruntime=200ms\ntime_based\nioengine=libaio\niodepth=8\n[a]\n"
    a = nvsched.run(job, seed=1, timestamp_ms=0)
    assert a == nvsched.run(job, seed=1, timestamp_ms=0)
    assert a["jobs"][0]["read"]["clat_ns"] != nvsched.run(job, seed=2, timestamp_ms=0)["jobs"][0]["read"]["clat_ns"]


def test_the_job_files_ioscheduler_unless_sched_is_given():
    job = "[global]\nrw=randread\nsize=16m\nruntime=20ms\ntime_based\nioscheduler=deadline:fifo_batch=4\n[a]\n"
    assert nvsched.run(job, timestamp_ms=0)["nvsched"]["policy"]["spec"] == "mq-deadline:fifo_batch=4"
    with pytest.warns(UserWarning, match="overrides"):
        assert nvsched.run(job, "k2:bound=2", timestamp_ms=0)["nvsched"]["policy"]["spec"] == "k2:bound=2"
    assert nvsched.run(job.replace("ioscheduler=deadline:fifo_batch=4\n", ""))["nvsched"]["policy"]["spec"] == "none"
    with pytest.raises(ValueError, match=r"<job text>:6: option 'ioscheduler': unknown policy 'anticipatory'"):
        nvsched.run(job.replace("deadline:fifo_batch=4", "anticipatory"))


def test_a_trace_replays_as_on_the_command_line(tmp_path):
    trace = ROOT / "examples" / "traces" / "websearch-60s.disksim.trace"
    job = f"[web]\nread_iolog={trace}\nioengine=io_uring\niodepth=16\nnumber_ios=2000\n"
    path = tmp_path / "web.fio"
    path.write_text(job)
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(STAMP_S))
    out = subprocess.run([str(cli()), "run", str(path), "--sched", "k2:bound=2", "--output-format", "json", "-q"],
                         env=env, check=True, capture_output=True, text=True).stdout
    py = nvsched.run(path, "k2:bound=2", timestamp_ms=STAMP_S * 1000)
    assert json.loads(out) == py
    assert py["nvsched"]["replay"][0]["issued"] == 2000


def test_the_command_lines_warnings_are_python_warnings():
    job = "[global]\nrw=randread\nsize=16m\nruntime=20ms\ntime_based\nioscheduler=deadline\n[a]\n"
    with pytest.warns(UserWarning, match=r"^<job text>:6: sched k2:bound=2 overrides the job file's ioscheduler=deadline$"):
        nvsched.run(job, "k2:bound=2", timestamp_ms=0)
    with pytest.warns(UserWarning, match=r"^<job text>:8: buffered I/O is simulated as direct I/O"):
        nvsched.run(job.replace("[a]", "[a]\ndirect=0"), timestamp_ms=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nvsched.run(job, timestamp_ms=0)
        nvsched.run(job, "mq-deadline", timestamp_ms=0)


def test_a_page_cache_from_device_set_takes_buffered_writes():
    job = "[w]\nrw=write\nbs=64k\nsize=16m\ndirect=0\nend_fsync=1\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "simulated as direct I/O" warning
        report = nvsched.run(job, device_set={"host.page_cache.size_bytes": 64 << 20}, timestamp_ms=0)
    cache = report["nvsched"]["engine_counters"]["page_cache"]
    assert cache["writeback_bytes"] == 16 << 20
    assert report["nvsched"]["device"]["host"]["page_cache"]["size_bytes"] == 64 << 20
    # from memory: far under the device's write latency without the cache
    with pytest.warns(UserWarning):
        direct = nvsched.run(job, timestamp_ms=0)
    assert report["jobs"][0]["write"]["clat_ns"]["mean"] < direct["jobs"][0]["write"]["clat_ns"]["mean"] / 3
    assert "page_cache" not in direct["nvsched"]["engine_counters"]


def test_errors_name_the_file_line_and_option():
    with pytest.raises(ValueError, match=r"<job text>:3: option 'rw'"):
        nvsched.run("[a]\nbs=4k\nrw=sideways\n")
    with pytest.raises(ValueError, match=r"bound.*accepted|accepted.*bound"):
        nvsched.run("[a]\nrw=read\nsize=1m\n", "k2:bund=4")
    with pytest.raises(ValueError, match="no-such-drive"):
        nvsched.run("[a]\nrw=read\nsize=1m\n", device="no-such-drive")
    with pytest.raises(FileNotFoundError):
        nvsched.run("does/not/exist.fio")


def test_listings():
    ids = {p["id"] for p in nvsched.policies()}
    assert {"none", "k2", "mts", "prio-token", "k2-adaptive"} <= ids
    k2 = next(p for p in nvsched.policies() if p["id"] == "k2")
    assert any(q["name"] == "bound" for q in k2["params"])
    assert "970evoplus-250g" in nvsched.devices()
    assert nvsched.experiments() == ["k2-analysis", "mts", "prio-nice", "tabs", "veloces"]


def test_repro_all_lays_out_results_as_the_command_line_does():
    # `nvsched repro all --out D` writes D/NAME for each; one reproduction writes to D itself
    assert sw.repro_targets("tabs") == [("tabs", os.path.join("results", "tabs"))]
    assert sw.repro_targets("tabs", "out") == [("tabs", "out")]
    assert sw.repro_targets("all", "out") == [(n, os.path.join("out", n)) for n in nvsched.experiments()]
    assert [n for n, _ in sw.repro_targets("all")] == nvsched.experiments()


def test_summary_reads_the_report():
    r = nvsched.run(K2_JOB, "none", vars=SHORT, precondition="partial:0.5", timestamp_ms=0)
    s = nvsched.summary(r)
    assert [j["name"] for j in s["jobs"]] == ["rt", "be", "be", "be"]
    rt = s["jobs"][0]["read"]
    assert 0 < rt["p50_us"] <= rt["p99_us"] <= rt["p99_9_us"]
    assert s["total_bw_mbps"] == pytest.approx(sum(j["read"]["bw_mbps"] for j in s["jobs"]))


def test_sweeps_on_threads_and_on_ray_agree():
    pytest.importorskip("ray", reason="the Ray backend needs Ray (make test installs it)")
    tasks = sw.plan(["none", "k2:bound=1", "k2:bound=8"], [1, 2], [SHORT])
    kw = dict(precondition="partial:0.5", device_set={"host.cpus": 1})
    seen = []
    local = sw.sweep(K2_JOB, tasks, backend="local", workers=2, **kw)
    on_ray = sw.sweep(K2_JOB, tasks, backend="ray", workers=2, progress=lambda d, t: seen.append((d, t)), **kw)
    assert [(r["sched"], r["seed"]) for r in on_ray] == [(t.sched, t.seed) for t in tasks]
    assert seen[-1] == (6, 6)
    strip = lambda r: {k: v for k, v in r["report"].items() if k not in ("time", "timestamp", "timestamp_ms")}
    assert [strip(r) for r in local] == [strip(r) for r in on_ray]
    bw = {(r["sched"], r["seed"]): nvsched.summary(r["report"])["total_bw_mbps"] for r in on_ray}
    assert bw[("k2:bound=1", 1)] < bw[("k2:bound=8", 1)] < bw[("none", 1)] * 1.01


def test_sweep_errors_name_the_job_file(tmp_path):
    bad = tmp_path / "bad.fio"
    bad.write_text("[a]\nrw=sideways\n")
    with pytest.raises(ValueError, match=rf"{bad}:2: option 'rw'"):
        sw.sweep(bad, sw.plan(["none"], [0]), backend="local")
    with pytest.raises(ValueError, match=rf"{bad}:2: option 'rw'"):
        sw.tune_k2(bad, "latency:50%", bounds=[1])
    no_rt = tmp_path / "no-rt.fio"
    no_rt.write_text("[a]\nrw=randread\nsize=1g\n")
    with pytest.raises(ValueError, match=rf"{no_rt}: no real-time job"):
        sw.tune_k2(no_rt, "latency:50%", bounds=[1])


def test_sweep_command(tmp_path, capsys):
    out = tmp_path / "sweep.json"
    code = sw.main([str(K2_JOB), "--sched", "none", "--sched", "k2:bound=1", "--seeds", "1-2",
                    *sum((["--var", f"{k}={v}"] for k, v in SHORT.items()), []),
                    "--precondition", "partial:0.5", "--out", str(out)])
    assert code == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split()[:2] == ["policy", "seed"] and len(lines) == 5
    saved = json.loads(out.read_text())
    assert len(saved["runs"]) == 4 and saved["tasks"][0] == {"sched": "none", "seed": 1, "vars": SHORT}
    assert sw.main([str(K2_JOB), "--sched", "k2:bund=1", *sum((["--var", f"{k}={v}"] for k, v in SHORT.items()), [])]) == 1
    assert "bund" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        sw.main([str(K2_JOB), "--sched", "none", "--seeds", "x"])


def test_a_reproduction_cell_has_the_manifests_job_and_device(capsys):
    cell = nvsched.experiment_cell("k2-analysis", "randread", "partial")
    assert cell["device"] == "970evoplus-250g"
    assert cell["device_set"]["host.cpus"] == "1" and cell["device_set"]["nand.precondition"] == "partial:0.5"
    assert "rw=randread" in cell["job"]
    assert cell["seeds"] == [1], "quick mode: one repetition, seed 1"
    assert nvsched.experiment_cell("k2-analysis", "randread", quick=False)["seeds"] == [1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="no variant 'sideways'.*randread"):
        nvsched.experiment_cell("k2-analysis", "sideways")
    # on another drive: with the manifest's host settings but not its drive's, in the
    # state's drive state
    moved = nvsched.experiment_cell("k2-analysis", "randread", "partial", device="970pro-512g")
    assert moved["device"] == "970pro-512g"
    assert moved["device_set"] == {"host.cpus": "1", "host.submit_cpu_ns": "2500", "host.complete_cpu_ns": "3000",
                                   "nand.precondition": "partial:0.5"}
    # a shortened copy of the cell through the sweep command
    assert sw.main(["--experiment", "k2-analysis:nope", "--sched", "none"]) == 1
    assert "no variant 'nope'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        sw.main([str(K2_JOB), "--experiment", "k2-analysis:randread", "--sched", "none"])
    with pytest.raises(SystemExit):
        sw.main(["--repro", "tabs", "--sched", "none"])


def test_a_reproduction_on_ray_writes_what_the_command_line_writes(tmp_path):
    pytest.importorskip("ray", reason="the Ray backend needs Ray (make test installs it)")
    cli_out, ray_out = tmp_path / "cli", tmp_path / "ray"
    subprocess.run([str(cli()), "repro", "tabs", "--quick", "-q", "--no-plots", "--out", str(cli_out)],
                   cwd=ROOT, check=True, capture_output=True)
    seen = []
    r = sw.repro("tabs", out=str(ray_out), backend="ray", workers=2, plots=False,
                 progress=lambda d, t: seen.append((d, t)))
    assert r["runs"] == r["simulated"] == 10 and seen[-1] == (3, 3), "tasks of up to 4 runs of one state"
    assert all(c["holds"] in (True, False) for c in r["claims"])
    assert "Claims (nvsched vs paper)" in r["table"]
    assert (ray_out / "results.json").read_bytes() == (cli_out / "results.json").read_bytes()
    again = sw.repro("tabs", out=str(ray_out), backend="local", plots=False)
    assert again["simulated"] == 0, "the second time every run comes from the cache"
    with pytest.raises(ValueError, match="unknown experiment 'no-such-experiment'; known: .*tabs"):
        sw.repro("no-such-experiment", out=str(tmp_path / "x"))


def test_a_reproduction_on_another_drive_writes_what_the_command_line_writes(tmp_path):
    profile = tmp_path / "mine.toml"
    profile.write_text((ROOT / "profiles" / "970evoplus-250g.toml").read_text())
    cli_out, py_out = tmp_path / "cli", tmp_path / "py"
    subprocess.run([str(cli()), "repro", "tabs", "--quick", "-q", "--no-plots", "--out", str(cli_out),
                    "--device", str(profile), "--device-set", "host.cpus=2"], cwd=ROOT, check=True,
                   capture_output=True)
    r = sw.repro("tabs", out=str(py_out), plots=False, device=str(profile), device_set={"host.cpus": 2})
    assert f"device {profile} (host.cpus=2), quick mode\ninstead of the experiment's own 970pro-512g" in r["table"]
    assert (py_out / "results.json").read_bytes() == (cli_out / "results.json").read_bytes()
    with pytest.raises(ValueError, match="tabs: on device no-such-drive: unknown device"):
        sw.repro("tabs", out=str(tmp_path / "x"), device="no-such-drive")


def test_tuning_on_ray_chooses_as_the_command_line_does():
    pytest.importorskip("ray", reason="the Ray backend needs Ray (make test installs it)")
    env = dict(os.environ, **SHORT)
    out = subprocess.run([str(cli()), "tune", "k2", "--objective", "latency:50%", str(K2_JOB), "--bounds", "1,4,16",
                          "--precondition", "partial:0.5"], env=env, check=True, capture_output=True, text=True).stdout
    t = sw.tune_k2(K2_JOB, "latency:50%", bounds=[1, 4, 16], vars=SHORT, precondition="partial:0.5",
                   backend="ray", workers=2)
    assert [r[1] for r in t["rows"]] == [None, 1, 4, 16]
    assert out.startswith(t["table"] + "\n" + t["why"])
    assert t["chosen"] is not None and f"Use: --sched k2:bound={t['chosen']}" in out
    with pytest.raises(ValueError, match="objective"):
        sw.tune_k2(K2_JOB, "speed:50%", bounds=[1], vars=SHORT)
    with pytest.raises(ValueError, match="bounds"):
        sw.tune_k2(K2_JOB, "latency:50%", bounds=[0], vars=SHORT)


def test_tuning_over_seeds_chooses_on_the_means_as_the_command_line_does():
    env = dict(os.environ, **SHORT)
    out = subprocess.run([str(cli()), "tune", "k2", "--objective", "bandwidth:50%", str(K2_JOB), "--bounds", "2,8",
                          "--precondition", "partial:0.5", "--seeds", "1-2"],
                         env=env, check=True, capture_output=True, text=True).stdout
    t = sw.tune_k2(K2_JOB, "bandwidth:50%", bounds=[2, 8], seeds=[1, 2], vars=SHORT, precondition="partial:0.5")
    assert [(r[1]) for r in t["rows"]] == [None, None, 2, 2, 8, 8], "one row per run"
    assert "p99.9 min-max (us)" in t["table"] and t["why"].endswith("(Means of 2 seeds.)")
    assert out.startswith(t["table"] + "\n" + t["why"])
    with pytest.raises(ValueError, match="seeds"):
        sw.tune_k2(K2_JOB, "latency:50%", bounds=[1], seeds=[], vars=SHORT)
    # medians on request, over three seeds (where the median is one run's figure)
    out = subprocess.run([str(cli()), "tune", "k2", "--objective", "bandwidth:50%", str(K2_JOB), "--bounds", "2,8",
                          "--precondition", "partial:0.5", "--seeds", "1-3", "--center", "median"],
                         env=env, check=True, capture_output=True, text=True).stdout
    t = sw.tune_k2(K2_JOB, "bandwidth:50%", bounds=[2, 8], seeds=[1, 2, 3], vars=SHORT, precondition="partial:0.5",
                   center="median")
    assert t["why"].endswith("(Medians of 3 seeds.)") and out.startswith(t["table"] + "\n" + t["why"])
    none_tails = sorted(r[2] for r in t["rows"] if r[1] is None)
    assert f"{none_tails[1]:.0f}" in t["table"].splitlines()[1], (none_tails, t["table"])
    with pytest.raises(ValueError, match="expected mean or median"):
        sw.tune_k2(K2_JOB, "latency:50%", bounds=[1], vars=SHORT, center="mode")


def test_tuning_any_policy_chooses_as_the_command_line_does():
    env = dict(os.environ, **SHORT)
    out = subprocess.run([str(cli()), "tune", "iolatency", "--param", "target=100us,1ms", "--objective", "bandwidth:80%",
                          str(K2_JOB), "--precondition", "partial:0.5", "--job", "be", "-q"],
                         env=env, check=True, capture_output=True, text=True).stdout
    t = sw.tune(K2_JOB, "iolatency", {"target": ["100us", "1ms"]}, "bandwidth:80%", latency_job="be", vars=SHORT,
                precondition="partial:0.5")
    assert t["settings"] == ["iolatency:target=100us", "iolatency:target=1ms"]
    assert [r[0] for r in t["rows"]] == ["none", *t["settings"]]
    assert "be p99.9 (us)" in t["table"] and out.startswith(t["table"] + "\n" + t["why"])
    assert t["chosen"] in t["settings"] and f"Use: --sched {t['chosen']}" in out
    # the module's command line gives the same table
    cmd = [sys.executable, "-m", "nvsched.sweep", str(K2_JOB), "--tune", "iolatency", "--param", "target=100us,1ms",
           "--objective", "bandwidth:80%", "--job", "be", "--precondition", "partial:0.5"]
    cmd += [a for k, v in SHORT.items() for a in ("--var", f"{k}={v}")]
    assert subprocess.run(cmd, check=True, capture_output=True, text=True).stdout == out
    with pytest.raises(ValueError, match="has no parameter 'nope'"):
        sw.tune(K2_JOB, "kyber", ["nope=1"], "latency:50%", vars=SHORT)
    with pytest.raises(ValueError, match="params"):
        sw.tune(K2_JOB, "kyber", {}, "latency:50%", vars=SHORT)
    with pytest.raises(ValueError, match="objective"):
        sw.tune(K2_JOB, "kyber", {"read_lat": ["1ms"]}, "speed:50%", vars=SHORT)
    with pytest.raises(ValueError, match="no job named 'nope'"):
        sw.tune(K2_JOB, "kyber", {"read_lat": ["1ms"]}, "latency:50%", latency_job="nope", vars=SHORT)


def test_tune_iocost_fits_the_model_the_command_line_prints():
    weights = ROOT / "examples" / "iocost-weights.fio"
    out = subprocess.run([str(cli()), "tune", "iocost", str(weights), "--seconds", "1", "-q"],
                         check=True, capture_output=True, text=True).stdout
    t = nvsched.tune_iocost(weights, seconds=1)
    assert list(t["model"]) == ["rbps", "rseqiops", "rrandiops", "wbps", "wseqiops", "wrandiops"]
    assert out.startswith(t["table"])
    assert t["model_line"] in out and f"Use: --sched {t['sched']}" in out
    # the fitted model runs
    assert nvsched.run(weights, t["sched"] + ",max=100")["nvsched"]["policy"]["spec"].startswith("iocost:")
    with pytest.raises(ValueError, match="at least 1"):
        nvsched.tune_iocost(weights, seconds=0)
    with pytest.raises(ValueError, match="not both"):
        nvsched.tune_iocost(weights, filename="/tmp/x.dat")


def test_tune_iocost_on_a_real_file_reads_only_what_it_did_not_create(tmp_path):
    try:
        t = nvsched.tune_iocost(filename=tmp_path / "new.dat", size="8m", seconds=1)
    except ValueError as e:
        if "io_uring" in str(e):
            pytest.skip(str(e))
        raise
    assert not (tmp_path / "new.dat").exists(), "the laid-out file is removed"
    assert list(t["model"]) == ["rbps", "rseqiops", "rrandiops", "wbps", "wseqiops", "wrandiops"]
    existing = tmp_path / "existing.dat"
    data = os.urandom(4 << 20)
    existing.write_bytes(data)
    with pytest.warns(UserWarning, match="measured reads only"):
        t = nvsched.tune_iocost(filename=existing, size="4m", seconds=1)
    assert list(t["model"]) == ["rbps", "rseqiops", "rrandiops"]
    assert existing.read_bytes() == data
    with pytest.raises(ValueError, match="less than 1 MiB"):
        nvsched.tune_iocost(filename=existing, size="4k", seconds=1)


SMALL_MIX = ("[global]\nfilename=/dev/nvme0n1\nsize=8m\ndirect=1\nbs=4k\nruntime=200ms\ntime_based\n"
             "[rt]\nrw=randread\nioengine=psync\nprioclass=1\nthinktime=500\n"
             "[be]\nrw=randwrite\nioengine=io_uring\niodepth=16\n")


def test_tuning_on_a_real_file_runs_through_io_uring_and_removes_the_file(tmp_path):
    target = tmp_path / "mix.dat"
    try:
        t = sw.tune_k2(SMALL_MIX, "bandwidth:10%", bounds=[1, 8], seeds=[1, 2], filename=str(target))
    except ValueError as e:
        if "io_uring" in str(e):
            pytest.skip(str(e))
        raise
    assert [(r[0], r[1]) for r in t["rows"]] == [("none", None)] * 2 + [("k2:bound=1", 1)] * 2 + \
        [("k2:bound=8", 8)] * 2, "configurations in order, seeds innermost"
    assert all(r[3] > 0 for r in t["rows"]), "every run moved data on the device"
    assert "(Medians of 2 seeds.)" in t["why"] and t["chosen"] in (1, 8)
    assert not target.exists(), "the file the first run created is removed"
    t = sw.tune(SMALL_MIX, "kyber", {"read_lat": ["1ms"]}, "latency:90%", filename=str(target), center="mean")
    assert [r[0] for r in t["rows"]] == ["none", "kyber:read_lat=1ms"] and not target.exists()
    # an existing file is not written without allow_destructive, and stays as it was
    existing = tmp_path / "existing.dat"
    data = os.urandom(8 << 20)
    existing.write_bytes(data)
    with pytest.raises(ValueError, match="refusing to write"):
        sw.tune_k2(SMALL_MIX, "latency:50%", bounds=[1], filename=str(existing))
    assert existing.read_bytes() == data
    for kwargs, message in [
        ({"filename": str(target), "precondition": "full"}, "precondition describes the simulated drive"),
        ({"filename": str(target), "backend": "ray"}, "one at a time"),
        ({"filename": str(target), "engine": "sim"}, "leave out engine='sim'"),
        ({"allow_destructive": True}, "allow_destructive is for real devices"),
        ({"engine": "disk"}, "expected 'sim' or 'uring'"),
    ]:
        with pytest.raises(ValueError, match=message):
            sw.tune_k2(SMALL_MIX, "latency:50%", bounds=[1], **kwargs)
    assert not target.exists()


def test_a_sweep_on_a_real_file_runs_each_task_through_io_uring_and_removes_the_file(tmp_path):
    target = tmp_path / "sweep.dat"
    tasks = sw.plan(["none", "k2:bound=2"], [3, 4], [{"BS": "4k"}, {"BS": "8k"}])
    job = SMALL_MIX.replace("bs=4k", "bs=${BS}")
    try:
        results = sw.sweep(job, tasks, filename=str(target))
    except ValueError as e:
        if "io_uring" in str(e):
            pytest.skip(str(e))
        raise
    assert [(r["sched"], r["seed"], r["vars"]) for r in results] == [(t.sched, t.seed, t.vars) for t in tasks]
    for task, r in zip(tasks, results):
        report = r["report"]
        assert report["nvsched"]["engine"] == "uring"
        assert report["nvsched"]["policy"]["spec"] == task.sched
        bs = {"4k": 4096, "8k": 8192}[task.vars["BS"]]
        for j, d in zip(report["jobs"], ["read", "write"]):
            assert j[d]["io_bytes"] == j[d]["total_ios"] * bs > 0, "the task's variables, and data moved"
    assert not target.exists(), "the file the first run created is removed"
    with pytest.raises(ValueError, match="a policy written in Python runs on a device with nvsched.run_device"):
        sw.sweep(SMALL_MIX, sw.plan([("mine", object)], [0]), filename=str(target))
    with pytest.raises(ValueError, match="device describes the simulated drive"):
        sw.sweep(SMALL_MIX, tasks, filename=str(target), device="970pro-512g")
    existing = tmp_path / "existing.dat"
    data = os.urandom(8 << 20)
    existing.write_bytes(data)
    with pytest.raises(ValueError, match="refusing to write"):
        sw.sweep(SMALL_MIX, tasks, filename=str(existing))
    assert existing.read_bytes() == data and not target.exists()


INTERRUPTED_RUN = """
import os, signal, sys, time
import nvsched
long_job, target, ignore = sys.argv[1], sys.argv[2], sys.argv[3] == "ignore"
if ignore:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
print("started", flush=True)
t = time.monotonic()
try:
    if target:
        nvsched.run_device(long_job.replace("@TARGET@", target))
    else:
        nvsched.run(long_job, device="simple-nvme")
    print("not interrupted", flush=True)
except KeyboardInterrupt:
    print(f"interrupted after {time.monotonic() - t:.1f}s", flush=True)
print("file left" if target and os.path.exists(target) else "no file left", flush=True)
# Python's handler is back, and the next run is not stopped
try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.5 if ignore else 5)
except KeyboardInterrupt:
    print("python's handler is back", flush=True)
short = "[a]\\nioengine=io_uring\\nrw=randread\\nsize=1m\\nruntime=10ms\\ntime_based\\n"
print("next run", nvsched.run(short, device="simple-nvme")["jobs"][0]["read"]["total_ios"] > 0, flush=True)
"""


def _default_signals() -> None:
    """SIGINT's and SIGTERM's default actions in the child, whatever pytest inherited (a
    shell script's background job ignores SIGINT; Python and nvsched leave it ignored)."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _signal_a_python_run(job: str, target: str = "", sig=subprocess.signal.SIGINT, ignore: bool = False,
                         after_s: float = 1.5):
    """Runs INTERRUPTED_RUN in a new interpreter and sends it ``sig`` ``after_s`` into the
    run; returns (exit status, standard output)."""
    child = subprocess.Popen([sys.executable, "-c", INTERRUPTED_RUN, job, target, "ignore" if ignore else ""],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=_default_signals)
    assert child.stdout.readline() == "started\n"
    import time
    time.sleep(after_s)
    child.send_signal(sig)
    try:
        out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        raise AssertionError(f"still running a minute after signal {sig}")
    return child.returncode, out + err


HOUR = "[a]\nioengine=io_uring\nrw=randread\niodepth=32\nsize=1g\nruntime=3600s\ntime_based\n"


def test_ctrl_c_stops_a_native_run_and_raises_keyboard_interrupt(tmp_path):
    # an hour of simulated time takes many minutes: SIGINT stops it within moments
    status, out = _signal_a_python_run(HOUR)
    assert status == 0 and "interrupted after" in out and "python's handler is back" in out \
        and "next run True" in out, out
    # SIGTERM ends the process, as Python's default says, once the run has stopped
    status, out = _signal_a_python_run(HOUR, sig=subprocess.signal.SIGTERM)
    assert status == -subprocess.signal.SIGTERM and "interrupted" not in out, (status, out)
    # a SIGINT the process ignores stays ignored: the run goes on to its end (20 simulated
    # seconds take a few)
    twenty = HOUR.replace("3600s", "20s")
    status, out = _signal_a_python_run(twenty, ignore=True, after_s=0.3)
    assert status == 0 and "not interrupted" in out and "next run True" in out, out
    # on a real file, the run ends at the signal and the file it created is removed
    try:
        nvsched.run_device("[a]\nfilename=%s\nsize=1m\nruntime=10ms\ntime_based\nioengine=io_uring\n"
                           % (tmp_path / "probe.dat"))
    except ValueError as e:
        if "io_uring" in str(e):
            pytest.skip(str(e))
        raise
    real = "[a]\nfilename=@TARGET@\nsize=16m\ndirect=1\nrw=randread\nioengine=io_uring\nruntime=60s\ntime_based\n"
    status, out = _signal_a_python_run(real, str(tmp_path / "real.dat"))
    assert status == 0 and "interrupted after" in out and "no file left" in out and "next run True" in out, out
    seconds = float(out.split("interrupted after ")[1].split("s")[0])
    assert seconds < 30, f"the 60 s run stopped at the signal: {out}"
    # SIGTERM on a real run: the process ends, and the file is removed first
    status, out = _signal_a_python_run(real, str(tmp_path / "term.dat"), sig=subprocess.signal.SIGTERM)
    assert status == -subprocess.signal.SIGTERM and not (tmp_path / "term.dat").exists(), (status, out)
