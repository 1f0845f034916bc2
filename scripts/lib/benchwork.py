#!/usr/bin/env python3
"""The timed part of scripts/bench: one round of every phase on one directory,
and the table of medians. Standard library only.

The per-file loops live here, not in the shell, so that process spawning does
not dominate: each phase is a tight loop of os.* calls (one syscall each).
Python's own overhead per call is the same for every filesystem measured, so
it shifts all of them alike and weighs most on native, the fastest; ratios to
native are therefore if anything on the kind side for FUSE filesystems.

    benchwork.py run --dir DIR --label NAME --files N --size BYTES [--round R]
        prints one JSON object: seconds per phase (null when skipped)
    benchwork.py table RESULTS.jsonl [--order a,b,c] [--markdown]
        prints the medians in seconds and as ratios to native
    benchwork.py pgtable PGBENCH.jsonl [--order a,b,c] [--markdown]
        the same for scripts/bench's pgbench runs
"""

import argparse
import json
import os
import random
import statistics
import sys
import time

PHASES = [
    # key, label in the table, what it does
    ("create", "create", "open(O_CREAT|O_EXCL) + close of N empty files"),
    ("stat", "stat", "lstat of each of the N files by path"),
    ("readdir_lstat", "readdir+lstat", "one directory listing + lstat of each entry (ls -l)"),
    ("unlink", "unlink", "unlink of the N files"),
    ("write", "seq write", "sequential write of SIZE in 1 MiB writes, fdatasync at the end"),
    ("cold_read", "cold read", "read of that file in 1 MiB reads after sync + drop_caches"),
    ("warm_read", "warm read", "the same read again, caches warm"),
    ("copy", "copy (cp)", "copy_file_range of the whole file into a new one, as coreutils cp does (purgefs: a clone)"),
    ("copy_write", "write into copy", "a 4 KiB write + fdatasync into that copy (purgefs without reflinks: the clone's whole-file copy)"),
    ("random_fsync", "4K random write+fsync", "N/10 pwrites of 4 KiB at random 4 KiB-aligned offsets of a 64 MiB file, each followed by fdatasync (a database's pattern)"),
    ("stat_after_write", "stat after write", "N/10 times: a 4 KiB append to a file, then stat(2) of its path; only the stats are timed"),
    ("small_write", "small files write", "N files of 4 KiB each (random bytes) in 100 directories: create, write, close (a cache's pattern)"),
    ("small_read", "small files read", "the N files read back: open, read, close, after sync + drop_caches"),
]

# Sizes of the database-like and cache-like phases.
RANDOM_FILE = 64 << 20
SMALL_SIZE = 4096
SMALL_DIRS = 100

CHUNK = 1 << 20


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def drop_caches():
    """Empties the page, dentry and inode caches (root only). Returns False
    when it cannot, and the cold read is then not measured."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def run_round(directory, files, size):
    result = {}
    meta = os.path.join(directory, "bench-meta")
    os.mkdir(meta)
    names = [os.path.join(meta, "f%06d" % i) for i in range(files)]

    def create():
        flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC
        for name in names:
            os.close(os.open(name, flags, 0o644))

    def stat():
        for name in names:
            os.lstat(name)

    def readdir_lstat():
        count = 0
        with os.scandir(meta) as it:
            for entry in it:
                entry.stat(follow_symlinks=False)  # lstat(2) of the entry's path
                count += 1
        if count != files:
            raise RuntimeError("listing found %d entries, expected %d" % (count, files))

    def unlink():
        for name in names:
            os.unlink(name)

    result["create"] = timed(create)
    result["stat"] = timed(stat)
    result["readdir_lstat"] = timed(readdir_lstat)
    result["unlink"] = timed(unlink)
    os.rmdir(meta)

    big = os.path.join(directory, "bench-big.dat")
    # Random bytes, so that no layer can shortcut zeros; one buffer reused.
    block = memoryview(os.urandom(CHUNK))

    def write():
        fd = os.open(big, os.O_CREAT | os.O_TRUNC | os.O_WRONLY | os.O_CLOEXEC, 0o644)
        try:
            left = size
            while left > 0:
                n = os.write(fd, block[: min(CHUNK, left)])
                left -= n
            os.fdatasync(fd)
        finally:
            os.close(fd)

    buf = bytearray(CHUNK)

    def read():
        fd = os.open(big, os.O_RDONLY | os.O_CLOEXEC)
        try:
            total = 0
            while True:
                n = os.readv(fd, [buf])
                if n == 0:
                    break
                total += n
        finally:
            os.close(fd)
        if total != size:
            raise RuntimeError("read %d bytes back, wrote %d" % (total, size))

    result["write"] = timed(write)
    if drop_caches():
        result["cold_read"] = timed(read)
    else:
        result["cold_read"] = None
    result["warm_read"] = timed(read)

    copy = os.path.join(directory, "bench-copy.dat")

    def copy_whole():
        src = os.open(big, os.O_RDONLY | os.O_CLOEXEC)
        dst = os.open(copy, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o644)
        try:
            while os.copy_file_range(src, dst, 1 << 62) > 0:
                pass
        finally:
            os.close(src)
            os.close(dst)

    def write_into_copy():
        fd = os.open(copy, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.pwrite(fd, block[:4096], 0)
            os.fdatasync(fd)
        finally:
            os.close(fd)

    result["copy"] = timed(copy_whole)
    result["copy_write"] = timed(write_into_copy)
    os.unlink(copy)
    os.unlink(big)
    result.update(run_patterns(directory, files, block))
    return result


def run_patterns(directory, files, block):
    """A database's writes (4 KiB random + fdatasync), stat right after a
    write, and a cache's many small files written and read back."""
    result = {}
    rng = random.Random(files)  # the same offsets on every filesystem
    operations = max(files // 10, 1)

    db = os.path.join(directory, "bench-db.dat")
    fd = os.open(db, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o644)
    try:
        # Laid out in full first (untimed), as a database file is.
        for offset in range(0, RANDOM_FILE, CHUNK):
            os.pwrite(fd, block, offset)
        os.fdatasync(fd)
        offsets = [rng.randrange(RANDOM_FILE // 4096) * 4096 for _ in range(operations)]

        def random_fsync():
            for offset in offsets:
                os.pwrite(fd, block[:4096], offset)
                os.fdatasync(fd)

        result["random_fsync"] = timed(random_fsync)
    finally:
        os.close(fd)
    os.unlink(db)

    log = os.path.join(directory, "bench-log.dat")
    fd = os.open(log, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC, 0o644)
    spent = 0.0
    try:
        for _ in range(operations):
            os.write(fd, block[:4096])
            start = time.perf_counter()
            os.stat(log)
            spent += time.perf_counter() - start
    finally:
        os.close(fd)
    os.unlink(log)
    result["stat_after_write"] = spent

    tree = os.path.join(directory, "bench-small")
    os.mkdir(tree)
    dirs = [os.path.join(tree, "d%03d" % i) for i in range(SMALL_DIRS)]
    for d in dirs:
        os.mkdir(d)
    names = [os.path.join(dirs[i % SMALL_DIRS], "s%06d" % i) for i in range(files)]
    payload = block[:SMALL_SIZE]

    def small_write():
        flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC
        for name in names:
            fd = os.open(name, flags, 0o644)
            os.write(fd, payload)
            os.close(fd)

    def small_read():
        for name in names:
            fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC)
            if len(os.read(fd, SMALL_SIZE + 1)) != SMALL_SIZE:
                raise RuntimeError("%s: short read" % name)
            os.close(fd)

    result["small_write"] = timed(small_write)
    result["small_read"] = timed(small_read) if drop_caches() else None
    for name in names:
        os.unlink(name)
    for d in dirs:
        os.rmdir(d)
    os.rmdir(tree)
    return result


def cmd_run(args):
    # A leftover from an interrupted round would skew the listing phase.
    for name in ("bench-meta", "bench-big.dat", "bench-copy.dat", "bench-db.dat", "bench-log.dat", "bench-small"):
        if os.path.lexists(os.path.join(args.dir, name)):
            sys.exit("benchwork: %s already holds %s; remove it first" % (args.dir, name))
    result = run_round(args.dir, args.files, args.size)
    result.update(fs=args.label, round=args.round, files=args.files, size=args.size)
    print(json.dumps(result), flush=True)


def fmt_seconds(value):
    if value is None:
        return "-"
    if value < 0.1:
        return "%.4f" % value
    return "%.3f" % value if value < 100 else "%.1f" % value


def cmd_table(args):
    rows = []
    with open(args.results) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    if not rows:
        sys.exit("benchwork: no results in %s" % args.results)

    order = [name for name in args.order.split(",") if name] if args.order else []
    for row in rows:
        if row["fs"] not in order:
            order.append(row["fs"])
    rounds = {}
    medians = {}
    spreads = {}
    for fs in order:
        mine = [row for row in rows if row["fs"] == fs]
        rounds[fs] = len(mine)
        for key, _, _ in PHASES:
            values = [row[key] for row in mine if row.get(key) is not None]
            medians[(fs, key)] = statistics.median(values) if values else None
            # (max - min) / median: how much to trust a difference.
            spreads[(fs, key)] = (max(values) - min(values)) / statistics.median(values) if len(values) > 1 and statistics.median(values) > 0 else None
    files = rows[0]["files"]
    size = rows[0]["size"]

    def label(key, text):
        if key in ("create", "stat", "readdir_lstat", "unlink", "small_write", "small_read"):
            return "%s (%d files)" % (text, files)
        if key in ("random_fsync", "stat_after_write"):
            return "%s (%d)" % (text, max(files // 10, 1))
        return "%s (%s)" % (text, human_size(size))

    def ratio(fs, key):
        native = medians.get(("native", key))
        mine = medians.get((fs, key))
        if native is None or mine is None or mine == 0:
            return "-"
        return "%.2f" % (native / mine)

    header = ["phase"] + order
    seconds = [[label(k, t)] + [fmt_seconds(medians[(fs, k)]) for fs in order] for k, t, _ in PHASES]
    ratios = [[label(k, t)] + [ratio(fs, k) for fs in order] for k, t, _ in PHASES]
    spread = [[label(k, t)] + ["-" if spreads[(fs, k)] is None else "%.0f%%" % (100 * spreads[(fs, k)]) for fs in order] for k, t, _ in PHASES]
    counts = "rounds per filesystem: " + ", ".join("%s %d" % (fs, rounds[fs]) for fs in order)

    if args.markdown:
        print("Median seconds (lower is better):\n")
        print_markdown(header, seconds)
        print("\nRatio to native = native time / filesystem time (higher is better; 1.00 = native speed):\n")
        print_markdown(header, ratios)
        print("\nSpread across rounds, (max - min) / median (how far to trust a difference):\n")
        print_markdown(header, spread)
        print("\n" + counts)
    else:
        print("Median seconds per phase (lower is better)")
        print_plain(header, seconds)
        print()
        print("Ratio to native = native time / filesystem time (higher is better; 1.00 = native speed)")
        print_plain(header, ratios)
        print()
        print("Spread across rounds, (max - min) / median (how far to trust a difference)")
        print_plain(header, spread)
        print()
        print(counts)


PG_COLUMNS = [
    # key, label, higher is better
    ("init_s", "pgbench -i (bulk load), s", False),
    ("rw_tps", "read-write TPS", True),
    ("ro_tps", "read-only TPS (-S)", True),
]


def cmd_pgtable(args):
    """Medians of pgbench.jsonl, and ratios to native (native time / time
    for the load; TPS / native TPS): higher is better in both."""
    rows = [json.loads(line) for line in open(args.results) if line.strip()]
    if not rows:
        sys.exit("benchwork: no results in %s" % args.results)
    order = [name for name in args.order.split(",") if name] if args.order else []
    order = [fs for fs in order if any(row["fs"] == fs for row in rows)]
    for row in rows:
        if row["fs"] not in order:
            order.append(row["fs"])
    medians = {}
    for fs in order:
        for key, _, _ in PG_COLUMNS:
            values = [row[key] for row in rows if row["fs"] == fs]
            medians[(fs, key)] = statistics.median(values) if values else None

    def ratio(fs, key, higher):
        native, mine = medians.get(("native", key)), medians.get((fs, key))
        if not native or not mine:
            return "-"
        return "%.2f" % (mine / native if higher else native / mine)

    header = ["pgbench (scale %d, %d s runs)" % (rows[0]["scale"], rows[0]["seconds"])] + order
    values = [[label] + ["%.1f" % medians[(fs, key)] if medians[(fs, key)] is not None else "-" for fs in order] for key, label, _ in PG_COLUMNS]
    ratios = [[label] + [ratio(fs, key, higher) for fs in order] for key, label, higher in PG_COLUMNS]
    counts = "pgbench rounds per filesystem: " + ", ".join("%s %d" % (fs, sum(1 for row in rows if row["fs"] == fs)) for fs in order)
    if args.markdown:
        print("pgbench, medians:\n")
        print_markdown(header, values)
        print("\npgbench, ratio to native (higher is better; load: native time / time, TPS: TPS / native TPS):\n")
        print_markdown(header, ratios)
        print("\n" + counts)
    else:
        print("pgbench, medians")
        print_plain(header, values)
        print()
        print("pgbench, ratio to native (higher is better; load: native time / time, TPS: TPS / native TPS)")
        print_plain(header, ratios)
        print()
        print(counts)


def human_size(n):
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor and n % factor == 0:
            return "%d %s" % (n // factor, unit)
    return "%d B" % n


def print_plain(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    for r in [header] + rows:
        cells = [str(r[0]).ljust(widths[0])] + [str(c).rjust(w) for c, w in zip(r[1:], widths[1:])]
        print("  ".join(cells))


def print_markdown(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|---|" + "---:|" * (len(header) - 1))
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("--dir", required=True)
    run.add_argument("--label", required=True)
    run.add_argument("--files", type=int, required=True)
    run.add_argument("--size", type=int, required=True)
    run.add_argument("--round", type=int, default=1)
    table = sub.add_parser("table")
    table.add_argument("results")
    table.add_argument("--order", default="")
    table.add_argument("--markdown", action="store_true")
    pgtable = sub.add_parser("pgtable")
    pgtable.add_argument("results")
    pgtable.add_argument("--order", default="")
    pgtable.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    if args.command == "run":
        cmd_run(args)
    elif args.command == "pgtable":
        cmd_pgtable(args)
    else:
        cmd_table(args)


if __name__ == "__main__":
    main()
