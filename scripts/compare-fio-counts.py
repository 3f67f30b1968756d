#!/usr/bin/env python3
"""Runs small job files through fio and through nvsched's simulator and compares what
each job issued: I/O counts and bytes per direction. fio runs with psync (by default) on a new
temporary file, so the counts come from fio's own job logic (sizes, passes, loops, the
random map), not from any device. A case is the body of one job, from its `[name]` line (a case
without one runs nothing and is reported as `empty`, not as agreeing); cases are
separated by a line `---`. A case both tools refuse is reported as `refused` and agrees. A case that sets `nrfiles` or `filename` runs in a fresh directory.

    scripts/compare-fio-counts.py [CASES] [--nvsched PATH] [--order] [--engine libaio]
    scripts/compare-fio-counts.py scripts/fio-count-cases.txt

With --engine, both tools run another ioengine (libaio at iodepth 1): fio's passes end
after `size` bytes only with an engine that queues, so some jobs differ by engine.

With --order, each job also writes an iolog (write_iolog) and the order of its
operations (reads, writes, trims, flushes) is compared too, for cases of one job clone
whose offsets draw nothing at random.

Random draws differ between the two tools, so jobs whose counts rest on them (rwmix,
percentage_random, mixed random sizes) differ in counts even where their bytes agree.
Needs fio (apt-get install fio).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def issued(output: str):
    """(job, read I/Os, write I/Os, read bytes, write bytes[, ("sync", flushes)][, ("short",
    reads, writes)]) per job of a JSON report."""
    text = output[output.index("{"):]
    report = json.JSONDecoder().raw_decode(text)[0]
    return [
        (j["jobname"], j["read"]["total_ios"], j["write"]["total_ios"], j["read"]["io_bytes"], j["write"]["io_bytes"])
        + ((("sync", j["sync"]["total_ios"]),) if j.get("sync", {}).get("total_ios") else ())
        # fio 3.33 books fdatasyncs and sync_file_ranges as short reads and writes
        + ((("short", j["read"]["short_ios"], j["write"]["short_ios"]),)
           if j["read"]["short_ios"] or j["write"]["short_ios"] else ())
        for j in report["jobs"]
        if "jobname" in j  # fio adds a nameless empty entry in some group layouts
    ]


def squeeze(order: str) -> str:
    """Runs of one operation as op*count, so long orders stay readable."""
    ops = re.findall(r"[a-zA-Z][0-9]*", order)
    runs = []
    for op in ops:
        if runs and runs[-1][0] == op:
            runs[-1][1] += 1
        else:
            runs.append([op, 1])
    return " ".join(op if n == 1 else f"{op}*{n}" for op, n in runs)


OP_LETTERS = {"read": "r", "write": "w", "trim": "t", "sync": "S", "datasync": "S"}


def op_order(log_path: str) -> str:
    """The operations of an iolog (fio's v2 or v3 format), a letter each, followed by the
    file's number among those the log names when it names several."""
    ops = []
    names = []
    for line in open(log_path):
        fields = line.split()
        # v3: time, file, action[, offset, length]; v2: file, action[, offset, length]
        for k in (1, 2):
            if k < len(fields) and fields[k] in OP_LETTERS:
                name = os.path.basename(fields[k - 1])
                if name not in names:
                    names.append(name)
                ops.append((OP_LETTERS[fields[k]], names.index(name)))
                break
    return "".join(op + (str(file) if len(names) > 1 else "") for op, file in ops)


def order_comparable(case: str) -> bool:
    """One clone on one file, no random draws that fio and nvsched make differently, and
    no trims (psync cannot trim a file)."""
    random = re.search(
        r"^rw=(rand|.*rw|readwrite)|^percentage_random|^bsrange|^bssplit|^file_service_type=random|^filesize=.*-",
        case,
        re.M,
    )
    several = re.search(r"^numjobs=|^rw=trim", case, re.M)
    return random is None and several is None


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="?", default=os.path.join(here, "fio-count-cases.txt"))
    parser.add_argument("--nvsched", default=os.path.join(here, "..", "target", "release", "nvsched"))
    parser.add_argument("--order", action="store_true", help="also compare the order of each job's operations")
    parser.add_argument("--engine", default="psync", help="the ioengine both tools run (psync; libaio at iodepth 1)")
    args = parser.parse_args()
    args.nvsched = os.path.abspath(args.nvsched)  # the tools run in the temporary directory
    if shutil.which("fio") is None:
        print("fio is not installed (apt-get install fio)", file=sys.stderr)
        return 1
    cases = [c.strip() for c in open(args.cases).read().split("\n---\n") if c.strip()]
    differing = 0
    with tempfile.TemporaryDirectory() as work:
        data = os.path.join(work, "data")
        job = os.path.join(work, "job.fio")
        files = os.path.join(work, "files")
        for case in cases:
            # a case that names its files (nrfiles, filename) gets a fresh directory for them
            multi = re.search(r"^(nrfiles|filename)=", case, re.M) is not None
            target = f"directory={files}" if multi else f"filename={data}"
            log = os.path.join(work, "ops.log")
            with_order = args.order and order_comparable(case)
            with open(job, "w") as f:
                f.write(f"[global]\nioengine={args.engine}\n{target}\n" + (f"write_iolog={log}\n" if with_order else "") + f"{case}\n")
            if os.path.exists(data):
                os.remove(data)
            shutil.rmtree(files, ignore_errors=True)
            os.makedirs(files)
            results = []
            orders = []
            for cmd in (["fio", job, "--output-format=json"], [args.nvsched, "run", job, "--output-format=json", "-q"]):
                if os.path.exists(log):
                    os.remove(log)
                run = subprocess.run(cmd, capture_output=True, text=True, cwd=work)  # fio leaves verify state files there
                try:
                    counts = issued(run.stdout)
                    if with_order:
                        counts.append(("order", op_order(log)))
                    results.append((counts, ""))
                except (ValueError, KeyError, OSError):
                    results.append((None, run.stderr.strip()[:300]))
            # both refusing the case agrees (and says so); a case without a [job] section
            # runs nothing in either tool, which is no agreement
            both_fail = results[0][0] is None and results[1][0] is None
            empty = both_fail and "no jobs" in results[1][1]
            same = results[0][0] == results[1][0] and not empty
            differing += not same
            label = "empty  " if empty else "refused" if both_fail else "same   " if same else "differs"
            print(label, case.replace("\n", " | "))
            if not same:
                for tool, (counts, err) in zip(("fio", "nvsched"), results):
                    shown = [c if c[0] != "order" else ("order", squeeze(c[1])) for c in counts] if counts else None
                    print(f"    {tool:8} {shown if shown is not None else 'error: ' + err}")
    what = "I/O counts and bytes" + (" (and order, where comparable)" if args.order else "")
    print(f"{len(cases) - differing} of {len(cases)} cases issue the same {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
