#!/usr/bin/env python3
"""Everything at once on purgefs mounts, for minutes or an hour: scripts/soak runs it.

    soak.py --bin PURGEFS [--minutes N] [--seed S] [--containers K] [--keep]

K containers (3) share one simulated device (-o device=NAME,capacity=...,
cloud=DIR, a local directory store each). In each, an app of two threads:
  - a writer of durable files (Documents/, Library/Application Support/,
    Library/Clones/): appends with and without fsync, overwrites then fsync,
    atomic replaces (write, fsync, rename, fsync the directory), clones
    (cp inside the mount, purgefs clone) then writes into their members,
    and reads back what it wrote;
  - a cache writer (Library/Caches/, tmp/): files written whole, cloned,
    read back, deleted, while the device's monitor purges them.
Beside them, one chaos thread: manual purges, squeezes of the device,
fault rules added and cleared (file operations and the cloud's upload and
download), the network offline and online, evictions and downloads, the
read-only commands, and kill -9 of a daemon every few minutes followed by a
remount; and one thread running short `purgefs explore` runs on a small app.
The first container's daemon is never killed, so its RSS and descriptor
series span the whole run.

The model: every byte an app wrote, and every byte it synced. After each
kill and remount, at the end, and after a clean remount at the end, every
synced byte must read back exactly; a file written since its last sync may
be shorter (its unsynced tail lost) and may show the synced or the newer
bytes of a region overwritten since, nothing else; a cache file may be gone,
but if present holds what was written (a prefix, if it was not synced and a
daemon was killed). Between kills, a file the app wrote without an error
reads back exactly.

Every operation is bounded (--op-timeout): one that has not come back is a
hang, and its mount's FUSE connection is aborted (/sys/fs/fuse/connections/N/abort)
to free it, then the container is remounted. At the end: the counts, the
daemons' RSS and descriptor series, and exit 1 unless there were 0 hangs,
0 mismatches, 0 lost synced bytes, 0 daemon deaths, 0 unexpected errors and
no growth of RSS or descriptors.
"""
import argparse
import collections
import errno
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

MIB = 1 << 20
CONTROL = "/sys/fs/fuse/connections"

# The app's files, relative to the container.
DOCS = [f"Documents/doc-{i}.dat" for i in range(4)]
LOGS = [f"Library/Application Support/log-{i}.dat" for i in range(4)]
CLONES = [f"Library/Clones/clone-{i}.dat" for i in range(3)]
DURABLE = DOCS + LOGS + CLONES
CACHES = ([f"Library/Caches/c-{i}.bin" for i in range(24)] + [f"Library/Caches/sub/s-{i}.bin" for i in range(8)]
          + [f"tmp/t-{i}.bin" for i in range(6)])
DIRECTORIES = ["Documents", "Library/Application Support", "Library/Clones", "Library/Caches/sub", "tmp"]
DURABLE_LIMIT = 1200 * 1024  # a durable file past this is replaced or removed
# The names an app uses in its container (each durable file's ".new" too, the
# directories, the root). The daemon holds a descriptor for each inode the
# kernel knows, and the kernel keeps a removed or purged file's inode until it
# forgets it, so its descriptors inside the container follow the kernel's
# cache of these names, up and down by about this many, with no trend.
NAME_POOL = 2 * len(DURABLE) + len(CACHES) + len(DIRECTORIES) + 4

# Errors an operation may get that say nothing is wrong: the device full
# (pressure, squeezes), the errnos the soak's fault rules inject.
INJECTED = {errno.EAGAIN, errno.ETIMEDOUT, errno.EDQUOT}
PRESSURE = {errno.ENOSPC}
DOWN = {errno.ENOTCONN, errno.ECONNABORTED}

# The fault rules the chaos thread adds (the words after `fault add MOUNTPOINT`).
FAULT_RULES = [
    ["--op", "write", "--path", "Library/Caches/**", "--errno", "EAGAIN", "--probability", "0.2", "--times", "20"],
    ["--op", "write", "--path", "**", "--short-write", "--probability", "0.2", "--times", "30"],
    ["--op", "fsync", "--path", "Library/Application Support/*", "--errno", "ETIMEDOUT", "--probability", "0.3", "--times", "5"],
    ["--op", "read", "--path", "Library/Caches/**", "--errno", "ETIMEDOUT", "--probability", "0.2", "--times", "10"],
    ["--op", "open", "--path", "Library/**", "--errno", "EAGAIN", "--probability", "0.1", "--times", "10"],
    ["--op", "create", "--path", "tmp/*", "--errno", "EDQUOT", "--times", "3"],
    ["--op", "lookup", "--path", "Documents/*", "--delay", "200ms", "--times", "20"],
    ["--op", "getattr", "--path", "**", "--delay", "50ms", "--probability", "0.2", "--times", "40"],
    ["--op", "upload", "--path", "Documents/**", "--errno", "EIO", "--probability", "0.5"],
    ["--op", "upload", "--path", "Documents/**", "--offline", "--times", "5"],
    ["--op", "download", "--path", "Documents/**", "--offline", "--times", "3"],
    ["--op", "download", "--path", "Documents/**", "--errno", "EIO", "--times", "2"],
    ["--op", "download", "--path", "Documents/**", "--delay", "2s", "--times", "3"],
    ["--op", "remote-delete", "--path", "**", "--errno", "EIO", "--times", "3"],
]

EXPLORE_APP = r'''
import json, os, sys
mount = os.environ["PURGEFS_MOUNT"]
careless = sys.argv[1] == "careless"
new = json.dumps({"version": 2, "items": list(range(300))}).encode()
temp = os.path.join(mount, "config.json.new")
fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, new)
if not careless:
    os.fsync(fd)
os.close(fd)
os.rename(temp, os.path.join(mount, "config.json"))
if not careless:
    directory = os.open(mount, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(directory)
    os.close(directory)
'''
EXPLORE_CHECK = r'''
import json, os, sys
try:
    with open(os.path.join(os.environ["PURGEFS_CRASH_STATE"], "config.json")) as f:
        sys.exit(0 if json.load(f).get("version") in (1, 2) else 1)
except (OSError, ValueError) as error:
    print(error, file=sys.stderr)
    sys.exit(1)
'''

started = time.monotonic()
print_lock = threading.Lock()


def say(text):
    with print_lock:
        print(f"soak [{time.monotonic() - started:7.1f}s] {text}", flush=True)


def errname(number):
    return errno.errorcode.get(number, str(number))


class Down(Exception):
    """The mount answered ENOTCONN: its daemon is gone or its connection aborted."""


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.ops = collections.Counter()
        self.hangs = []
        self.mismatches = []
        self.lost_synced = 0
        self.unexpected = []
        self.deaths = []
        self.kills = 0
        self.remounts = 0
        self.verifications = 0
        self.files_checked = 0
        self.bytes_checked = 0
        self.synced_checked = 0

    def count(self, kind, outcome="ok"):
        with self.lock:
            self.ops[(kind, outcome)] += 1

    LABELS = {"hangs": "HANG", "mismatches": "MISMATCH", "deaths": "DAEMON DEATH", "unexpected": "UNEXPECTED"}

    def add(self, which, text):
        with self.lock:
            getattr(self, which).append(text)
        say(f"{self.LABELS[which]}: {text}")

    def checked(self, files, data, synced):
        with self.lock:
            self.files_checked += files
            self.bytes_checked += data
            self.synced_checked += synced


class FileModel:
    """What an app wrote to a durable file: cur, as if every write it tried
    had happened; synced, the content at its last successful sync (None:
    never synced); certain, no write has failed since cur was read back."""
    __slots__ = ("cur", "synced", "certain")

    def __init__(self):
        self.cur = bytearray()
        self.synced = None
        self.certain = True


class CacheModel:
    __slots__ = ("cur", "synced")

    def __init__(self, data, synced):
        self.cur = bytes(data)
        self.synced = synced


def untouched_synced_lost(model, disk):
    """Synced bytes not overwritten since that the disk no longer holds."""
    synced = model.synced
    if synced is None:
        return 0
    if disk is not None and len(disk) >= len(synced) and disk[:len(synced)] == synced:
        return 0
    cur = model.cur
    lost = 0
    for i in range(len(synced)):
        if i < len(cur) and cur[i] == synced[i] and (disk is None or i >= len(disk) or disk[i] != synced[i]):
            lost += 1
    return lost


def judge_durable(model, disk, exact):
    """None if disk is what the model allows, else a line saying why not."""
    cur = model.cur
    if exact and model.certain:
        if disk == cur:
            return None
        return f"{describe(cur, disk)} (exact content expected: every write succeeded, no daemon was killed)"
    synced = model.synced if model.synced is not None else b""
    low = min(len(synced), len(cur)) if model.synced is not None else 0
    high = max(len(synced), len(cur))
    if not low <= len(disk) <= high:
        return f"size {len(disk)}, allowed {low}..{high} (synced {len(synced)}, written {len(cur)})"
    for start in range(0, len(disk), 4096):
        end = min(len(disk), start + 4096)
        chunk = disk[start:end]
        if chunk == cur[start:end] or chunk == synced[start:end]:
            continue
        for i in range(start, end):
            if not ((i < len(cur) and cur[i] == disk[i]) or (i < len(synced) and synced[i] == disk[i])):
                return f"byte {i} is {disk[i]:#04x}: neither the synced nor the written content"
    return None


def describe(expected, disk):
    n = min(len(expected), len(disk))
    first = next((i for i in range(n) if expected[i] != disk[i]), n)
    return f"size {len(disk)} (expected {len(expected)}), first difference at byte {first}"


def mount_minor(mountpoint):
    """The FUSE connection number of the mount at mountpoint (from mountinfo, no stat)."""
    try:
        with open("/proc/self/mountinfo") as table:
            for line in table:
                fields = line.split()
                if fields[4].replace("\\040", " ") == mountpoint:
                    return int(fields[2].split(":")[1])
    except OSError:
        pass
    return None


def fuse_mounts_under(directory):
    found = []
    with open("/proc/self/mountinfo") as table:
        for line in table:
            fields = line.split()
            point = fields[4].replace("\\040", " ").replace("\\011", "\t")
            fstype = fields[fields.index("-") + 1]
            if (fstype == "fuse" or fstype.startswith("fuse.")) and (point == directory or point.startswith(directory + "/")):
                found.append(point)
    return found


def is_mounted(mountpoint):
    return mount_minor(mountpoint) is not None


def abort_connection(mountpoint):
    minor = mount_minor(mountpoint)
    if minor is None:
        return False
    try:
        with open(f"{CONTROL}/{minor}/abort", "w") as control:
            control.write("1\n")
        return True
    except OSError as error:
        say(f"cannot abort the FUSE connection {minor} of {mountpoint}: {error}")
        return False


class Daemon:
    """`purgefs mount CONTAINER MOUNTPOINT -f -o OPTS`, a child of ours: its pid is the daemon's."""

    def __init__(self, soak, container):
        self.container = container
        log = open(container.log_path, "ab")
        args = [soak.bin, "mount", container.path, container.mount, "-f", "-o", container.options()]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                                     env=soak.env, start_new_session=True)
        log.close()
        self.pid = self.proc.pid
        self.ready = threading.Event()
        self.line = b""
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            if not self.ready.is_set():
                self.line = line
                self.ready.set()
        self.ready.set()

    def wait_mounted(self, timeout):
        self.ready.wait(timeout)
        return self.proc.poll() is None and b"mounted" in self.line

    def alive(self):
        return self.proc.poll() is None

    def wait(self, timeout):
        try:
            self.proc.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False


class Container:
    def __init__(self, soak, k):
        self.k = k
        self.name = f"c{k}"
        self.soak = soak
        self.path = os.path.join(soak.tmp, f"container-{k}")
        self.mount = os.path.join(soak.tmp, f"mount-{k}")
        self.cloud = os.path.join(soak.tmp, f"cloud-{k}")
        self.log_path = os.path.join(soak.tmp, f"daemon-{k}.log")
        for directory in DIRECTORIES:
            os.makedirs(os.path.join(self.path, directory), exist_ok=True)
        os.makedirs(self.mount)
        os.makedirs(self.cloud)
        self.cond = threading.Condition()
        self.state = "down"  # up, down (being remounted), broken (ENOTCONN seen), dead
        self.active = 0
        self.aborted = False
        self.daemon = None
        self.incarnation = 0
        # incarnation -> [(seconds, rss KiB, descriptors, those outside the container but pipes, threads)]
        self.series = {}
        self.durable = {}  # name -> FileModel
        self.caches = {}  # name -> CacheModel
        self.unknown = set()  # names whose content the model lost track of
        # Held by the cache writer across each of its operations, and by the
        # durable writer while it clones a cache file: the model of that file
        # then stays what the file holds.
        self.cache_lock = threading.Lock()
        self.rules = []  # fault rule IDs added since the mount
        self.offline = False
        self.squeezed = False

    def options(self):
        s = self.soak
        options = (f"device={s.device},capacity={s.args.capacity},low=10%,high=20%,cloud={self.cloud},"
                   f"metrics_interval=30s")
        if self.k == 2:
            options += ",optimize_storage"
        return options

    def enter(self, stop):
        with self.cond:
            while self.state != "up":
                if stop.is_set() or self.state == "dead":
                    return False
                self.cond.wait(0.5)
            self.active += 1
            return True

    def leave(self):
        with self.cond:
            self.active -= 1
            self.cond.notify_all()

    def saw_down(self):
        with self.cond:
            if self.state == "up":
                self.state = "broken"
            self.cond.notify_all()

    def wait_idle(self, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.active > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(min(left, 0.5))
        return True

    def at(self, name):
        return os.path.join(self.mount, name)


class Watch:
    """Every operation in flight, with its deadline; the main loop checks them."""

    def __init__(self, soak):
        self.soak = soak
        self.lock = threading.Lock()
        self.inflight = {}
        self.next = 0

    def begin(self, container, what, timeout):
        with self.lock:
            self.next += 1
            self.inflight[self.next] = [container, what, time.monotonic(), timeout, False]
            return self.next

    def end(self, token):
        with self.lock:
            self.inflight.pop(token, None)

    def check(self):
        now = time.monotonic()
        overdue = []
        with self.lock:
            for entry in self.inflight.values():
                if not entry[4] and now - entry[2] > entry[3]:
                    entry[4] = True
                    overdue.append(entry)
        for container, what, began, _, _ in overdue:
            self.soak.hang(container, f"{what}: no answer after {now - began:.0f} s")


class Soak:
    def __init__(self, args):
        self.args = args
        self.bin = args.bin
        self.seed = args.seed
        self.stats = Stats()
        self.stop = threading.Event()
        self.watch = Watch(self)
        self.duration = args.minutes * 60
        self.tmp = tempfile.mkdtemp(prefix="purgefs-soak.")
        os.chmod(self.tmp, 0o755)
        os.makedirs(os.path.join(self.tmp, "tmp"))
        self.device = f"soak{os.getpid()}"
        self.env = dict(os.environ)
        self.env["TMPDIR"] = os.path.join(self.tmp, "tmp")
        self.env["PURGEFS_SOAK_RUN"] = self.tmp  # marks every process the soak starts
        self.containers = []
        self.children = {}  # pid -> what, for subprocesses in flight
        self.children_lock = threading.Lock()
        self.explores = collections.Counter()
        self.threads = []
        self.end_at = None
        self.figures = {}  # container -> its root's counters at the end

    # ---- subprocesses ----

    def run(self, args, timeout=None, container=None, what=None, term_first=False):
        """Runs a command of ours; returns (status, stdout, stderr) or None if it hung."""
        timeout = timeout or self.args.op_timeout
        what = what or " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(args[:3]))
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=self.env, start_new_session=True)
        with self.children_lock:
            self.children[proc.pid] = what
        try:
            out, err = proc.communicate(timeout=timeout)
            return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")
        except subprocess.TimeoutExpired:
            self.hang(container, f"{what}: no answer after {timeout:.0f} s")
            if term_first:
                self.signal_group(proc.pid, signal.SIGTERM)
                try:
                    proc.communicate(timeout=60)
                    return None
                except subprocess.TimeoutExpired:
                    pass
            self.signal_group(proc.pid, signal.SIGKILL)
            try:
                proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                say(f"{what} (pid {proc.pid}) did not end after SIGKILL")
            return None
        finally:
            with self.children_lock:
                self.children.pop(proc.pid, None)

    @staticmethod
    def signal_group(pid, number):
        # Our child leads a process group of its own (start_new_session).
        try:
            os.killpg(pid, number)
        except OSError:
            pass

    def purgefs(self, container, kind, *args, ok=(0,), timeout=None):
        """Runs `purgefs ARGS`; counts it; returns (status, stdout) or None (hung or unexpected)."""
        result = self.run([self.bin, *args], timeout=timeout, container=container, what=f"{container.name}: purgefs {kind}")
        if result is None:
            self.stats.count(kind, "hang")
            return None
        status, out, err = result
        if status in ok:
            self.stats.count(kind, "ok" if status == 0 else f"exit {status}")
            return status, out
        self.stats.count(kind, f"exit {status}")
        if container.state == "up" and not self.down_now(container):
            self.stats.add("unexpected", f"{container.name}: purgefs {' '.join(args)}: exit {status}: {err.strip()[-300:]}")
        return None

    def down_now(self, container):
        return not is_mounted(container.mount) or (container.daemon and not container.daemon.alive())

    def hang(self, container, text):
        self.stats.add("hangs", f"{container.name + ': ' if container else ''}{text}")
        if container is not None:
            container.aborted = True
            if abort_connection(container.mount):
                say(f"{container.name}: aborted its FUSE connection")
            container.saw_down()

    # ---- file operations on a mount, bounded ----

    def fs(self, c, what, fn):
        token = self.watch.begin(c, f"{c.name}: {what}", self.args.op_timeout)
        try:
            return fn()
        except OSError as error:
            if error.errno in DOWN:
                raise Down()
            raise
        finally:
            self.watch.end(token)

    def read_file(self, c, name):
        def read():
            fd = os.open(c.at(name), os.O_RDONLY | os.O_CLOEXEC)
            try:
                parts = []
                while True:
                    block = os.read(fd, 1 << 20)
                    if not block:
                        return b"".join(parts)
                    parts.append(block)
            finally:
                os.close(fd)
        return self.fs(c, f"read {name}", read)

    def write_file(self, c, name, data, offset, flags, sync):
        def write():
            fd = os.open(c.at(name), os.O_WRONLY | os.O_CLOEXEC | flags, 0o644)
            try:
                view = memoryview(data)
                done = 0
                while done < len(view):
                    n = os.pwrite(fd, view[done:], offset + done)
                    if n <= 0:
                        raise OSError(errno.EIO, "pwrite wrote nothing")
                    done += n
                if sync:
                    os.fsync(fd)
            finally:
                os.close(fd)
        self.fs(c, f"write {name}", write)

    def sync_file(self, c, name, directory=False):
        """fsync of the file name, or of its directory."""
        path, flags = (os.path.dirname(name), os.O_DIRECTORY) if directory else (name, 0)

        def sync():
            fd = os.open(c.at(path), os.O_RDONLY | os.O_CLOEXEC | flags)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self.fs(c, f"fsync {path}", sync)

    def failed(self, c, kind, name, error):
        """Counts an operation's error; an errno that says something is wrong is unexpected."""
        number = error.errno
        zone = name.split("/")[0] if name else ""
        self.stats.count(kind, errname(number) + (f" in {zone}" if number == errno.EIO and zone else ""))
        if number in INJECTED or number in PRESSURE:
            return
        if number == errno.EIO and name.startswith("Documents/"):
            return  # a download failed: the network's faults, offline
        if number == errno.ENOENT and name not in DURABLE:
            return  # a cache file purged meanwhile
        self.stats.add("unexpected", f"{c.name}: {kind} {name}: {error}")

    # ---- the apps ----

    def app_loop(self, c, body, rng, pause):
        while not self.stop.is_set():
            if not c.enter(self.stop):
                if self.stop.is_set() or c.state == "dead":
                    return
                continue
            try:
                body(c, rng)
            except Down:
                c.saw_down()
            finally:
                c.leave()
            self.stop.wait(rng.uniform(*pause))

    def writer_op(self, c, rng):
        name = rng.choice(DURABLE)
        model = c.durable.get(name)
        if name in c.unknown or (model is not None and not model.certain):
            return self.resolve(c, name)
        op = rng.choices(["append_sync", "append", "overwrite", "replace", "clone", "read"],
                         [30, 15, 10, 8, 10, 25])[0]
        if model is not None and len(model.cur) > DURABLE_LIMIT:
            op = rng.choice(["replace", "unlink"])
        if op in ("overwrite", "replace") and model is not None and bytes(model.cur) != (model.synced or b""):
            op = "append_sync"  # the model lets these only follow a sync
        if op == "clone" and name in CLONES:
            return self.clone_op(c, rng, name)
        if op == "clone":
            op = "read"
        if op == "read":
            if model is None:
                return
            try:
                disk = self.read_file(c, name)
            except OSError as error:
                if error.errno == errno.ENOENT:
                    self.stats.count("read", "ENOENT")
                    self.lost(c, name, model, None, "vanished while the app ran")
                    c.durable.pop(name, None)
                    c.unknown.add(name)
                else:
                    self.failed(c, "read", name, error)
                return
            self.stats.count("read")
            self.check(c, name, model, disk, exact=True)
            return
        if op == "unlink":
            try:
                self.fs(c, f"unlink {name}", lambda: os.unlink(c.at(name)))
                self.stats.count("unlink")
                c.durable.pop(name, None)
            except OSError as error:
                self.failed(c, "unlink", name, error)
                c.durable.pop(name, None)
                c.unknown.add(name)
            return
        if op == "replace":
            return self.replace(c, rng, name, model)
        if model is None:
            model = FileModel()
            c.durable[name] = model
            flags = os.O_CREAT | os.O_TRUNC
        else:
            flags = os.O_CREAT
        if op == "overwrite" and len(model.cur) > 0:
            offset = rng.randrange(len(model.cur))
            data = rng.randbytes(min(len(model.cur) - offset, rng.choice([1, 512, 4096, 70000])))
            sync = True
        else:
            offset = len(model.cur)
            data = rng.randbytes(rng.choice([100, 4096, 20000, 100000]))
            sync = op != "append"
        model.certain = False
        model.cur[offset:offset + len(data)] = data
        try:
            self.write_file(c, name, data, offset, flags, sync)
        except OSError as error:
            self.failed(c, op, name, error)
            return
        self.stats.count(op)
        model.certain = True
        if sync:
            model.synced = bytes(model.cur)

    def replace(self, c, rng, name, model):
        new = rng.randbytes(rng.choice([10, 3000, 50000]))
        temp = name + ".new"
        try:
            self.write_file(c, temp, new, 0, os.O_CREAT | os.O_TRUNC, True)
        except OSError as error:
            self.failed(c, "replace", temp, error)
            return
        if model is None:
            model = FileModel()
            c.durable[name] = model
        old_synced = model.synced
        model.cur = bytearray(new)
        model.certain = False
        try:
            self.fs(c, f"rename {temp}", lambda: os.rename(c.at(temp), c.at(name)))
        except OSError as error:
            self.failed(c, "replace", name, error)
            return
        model.certain = True
        try:
            self.sync_file(c, name, directory=True)
        except OSError as error:
            self.failed(c, "replace", name, error)
            model.synced = old_synced
            return
        model.synced = bytes(new)
        self.stats.count("replace")

    def clone_op(self, c, rng, dest):
        """Clones a durable or cache file into dest (purgefs clone, or cp inside the mount), then syncs dest."""
        sources = [n for n in DURABLE if n != dest and n in c.durable and c.durable[n].certain
                   and bytes(c.durable[n].cur) == (c.durable[n].synced or b"-")]
        if rng.random() < 0.3:
            with c.cache_lock:
                cached = list(c.caches)
                if cached:
                    source = rng.choice(cached)
                    return self.clone_into(c, rng, source, c.caches[source].cur, dest)
        if sources:
            source = rng.choice(sources)
            self.clone_into(c, rng, source, bytes(c.durable[source].cur), dest)

    def clone_into(self, c, rng, source, expected, dest):
        how = rng.choice(["purgefs clone", "cp"])
        try:
            if dest in c.durable or dest in c.unknown:
                self.fs(c, f"unlink {dest}", lambda: os.unlink(c.at(dest)))
        except OSError as error:
            if error.errno != errno.ENOENT:
                self.failed(c, "clone", dest, error)
                return
        c.durable.pop(dest, None)
        c.unknown.add(dest)
        args = [self.bin, "clone", c.at(source), c.at(dest)] if how == "purgefs clone" else ["cp", c.at(source), c.at(dest)]
        result = self.run(args, container=c, what=f"{c.name}: {how} {source} {dest}")
        kind = "clone" if how == "purgefs clone" else "cp"
        if result is None:
            self.stats.count(kind, "hang")
            return
        status, _, err = result
        if status != 0:
            self.stats.count(kind, f"exit {status}")
            if self.down_now(c):
                raise Down()
            lowered = err.lower()
            if source in CACHES and ("no such file" in lowered or "not found" in lowered):
                return  # the cache file was purged before the copy
            if any(word in lowered for word in ("no space", "input/output", "resource temporarily", "timed out", "quota")):
                return
            self.stats.add("unexpected", f"{c.name}: {how} {source} {dest}: exit {status}: {err.strip()[-300:]}")
            return
        self.stats.count(kind)
        c.unknown.discard(dest)
        model = FileModel()
        model.cur = bytearray(expected)
        model.certain = True
        c.durable[dest] = model
        try:
            self.sync_file(c, dest)
            model.synced = bytes(expected)
        except OSError as error:
            self.failed(c, "clone", dest, error)
        # And a read right away: the clone holds its source's content.
        try:
            disk = self.read_file(c, dest)
        except OSError as error:
            self.failed(c, "read", dest, error)
            return
        self.check(c, dest, model, disk, exact=True)

    def resolve(self, c, name):
        """Reads back a file whose last write failed: the model then knows it again."""
        try:
            disk = self.read_file(c, name)
        except OSError as error:
            if error.errno == errno.ENOENT:
                model = c.durable.pop(name, None)
                if model is not None:
                    self.lost(c, name, model, None, "gone after a failed write")
                c.unknown.discard(name)
                self.stats.count("resolve", "ENOENT")
            else:
                self.failed(c, "resolve", name, error)
            return
        self.stats.count("resolve")
        model = c.durable.get(name)
        if model is None:  # unknown: whatever it holds is its content now
            c.unknown.discard(name)
            return
        self.check(c, name, model, disk, exact=False)

    def check(self, c, name, model, disk, exact):
        self.stats.checked(1, len(disk), len(model.synced or b""))
        why = judge_durable(model, disk, exact)
        if why is not None:
            self.lost(c, name, model, disk, why)
            if model.synced is not None:
                model.synced = bytes(disk)  # counted once: from here on the model is what the disk holds
        model.cur = bytearray(disk)
        model.certain = True

    def lost(self, c, name, model, disk, why):
        lost = untouched_synced_lost(model, disk)
        with self.stats.lock:
            self.stats.lost_synced += lost
        if disk is None and model.synced is None:
            return  # never synced: a name that may go
        self.stats.add("mismatches", f"{c.name}: {name}: {why}" + (f"; {lost} synced bytes lost" if lost else ""))

    def cache_op(self, c, rng):
        with c.cache_lock:
            self.one_cache_op(c, rng)

    def one_cache_op(self, c, rng):
        name = rng.choice(CACHES)
        op = rng.choices(["write", "read", "clone", "delete"], [40, 40, 10, 10])[0]
        if op == "write":
            data = rng.randbytes(rng.choice([4096, 65536, 300000, MIB, 2 * MIB]))
            sync = rng.random() < 0.3
            c.caches.pop(name, None)
            c.unknown.add(name)
            try:
                self.write_file(c, name, data, 0, os.O_CREAT | os.O_TRUNC, sync)
            except OSError as error:
                self.failed(c, "cache write", name, error)
                return
            self.stats.count("cache write")
            c.unknown.discard(name)
            c.caches[name] = CacheModel(data, sync)
        elif op == "read":
            model = c.caches.get(name)
            if model is None:
                return
            try:
                disk = self.read_file(c, name)
            except OSError as error:
                if error.errno == errno.ENOENT:
                    self.stats.count("cache read", "purged")
                    c.caches.pop(name, None)
                else:
                    self.failed(c, "cache read", name, error)
                return
            self.stats.count("cache read")
            self.check_cache(c, name, model, disk, exact=True)
        elif op == "clone":
            sources = [n for n in c.caches if n != name]
            if not sources:
                return
            source = rng.choice(sources)
            expected = c.caches[source].cur
            c.caches.pop(name, None)
            c.unknown.add(name)
            result = self.run(["cp", c.at(source), c.at(name)], container=c, what=f"{c.name}: cp {source} {name}")
            if result is None:
                self.stats.count("cache cp", "hang")
                return
            if result[0] != 0:
                self.stats.count("cache cp", f"exit {result[0]}")
                if self.down_now(c):
                    raise Down()
                return  # the source purged meanwhile, or a fault rule
            self.stats.count("cache cp")
            c.unknown.discard(name)
            c.caches[name] = CacheModel(expected, False)
        else:
            c.caches.pop(name, None)
            try:
                self.fs(c, f"unlink {name}", lambda: os.unlink(c.at(name)))
                self.stats.count("cache delete")
                c.unknown.discard(name)
            except OSError as error:
                if error.errno != errno.ENOENT:
                    c.unknown.add(name)
                    self.failed(c, "cache delete", name, error)

    def check_cache(self, c, name, model, disk, exact):
        self.stats.checked(1, len(disk), len(model.cur) if model.synced else 0)
        if disk == model.cur:
            return
        if not exact and not model.synced and disk == model.cur[:len(disk)]:
            model.cur = disk
            return
        self.stats.add("mismatches", f"{c.name}: {name} (cache): {describe(model.cur, disk)}"
                       + ("" if exact else " (synced)" if model.synced else " (not a prefix of what was written)"))
        c.caches.pop(name, None)
        c.unknown.add(name)

    # ---- verification after a remount and at the end ----

    def verify(self, c, phase, exact):
        """Reads back every file of the model; returns False if the mount went down meanwhile."""
        self.stats.verifications += 1
        lost_before, mismatches_before = self.stats.lost_synced, len(self.stats.mismatches)
        files = 0
        for table, durable in ((c.durable, True), (c.caches, False)):
            for name in list(table):
                model = table[name]
                disk = self.read_back(c, name)
                if disk is False:
                    return False
                files += 1
                if disk is None:
                    table.pop(name)
                    if durable and model.synced is not None:
                        self.lost(c, name, model, None, f"missing {phase}")
                elif isinstance(disk, OSError):
                    table.pop(name)
                    c.unknown.add(name)
                    if durable:
                        self.lost(c, name, model, None, f"unreadable {phase}: {disk}; {self.diagnose(c, name)}")
                    else:
                        self.stats.add("mismatches", f"{c.name}: {name} (cache): unreadable {phase}: {disk}")
                elif durable:
                    self.check(c, name, model, disk, exact)
                else:
                    self.check_cache(c, name, model, disk, exact)
        say(f"{c.name}: verified {files} files {phase}: {self.stats.lost_synced - lost_before} synced bytes lost, "
            f"{len(self.stats.mismatches) - mismatches_before} mismatches")
        return True

    def check_store(self, c):
        """Every document is uploaded again once the network is back and its
        faults cleared, and the store's copy is what the app wrote."""
        pending = [name for name in DOCS if name in c.durable]
        deadline = time.monotonic() + 90
        while pending and time.monotonic() < deadline:
            for name in list(pending):
                try:
                    flag = self.fs(c, f"getfattr {name}", lambda name=name: os.getxattr(c.at(name), "user.purgefs.uploaded"))
                except (OSError, Down):
                    continue
                if flag != b"1":
                    continue
                pending.remove(name)
                self.stats.count("store check")
                try:
                    with open(os.path.join(c.cloud, "files", name), "rb") as stored:
                        data = stored.read()
                except OSError as error:
                    self.stats.add("mismatches", f"{c.name}: {name}: uploaded, but the store has no copy: {error}")
                    continue
                if data != c.durable[name].cur:
                    self.stats.add("mismatches", f"{c.name}: {name}: the store's copy: {describe(c.durable[name].cur, data)}")
            if pending:
                time.sleep(1)
        if pending:
            self.stats.add("unexpected", f"{c.name}: not uploaded 90 s after the network came back: {', '.join(pending)}")
        else:
            say(f"{c.name}: the store holds every document as written")

    def diagnose(self, c, name):
        """What purgefs says of a document it cannot read: its attributes and its last log lines."""
        said = []
        for attribute in ("download_status", "evictable", "uploaded"):
            try:
                value = self.fs(c, f"getfattr {name}", lambda a=attribute: os.getxattr(c.at(name), f"user.purgefs.{a}"))
                said.append(f"{attribute}={value.decode(errors='replace')}")
            except (OSError, Down) as error:
                said.append(f"{attribute}: {error}")
        stored = os.path.join(c.cloud, "files", name)
        said.append(f"store copy: {os.path.getsize(stored) if os.path.exists(stored) else 'none'} bytes")
        try:
            said.append(f"backing file: {os.path.getsize(os.path.join(c.path, name))} bytes")
        except OSError as error:
            said.append(f"backing file: {error}")
        result = self.run([self.bin, "log", c.mount, "--json"], container=c, what=f"{c.name}: purgefs log")
        if result is not None:
            lines = [line for line in result[1].splitlines() if f'"{name}"' in line or name in line]
            said.append("log: " + " | ".join(lines[-6:]))
        return "; ".join(said)

    def read_back(self, c, name):
        """The file's bytes; None if it does not exist; an OSError if it cannot be read; False if the mount is down."""
        for attempt in range(4):
            try:
                return self.read_file(c, name)
            except Down:
                return False
            except OSError as error:
                if error.errno == errno.ENOENT:
                    return None
                if attempt == 3:
                    return error
                self.stats.count("verify read", errname(error.errno))
                time.sleep(2)  # a download may fail once while its transfer is being set up

    # ---- mounting ----

    def mount(self, c):
        """Mounts c; True when it serves."""
        for attempt in range(3):
            daemon = Daemon(self, c)
            if daemon.wait_mounted(self.args.mount_timeout):
                with c.cond:
                    c.daemon = daemon
                    c.incarnation += 1
                    c.series[c.incarnation] = []
                    c.aborted = False
                    c.rules = []
                    c.offline = False
                self.stats.remounts += 1
                return True
            say(f"{c.name}: mount failed (attempt {attempt + 1}): {self.log_tail(c, 3)}")
            if daemon.alive():
                os.kill(daemon.pid, signal.SIGKILL)
            daemon.wait(30)
            self.unmount_dead(c)
            time.sleep(2)
        return False

    def log_tail(self, c, lines):
        try:
            with open(c.log_path, errors="replace") as log:
                return " | ".join(line.strip() for line in log.readlines()[-lines:])
        except OSError:
            return ""

    def unmount_dead(self, c):
        """Takes a mount whose daemon is gone off the mount table."""
        if not is_mounted(c.mount):
            return
        for args in (["fusermount3", "-u", c.mount], [self.bin, "unmount", "--force", c.mount],
                     ["fusermount3", "-u", "-z", c.mount]):
            self.run(args, timeout=60, what=f"{c.name}: {' '.join(args[:2])}")
            if not is_mounted(c.mount):
                return
            abort_connection(c.mount)
        say(f"{c.name}: {c.mount} is still mounted")

    def unmount_clean(self, c):
        """purgefs unmount, and the daemon's end; True when both happened."""
        result = self.run([self.bin, "unmount", c.mount], timeout=120, container=c, what=f"{c.name}: purgefs unmount")
        ended = c.daemon.wait(60)
        if result is None or result[0] != 0 or not ended:
            self.stats.add("unexpected", f"{c.name}: clean unmount: {result[1:] if result else 'hung'}; daemon ended: {ended}")
            if c.daemon.alive():
                os.kill(c.daemon.pid, signal.SIGKILL)
                c.daemon.wait(60)
            self.unmount_dead(c)
            return False
        if c.daemon.proc.returncode != 0:
            self.stats.add("unexpected", f"{c.name}: daemon exited {c.daemon.proc.returncode} after a clean unmount")
        return True

    def recover(self, c, why, kill):
        """kill -9 of c's daemon (kill) or the mount found down; then unmount, remount and verify."""
        with c.cond:
            was_aborted = c.aborted
            c.state = "down"
            c.cond.notify_all()
        daemon = c.daemon
        if kill:
            os.kill(daemon.pid, signal.SIGKILL)
        elif not was_aborted:
            status = daemon.proc.poll()
            self.stats.add("deaths", f"{c.name}: the mount answered ENOTCONN; daemon "
                           + (f"exited with status {status}" if status is not None else "still running")
                           + f": {self.log_tail(c, 3)}")
            if daemon.alive():
                os.kill(daemon.pid, signal.SIGKILL)
        elif daemon.alive():
            os.kill(daemon.pid, signal.SIGKILL)
        if not daemon.wait(30):
            # A thread stuck in the kernel keeps it from exiting: its guard should abort the connection.
            self.hang(None, f"{c.name}: the daemon (pid {daemon.pid}) has not exited 30 s after SIGKILL")
            abort_connection(c.mount)
            if not daemon.wait(60):
                say(f"{c.name}: daemon {daemon.pid} still there; giving up on this container")
                with c.cond:
                    c.state = "dead"
                    c.cond.notify_all()
                return
        if not c.wait_idle(self.args.op_timeout + 30):
            abort_connection(c.mount)
            c.wait_idle(60)
        self.unmount_dead(c)
        if not self.mount(c):
            self.stats.add("deaths", f"{c.name}: cannot mount again after {why}: {self.log_tail(c, 3)}")
            with c.cond:
                c.state = "dead"
                c.cond.notify_all()
            return
        if not self.verify(c, f"after {why}", exact=False):
            with c.cond:
                c.state = "broken"
            return
        with c.cond:
            c.state = "up"
            c.cond.notify_all()

    # ---- chaos ----

    def chaos(self):
        rng = random.Random(f"{self.seed}-chaos")
        period = {"kill": self.args.kill_every, "purge": 15, "squeeze": 35, "fault add": 10, "fault clear": 25,
                  "cloud": 40, "evict": 4, "download": 9, "look": 20}
        due = {name: time.monotonic() + every * rng.uniform(0.3, 1.0) for name, every in period.items()}
        due["kill"] = time.monotonic() + self.args.kill_every * rng.uniform(0.7, 1.0)
        unsqueeze = {}
        online = {}
        while not self.stop.is_set():
            for c in self.containers:
                if c.state == "broken":
                    self.recover(c, "the mount was found down", kill=False)
                elif c.state == "up" and not c.daemon.alive():
                    c.saw_down()
                    self.recover(c, "the daemon's death", kill=False)
            now = time.monotonic()
            for c, when in list(unsqueeze.items()):
                if now >= when and c.state == "up":
                    self.purgefs(c, "space", "space", c.mount, "--external", "0")
                    c.squeezed = False
                    del unsqueeze[c]
            for c, when in list(online.items()):
                if now >= when:
                    if c.state == "up" and c.offline:
                        self.purgefs(c, "cloud", "cloud", "online", c.mount)
                    c.offline = False
                    del online[c]
            event = min(due, key=due.get)
            if due[event] > now:
                self.stop.wait(min(0.5, due[event] - now))
                continue
            due[event] = now + period[event] * rng.uniform(0.6, 1.4)
            up = [c for c in self.containers if c.state == "up"]
            if not up:
                continue
            c = rng.choice(up)
            try:
                self.chaos_event(event, c, rng, unsqueeze, online)
            except Down:
                c.saw_down()
            except OSError as error:
                self.failed(c, event, "", error)

    def chaos_event(self, event, c, rng, unsqueeze, online):
        if event == "kill":
            targets = [t for t in self.containers[1:] if t.state == "up"]
            if not targets or time.monotonic() > self.end_at - 20:
                return
            target = rng.choice(targets)
            self.stats.kills += 1
            say(f"{target.name}: kill -9 #{self.stats.kills} of its daemon (pid {target.daemon.pid})")
            self.recover(target, f"kill -9 #{self.stats.kills}", kill=True)
        elif event == "purge":
            how = rng.choice(["bytes", "all", "attribute"])
            if how == "attribute":
                self.fs(c, "setfattr user.purgefs.purge", lambda: os.setxattr(c.mount, "user.purgefs.purge", b"8M"))
                self.stats.count("purge")
            else:
                self.purgefs(c, "purge", "purge", c.mount, *(["--bytes", rng.choice(["1M", "16M"])] if how == "bytes" else ["--all"]))
        elif event == "squeeze":
            if not c.squeezed:
                result = self.purgefs(c, "space", "space", c.mount, "--available", rng.choice(["4M", "12M", "24M"]), ok=(0, 1))
                if result is not None and result[0] == 0:
                    c.squeezed = True
                    unsqueeze[c] = time.monotonic() + rng.uniform(5, 15)
        elif event == "fault add":
            rule = rng.choice(FAULT_RULES)
            result = self.purgefs(c, "fault add", "fault", "add", c.mount, *rule, "--seed", str(rng.randrange(1 << 30)))
            # "Added fault rule ID: RULE"
            words = result[1].split() if result is not None else []
            if len(words) > 3 and words[3].rstrip(":").isdigit():
                c.rules.append(words[3].rstrip(":"))
        elif event == "fault clear":
            if c.rules and rng.random() < 0.6:
                rule = c.rules.pop(rng.randrange(len(c.rules)))
                self.purgefs(c, "fault clear", "fault", "clear", c.mount, rule)
            else:
                self.purgefs(c, "fault clear", "fault", "clear", c.mount)
                c.rules = []
        elif event == "cloud":
            if not c.offline:
                if self.purgefs(c, "cloud", "cloud", "offline", c.mount) is not None:
                    c.offline = True
                    online[c] = time.monotonic() + rng.uniform(5, 15)
        elif event in ("evict", "download"):
            docs = [n for n in DOCS if n in c.durable]
            if docs:
                # Exit 1: refused (not uploaded, changed, open), or the remote unreachable.
                self.purgefs(c, event, event, c.at(rng.choice(docs)), ok=(0, 1))
        elif event == "look":
            for args in (["usage", c.mount, "--json"], ["space", c.mount, "--json"], ["fault", "list", c.mount, "--json"],
                         ["log", c.mount, "--json"], ["metrics", c.mount, "--json", "--days", "1"],
                         ["usage", "--device", self.device, "--json"]):
                result = self.purgefs(c, args[0], *args)
                if result is not None and args[0] in ("usage", "space", "metrics") and result[0] == 0:
                    try:
                        json.loads(result[1])
                    except ValueError as error:
                        self.stats.add("unexpected", f"{c.name}: purgefs {' '.join(args)}: not JSON: {error}")

    # ---- explore ----

    def explore_loop(self):
        rng = random.Random(f"{self.seed}-explore")
        base = os.path.join(self.tmp, "explore")
        app = os.path.join(base, "app")
        os.makedirs(app)
        with open(os.path.join(app, "config.json"), "w") as config:
            json.dump({"version": 1}, config)
        with open(os.path.join(base, "save.py"), "w") as script:
            script.write(EXPLORE_APP)
        with open(os.path.join(base, "check.py"), "w") as script:
            script.write(EXPLORE_CHECK)
        careless = False
        while not self.stop.wait(self.args.explore_every * rng.uniform(0.6, 1.2)):
            if time.monotonic() > self.end_at - 45:
                break
            kind = "careless" if careless else "careful"
            careless = not careless
            # xfs: the careless rename-over without fsync loses config.json there,
            # while explore's default model, ext4, flushes it at the rename (auto_da_alloc).
            result = self.run([self.bin, "explore", "--model", "xfs", "--check", f"python3 {base}/check.py",
                               "--max-states", "12", app, "--", "python3", f"{base}/save.py", kind],
                              timeout=self.args.explore_timeout, what=f"explore of the {kind} app", term_first=True)
            if result is None:
                self.explores["hang"] += 1
                continue
            status, out, err = result
            expected = 1 if kind == "careless" else 0
            self.explores[f"{kind} exit {status}"] += 1
            self.stats.count("explore", "ok" if status == expected else f"exit {status}")
            if status != expected:
                self.stats.add("mismatches", f"explore of the {kind} app: exit {status}, expected {expected}: "
                               f"{(err.strip() or out.strip())[-300:]}")

    # ---- sampling ----

    def sample(self):
        now = time.monotonic() - started
        for c in self.containers:
            with c.cond:
                daemon, incarnation = c.daemon, c.incarnation
                if c.state != "up" or daemon is None or not daemon.alive():
                    continue
            try:
                with open(f"/proc/{daemon.pid}/status") as status:
                    fields = dict(line.split(":", 1) for line in status if ":" in line)
                rss = int(fields["VmRSS"].split()[0])
                threads = int(fields["Threads"])
                fds, outside = 0, 0
                for entry in os.listdir(f"/proc/{daemon.pid}/fd"):
                    try:
                        target = os.readlink(f"/proc/{daemon.pid}/fd/{entry}")
                    except OSError:
                        continue  # closed meanwhile
                    fds += 1
                    # libfuse's splice pipes (two per worker thread over
                    # /dev/fuse) come and go with the workers: counted in fds only.
                    if not (target == c.path or target.startswith(c.path + "/") or target.startswith("pipe:")):
                        outside += 1
            except (OSError, KeyError, ValueError):
                continue
            with c.cond:
                if c.incarnation == incarnation:
                    c.series[incarnation].append((now, rss, fds, outside, threads))

    # ---- the run ----

    def main(self):
        a = self.args
        say(f"seed {self.seed}, {a.minutes:g} minutes, {a.containers} containers on device {self.device} "
            f"(capacity {a.capacity}), kill -9 every ~{a.kill_every:.0f} s, samples every {a.sample_every:.0f} s, "
            f"operation timeout {a.op_timeout:.0f} s, in {self.tmp}")
        version = subprocess.run([self.bin, "--version"], capture_output=True, text=True).stdout.strip()
        say(f"binary {self.bin}: {version}")
        if not os.path.isdir(CONTROL) or not os.listdir(CONTROL):
            subprocess.run(["mount", "-t", "fusectl", "fusectl", CONTROL], capture_output=True)
        self.containers = [Container(self, k) for k in range(a.containers)]
        for c in self.containers:
            if not self.mount(c):
                raise RuntimeError(f"{c.name}: cannot mount: {self.log_tail(c, 5)}")
            c.state = "up"
        first = self.containers[0]
        result = self.run(["getfattr", "-n", "user.purgefs.transport", "--only-values", first.mount], timeout=60,
                          container=first, what="getfattr user.purgefs.transport")
        say(f"transport: {result[1].strip() if result and result[0] == 0 else result}")
        self.end_at = time.monotonic() + self.duration
        for c in self.containers:
            rng_w = random.Random(f"{self.seed}-{c.k}-writer")
            rng_c = random.Random(f"{self.seed}-{c.k}-caches")
            self.threads.append(threading.Thread(target=self.app_loop, args=(c, self.writer_op, rng_w, (0.01, 0.08)),
                                                 name=f"{c.name}-writer", daemon=True))
            self.threads.append(threading.Thread(target=self.app_loop, args=(c, self.cache_op, rng_c, (0.01, 0.06)),
                                                 name=f"{c.name}-caches", daemon=True))
        self.threads.append(threading.Thread(target=self.chaos, name="chaos", daemon=True))
        self.threads.append(threading.Thread(target=self.explore_loop, name="explore", daemon=True))
        for thread in self.threads:
            thread.start()
        next_sample = time.monotonic()
        next_progress = time.monotonic() + 60
        while time.monotonic() < self.end_at:
            time.sleep(0.5)
            self.watch.check()
            if time.monotonic() >= next_sample:
                self.sample()
                next_sample += a.sample_every
            if time.monotonic() >= next_progress:
                next_progress += 60
                say(f"progress: {sum(self.stats.ops.values())} operations, {self.stats.kills} kills, "
                    f"{len(self.stats.hangs)} hangs, {len(self.stats.mismatches)} mismatches, "
                    f"{self.stats.lost_synced} synced bytes lost")
        self.sample()
        say("time is up: stopping the apps and the chaos")
        self.stop.set()
        for thread in self.threads:
            deadline = time.monotonic() + a.op_timeout * 2 + 120
            while thread.is_alive() and time.monotonic() < deadline:
                thread.join(0.5)
                self.watch.check()
            if thread.is_alive():
                self.stats.add("hangs", f"thread {thread.name} did not stop")
        self.finish()

    def finish(self):
        """The last checks: faults cleared, online, every file read back; a clean unmount, a remount, again."""
        for c in self.containers:
            if c.state == "broken":
                self.recover(c, "the mount was found down", kill=False)
        live = [c for c in self.containers if c.state == "up"]
        for c in live:
            self.purgefs(c, "fault clear", "fault", "clear", c.mount)
            self.purgefs(c, "cloud", "cloud", "online", c.mount)
            self.purgefs(c, "space", "space", c.mount, "--external", "0")
        for c in live:
            figures = {}
            for name in ("purged_files", "purged_bytes", "enospc", "monitor_rounds", "peak_used"):
                try:
                    figures[name] = int(self.fs(c, f"getfattr user.purgefs.{name}",
                                                lambda: os.getxattr(c.mount, f"user.purgefs.{name}")))
                except (OSError, Down, ValueError):
                    figures[name] = None
            self.figures[c.name] = figures
            say(f"{c.name}: {figures}")
        for c in live:
            self.verify(c, "at the end", exact=True)
        for c in live:
            self.check_store(c)
        for c in live:
            c.state = "down"
            self.unmount_clean(c)
        for c in live:
            if self.mount(c):
                c.state = "up"
                self.verify(c, "after a clean unmount and a mount", exact=True)
        for c in live:
            if c.state == "up":
                c.state = "down"
                self.unmount_clean(c)

    def cleanup(self):
        """Unmounts everything under our directory, stops every process we started (by pid)."""
        self.stop.set()
        for c in self.containers:
            with c.cond:
                c.state = "dead"
                c.cond.notify_all()
        for c in self.containers:
            if c.daemon is not None and c.daemon.alive():
                if is_mounted(c.mount):
                    self.run([self.bin, "unmount", c.mount], timeout=30, what=f"{c.name}: purgefs unmount")
                if c.daemon.alive():
                    c.daemon.proc.terminate()
                    if not c.daemon.wait(10):
                        os.kill(c.daemon.pid, signal.SIGKILL)
                        c.daemon.wait(30)
            self.unmount_dead(c)
        for point in sorted(fuse_mounts_under(self.tmp), key=len, reverse=True):
            say(f"unmounting {point}, left by a command of ours")
            abort_connection(point)
            subprocess.run(["fusermount3", "-u", "-z", point], capture_output=True)
        with self.children_lock:
            pending = list(self.children)
        for pid in pending:
            self.signal_group(pid, signal.SIGKILL)
        left = self.marked_processes()
        if left:
            say(f"processes of ours still running, stopped: {' '.join(map(str, left))}")
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        device = f"/run/purgefs/device/{self.device}"
        if os.path.exists(device):
            say(f"{device} is still there after every member unmounted")
        if fuse_mounts_under(self.tmp):
            say(f"{self.tmp} still has mounts: left in place")
        elif self.args.keep:
            say(f"kept {self.tmp}")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)
        return left

    def marked_processes(self):
        mark = f"PURGEFS_SOAK_RUN={self.tmp}".encode()
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as environ:
                    if mark in environ.read().split(b"\0"):
                        found.append(int(entry))
            except OSError:
                pass
        return found

    # ---- the verdict ----

    def growth(self):
        """Judges each daemon's RSS and descriptor series; returns (lines, failures)."""
        lines, failures = [], []
        for c in self.containers:
            for incarnation, series in sorted(c.series.items()):
                if not series:
                    continue
                label = f"{c.name}#{incarnation}"
                columns = {"RSS MiB": [s[1] / 1024 for s in series], "descriptors": [s[2] for s in series],
                           "outside the container": [s[3] for s in series], "threads": [s[4] for s in series]}
                lines.append(f"  {label}: {len(series)} samples, {series[0][0]:.0f}-{series[-1][0]:.0f} s")
                for name, values in columns.items():
                    lines.append(f"    {name}: " + " ".join(f"{x:.1f}" if name == "RSS MiB" else str(x) for x in values))
                if len(series) < 8:
                    continue
                # Warm-up: the first tenth (at least one sample) is left out; then the
                # medians of the first and last quarters of the rest.
                skip = max(1, len(series) // 10)
                verdict = []
                for name, limit in (("RSS MiB", None), ("descriptors", self.args.fd_tolerance + NAME_POOL),
                                    ("outside the container", self.args.fd_tolerance)):
                    rest = columns[name][skip:]
                    q = max(2, len(rest) // 4)
                    first, last = statistics.median(rest[:q]), statistics.median(rest[-q:])
                    if limit is None:
                        limit = max(self.args.rss_tolerance_mib, first * self.args.rss_tolerance_ratio)
                    verdict.append(f"{name} {first:.1f} -> {last:.1f} (limit +{limit:.1f})")
                    if last - first > limit:
                        failures.append(f"{label}: {name} grew from {first:.1f} to {last:.1f} (limit +{limit:.1f})")
                lines.append(f"  {label} first quarter -> last quarter (medians): " + ", ".join(verdict))
        return lines, failures

    def report(self, interrupted, leftovers):
        s = self.stats
        growth_lines, growth_failures = self.growth()
        by_kind = collections.defaultdict(collections.Counter)
        for (kind, outcome), n in s.ops.items():
            by_kind[kind][outcome] += n
        print("\nsoak: operations (kind: ok, then errors)")
        for kind in sorted(by_kind):
            counts = by_kind[kind]
            others = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k != "ok")
            print(f"  {kind}: {counts['ok']}" + (f" ({others})" if others else ""))
        print(f"soak: explore runs: {dict(self.explores)}")
        for name, figures in self.figures.items():
            print(f"soak: {name} at the end (purged_*: since the container was made; the rest since its last mount): " + ", ".join(f"{k} {v}" for k, v in figures.items()))
        print("soak: daemons' RSS and descriptors (each container's daemons in order; #N the Nth mount)")
        for line in growth_lines:
            print(line)
        print(f"soak: seed {self.seed}, {self.args.minutes:g} minutes, {sum(s.ops.values())} operations, "
              f"{s.kills} kills (kill -9), {s.remounts} mounts, {s.verifications} verifications "
              f"({s.files_checked} files, {s.bytes_checked / MIB:.1f} MiB read back, "
              f"{s.synced_checked / MIB:.1f} MiB of it synced)")
        print(f"soak: {len(s.hangs)} hangs, {len(s.mismatches)} mismatches, {s.lost_synced} synced bytes lost, "
              f"{len(s.deaths)} daemon deaths, {len(s.unexpected)} unexpected errors, "
              f"{len(growth_failures)} growths, {len(leftovers)} processes left behind")
        failures = ([f"hang: {x}" for x in s.hangs] + [f"mismatch: {x}" for x in s.mismatches]
                    + [f"daemon death: {x}" for x in s.deaths] + [f"unexpected: {x}" for x in s.unexpected]
                    + [f"growth: {x}" for x in growth_failures])
        if s.lost_synced:
            failures.append(f"{s.lost_synced} synced bytes lost")
        if leftovers:
            failures.append(f"processes left behind: {leftovers}")
        if interrupted:
            failures.append("interrupted")
        for line in failures[:40]:
            print(f"  FAIL {line}")
        print(f"soak: {'FAIL' if failures else 'PASS'} (seed {self.seed})", flush=True)
        return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description="Everything at once on purgefs mounts.")
    parser.add_argument("--bin", required=True, help="the purgefs binary")
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--containers", type=int, default=3)
    parser.add_argument("--capacity", default="192M")
    parser.add_argument("--kill-every", type=float, default=None, help="seconds (default 180, a third of a short run)")
    parser.add_argument("--explore-every", type=float, default=None, help="seconds (default 90, 30 in a short run)")
    parser.add_argument("--sample-every", type=float, default=None, help="seconds (default 60, a 20th of a short run)")
    parser.add_argument("--op-timeout", type=float, default=120)
    parser.add_argument("--mount-timeout", type=float, default=120)
    parser.add_argument("--explore-timeout", type=float, default=600)
    parser.add_argument("--rss-tolerance-mib", type=float, default=16)
    parser.add_argument("--rss-tolerance-ratio", type=float, default=0.25)
    parser.add_argument("--fd-tolerance", type=int, default=8,
                        help="descriptors outside the container (the name pool is added for all of them)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (its mounts are always undone)")
    args = parser.parse_args()
    if args.minutes <= 0 or args.containers < 2:
        parser.error("--minutes must be above 0 and --containers at least 2")
    if os.geteuid() != 0:
        parser.error("the soak needs root (it aborts FUSE connections through /sys/fs/fuse/connections)")
    seconds = args.minutes * 60
    args.kill_every = args.kill_every or min(180.0, seconds / 3)
    args.explore_every = args.explore_every or min(90.0, max(30.0, seconds / 4))
    args.sample_every = args.sample_every or min(60.0, seconds / 20)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)
    soak = Soak(args)
    interrupted = []

    def on_signal(number, _frame):
        interrupted.append(number)
        raise KeyboardInterrupt

    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, on_signal)
    status = 1
    leftovers = []
    try:
        soak.main()
    except KeyboardInterrupt:
        say(f"interrupted (signal {interrupted[0] if interrupted else 'SIGINT'}): cleaning up")
    except Exception as error:  # noqa: BLE001 - a bug of the soak itself still cleans up
        import traceback
        traceback.print_exc()
        soak.stats.add("unexpected", f"the soak itself failed: {error!r}")
    finally:
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, signal.SIG_IGN)
        leftovers = soak.cleanup()
    status = soak.report(bool(interrupted), leftovers)
    if interrupted:
        status = 128 + interrupted[0]
    sys.exit(status)


if __name__ == "__main__":
    main()
