#!/usr/bin/env python3
"""A load that hunts for hangs in a purgefs mount.

    hangload.py MOUNT SECONDS [--workers N] [--deadline S] [--seed K] [--progress FILE]

Workers, each a process of its own, work on the same few files and
directories for SECONDS: writers with fsync, copies (clones) between data/
and Library/Caches/ by copy_file_range, renames, truncates, unlinks, ACL
changes (system.posix_acl_access, as setfacl and cp -p make them), and
purges and squeezes through the root's attributes. Every operation has a
deadline: the parent watches each worker's heartbeat and, if one has not
come back from an operation within S seconds, prints which operation on
which path and exits 2 (a hang). An error is an answer: once the mount
answers ENOTCONN (its daemon was killed) workers stop, and the load exits 0.

Exit status: 0 every operation answered, 2 an operation hung, 64 usage.
Each line of --progress FILE is the total of operations done so far.
"""
import argparse
import ctypes
import errno
import multiprocessing as mp
import os
import random
import struct
import sys
import time

OPS = ["write_fsync", "copy", "rename", "truncate", "unlink", "acl", "purge", "squeeze", "stat_list"]
DIRS = ["data", "Library/Caches", "Library/Caches/d"]
NAMES = [f"f{i}" for i in range(6)]
NOBODY = 65534


def acl_value(with_user):
    """A system.posix_acl_access value (version 2, then tag/perm/id triples)."""
    entries = [(0x01, 6, 0xFFFFFFFF)]  # user::rw-
    if with_user:
        entries.append((0x02, 4, NOBODY))  # user:nobody:r--
    entries.append((0x04, 4, 0xFFFFFFFF))  # group::r--
    if with_user:
        entries.append((0x10, 4, 0xFFFFFFFF))  # mask::r--
    entries.append((0x20, 4, 0xFFFFFFFF))  # other::r--
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)


def one_op(mount, rng, op):
    """Runs one operation; returns the path it touched (for the hang report)."""
    directory = os.path.join(mount, rng.choice(DIRS))
    path = os.path.join(directory, rng.choice(NAMES))
    if op == "write_fsync":
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, os.urandom(rng.choice([512, 4096, 65536, 1 << 20])), rng.randrange(0, 1 << 20))
            os.fsync(fd)
        finally:
            os.close(fd)
    elif op == "copy":
        target = os.path.join(mount, rng.choice(DIRS), rng.choice(NAMES))
        source = os.open(path, os.O_RDONLY)
        try:
            dest = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                size = os.fstat(source).st_size
                while size > 0:
                    n = os.copy_file_range(source, dest, size)
                    if n <= 0:
                        break
                    size -= n
            finally:
                os.close(dest)
        finally:
            os.close(source)
    elif op == "rename":
        os.rename(path, os.path.join(mount, rng.choice(DIRS), rng.choice(NAMES)))
    elif op == "truncate":
        os.truncate(path, rng.choice([0, 4096, 300000]))
    elif op == "unlink":
        os.unlink(path)
    elif op == "acl":
        os.setxattr(directory, "system.posix_acl_access", acl_value(rng.random() < 0.5))
    elif op == "purge":
        path = mount
        os.setxattr(mount, "user.purgefs.purge", rng.choice([b"1M", b"all"]))
    elif op == "squeeze":
        path = mount
        os.setxattr(mount, "user.purgefs.external", str(rng.choice([0, 64 << 20, 160 << 20])).encode())
    elif op == "stat_list":
        for name in os.listdir(directory):
            os.lstat(os.path.join(directory, name))
    return path


def worker(mount, index, seed, until, beats, done, stop):
    rng = random.Random(seed * 1000 + index)
    while time.time() < until and not stop.value:
        op = rng.choice(OPS)
        beats[index * 2] = time.time()
        beats[index * 2 + 1] = OPS.index(op)
        try:
            one_op(mount, rng, op)
        except OSError as error:
            if error.errno in (errno.ENOTCONN, errno.ECONNABORTED):
                stop.value = 1
                break
        beats[index * 2] = 0.0
        with done.get_lock():
            done.value += 1


def main():
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("mount")
    parser.add_argument("seconds", type=float)
    parser.add_argument("--workers", type=int, default=6)
    parser.add_argument("--deadline", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--progress")
    args = parser.parse_args()
    for directory in DIRS:
        os.makedirs(os.path.join(args.mount, directory), exist_ok=True)
    until = time.time() + args.seconds
    beats = mp.Array(ctypes.c_double, args.workers * 2, lock=False)
    done = mp.Value(ctypes.c_long, 0)
    stop = mp.Value(ctypes.c_int, 0, lock=False)
    workers = [mp.Process(target=worker, args=(args.mount, i, args.seed, until, beats, done, stop))
               for i in range(args.workers)]
    for process in workers:
        process.start()
    status = 0
    while any(p.is_alive() for p in workers):
        time.sleep(0.2)
        now = time.time()
        if args.progress:
            with open(args.progress, "a") as progress:
                progress.write(f"{done.value}\n")
        for i in range(args.workers):
            began = beats[i * 2]
            if began and workers[i].is_alive() and now - began > args.deadline:
                print(f"hangload: worker {i} has been in {OPS[int(beats[i * 2 + 1])]} for {now - began:.0f} s",
                      flush=True)
                status = 2
        if status:
            break
    for process in workers:
        if process.is_alive():
            process.kill()
    print(f"hangload: {done.value} operations{' (mount gone)' if stop.value else ''}", flush=True)
    sys.exit(status)


if __name__ == "__main__":
    main()
