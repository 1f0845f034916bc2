#!/usr/bin/env python3
"""Helpers for the scale phases of scripts/bench (issues 3 and 4): making the
big trees fast, outside the timed parts, checking them, and the table.
Standard library only. The timed commands themselves (purgefs mount,
setfattr, find -delete, du, getfattr) are run and timed by scripts/bench.

    benchscale.py caches DIR --files N --bytes B [--dirs D]
        N cache files totalling exactly B bytes of random data, in D
        directories DIR/Library/Caches/dNNN (default 100)
    benchscale.py tree DIR --files N [--dirs D]
        N files in D directories DIR/tNNNN (default: N / 1000, at least 1),
        each sparse (ftruncate: an apparent size of 0-4095 bytes, no data
        blocks); prints {"files": N, "bytes": total apparent size}
    benchscale.py walk DIR [--skip NAME]
        independent walk (lstat, no symlinks followed, one filesystem):
        prints {"files": regular files, "bytes": their sizes}, skipping the
        entry NAME at the top (the state directory, .purgefs)
    benchscale.py count DIR
        prints the number of regular files under DIR (0 if DIR is gone)
    benchscale.py getxattr PATH NAME [--repeat K]
        times K getxattr(2) calls of NAME on PATH, after one untimed call;
        prints {"value": ..., "median_s": ..., "min_s": ...}
    benchscale.py table SCALE.jsonl [--markdown]
        the scale phases' table: medians, ratios and the extra figures
"""

import argparse
import json
import os
import statistics
import sys
import time


# --- making the trees --------------------------------------------------------

def cmd_caches(args):
    """Cache files of about B/N bytes each, all of random content from one
    buffer at different offsets (no layer can shortcut zeros). The sizes add
    up to exactly B: file i gets (B*(i+1))//N - (B*i)//N bytes."""
    n, total, dirs = args.files, args.bytes, max(1, min(args.dirs, args.files))
    base = os.path.join(args.dir, "Library", "Caches")
    os.makedirs(base, exist_ok=True)
    largest = -(-total // n) + 1
    pool = os.urandom(largest + 65536)
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC
    made = 0
    for d in range(dirs):
        sub = os.path.join(base, "d%03d" % d)
        os.mkdir(sub)
        # Files d, d+dirs, d+2*dirs, ... go to directory d.
        for i in range(d, n, dirs):
            size = (total * (i + 1)) // n - (total * i) // n
            fd = os.open(os.path.join(sub, "c%06d" % i), flags, 0o644)
            try:
                start = (i * 4099) % 65536
                view = memoryview(pool)[start:start + size]
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            finally:
                os.close(fd)
            made += 1
    print(json.dumps({"files": made, "bytes": total}))


def cmd_tree(args):
    n = args.files
    dirs = args.dirs or max(1, n // 1000)
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC
    total = 0
    made = 0
    for d in range(dirs):
        sub = os.path.join(args.dir, "t%04d" % d)
        os.makedirs(sub, exist_ok=True)
        for i in range(d, n, dirs):
            fd = os.open(os.path.join(sub, "f%07d" % i), flags, 0o644)
            size = (i * 7919) % 4096
            if size:
                os.ftruncate(fd, size)
            os.close(fd)
            total += size
            made += 1
    print(json.dumps({"files": made, "bytes": total}))


# --- checking ----------------------------------------------------------------

def walk(top, skip=None):
    files = 0
    size = 0
    device = os.lstat(top).st_dev
    stack = [top]
    while stack:
        path = stack.pop()
        with os.scandir(path) as it:
            for entry in it:
                if skip and path == top and entry.name == skip:
                    continue
                st = entry.stat(follow_symlinks=False)
                if entry.is_dir(follow_symlinks=False):
                    if st.st_dev == device:
                        stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    files += 1
                    size += st.st_size
    return files, size


def cmd_walk(args):
    files, size = walk(args.dir, args.skip)
    print(json.dumps({"files": files, "bytes": size}))


def cmd_count(args):
    if not os.path.isdir(args.dir):
        print(0)
        return
    print(walk(args.dir)[0])


def cmd_getxattr(args):
    value = os.getxattr(args.path, args.name)  # untimed: the first lookup
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        value = os.getxattr(args.path, args.name)
        times.append(time.perf_counter() - start)
    print(json.dumps({"value": value.decode(errors="replace"), "median_s": statistics.median(times),
                      "min_s": min(times)}))


# --- the table ---------------------------------------------------------------

def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def median_of(rows, key):
    values = [r[key] for r in rows if r.get(key) is not None]
    return (statistics.median(values), len(values), spread(values)) if values else (None, 0, None)


def spread(values):
    if len(values) < 2:
        return None
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m > 0 else None


def fmt_s(v):
    if v is None:
        return "-"
    return "%.3f" % v if v < 100 else "%.1f" % v


def fmt_ms(v):
    return "-" if v is None else "%.2f ms" % (v * 1000)


def fmt_ratio(native, mine):
    if native is None or mine is None or mine == 0:
        return "-"
    return "%.2f" % (native / mine)


def fmt_spread(s):
    return "-" if s is None else "%.0f%%" % (100 * s)


def cmd_table(args):
    rows = load(args.results)
    by = {}
    for r in rows:
        by.setdefault(r["phase"], []).append(r)
    table = []   # phase, purgefs op, purgefs time, native op, native time, ratio, spread p/n, rounds
    notes = []

    purge = by.get("purge", [])
    if purge:
        p, rounds, sp = median_of(purge, "purge_s")
        n, _, sn = median_of(purge, "find_s")
        files, nbytes = purge[0]["files"], purge[0]["bytes"]
        table.append(["purge vs unlink (%d files, %s)" % (files, human(nbytes)),
                      "setfattr user.purgefs.purge=all", fmt_s(p), "find -type f -delete", fmt_s(n),
                      fmt_ratio(n, p), "%s / %s" % (fmt_spread(sp), fmt_spread(sn)), str(rounds)])
        left = sorted({r["left_purgefs"] for r in purge})
        left_native = sorted({r["left_native"] for r in purge})
        notes.append("purge: cache files left afterwards in the backing directory: %s (native after find: %s) of %d"
                     % ("/".join(map(str, left)), "/".join(map(str, left_native)), files))
        if any("purged_files" in r for r in purge):
            pf = sorted({r.get("purged_files") for r in purge if r.get("purged_files") is not None})
            notes.append("purge: user.purgefs.purged_files after each round: %s" % "/".join(map(str, pf)))

    index = by.get("index", [])
    if index:
        files = index[0]["files"]
        for temp in ("cold", "warm"):
            p, rounds, sp = median_of(index, "mount_%s_s" % temp)
            n, _, sn = median_of(index, "du_%s_s" % temp)
            table.append(["index at mount vs du, %s (%d files)" % (temp, files),
                          "purgefs mount", fmt_s(p), "du -s", fmt_s(n), fmt_ratio(n, p),
                          "%s / %s" % (fmt_spread(sp), fmt_spread(sn)), str(rounds)])

    gx = by.get("getfattr", [])
    if gx:
        files = gx[0]["files"]
        p, rounds, sp = median_of(gx, "getfattr_s")
        n, _, sn = median_of(gx, "du_apparent_s")
        table.append(["getfattr vs du, warm (%d files)" % files,
                      "getfattr -n user.purgefs.size", fmt_ms(p), "du -s --apparent-size", fmt_s(n),
                      fmt_ratio(n, p), "%s / %s" % (fmt_spread(sp), fmt_spread(sn)), str(rounds)])
        sys_median = statistics.median([r["getxattr_s"] for r in gx])
        notes.append("getfattr: the getxattr(2) call alone (filesystem time), median of %d calls: %.3f ms"
                     % (gx[0]["getxattr_calls"], sys_median * 1000))
        for r in gx[:1]:
            notes.append("getfattr: user.purgefs.size = %s, files = %s; independent walk of the backing directory: "
                         "%d bytes in %d files -> %s"
                         % (r["xattr_size"], r["xattr_files"], r["walk_bytes"], r["walk_files"],
                            "equal" if r["size_ok"] and r["files_ok"] else "NOT EQUAL"))

    mem = by.get("memory", [])
    if mem:
        m = mem[-1]
        per = (m["rss_kib"] - m["rss_empty_kib"]) * 1024 / m["files"]
        table.append(["memory per file (%d files)" % m["files"], "daemon VmRSS", "%.0f B/file" % per,
                      "", "", "", "", "1"])
        notes.append("memory: daemon VmRSS %d KiB with %d files, %d KiB on an empty container -> %.0f bytes per file; "
                     "peak (VmHWM) %d KiB -> %.0f bytes per file"
                     % (m["rss_kib"], m["files"], m["rss_empty_kib"], per, m["hwm_kib"],
                        (m["hwm_kib"] - m["rss_empty_kib"]) * 1024 / m["files"]))

    header = ["scale phase", "purgefs command", "time", "native command", "time", "ratio", "spread p / n", "rounds"]
    if args.markdown:
        print("Scale phases: median seconds (getfattr in ms), ratio = native time / purgefs time (higher is better):\n")
        print("| " + " | ".join(header) + " |")
        print("|---|---|---:|---|---:|---:|---:|---:|")
        for r in table:
            print("| " + " | ".join(r) + " |")
        print()
        for line in notes:
            print("- " + line)
    else:
        print("Scale phases: median seconds (getfattr in ms), ratio = native time / purgefs time (higher is better)")
        widths = [max(len(str(r[i])) for r in [header] + table) for i in range(len(header))]
        for r in [header] + table:
            print("  ".join(str(c).ljust(w) if i in (0, 1, 3) else str(c).rjust(w)
                            for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        for line in notes:
            print(line)


def human(n):
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor:
            return ("%d %s" % (n // factor, unit)) if n % factor == 0 else ("%.1f %s" % (n / factor, unit))
    return "%d B" % n


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("caches")
    p.add_argument("dir")
    p.add_argument("--files", type=int, required=True)
    p.add_argument("--bytes", type=int, required=True)
    p.add_argument("--dirs", type=int, default=100)
    p = sub.add_parser("tree")
    p.add_argument("dir")
    p.add_argument("--files", type=int, required=True)
    p.add_argument("--dirs", type=int, default=0)
    p = sub.add_parser("walk")
    p.add_argument("dir")
    p.add_argument("--skip")
    p = sub.add_parser("count")
    p.add_argument("dir")
    p = sub.add_parser("getxattr")
    p.add_argument("path")
    p.add_argument("name")
    p.add_argument("--repeat", type=int, default=101)
    p = sub.add_parser("table")
    p.add_argument("results")
    p.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    {"caches": cmd_caches, "tree": cmd_tree, "walk": cmd_walk, "count": cmd_count,
     "getxattr": cmd_getxattr, "table": cmd_table}[args.command](args)


if __name__ == "__main__":
    main()
