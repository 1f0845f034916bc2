internal import CLinux
import Foundation
import Glibc
import PurgeCore
import XCTest

/// One daemon per container and per state directory (issue 12, item 1): a
/// second mount of a mounted container, in place or elsewhere, or of another
/// container given the same `state=`, or of a container inside a mounted one
/// (or holding one), is refused before anything is mounted, with one line
/// naming the mount that holds it; the lock goes with the daemon, `kill -9`
/// included.
final class SingleDaemonTests: MountedTestCase {
    override var mountsInSetUp: Bool { false }

    var bin: String { fixture.binary }
    var c: String { fixture.container }
    var m: String { fixture.mountpoint }

    /// Mount points of this test beyond the fixture's, unmounted at teardown
    /// if a refused mount got made after all.
    private var extraTargets: [String] = []

    override func setUpWithError() throws {
        try super.setUpWithError()
        // Runs before the fixture's own teardown (blocks run last added first).
        addTeardownBlock {
            for target in self.extraTargets where MountTable.isMounted(target) {
                _ = try? Subprocess.run(["fusermount3", "-u", target], timeout: 15)
                if MountTable.isMounted(target) { _ = try? Subprocess.run(["umount", "-l", target], timeout: 15) }
            }
        }
    }

    override func prepareContainer() throws {
        XCTAssertEqual(mkdir(c + "/Documents", 0o755), 0)
        try "report\n".write(toFile: c + "/Documents/report.txt", atomically: false, encoding: .utf8)
        XCTAssertEqual(mkdir(c + "/sub", 0o755), 0)
        try "inner\n".write(toFile: c + "/sub/inner.txt", atomically: false, encoding: .utf8)
    }

    /// A fresh directory in the fixture's base, counted as a mount target.
    func directory(_ name: String) -> String {
        let path = fixture.base + "/" + name
        XCTAssertEqual(mkdir(path, 0o755), 0, "mkdir \(path)")
        extraTargets.append(path)
        return path
    }

    /// `purgefs ARGUMENTS` must fail with status 1 and one line naming every
    /// token, with nothing mounted on any of `targets` that was not before.
    func assertRefused(_ arguments: [String], naming tokens: [String], targets: [String],
                       file: StaticString = #filePath, line: UInt = #line) throws {
        let before = targets.map { MountTable.mounts(at: $0).count }
        let result = try Subprocess.run([bin] + arguments, timeout: 20)
        let shown = "`purgefs \(arguments.joined(separator: " "))`"
        XCTAssertFalse(result.timedOut, "\(shown) kept serving: \(result)", file: file, line: line)
        XCTAssertEqual(result.status, 1, "\(shown) must be refused: \(result)", file: file, line: line)
        XCTAssertEqual(result.stderrLines.count, 1, "\(shown): one line on stderr: \(result)", file: file, line: line)
        for token in tokens {
            XCTAssertTrue(result.stderr.contains(token), "\(shown): the line names \(token): \(result)", file: file, line: line)
        }
        for (target, count) in zip(targets, before) {
            XCTAssertEqual(MountTable.mounts(at: target).count, count, "\(shown) mounted on \(target)", file: file, line: line)
        }
    }

    func assertFirstMountServes(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(try? String(contentsOfFile: m + "/Documents/report.txt", encoding: .utf8), "report\n",
                       "the first mount still serves", file: file, line: line)
    }

    /// Whether some other open file description holds `path`'s lock.
    func isLocked(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return clinux_flock_exclusive_nonblocking(fd) != 0 && errno == EWOULDBLOCK
    }

    /// Whether every thread of the process has exited (a zombie has; its
    /// descriptors go with its last thread).
    func isGone(_ pid: pid_t) -> Bool {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.allSatisfy { task in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return true }
            return "ZX".contains(stat[stat.index(close, offsetBy: 2)])
        }
    }

    // MARK: The same container

    func testASecondMountOfTheSameContainerIsRefused() throws {
        try fixture.mount()
        let pid = try XCTUnwrap(fixture.daemonPID)
        let other = directory("mnt2")
        for foreground in [[], ["-f"]] {
            try assertRefused(["mount", c] + foreground, naming: [m, "pid \(pid)"], targets: [c, m])
            try assertRefused(["mount", c, other] + foreground, naming: [m, "pid \(pid)"], targets: [other, c, m])
            try assertRefused(["mount", c, m] + foreground, naming: [m, "pid \(pid)"], targets: [c, m])
        }
        assertFirstMountServes()
        XCTAssertTrue(isLocked(c + "/.purgefs/" + StateLockHolder.fileName), "the daemon holds its state directory")
        var st = stat()
        XCTAssertNotEqual(lstat(m + "/.purgefs/" + StateLockHolder.fileName, &st), 0, "the lock is not reachable through the mount")
    }

    func testAContainerMountedInPlaceIsNotMountedAgain() throws {
        try fixture.mount(inPlace: true)
        let pid = try XCTUnwrap(fixture.daemonPID)
        try assertRefused(["mount", c, m], naming: ["already mounted at \(c)", "pid \(pid)"], targets: [c, m])
        XCTAssertEqual(try? String(contentsOfFile: c + "/Documents/report.txt", encoding: .utf8), "report\n")
    }

    // MARK: The same state directory

    func testAnotherContainerWithTheSameStateIsRefused() throws {
        let state = fixture.base + "/state"
        try fixture.mount(options: ["state=" + state])
        let pid = try XCTUnwrap(fixture.daemonPID)
        let second = directory("container2")
        let secondView = directory("mnt2")
        for foreground in [[], ["-f"]] {
            try assertRefused(["mount", second, secondView, "-o", "state=" + state] + foreground,
                              naming: [state, m, "pid \(pid)"], targets: [second, secondView, m])
        }
        assertFirstMountServes()
    }

    /// The daemon checks the lock itself, before mounting: a holder the
    /// mount table does not show yet (a daemon still indexing) is found too.
    func testAHeldLockRefusesTheMountBeforeAnythingIsMounted() throws {
        XCTAssertEqual(mkdir(c + "/.purgefs", 0o700), 0)
        let lockPath = c + "/.purgefs/" + StateLockHolder.fileName
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        XCTAssertEqual(clinux_flock_exclusive_nonblocking(fd), 0)
        // This test process plays a live daemon that has locked but not mounted yet.
        let holder = StateLockHolder(processID: getpid(), container: c, mountpoint: "/somewhere/else")
        XCTAssertEqual(holder.encoded.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }, holder.encoded.count)
        for foreground in [[], ["-f"]] {
            try assertRefused(["mount", c, m] + foreground, naming: ["/somewhere/else", "pid \(getpid())"], targets: [c, m])
        }
    }

    // MARK: Nested containers

    func testAContainerInsideAMountedOneIsRefused() throws {
        try fixture.mount()
        let pid = try XCTUnwrap(fixture.daemonPID)
        let inner = directory("mnt-inner")
        extraTargets.append(c + "/sub")
        try assertRefused(["mount", c + "/sub", inner], naming: [c, m, "pid \(pid)", "inside"], targets: [inner, c + "/sub"])
        try assertRefused(["mount", c + "/sub"], naming: [c, m, "pid \(pid)", "inside"], targets: [c + "/sub"])
        assertFirstMountServes()
    }

    func testAContainerHoldingAMountedOneIsRefused() throws {
        let inner = directory("mnt-inner")
        let result = try Subprocess.run([bin, "mount", c + "/sub", inner], timeout: 30)
        XCTAssertEqual(result.status, 0, "\(result)")
        guard result.status == 0 else { return }
        try assertRefused(["mount", c, m], naming: [c + "/sub", inner, "holds"], targets: [c, m])
        try assertRefused(["mount", c], naming: [c + "/sub", inner, "holds"], targets: [c, m])
        XCTAssertEqual(try? String(contentsOfFile: inner + "/inner.txt", encoding: .utf8), "inner\n")
        let unmounted = try Subprocess.run([bin, "unmount", inner], timeout: 20)
        XCTAssertEqual(unmounted.status, 0, "\(unmounted)")
    }

    // MARK: The lock goes with the daemon

    func testKill9ReleasesTheStateDirectory() throws {
        try fixture.mount()
        let lockPath = c + "/.purgefs/" + StateLockHolder.fileName
        XCTAssertTrue(isLocked(lockPath))
        let pid = try XCTUnwrap(fixture.daemonPID)
        let mountID = try XCTUnwrap(MountTable.mounts(at: m).last?.id)
        XCTAssertTrue(eventually(timeout: 10) { access("/run/purgefs/" + RuntimeRecord.fileName(mountID: mountID), F_OK) == 0 },
                      "the daemon publishes its runtime record")
        XCTAssertEqual(kill(pid, SIGKILL), 0)
        XCTAssertTrue(eventually(timeout: 10) { self.isGone(pid) }, "the daemon is gone after kill -9")
        // The kernel drops the lock as it closes the daemon's files (possibly a moment later).
        XCTAssertTrue(eventually(timeout: 5) { !self.isLocked(lockPath) }, "the kernel dropped the lock with the daemon")
        // Its mount is still in the table, dead: the refusal says so.
        try assertRefused(["mount", c], naming: [m, "pid \(pid), is gone", "purgefs unmount \(m)"], targets: [c])
        for problem in fixture.unmount() { XCTFail(problem) }
        try fixture.mount()
        assertFirstMountServes()
        let holder = try XCTUnwrap(StateLockHolder(decoding: Array(try Data(contentsOf: URL(fileURLWithPath: lockPath)))))
        XCTAssertEqual(holder, StateLockHolder(processID: try XCTUnwrap(fixture.daemonPID), container: c, mountpoint: m))
    }

    /// A clean unmount and a new mount at once get the old mount's ID and
    /// connection number back; the old daemon's connection guard must leave
    /// the new mount alone.
    func testARemountAtOnceOutlivesTheLastDaemonsGuard() throws {
        try fixture.mount()
        let first = try XCTUnwrap(fixture.daemonPID)
        for problem in fixture.unmount() { XCTFail(problem) }
        try fixture.mount()
        XCTAssertTrue(eventually(timeout: 10) { self.guardProcesses(of: first).isEmpty }, "the old daemon's guard ends")
        assertFirstMountServes()
    }

    /// Connection guards started by the daemon `pid`.
    func guardProcesses(of pid: pid_t) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return names.filter { name in
            guard Int32(name) != nil, let data = FileManager.default.contents(atPath: "/proc/\(name)/cmdline") else { return false }
            let argv = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            return argv.count > 2 && argv[1] == "__connection-guard" && argv[2] == String(pid)
        }
    }
}
