#!/usr/bin/env bash
# Compares one of nvsched's policies with the kernel's own scheduler of the same name on
# the same device and jobs: fio with the kernel's scheduler on the device, then nvsched's
# io_uring engine with the kernel's scheduler set to none and the policy in user space,
# alternately, REPS times each. Prints each job's bandwidth and p99 completion latency
# per run.
#
# The device is a loop device over a new file (4 GiB of random data), so nothing that
# exists is written to; the loop device and the file are removed at the end. Needs root
# (losetup, sysfs) and fio.
#
#   scripts/compare-kernel-sched.sh JOBFILE [KERNEL_SCHED] [POLICY] [REPS]
#   scripts/compare-kernel-sched.sh examples/kernel-compare/bfq-weights.fio bfq bfq 3
#
# The job file names the device as ${DEV}. To see what the kernel's scheduler decides,
# enable the blk tracer while a run goes:
#   echo blk > /sys/kernel/debug/tracing/current_tracer
#   echo 1 > /sys/block/loopN/trace/enable; cat /sys/kernel/debug/tracing/trace
set -euo pipefail
JOBFILE=${1:?usage: $0 JOBFILE [KERNEL_SCHED] [POLICY] [REPS]}
KSCHED=${2:-bfq}
POLICY=${3:-$KSCHED}
REPS=${4:-3}
NVSCHED=${NVSCHED:-./target/release/nvsched}
IMG=${IMG:-/var/tmp/nvsched-kernel-compare.img}
command -v fio >/dev/null || { echo "fio is not installed (apt-get install fio)"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root: it sets up a loop device and its scheduler"; exit 1; }
[ -e "$IMG" ] && { echo "$IMG exists; remove it or set IMG to a new path"; exit 1; }
[ -x "$NVSCHED" ] || cargo build --release
truncate -s 4G "$IMG"
DEV=$(losetup --find --show --direct-io=on "$IMG")
NAME=$(basename "$DEV")
trap 'echo none > /sys/block/$NAME/queue/scheduler 2>/dev/null || true; losetup -d "$DEV"; rm -f "$IMG"' EXIT
echo 0 > "/sys/block/$NAME/queue/rotational"
echo "filling $DEV (4 GiB)"
dd if=/dev/urandom of="$DEV" bs=4M count=1024 oflag=direct status=none
export DEV
bandwidths() { # tool json: each job's MB/s and p99 completion latency
  python3 -c 'import json, sys
d = json.load(open(sys.argv[2]))
def p99(j):
    d = j["read"] if j["read"]["total_ios"] else j["write"]
    return d["clat_ns"].get("percentile", {}).get("99.000000", 0) / 1e3
bw = ", ".join("%s %.1f MB/s p99 %.0f us" % (j["jobname"], (j["read"]["bw_bytes"] + j["write"]["bw_bytes"]) / 1e6, p99(j)) for j in d["jobs"])
print("%-16s %s" % (sys.argv[1], bw))' "$1" "$2"
}
OUT=$(mktemp)
for _ in $(seq "$REPS"); do
  echo "$KSCHED" > "/sys/block/$NAME/queue/scheduler"
  fio --output-format=json --output="$OUT" "$JOBFILE"
  bandwidths "kernel $KSCHED" "$OUT"
  echo none > "/sys/block/$NAME/queue/scheduler"
  "$NVSCHED" run "$JOBFILE" --engine uring --sched "$POLICY" --output-format=json --output "$OUT" 2>/dev/null
  bandwidths "nvsched $POLICY" "$OUT"
done
rm -f "$OUT"
