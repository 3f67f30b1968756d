#!/usr/bin/env python3
"""Runs small job files through fio and through nvsched's simulator and compares what
each job issued: I/O counts and bytes per direction. fio runs with psync on a new
temporary file, so the counts come from fio's own job logic (sizes, passes, loops, the
random map), not from any device. A case is the body of one job; cases are separated
by a line `---`. A case that sets `nrfiles` or `filename` runs in a fresh directory.

    scripts/compare-fio-counts.py [CASES] [--nvsched PATH]
    scripts/compare-fio-counts.py scripts/fio-count-cases.txt

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
    """(job, read I/Os, write I/Os, read bytes, write bytes[, ("sync", flushes)]) per job of
    a JSON report."""
    text = output[output.index("{"):]
    report = json.JSONDecoder().raw_decode(text)[0]
    return [
        (j["jobname"], j["read"]["total_ios"], j["write"]["total_ios"], j["read"]["io_bytes"], j["write"]["io_bytes"])
        + ((("sync", j["sync"]["total_ios"]),) if j.get("sync", {}).get("total_ios") else ())
        for j in report["jobs"]
        if "jobname" in j  # fio adds a nameless empty entry in some group layouts
    ]


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="?", default=os.path.join(here, "fio-count-cases.txt"))
    parser.add_argument("--nvsched", default=os.path.join(here, "..", "target", "release", "nvsched"))
    args = parser.parse_args()
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
            with open(job, "w") as f:
                f.write(f"[global]\nioengine=psync\n{target}\n{case}\n")
            if os.path.exists(data):
                os.remove(data)
            shutil.rmtree(files, ignore_errors=True)
            os.makedirs(files)
            results = []
            for cmd in (["fio", job, "--output-format=json"], [args.nvsched, "run", job, "--output-format=json", "-q"]):
                run = subprocess.run(cmd, capture_output=True, text=True)
                try:
                    results.append((issued(run.stdout), ""))
                except (ValueError, KeyError):
                    results.append((None, run.stderr.strip()[:300]))
            same = results[0][0] == results[1][0]
            differing += not same
            print("same   " if same else "differs", case.replace("\n", " | "))
            if not same:
                for tool, (counts, err) in zip(("fio", "nvsched"), results):
                    print(f"    {tool:8} {counts if counts is not None else 'error: ' + err}")
    print(f"{len(cases) - differing} of {len(cases)} cases issue the same I/O counts and bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
