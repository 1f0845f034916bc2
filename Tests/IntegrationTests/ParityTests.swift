internal import CLinux
import Foundation
import Glibc
import XCTest

// fallocate(2) modes, from <linux/falloc.h>.
let FALLOC_FL_KEEP_SIZE: Int32 = 0x01
let FALLOC_FL_PUNCH_HOLE: Int32 = 0x02
let FALLOC_FL_ZERO_RANGE: Int32 = 0x10

/// makedev(3) for small numbers (the macro does not reach Swift).
func devNumber(_ major: UInt64, _ minor: UInt64) -> dev_t { dev_t((major << 8) | minor) }

func ts(_ sec: Int, _ nsec: Int = 0) -> timespec { timespec(tv_sec: sec, tv_nsec: nsec) }
let utimeNow = timespec(tv_sec: 0, tv_nsec: Int(clinux_UTIME_NOW))
let utimeOmit = timespec(tv_sec: 0, tv_nsec: Int(clinux_UTIME_OMIT))

/// Deterministic bytes: byte `i` of stream `seed`. Written into the array's
/// buffer, not with `map`: the tests are built without optimization, where a
/// closure call per byte made this 30 times slower (4 s for 16 MiB).
func pattern(_ count: Int, seed: UInt64, from offset: Int = 0) -> [UInt8] {
    let stream = seed &* 0xBF58_476D_1CE4_E5B9
    return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        var i = UInt64(offset)
        for index in 0..<count {
            var x = i &* 0x9E37_79B9_7F4A_7C15 ^ stream
            x ^= x >> 29
            buffer[index] = UInt8(truncatingIfNeeded: x &* 0x94D0_49BB_1331_11EB >> 32)
            i &+= 1
        }
        initialized = count
    }
}

/// The same operations on a native directory and through the mount: same
/// results, same errno values. Every operation of the passthrough is here,
/// with its error cases. `RingParityTests` runs them all again over FUSE
/// over io_uring.
class ParityTests: ParityTestCase {
    override func setUpWithError() throws {
        umask(0o022)
        try super.setUpWithError()
    }

    func testLookupAndStat() throws {
        try assertParity { r in
            r.mkdir("d")
            let f = r.open("d/f", O_WRONLY | O_CREAT | O_EXCL, 0o640)
            r.write(f, "hello")
            r.close(f)
            r.symlink("d/f", "l")
            r.symlink("nowhere", "dangling")
            r.symlink("loop", "loop")
            r.stat(".")
            r.stat("d")
            r.stat("d/f")
            r.stat("l")
            r.stat("l", follow: true)
            r.stat("dangling")
            r.stat("dangling", follow: true)
            r.stat("loop", follow: true)
            r.stat("d/../d/f")
            r.stat("missing")
            r.stat("d/missing/x")
            r.stat("d/f/x")
            r.stat("l/x", follow: true)
        }
    }

    func testChmodAndChown() throws {
        try assertParity { r in
            let f = r.open("f", O_WRONLY | O_CREAT, 0o644)
            r.write(f, "x")
            r.close(f)
            r.mkdir("d")
            r.symlink("f", "l")
            for mode: mode_t in [0o600, 0o000, 0o4755, 0o6755, 0o1777, 0o644] {
                r.chmod("f", mode)
                r.stat("f")
            }
            r.chmod("d", 0o3700)
            r.stat("d")
            r.chmod("f", 0o6755)
            r.chown("f", 1234, 5678)
            r.stat("f") // set-id bits cleared by chown of an executable file
            r.chown("f", uid_t.max, 4321)
            r.stat("f")
            r.chown("f", 99, gid_t.max)
            r.stat("f")
            r.chown("d", 1000, 1000)
            r.stat("d")
            r.chown("l", 777, 888, follow: false)
            r.stat("l")
            r.stat("f")
            r.chown("l", 0, 0, follow: true)
            r.stat("f")
            r.chmod("l", 0o600) // follows the link
            r.stat("f")
            r.chmod("missing", 0o600)
            r.chown("missing", 1, 1)
        }
    }

    func testTruncate() throws {
        try assertParity { r in
            let f = r.open("f", O_RDWR | O_CREAT, 0o644)
            r.write(f, "0123456789")
            r.truncate("f", 100_000)
            r.stat("f")
            r.content("f")
            r.pread(f, 16, at: 8)
            r.ftruncate(f, 3)
            r.fstat(f)
            r.content("f")
            r.ftruncate(f, 0)
            r.content("f")
            r.ftruncate(f, 5000)
            r.pread(f, 8, at: 4990)
            r.close(f)
            let ro = r.open("f", O_RDONLY)
            r.ftruncate(ro, 1)
            r.close(ro)
            r.mkdir("d")
            r.truncate("d", 0)
            r.truncate("missing", 0)
            r.truncate("f", -1)
            r.stat("f")
            let t = r.open("f", O_WRONLY | O_TRUNC)
            r.fstat(t)
            r.close(t)
        }
    }

    /// A shared mapping of a descriptor opened with `O_DIRECT` (xfstests'
    /// fsx with -Z maps one at once): read and written through the mapping
    /// as on ext4. (The kernel answers such an mmap ENODEV unless the INIT
    /// reply asks for FUSE_DIRECT_IO_ALLOW_MMAP.)
    func testSharedMappingOfADirectDescriptor() throws {
        try assertParity { r in
            let f = r.open("f", O_RDWR | O_CREAT, 0o644)
            r.write(f, String(repeating: "abcdefgh", count: 1024))
            r.close(f)
            let direct = r.open("f", O_RDWR | clinux_O_DIRECT)
            r.mapShared(direct, 8192, writing: "MAPPED")
            r.close(direct)
            r.content("f")
        }
    }

    func testUtimensOmitAndNow() throws {
        try assertParity { r in
            let f = r.open("f", O_WRONLY | O_CREAT, 0o644)
            r.close(f)
            r.mkdir("d")
            r.symlink("f", "l")
            r.utimens("f", ts(1_000_000_000, 123_456_789), ts(1_100_000_000, 987_654_321))
            r.stat("f", times: true)
            r.utimens("f", utimeOmit, ts(1_200_000_000, 5))
            r.stat("f", times: true) // atime untouched
            r.utimens("f", ts(1_300_000_000, 7), utimeOmit)
            r.stat("f", times: true) // mtime untouched
            r.utimens("f", utimeOmit, utimeOmit)
            r.stat("f", times: true)
            r.utimens("d", ts(1_400_000_000), ts(1_500_000_000))
            r.stat("d", times: true)
            r.utimens("l", ts(1_600_000_000), ts(1_700_000_000), follow: false)
            r.stat("l", times: true)
            r.stat("f", times: true) // the target is untouched
            r.utimens("missing", ts(1), ts(1))

            // UTIME_NOW and a NULL times pointer set the clock's time; the
            // values differ between the runs, so record whether they are "now".
            func isNow(_ t: timespec, _ before: timespec, _ after: timespec) -> Bool {
                t.tv_sec >= before.tv_sec - 1 && t.tv_sec <= after.tv_sec + 1
            }
            var before = timespec(), after = timespec()
            clock_gettime(CLOCK_REALTIME, &before)
            r.utimens("f", utimeNow, utimeOmit)
            clock_gettime(CLOCK_REALTIME, &after)
            if let st = r.rawStat("f") {
                r.note("UTIME_NOW atime is now", "\(isNow(st.st_atim, before, after))")
                r.note("UTIME_OMIT mtime kept", "\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)")
            }
            clock_gettime(CLOCK_REALTIME, &before)
            r.utimens("f", nil, nil)
            clock_gettime(CLOCK_REALTIME, &after)
            if let st = r.rawStat("f") {
                r.note("NULL times: both now", "\(isNow(st.st_atim, before, after)) \(isNow(st.st_mtim, before, after))")
            }
        }
    }

    func testSymlinkAndReadlink() throws {
        try assertParity { r in
            r.mkdir("d")
            r.symlink("d", "rel")
            r.symlink("/etc/hostname", "abs")
            r.symlink("../../outside/of/it", "d/up")
            let long = String(repeating: "t/", count: 2000) + "end"
            r.symlink(long, "long")
            r.symlink("x", "rel") // EEXIST
            r.symlink("x", "missing/l") // ENOENT
            r.symlink("", "empty") // ENOENT
            r.readlink("rel")
            r.readlink("abs")
            r.readlink("d/up")
            r.readlink("long")
            r.readlink("long", bufferSize: 10) // truncated, no error
            r.stat("long")
            r.readlink("d") // EINVAL
            r.readlink("missing")
            r.readdir("rel")
            let f = r.open("rel/file", O_WRONLY | O_CREAT, 0o644) // through a symlinked directory
            r.close(f)
            r.stat("d/file")
        }
    }

    func testMknod() throws {
        try assertParity { r in
            r.mknod("fifo", S_IFIFO | 0o644)
            r.mknod("sock", S_IFSOCK | 0o755)
            r.mknod("reg", S_IFREG | 0o600)
            r.mknod("null", S_IFCHR | 0o666, devNumber(1, 3))
            r.mknod("fifo", S_IFIFO | 0o644) // EEXIST
            r.mknod("missing/fifo", S_IFIFO | 0o644)
            for name in ["fifo", "sock", "reg", "null"] { r.stat(name) }
            r.readdir(".")
            let reader = r.open("fifo", O_RDONLY | O_NONBLOCK)
            let writer = r.open("fifo", O_WRONLY | O_NONBLOCK)
            r.write(writer, "through the pipe")
            r.read(reader, 100)
            r.close(writer)
            r.close(reader)
            r.open("sock", O_RDONLY) // ENXIO
            r.unlink("fifo")
            r.unlink("sock")
            r.unlink("null")
        }
    }

    func testMkdirRmdirUnlink() throws {
        try assertParity { r in
            r.mkdir("a", 0o777)
            r.mkdir("b", 0o700)
            r.mkdir("c", 0o1777)
            r.mkdir("a") // EEXIST
            r.mkdir("x/y") // ENOENT
            for name in ["a", "b", "c"] { r.stat(name) }
            let f = r.open("a/f", O_WRONLY | O_CREAT, 0o666)
            r.write(f, "data")
            r.close(f)
            r.stat("a/f")
            r.stat("a") // nlink and size
            r.mkdir("a/f/z") // ENOTDIR
            r.mkdir("a/sub")
            r.stat("a")
            r.rmdir("a") // ENOTEMPTY
            r.rmdir("a/f") // ENOTDIR
            r.unlink("a") // EISDIR
            r.unlink("a/f/") // ENOTDIR
            r.rmdir("a/sub/.") // EINVAL
            r.rmdir("missing") // ENOENT
            r.unlink("missing") // ENOENT
            r.rmdir("a/sub")
            r.stat("a")

            // An unlinked file stays readable through its open descriptor.
            let open = r.open("a/f", O_RDWR)
            r.unlink("a/f")
            r.stat("a/f")
            r.fstat(open)
            r.pread(open, 10, at: 0)
            r.write(open, "more")
            r.fstat(open)
            r.close(open)
            r.readdir("a")
            r.rmdir("a")
            r.rmdir("b")
            r.readdir(".")
        }
    }

    func testRename() throws {
        try assertParity { r in
            func file(_ path: String, _ text: String) {
                let f = r.open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                r.write(f, text)
                r.close(f)
            }
            file("a", "A")
            file("b", "B")
            r.rename("a", "a2") // plain
            r.stat("a")
            r.content("a2")
            r.rename("a2", "b") // over an existing file
            r.content("b")
            r.stat("a2")
            r.rename("missing", "x") // ENOENT
            r.rename("b", "b") // same name: no-op
            r.content("b")

            r.mkdir("full")
            file("full/inside", "in")
            r.mkdir("empty")
            r.mkdir("src")
            file("src/s", "s")
            r.rename("src", "full") // ENOTEMPTY (or EEXIST), never EXDEV
            r.rename("src", "empty") // over an empty directory
            r.readdir("empty")
            r.stat("src")
            r.rename("b", "full") // EISDIR
            r.rename("full", "b") // ENOTDIR
            r.rename("full", "full/inner") // EINVAL
            r.rename("full/inside", "missing/x") // ENOENT

            // RENAME_NOREPLACE
            file("c", "C")
            r.rename("c", "b", flags: clinux_RENAME_NOREPLACE) // EEXIST
            r.content("b")
            r.rename("c", "c2", flags: clinux_RENAME_NOREPLACE)
            r.content("c2")

            // RENAME_EXCHANGE
            r.rename("c2", "full", flags: clinux_RENAME_EXCHANGE) // a file and a directory swap
            r.stat("c2")
            r.stat("full")
            r.content("full")
            r.readdir("c2")
            r.rename("b", "nothing", flags: clinux_RENAME_EXCHANGE) // ENOENT
            r.rename("b", "c", flags: clinux_RENAME_EXCHANGE | clinux_RENAME_NOREPLACE) // EINVAL

            // across directories, and renaming an open file
            r.mkdir("dir2")
            let open = r.open("b", O_RDONLY)
            r.rename("b", "dir2/moved")
            r.read(open, 10)
            r.fstat(open)
            r.close(open)
            r.content("dir2/moved")

            // a hard link renamed onto its other name is a no-op
            r.link("dir2/moved", "dir2/same")
            r.rename("dir2/moved", "dir2/same")
            r.stat("dir2/moved")
            r.stat("dir2/same")
            r.readdir(".")
            r.readdir("dir2")
        }
    }

    func testLink() throws {
        try assertParity { r in
            let f = r.open("f", O_WRONLY | O_CREAT, 0o644)
            r.write(f, "shared")
            r.close(f)
            r.mkdir("d")
            r.symlink("f", "l")
            r.link("f", "g")
            r.stat("f")
            r.stat("g")
            r.link("f", "d/h")
            r.stat("g")
            r.content("d/h")
            r.link("d", "d2") // EPERM
            r.link("f", "g") // EEXIST
            r.link("missing", "m") // ENOENT
            r.link("f", "missing/m") // ENOENT
            r.link("l", "l2") // links the symlink itself
            r.stat("l2")
            r.readlink("l2")
            r.link("l", "l3", follow: true) // links the target
            r.stat("l3")
            r.stat("f")
            r.unlink("f")
            r.stat("g")
            r.content("g")
        }
    }

    /// A change through one hard link shows through the other at once.
    func testHardLinkVisibility() throws {
        try assertParity { r in
            let f = r.open("a", O_RDWR | O_CREAT, 0o644)
            r.write(f, "first")
            r.link("a", "b")
            r.stat("b") // load b into any attribute cache
            r.stat("a")
            r.chmod("a", 0o600)
            r.stat("b")
            r.chown("b", 4242, 4343)
            r.stat("a")
            r.link("b", "c")
            r.stat("a")
            r.stat("b")
            r.unlink("c")
            r.stat("a")
            r.write(f, " second")
            r.content("b")
            r.stat("b")
            r.truncate("b", 2)
            r.stat("a")
            r.content("a")
            r.fstat(f)
            r.close(f)

            // ctime of both names moves together, and moves on every change.
            let before = r.rawStat("b")
            r.chmod("a", 0o640)
            let a = r.rawStat("a"), b = r.rawStat("b")
            if let before, let a, let b {
                r.note("ctime equal through both names", "\(a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec)")
                r.note("ctime of b advanced by chmod of a",
                       "\((b.st_ctim.tv_sec, b.st_ctim.tv_nsec) > (before.st_ctim.tv_sec, before.st_ctim.tv_nsec))")
            }
            r.utimens("a", ts(1_234_567_890, 1), ts(1_234_567_891, 2))
            r.stat("b", times: true)
        }
    }

    func testOpenFlags() throws {
        try assertParity { r in
            r.mkdir("d")
            let f = r.open("f", O_WRONLY | O_CREAT | O_EXCL, 0o666)
            r.write(f, "abc")
            r.close(f)
            r.stat("f") // the umask applies
            r.open("f", O_WRONLY | O_CREAT | O_EXCL) // EEXIST
            r.open("d", O_WRONLY | O_CREAT) // EISDIR
            r.open("d", O_RDONLY | O_CREAT) // EISDIR
            r.open("d", O_WRONLY) // EISDIR
            r.open("d", O_RDWR) // EISDIR
            r.open("f", O_RDONLY | O_DIRECTORY) // ENOTDIR
            r.open("f/x", O_RDONLY) // ENOTDIR
            r.open("missing", O_RDONLY) // ENOENT
            r.open("missing/x", O_WRONLY | O_CREAT) // ENOENT
            r.symlink("f", "l")
            r.open("l", O_RDONLY | O_NOFOLLOW) // ELOOP
            r.symlink("target-of-dangling", "dangling")
            r.open("dangling", O_WRONLY | O_CREAT | O_EXCL) // EEXIST
            let through = r.open("dangling", O_WRONLY | O_CREAT, 0o600) // creates the target
            r.close(through)
            r.stat("target-of-dangling")

            // O_APPEND: every write lands at the end, even pwrite (Linux).
            let a = r.open("f", O_WRONLY | O_APPEND)
            r.write(a, "def")
            r.lseek(a, 0, SEEK_SET)
            r.write(a, "ghi")
            r.pwrite(a, "X", at: 0)
            r.close(a)
            r.content("f")

            // O_TRUNC
            let t = r.open("f", O_RDWR | O_TRUNC)
            r.fstat(t)
            r.write(t, "new")
            r.close(t)
            r.content("f")

            // a file created read-only still gives the creator a writable fd
            let ro = r.open("readonly", O_RDWR | O_CREAT | O_EXCL, 0o400)
            r.write(ro, "mine")
            r.pread(ro, 10, at: 0)
            r.close(ro)
            r.stat("readonly")

            // O_PATH
            let p = r.open("f", clinux_O_PATH)
            r.fstat(p)
            r.read(p, 1) // EBADF
            r.close(p)

            let dir = r.open("d", O_RDONLY | O_DIRECTORY)
            r.read(dir, 10) // EISDIR
            r.close(dir)

            let wo = r.open("f", O_WRONLY)
            r.read(wo, 1) // EBADF
            r.close(wo)
            let rd = r.open("f", O_RDONLY)
            r.write(rd, "x") // EBADF
            r.close(rd)
        }
    }

    func testReadWriteAtOffsets() throws {
        try assertParity { r in
            let f = r.open("f", O_RDWR | O_CREAT, 0o644)
            r.pwrite(f, "hello", at: 10)
            r.fstat(f)
            r.pread(f, 20, at: 0)
            r.pread(f, 20, at: 15) // at EOF
            r.pread(f, 20, at: 1000) // past EOF
            r.lseek(f, 0, SEEK_CUR)
            r.write(f, "ABC")
            r.lseek(f, 0, SEEK_CUR)
            r.lseek(f, -2, SEEK_END)
            r.read(f, 10)
            r.lseek(f, 0, SEEK_SET)
            r.read(f, 4)
            r.read(f, 4)
            r.lseek(f, -1, SEEK_SET) // EINVAL
            r.pwrite(f, "far", at: 1 << 20)
            r.fstat(f)
            r.pread(f, 3, at: 1 << 20)
            r.pread(f, 5, at: 500_000)

            // a large write, read back in odd-sized pieces
            let big = pattern(3 << 20, seed: 7)
            let g = r.open("g", O_RDWR | O_CREAT | O_TRUNC, 0o644)
            r.write(g, big, label: "3 MiB pattern")
            r.fstat(g)
            r.pread(g, 100_000, at: 1_234_567)
            r.pread(g, 4096, at: (3 << 20) - 100)
            r.close(g)
            r.content("g")
            r.close(f)
        }
    }

    func testFsync() throws {
        try assertParity { r in
            r.mkdir("d")
            let f = r.open("d/f", O_RDWR | O_CREAT, 0o644)
            r.write(f, pattern(100_000, seed: 3), label: "100000 bytes")
            r.fsync(f)
            r.fdatasync(f)
            r.stat("d/f")
            r.close(f)
            let ro = r.open("d/f", O_RDONLY)
            r.fsync(ro)
            r.fdatasync(ro)
            r.close(ro)
            let dir = r.open("d", O_RDONLY | O_DIRECTORY)
            r.fsync(dir)
            r.fdatasync(dir)
            r.close(dir)
            let root = r.open(".", O_RDONLY | O_DIRECTORY)
            r.fsync(root)
            r.close(root)
        }
    }

    func testReaddir() throws {
        try assertParity { r in
            r.mkdir("big")
            for i in 0..<300 {
                let name = i % 7 == 0 ? String(repeating: "n", count: 200) + "\(i)" : "file-\(i)"
                let f = r.open("big/\(name)", O_WRONLY | O_CREAT, 0o644)
                r.close(f)
            }
            r.mkdir("big/subdir")
            r.symlink("file-1", "big/link")
            r.mknod("big/fifo", S_IFIFO | 0o644)
            r.readdir("big")
            r.readdir(".")
            r.mkdir("empty")
            r.readdir("empty")
            for i in stride(from: 1, to: 300, by: 2) where i % 7 != 0 {
                r.unlink("big/file-\(i)")
            }
            r.readdir("big")
            r.readdir("big/file-2") // ENOTDIR
            r.readdir("missing") // ENOENT
            r.stat("big")
        }
    }

    func testStatfs() throws {
        try assertParity(compareBacking: false) { r in
            r.statfs()
            r.mkdir("d")
            r.statfs("d")
        }
        var sv = statvfs()
        XCTAssertEqual(statvfs(fixture.mountpoint, &sv), 0, "statvfs on the mount: \(Errno.name(errno))")
        XCTAssertEqual(sv.f_namemax, 255)
        XCTAssertGreaterThan(sv.f_blocks, 0)
        XCTAssertLessThanOrEqual(sv.f_bavail, sv.f_blocks)
    }

    func testExtendedAttributes() throws {
        try assertParity { r in
            let f = r.open("f", O_WRONLY | O_CREAT, 0o644)
            r.close(f)
            r.mkdir("d")
            r.symlink("f", "l")
            for path in ["f", "d"] {
                r.listxattr(path)
                r.getxattr(path, "user.missing") // ENODATA
                r.removexattr(path, "user.missing") // ENODATA
                r.setxattr(path, "user.one", "value one")
                r.setxattr(path, "user.two", [0, 1, 2, 0, 255])
                r.setxattr(path, "user.empty", "")
                r.getxattr(path, "user.one")
                r.getxattr(path, "user.two")
                r.getxattr(path, "user.empty")
                r.getxattr(path, "user.one", size: 0) // size probe
                r.getxattr(path, "user.one", size: 3) // ERANGE
                r.listxattr(path)
                r.listxattr(path, size: 0)
                r.listxattr(path, size: 5) // ERANGE
                r.setxattr(path, "user.one", "again", flags: clinux_XATTR_CREATE) // EEXIST
                r.setxattr(path, "user.new", "x", flags: clinux_XATTR_REPLACE) // ENODATA
                r.setxattr(path, "user.one", "replaced", flags: clinux_XATTR_REPLACE)
                r.getxattr(path, "user.one")
                r.setxattr(path, "user.new", "created", flags: clinux_XATTR_CREATE)
                r.setxattr(path, "user.large", pattern(3000, seed: 1))
                r.getxattr(path, "user.large")
                r.getxattr(path, "user.large", size: 0)
                r.setxattr(path, "user.huge", pattern(70_000, seed: 2)) // E2BIG
                r.setxattr(path, "user." + String(repeating: "x", count: 300), "v") // ERANGE
                r.setxattr(path, "bogus.name", "v") // EOPNOTSUPP
                r.setxattr(path, "trusted.root-only", "t")
                r.getxattr(path, "trusted.root-only")
                r.removexattr(path, "user.two")
                r.getxattr(path, "user.two")
                r.listxattr(path)
            }
            r.setxattr("l", "user.on-link", "v") // EPERM: user.* is not for symlinks
            r.getxattr("l", "user.one") // ENODATA, not the target's
            r.listxattr("l")
            r.getxattr("missing", "user.one") // ENOENT
            r.setxattr("missing", "user.one", "v") // ENOENT
            r.listxattr(".")
        }
    }

    /// Attributes of files held open (for writing, reading, writing only,
    /// and unlinked): the daemon reads a name through the open file's own
    /// descriptor then, and through the node's link once it is closed.
    func testExtendedAttributesOfOpenFiles() throws {
        try assertParity { r in
            let w = r.open("w", O_RDWR | O_CREAT, 0o644)
            r.setxattr("w", "user.one", "value one")
            r.pwrite(w, "data", at: 0)
            r.getxattr("w", "user.one")
            r.getxattr("w", "user.one", size: 0) // size probe
            r.getxattr("w", "user.one", size: 3) // ERANGE
            r.getxattr("w", "user.missing") // ENODATA
            r.getxattr("w", "security.capability") // ENODATA, as before every write
            r.fgetxattr(w, "user.one")
            let reader = r.open("w", O_RDONLY)
            r.setxattr("w", "user.two", "2")
            r.fgetxattr(reader, "user.two")
            r.close(w)
            r.fgetxattr(reader, "user.one")
            r.unlink("w")
            r.fgetxattr(reader, "user.one") // unlinked, still open
            r.fgetxattr(reader, "user.missing")
            r.close(reader)
            let writer = r.open("o", O_WRONLY | O_CREAT, 0o644)
            r.setxattr("o", "user.x", "x")
            r.fgetxattr(writer, "user.x")
            r.fgetxattr(writer, "user.x", size: 0)
            r.close(writer)
            r.getxattr("o", "user.x") // closed
        }
    }

    func testAccess() throws {
        try assertParity { r in
            for (name, mode) in [("none", 0o000), ("rw", 0o644), ("x", 0o744), ("other-x", 0o601)] as [(String, mode_t)] {
                let f = r.open(name, O_WRONLY | O_CREAT, mode)
                r.close(f)
                r.chmod(name, mode)
                for check in [F_OK, R_OK, W_OK, X_OK, R_OK | W_OK | X_OK] {
                    r.access(name, check)
                }
                r.access(name, X_OK, flags: clinux_AT_EACCESS)
            }
            r.mkdir("closed", 0o000)
            r.access("closed", X_OK)
            r.access("closed", R_OK | W_OK)
            r.access("missing", F_OK)
            r.access("none/x", F_OK)
        }
    }

    func testFallocate() throws {
        try assertParity { r in
            let f = r.open("f", O_RDWR | O_CREAT, 0o644)
            r.fallocate(f, mode: 0, 0, 1 << 20)
            r.fstat(f)
            r.content("f")
            r.fallocate(f, mode: FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20)
            r.fstat(f)
            r.write(f, pattern(64 << 10, seed: 5), label: "64 KiB")
            r.fsync(f)
            r.fallocate(f, mode: FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 16384)
            r.fstat(f)
            r.pread(f, 16, at: 4096)
            r.pread(f, 16, at: 20480)
            r.fallocate(f, mode: FALLOC_FL_ZERO_RANGE, 32768, 4096)
            r.pread(f, 16, at: 32768)
            r.fallocate(f, mode: FALLOC_FL_PUNCH_HOLE, 0, 4096) // EOPNOTSUPP without KEEP_SIZE
            r.fallocate(f, mode: 0, -1, 10) // EINVAL
            r.fallocate(f, mode: 0, 0, 0) // EINVAL
            r.content("f")
            r.close(f)
            let ro = r.open("f", O_RDONLY)
            r.fallocate(ro, mode: 0, 0, 4096) // EBADF
            r.close(ro)
        }
    }

    func testSeekDataAndHole() throws {
        try assertParity { r in
            let f = r.open("sparse", O_RDWR | O_CREAT, 0o644)
            r.pwrite(f, String(repeating: "a", count: 4096), at: 0)
            r.pwrite(f, String(repeating: "b", count: 4096), at: 1 << 20)
            r.pwrite(f, String(repeating: "c", count: 100), at: 3 << 20)
            r.fsync(f)
            r.fstat(f)
            r.lseek(f, 0, clinux_SEEK_DATA)
            r.lseek(f, 0, clinux_SEEK_HOLE)
            r.lseek(f, 4096, clinux_SEEK_DATA)
            r.lseek(f, 1 << 20, clinux_SEEK_HOLE)
            r.lseek(f, (1 << 20) + 4096, clinux_SEEK_DATA)
            r.lseek(f, (3 << 20) + 50, clinux_SEEK_HOLE)
            r.lseek(f, (3 << 20) + 100, clinux_SEEK_DATA) // ENXIO
            r.lseek(f, 10 << 20, clinux_SEEK_HOLE) // ENXIO
            r.lseek(f, 0, SEEK_END)
            r.pread(f, 8, at: 8192)
            r.close(f)
            let empty = r.open("empty", O_RDWR | O_CREAT, 0o644)
            r.lseek(empty, 0, clinux_SEEK_DATA) // ENXIO
            r.lseek(empty, 0, clinux_SEEK_HOLE) // ENXIO
            r.close(empty)
        }
    }

    func testCopyFileRange() throws {
        try assertParity { r in
            let data = pattern(300_000, seed: 11)
            let src = r.open("src", O_RDWR | O_CREAT, 0o644)
            r.write(src, data, label: "300000 bytes")
            let dst = r.open("dst", O_RDWR | O_CREAT, 0o644)
            r.copyFileRange(src, at: 10, dst, at: 0, 200_000)
            r.fstat(dst)
            r.content("dst")
            r.copyFileRange(src, at: 0, dst, at: 250_000, 300_000) // to past its end: a hole in between
            r.fstat(dst)
            r.content("dst")
            r.copyFileRange(src, at: 400_000, dst, at: 0, 100) // past the source's end: copies 0
            r.copyFileRange(src, at: 0, src, at: 300_000, 1000) // inside one file, not overlapping
            r.content("src")
            r.close(dst)
            let ro = r.open("dst", O_RDONLY)
            r.copyFileRange(src, at: 0, ro, at: 0, 10) // EBADF
            r.close(ro)
            let ap = r.open("dst", O_WRONLY | O_APPEND)
            r.copyFileRange(src, at: 0, ap, at: 0, 10) // EBADF
            r.close(ap)
            r.mkdir("d")
            let dir = r.open("d", O_RDONLY | O_DIRECTORY)
            r.copyFileRange(dir, at: 0, src, at: 0, 10) // EISDIR
            r.close(dir)
            r.close(src)
            r.content("dst")
        }
    }

    /// A ~4 KB relative path works as natively: the backing path is longer
    /// than PATH_MAX, so only fd-relative calls in the daemon pass this.
    func testLongPath() throws {
        let component = String(repeating: "p", count: 250)
        try assertParity { r in
            var path = ""
            for level in 0..<16 {
                path += (path.isEmpty ? "" : "/") + component + String(format: "%03d", level)
                r.mkdir(path)
            }
            r.note("path length", "\(path.utf8.count)")
            let file = path + "/file"
            let f = r.open(file, O_RDWR | O_CREAT, 0o644)
            r.write(f, "deep data")
            r.close(f)
            r.stat(file)
            r.content(file)
            r.readdir(path)
            r.chmod(file, 0o600)
            r.utimens(file, ts(1_500_000_000), ts(1_500_000_001))
            r.stat(file, times: true)
            r.rename(file, path + "/moved")
            r.link(path + "/moved", path + "/hard")
            r.symlink("moved", path + "/sym")
            r.readlink(path + "/sym")
            r.stat(path + "/sym", follow: true)
            r.setxattr("", "user.x", "y") // path-based xattrs are done on the root only
            r.access(path + "/hard", R_OK)
            r.mknod(path + "/fifo", S_IFIFO | 0o600)
            r.unlink(path + "/fifo")
            r.unlink(path + "/hard")
            r.stat(path + "/moved")
            let longer = path + "/" + String(repeating: "z", count: 4096 - path.utf8.count)
            r.open(longer, O_RDWR | O_CREAT, 0o644) // ENAMETOOLONG
            r.mkdir(longer) // ENAMETOOLONG
        }
    }

    func testNameLengthLimit() throws {
        let name255 = String(repeating: "a", count: 255)
        let other255 = String(repeating: "b", count: 255)
        let name256 = String(repeating: "c", count: 256)
        try assertParity { r in
            let f = r.open(name255, O_WRONLY | O_CREAT, 0o644)
            r.write(f, "max")
            r.close(f)
            r.stat(name255)
            r.readdir(".")
            r.rename(name255, other255)
            r.link(other255, name255)
            r.mkdir("d")
            r.symlink(other255, "d/" + name255)
            r.stat("d/" + name255)
            r.readdir("d")
            r.open(name256, O_WRONLY | O_CREAT, 0o644) // ENAMETOOLONG
            r.mkdir(name256) // ENAMETOOLONG
            r.stat(name256) // ENAMETOOLONG
            r.rename(other255, name256) // ENAMETOOLONG
            r.link(other255, name256) // ENAMETOOLONG
            r.symlink("x", name256) // ENAMETOOLONG
            r.mknod(name256, S_IFIFO | 0o644) // ENAMETOOLONG
            r.unlink(name256) // ENAMETOOLONG
            r.setxattr(other255, "user.k", "v")
            r.unlink(name255)
            r.readdir(".")
        }
    }
}
