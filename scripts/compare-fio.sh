#!/usr/bin/env bash
# Compares nvsched's io_uring engine (policy none) with fio 3.x's io_uring engine on the
# same file and jobs: IOPS, p50/p99 completion latency, CPU time per I/O. Runs are
# interleaved (fio, nvsched, fio, nvsched, ...) and the median of REPS is reported,
# because a shared virtual disk is noisy.
#
#   scripts/compare-fio.sh [FILE] [REPS]
set -euo pipefail
FILE=${1:-/var/tmp/nvsched-compare.dat}
REPS=${2:-3}
NVSCHED=${NVSCHED:-./target/release/nvsched}
command -v fio >/dev/null || { echo "fio is not installed (apt-get install fio)"; exit 1; }
[ -x "$NVSCHED" ] || cargo build --release
if [ ! -f "$FILE" ]; then
  echo "laying out $FILE (4 GiB)"
  fio --name=layout --filename="$FILE" --size=4g --rw=write --bs=1m --direct=1 --ioengine=psync >/dev/null
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
job() { # name body
  printf '[global]\nfilename=%s\nsize=4g\ndirect=1\nbs=4k\nruntime=10\ntime_based\n%s\n' "$FILE" "$2" > "$WORK/$1.fio"
}
job qd1 $'[qd1]\nioengine=psync\nrw=randread'
job qd32 $'[qd32]\nioengine=io_uring\niodepth=32\nrw=randread'
job k2mix $'[rt]\nioengine=psync\nprioclass=1\nprio=0\nthinktime=2000\nrw=randread\n[be]\nioengine=io_uring\niodepth=32\nnumjobs=3\nrw=randread'
summarise() { # tool json
  python3 - "$1" "$2" <<'PY'
import json, sys
tool, path = sys.argv[1], sys.argv[2]
d = json.load(open(path))
jobs = d["jobs"]
ios = sum(j["read"]["total_ios"] for j in jobs)
runtime = max(j["read"]["runtime"] for j in jobs) / 1000
iops = ios / runtime
j = jobs[-1]["read"]["clat_ns"]["percentile"]
p50, p99 = j["50.000000"] / 1e3, j["99.000000"] / 1e3
if tool == "fio":
    cpu = sum((jj["usr_cpu"] + jj["sys_cpu"]) / 100 * jj["job_runtime"] / 1000 for jj in jobs)
else:
    c = d["nvsched"]["engine_counters"]; cpu = c["cpu_user_s"] + c["cpu_sys_s"]
print(f"{iops:.0f} {p50:.1f} {p99:.1f} {cpu / ios * 1e6:.2f}")
PY
}
for w in qd1 qd32 k2mix; do
  : > "$WORK/$w.fio.res"; : > "$WORK/$w.nv.res"
  for r in $(seq "$REPS"); do
    fio --output-format=json "$WORK/$w.fio" > "$WORK/out.json" 2>/dev/null
    summarise fio "$WORK/out.json" >> "$WORK/$w.fio.res"
    "$NVSCHED" run "$WORK/$w.fio" --engine uring --sched none --output-format=json -q > "$WORK/out.json"
    summarise nvsched "$WORK/out.json" >> "$WORK/$w.nv.res"
  done
  for t in fio nv; do
    python3 - "$WORK/$w.$t.res" "$w" "$t" <<'PY'
import sys, statistics
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
med = [statistics.median(c) for c in zip(*rows)]
name = "fio    " if sys.argv[3] == "fio" else "nvsched"
print(f"{sys.argv[2]:6} {name} IOPS {med[0]:9.0f}  p50 {med[1]:8.1f} us  p99 {med[2]:8.1f} us  CPU/IO {med[3]:6.2f} us   (runs: {[int(r[0]) for r in rows]})")
PY
  done
done
