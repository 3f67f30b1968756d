#!/usr/bin/env python3
"""Turn the kernel's ftrace `blk` tracer output, read with the `bin` trace option, into
blktrace's own per-CPU files, for where blktrace's ioctl is refused (as in many VMs) but
tracefs is not.

Capture (as root; DEV is e.g. vda):

    mount -t tracefs nodev /sys/kernel/tracing
    cd /sys/kernel/tracing
    echo 1 > /sys/block/DEV/trace/enable
    echo blk > current_tracer
    echo > trace; echo 1 > tracing_on
    ... run the workload ...
    echo 0 > tracing_on
    echo bin > trace_options
    timeout 3 cat trace_pipe > capture.raw
    echo nobin > trace_options; echo nop > current_tracer
    echo 0 > /sys/block/DEV/trace/enable

Then:

    scripts/ftrace-blk-to-blktrace.py capture.raw NAME      # NAME.blktrace.0, .1, ...
    blkparse -i NAME -d NAME.bin -o NAME.txt                 # one file, in time order

`NAME.bin` is what fio's and nvsched's `read_iolog` replay.

With `bin`, ftrace writes each event after a 16-byte header of its own (pid, CPU,
time stamp); what follows is the blktrace event exactly as blktrace would write it (its
48 bytes, then its payload). This script drops the headers and files each event under
its CPU, as blktrace does.
"""

import struct
import sys

FTRACE_HEADER_BYTES = 16
EVENT_BYTES = 48
MAGIC = 0x65617400


def split_by_cpu(raw: bytes) -> dict[int, bytearray]:
    per_cpu: dict[int, bytearray] = {}
    at = 0
    while at < len(raw):
        if len(raw) - at < FTRACE_HEADER_BYTES + EVENT_BYTES:
            sys.exit(f"byte {at}: the capture ends inside an event ({len(raw) - at} bytes left)")
        _pid, cpu, _stamp = struct.unpack_from("<IIQ", raw, at)
        event_at = at + FTRACE_HEADER_BYTES
        (magic,) = struct.unpack_from("<I", raw, event_at)
        if magic & 0xFFFFFF00 != MAGIC:
            sys.exit(
                f"byte {event_at}: no blktrace event here (magic {magic:#010x}); "
                "was the capture read with `echo bin > trace_options` and the blk tracer?"
            )
        (pdu_len,) = struct.unpack_from("<H", raw, event_at + EVENT_BYTES - 2)
        end = event_at + EVENT_BYTES + pdu_len
        per_cpu.setdefault(cpu, bytearray()).extend(raw[event_at:end])
        at = end
    return per_cpu


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} CAPTURE.raw NAME   (writes NAME.blktrace.CPU)")
    raw_path, name = sys.argv[1], sys.argv[2]
    with open(raw_path, "rb") as f:
        per_cpu = split_by_cpu(f.read())
    if not per_cpu:
        sys.exit(f"{raw_path}: no events")
    for cpu, events in sorted(per_cpu.items()):
        path = f"{name}.blktrace.{cpu}"
        try:
            with open(path, "xb") as out:  # never over an existing file
                out.write(events)
        except FileExistsError:
            sys.exit(f"{path} exists; remove it or choose another NAME")
        print(f"{path}: {len(events)} bytes")


if __name__ == "__main__":
    main()
