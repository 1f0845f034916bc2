#!/usr/bin/env python3
"""Cache files rewritten, cloned with cp, read back and deleted on a purgefs
mount while another thread asks for purges: every read must give what the
model says the name holds. Prints each mismatch with the name's last
operations, and each unexpected error (an `OSError` but a name purged
meanwhile) with them, then `ops N mismatches M errors E`; exit 1 on a
mismatch or an error.

    scripts/lib/clone-stress.py MOUNTPOINT SECONDS SEED [--patch]

With --patch, a fifth of the writes are in place instead (one `pwrite` of
4 KiB to 256 KiB at a random offset, no `O_TRUNC`, sometimes synced), so a
clone's first write changes part of it: with block sharing on (the
default; not with the daemon's PURGEFS_BLOCK_SHARING=0) that makes it a sparse member, which a
truncating rewrite never does. Without it the operations are as before.

Mount with pressure, on ext4 (linked clones), for example:
    purgefs mount c m -o capacity=48M,low=12M,high=16M
A regression check for nodes the kernel still knows after a purge
(docs/CONFORMANCE.md, "Linked clones under purges"): before they were
fixed, a name read another file's content, or cp said two names were "the
same file", within 150 s nearly every run. Since, 0 mismatches are
expected; the document keeps the latest runs, and a rarer mismatch of
another kind (a cp's destination reading other bytes, about one in
140,000 operations: a node keyed by a purged clone's freed inode number,
handed to the next file given that number), fixed since."""
import os, random, subprocess, sys, threading, time

mnt, seconds, seed = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
patching = sys.argv[4:] == ["--patch"]
rng = random.Random(seed)
caches = os.path.join(mnt, "Library/Caches")
os.makedirs(caches, exist_ok=True)
names = [f"c-{i}.bin" for i in range(6)]
model, history = {}, {}
ops = mismatches = errors = 0
end = time.time() + seconds


past = {}  # name: its last few contents, for telling what a wrong read holds


def note(name, text):
    history[name] = (history.get(name, []) + [f"{ops}:{text}"])[-8:]
    if name in model:
        past[name] = (past.get(name, []) + [(ops, model[name])])[-4:]


def differences(got, expected):
    """Where `got` differs from `expected`, in 64 KiB blocks: which blocks,
    whether `got` holds zeros there, and which earlier content of a name
    (name@op) it holds there instead."""
    blocks = sorted({i // 65536 for i in range(min(len(got), len(expected))) if got[i] != expected[i]})
    parts = []
    for b in blocks[:6]:
        lo, hi = b * 65536, min(len(got), len(expected), (b + 1) * 65536)
        piece = got[lo:hi]
        owners = [f"{n}@{at}" for n, contents in past.items() for at, data in contents if data[lo:hi] == piece]
        parts.append(f"block {b}: {'zeros' if not any(piece) else 'data'} {owners[:4]}")
    return f"{len(blocks)} blocks differ: " + "; ".join(parts)


def path(name):
    return os.path.join(caches, name)


def write(name, data):
    fd = os.open(path(name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if rng.random() < 0.3:
            os.fsync(fd)
    finally:
        os.close(fd)


def patch(name, offset, data):
    fd = os.open(path(name), os.O_WRONLY)
    try:
        view, at = memoryview(data), offset
        while view:
            done = os.pwrite(fd, view, at)
            view, at = view[done:], at + done
        if rng.random() < 0.3:
            os.fsync(fd)
    finally:
        os.close(fd)


def pressure(seed):
    purges = random.Random(seed)
    while time.time() < end:
        subprocess.run(["setfattr", "-n", "user.purgefs.purge", "-v", str(purges.randint(1, 8) * 262144), mnt],
                       stderr=subprocess.DEVNULL)
        time.sleep(0.05)


threading.Thread(target=pressure, args=(seed,), daemon=True).start()
while time.time() < end:
    name = rng.choice(names)
    op = rng.choices(["write", "read", "clone", "delete"], [40, 40, 15, 5])[0]
    ops += 1
    try:
        if op == "write" and patching and name in model and rng.random() < 0.2:
            old = model[name]
            offset = rng.randrange(len(old) + 1)
            data = rng.randbytes(rng.choice([4096, 65536, 262144]))
            patch(name, offset, data)
            model[name] = old[:offset] + data + old[offset + len(data):]
            note(name, f"patch {len(data)} at {offset}")
        elif op == "write":
            data = rng.randbytes(rng.choice([4096, 65536, 300000, 1 << 20, 2 << 20]))
            write(name, data)
            model[name] = data
            note(name, f"write {len(data)}")
        elif op == "read" and name in model:
            with open(path(name), "rb") as f:
                got = f.read()
            if got != model[name]:
                mismatches += 1
                same = [k for k, v in model.items() if v == got]
                print(f"MISMATCH op {ops}: {name} read {len(got)} bytes, expected {len(model[name])}; "
                      f"its last operations {history.get(name)}; what it read is the model of {same}; "
                      f"{differences(got, model[name])}; all names' last operations {history}", flush=True)
                model[name] = got
        elif op == "clone":
            sources = [s for s in model if s != name]
            if sources:
                source = rng.choice(sources)
                done = subprocess.run(["cp", path(source), path(name)], stderr=subprocess.PIPE, text=True)
                if done.returncode == 0:
                    model[name] = model[source]
                    note(name, f"cp from {source} ({len(model[source])})")
                    note(source, f"cp to {name}")
                else:
                    model.pop(name, None)
                    if "same file" in done.stderr:
                        mismatches += 1
                        print(f"MISMATCH op {ops}: {done.stderr.strip()}", flush=True)
                    elif "No such file" not in done.stderr:
                        errors += 1
                        print(f"ERROR op {ops}: {done.stderr.strip()}", flush=True)
        elif op == "delete":
            try:
                os.unlink(path(name))
            except FileNotFoundError:
                pass
            model.pop(name, None)
            note(name, "unlink")
    except FileNotFoundError:
        model.pop(name, None)  # purged meanwhile
        note(name, "purged")
    except OSError as error:
        errors += 1
        print(f"ERROR op {ops}: {op} {name}: {error}; its last operations {history.get(name)}", flush=True)
        model.pop(name, None)  # what it holds now is unknown
        note(name, f"{op} failed")
print(f"ops {ops} mismatches {mismatches} errors {errors}")
sys.exit(1 if mismatches or errors else 0)
