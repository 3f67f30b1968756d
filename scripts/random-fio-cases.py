#!/usr/bin/env python3
"""Writes random small fio job bodies, in the case format of compare-fio-counts.py, to
check nvsched's job semantics against fio on cases nobody picked by hand.

    scripts/random-fio-cases.py SEED COUNT [--kind files|sizes|layout|clones] > cases.txt
    scripts/compare-fio-counts.py cases.txt --order [--engine libaio]

`files` mixes sequential reads and writes (with forward skips) over one to four files
with loops, io_size, fsync, end_fsync, verify, number_ios, openfiles,
file_service_type and filesize; `sizes` mixes sequential and random jobs of one file
whose size is smaller than the file (filesize), with loops, io_size, verify and flushes;
`layout` places sequential and random jobs in their file (offset, a size in bytes or
as a percentage, strided zones,
forward skips, clones at offset_increment) with loops and io_size; `clones` runs two to
four clones of a sequential job in one shared file (offset_increment in bytes or as a
percentage, sizes in bytes or percentages, filesize, file_append), where fio sets the
clones up one after another and reports them in its order of threads.
The same seed gives the same cases.
"""
import argparse
import random


def maybe(r: random.Random, lines: list, chance: float, option: str, values=None) -> None:
    """With probability `chance`, adds `option`, set to one of `values` when given."""
    if r.random() < chance:
        lines.append(option if values is None else f"{option}={r.choice(values)}")


def files_case(r: random.Random) -> str:
    lines = ["[a]"]
    rw = r.choice(["read", "write", "write", "read", "write:4k", "read:8k"])
    lines += [f"rw={rw}", f"bs={r.choice(['4k', '3k', '8k'])}", f"size={r.choice(['64k', '96k', '100k', '128k'])}"]
    maybe(r, lines, 0.4, "loops", [2, 3])
    maybe(r, lines, 0.25, "io_size", ["160k", "192k", "256k"])
    if rw.startswith("write"):
        maybe(r, lines, 0.4, "fsync", [3, 5, 8])
        maybe(r, lines, 0.3, "end_fsync=1")
        maybe(r, lines, 0.3, "verify=crc32c")
    maybe(r, lines, 0.2, "number_ios", [10, 30, 50])
    files = r.choice([1, 2, 3, 4])
    if files > 1 or r.random() < 0.3:
        lines.append(f"nrfiles={max(files, 2)}")
        maybe(r, lines, 0.4, "openfiles", [1, 2, 3])
        maybe(r, lines, 0.4, "file_service_type", ["sequential", "roundrobin:2", "roundrobin:3"])
        maybe(r, lines, 0.25, "filesize", ["32k", "48k"])
    return "\n".join(lines)


def sizes_case(r: random.Random) -> str:
    lines = ["[a]"]
    rw = r.choice(["write", "read", "randwrite", "randread", "write"])
    lines += [f"rw={rw}", "bs=4k", f"size={r.choice(['16k', '32k'])}"]
    maybe(r, lines, 0.6, "filesize", ["32k", "48k", "64k"])
    maybe(r, lines, 0.5, "loops", [2, 3])
    maybe(r, lines, 0.3, "io_size", ["8k", "24k", "40k", "80k"])
    if "write" in rw:
        maybe(r, lines, 0.5, "end_fsync=1")
        maybe(r, lines, 0.3, "fsync", [3, 5])
        maybe(r, lines, 0.4, "verify=crc32c")
    maybe(r, lines, 0.15, "number_ios", [3, 7])
    return "\n".join(lines)


def layout_case(r: random.Random) -> str:
    lines = ["[a]"]
    rw = r.choice(["write", "read", "write:8k", "read:4k", "randwrite", "randread"])
    lines += [f"rw={rw}", f"bs={r.choice(['4k', '8k'])}", f"size={r.choice(['64k', '128k', '50%', '75%'])}"]
    lines.append(f"filesize={r.choice(['128k', '256k'])}")
    maybe(r, lines, 0.4, "offset", ["16k", "32k"])
    if r.random() < 0.5:
        lines.append("zonemode=strided")
        lines.append(f"zonesize={r.choice(['16k', '32k'])}")
        maybe(r, lines, 0.5, "zonerange", ["32k", "64k"])
        maybe(r, lines, 0.5, "zoneskip", ["16k", "32k"])
    if r.random() < 0.3:
        lines += ["numjobs=2", f"offset_increment={r.choice(['32k', '64k'])}"]
    maybe(r, lines, 0.4, "loops", [2, 3])
    maybe(r, lines, 0.3, "io_size", ["32k", "96k", "160k"])
    return "\n".join(lines)


def clones_case(r: random.Random) -> str:
    lines = ["[a]"]
    rw = r.choice(["write", "read", "write:8k", "read:4k", "write"])
    lines += [f"rw={rw}", "bs=4k", f"numjobs={r.choice([2, 3, 4])}"]
    lines.append(f"size={r.choice(['32k', '64k', '25%', '50%'])}")
    if "%" in lines[-1] or r.random() < 0.4:
        lines.append(f"filesize={r.choice(['128k', '256k'])}")
    # nvsched refuses file_append with filesize
    if rw.startswith("write") and not lines[-1].startswith("filesize") and "%" not in lines[3] and r.random() < 0.3:
        lines.append("file_append=1")
    else:
        lines.append(f"offset_increment={r.choice(['16k', '32k', '25%', '50%'])}")
        maybe(r, lines, 0.3, "offset", ["16k", "32k"])
    maybe(r, lines, 0.3, "loops", [2, 3])
    maybe(r, lines, 0.3, "io_size", ["48k", "96k"])
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seed", type=int)
    parser.add_argument("count", type=int)
    parser.add_argument("--kind", choices=["files", "sizes", "layout", "clones"], default="files")
    args = parser.parse_args()
    r = random.Random(args.seed)
    make = {"files": files_case, "sizes": sizes_case, "layout": layout_case, "clones": clones_case}[args.kind]
    print("\n---\n".join(make(r) for _ in range(args.count)))


if __name__ == "__main__":
    main()
