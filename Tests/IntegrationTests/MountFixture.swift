import Foundation
import Glibc
import PurgeCore
import XCTest

/// A fresh temporary directory holding `container/`, `mnt/` and `native/`
/// (a plain twin directory on the same filesystem, for parity checks), and
/// the `purgefs` daemon serving `container/` on `mnt/` as a subprocess.
///
/// `destroy()` always unmounts what this fixture mounted (and only that),
/// stops only the daemon it started, and then removes the directory.
final class MountFixture: @unchecked Sendable {
    let base: String
    let container: String
    let mountpoint: String
    let native: String
    let binary: String

    /// The foreground daemon (`-f`), when there is one.
    private(set) var daemon: Process?
    private(set) var mountedPath: String?
    private var daemonStdout: String { base + "/daemon.stdout" }
    private var daemonStderr: String { base + "/daemon.stderr" }
    private var destroyed = false
    private let lock = NSLock()

    /// The fstype the mount must show. `PURGEFS_TEST_FSTYPE` overrides it
    /// only to check the suite itself against another passthrough (for
    /// example `fuse.mergerfs` through a wrapper script in PURGEFS_BIN).
    static let fstype = ProcessInfo.processInfo.environment["PURGEFS_TEST_FSTYPE"] ?? "fuse.purgefs"

    /// How long a mount may take before the fixture gives up.
    static let mountDeadline: TimeInterval = 10

    init() throws {
        binary = try MountFixture.locateBinary()
        var template = Array("/tmp/purgefs-it-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else {
            throw SubprocessError("mkdtemp failed: \(String(cString: strerror(errno)))")
        }
        let made = String(cString: template)
        guard let resolved = realpath(made, nil) else { throw SubprocessError("realpath(\(made)) failed") }
        base = String(cString: resolved)
        free(resolved)
        chmod(base, 0o755)
        container = base + "/container"
        mountpoint = base + "/mnt"
        native = base + "/native"
        for dir in [container, mountpoint, native] {
            guard mkdir(dir, 0o755) == 0 else {
                throw SubprocessError("mkdir \(dir): \(String(cString: strerror(errno)))")
            }
        }
    }

    // MARK: Locating the binary

    /// `PURGEFS_BIN`, else the `purgefs` built beside this test bundle, else
    /// `.build/debug/purgefs` in the package root. Missing is an error, not a skip.
    static func locateBinary() throws -> String {
        if let explicit = ProcessInfo.processInfo.environment["PURGEFS_BIN"], !explicit.isEmpty {
            guard access(explicit, X_OK) == 0 else {
                throw SubprocessError("PURGEFS_BIN=\(explicit) is not an executable file")
            }
            return explicit
        }
        var candidates: [String] = []
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            // .../debug/purgefsPackageTests.xctest → .../debug/purgefs
            candidates.append((exe as NSString).deletingLastPathComponent + "/purgefs")
        }
        candidates.append(packageRoot() + "/.build/debug/purgefs")
        for candidate in candidates where access(candidate, X_OK) == 0 {
            return candidate
        }
        throw SubprocessError(
            "purgefs binary not found (looked at \(candidates.joined(separator: ", "))): run `swift build` first or set PURGEFS_BIN")
    }

    /// The directory holding Package.swift, found by walking up from this file.
    static func packageRoot(from file: String = #filePath) -> String {
        var dir = (file as NSString).deletingLastPathComponent
        while dir != "/" {
            if FileManager.default.fileExists(atPath: dir + "/Package.swift") { return dir }
            dir = (dir as NSString).deletingLastPathComponent
        }
        return FileManager.default.currentDirectoryPath
    }

    // MARK: Mounting

    /// The command line that mounts this fixture.
    func mountArguments(_ options: [String], foreground: Bool, inPlace: Bool, launcher: [String] = []) -> [String] {
        var arguments = launcher + [binary, "mount", container]
        if !inPlace { arguments.append(mountpoint) }
        if foreground { arguments.append("-f") }
        if !options.isEmpty { arguments += ["-o", options.joined(separator: ",")] }
        return arguments
    }

    /// Mounts `container` on `mnt` (or over itself when `inPlace`). In the
    /// foreground form it polls the mount table until the mount appears with
    /// fstype `fuse.purgefs`, failing at once with the daemon's stderr if it
    /// died. The daemonizing form must be usable the moment the command returns.
    /// `launcher` runs the daemon (e.g. `prlimit --nofile=N --`); it must exec it in place.
    func mount(options: [String] = [], foreground: Bool = true, inPlace: Bool = false, launcher: [String] = []) throws {
        let target = inPlace ? container : mountpoint
        let arguments = mountArguments(options, foreground: foreground, inPlace: inPlace, launcher: launcher)
        guard MountTable.mounts(at: target).isEmpty else {
            throw SubprocessError("\(target) is already mounted before the test mounts it")
        }
        lock.withLock { mountedPath = target }
        if !foreground {
            let result = try Subprocess.run(arguments, timeout: 30)
            guard result.status == 0, !result.timedOut else {
                throw SubprocessError("daemonizing mount failed: \(result)")
            }
            let mounts = MountTable.mounts(at: target)
            guard let top = mounts.last else {
                throw SubprocessError("`purgefs mount` returned 0 but \(target) is not mounted yet (it must return only once the mount is usable)\n\(result)")
            }
            guard top.fileSystemType == MountFixture.fstype else {
                throw SubprocessError("\(target) is mounted with fstype \(top.fileSystemType), expected \(MountFixture.fstype)")
            }
            return
        }
        let process = try Subprocess.spawn(arguments, stdoutPath: daemonStdout, stderrPath: daemonStderr)
        lock.withLock { daemon = process }
        let deadline = Date().addingTimeInterval(MountFixture.mountDeadline)
        while true {
            if let top = MountTable.mounts(at: target).last {
                guard top.fileSystemType == MountFixture.fstype else {
                    throw SubprocessError("\(target) got mounted with fstype \(top.fileSystemType), expected \(MountFixture.fstype)")
                }
                // In the table is not yet usable: the daemon answers INIT
                // (and has published its runtime record) only once its loop
                // runs. A statfs waits for that; from a subprocess, with a
                // deadline, so a daemon that never answers fails the test.
                let answered = try Subprocess.run(["stat", "-f", "-c", "%T", target], timeout: MountFixture.mountDeadline)
                guard answered.status == 0, !answered.timedOut else {
                    throw SubprocessError("\(target) is mounted but does not answer statfs: \(answered)\nstderr: \(daemonStderrText())")
                }
                return
            }
            if !process.isRunning {
                throw SubprocessError(
                    "purgefs exited with status \(process.terminationStatus) before mounting: `\(arguments.joined(separator: " "))`\nstderr: \(daemonStderrText())")
            }
            if Date() > deadline {
                throw SubprocessError(
                    "\(target) not mounted within \(Int(MountFixture.mountDeadline)) s: `\(arguments.joined(separator: " "))`\nstderr: \(daemonStderrText())")
            }
            usleep(10_000)
        }
    }

    func daemonStderrText() -> String {
        (try? String(contentsOfFile: daemonStderr, encoding: .utf8)) ?? ""
    }

    /// Prints the end of the foreground daemon's log, so that a test that
    /// failed (in CI, where nothing else is kept) says what the daemon saw.
    func printDaemonLog(lines: Int = 60) {
        if let excerpt = DaemonLogExcerpt.render(daemonStderrText(), lines: lines) { print(excerpt) }
    }

    /// PID of the foreground daemon.
    var daemonPID: pid_t? { lock.withLock { daemon?.processIdentifier } }

    // MARK: Unmounting and cleaning up

    /// Unmounts every mount stacked on this fixture's mountpoint (only that
    /// path), then waits for the daemon to exit. Returns what went wrong.
    @discardableResult
    func unmount() -> [String] {
        var problems: [String] = []
        let targets = Set([mountpoint, container] + (lock.withLock { mountedPath }.map { [$0] } ?? []))
        // Only FUSE mounts are the fixture's to take down: a container can
        // be a filesystem image of its own (`containerOnFreshExt4`).
        func isFuseMounted(_ target: String) -> Bool {
            MountTable.mounts(at: target).contains { $0.fileSystemType.hasPrefix("fuse") }
        }
        for target in targets {
            var attempts = 0
            while isFuseMounted(target), attempts < 8 {
                attempts += 1
                let result = try? Subprocess.run(["fusermount3", "-u", target], timeout: 15)
                if isFuseMounted(target), result?.status != 0 {
                    _ = try? Subprocess.run(["umount", "-l", target], timeout: 15)
                }
            }
            if isFuseMounted(target) { problems.append("\(target) is still mounted after unmounting") }
        }
        problems += waitForDaemons()
        return problems
    }

    /// Waits for the foreground daemon, and for any daemonized `purgefs`
    /// whose command line names this fixture's directory, to exit; stops
    /// them (only them) if they outlive the deadline.
    private func waitForDaemons() -> [String] {
        var problems: [String] = []
        if let process = lock.withLock({ daemon }) {
            if !Subprocess.wait(process, timeout: 10) {
                problems.append("the daemon (pid \(process.processIdentifier)) did not exit within 10 s of the unmount")
                kill(process.processIdentifier, SIGTERM)
                if !Subprocess.wait(process, timeout: 5) {
                    kill(process.processIdentifier, SIGKILL)
                    Subprocess.wait(process, timeout: 5)
                }
            }
        }
        let deadline = Date().addingTimeInterval(10)
        while !ownProcesses().isEmpty, Date() < deadline { usleep(10_000) }
        let leftovers = ownProcesses()
        if !leftovers.isEmpty {
            problems.append("daemonized purgefs (pids \(leftovers)) still running 10 s after the unmount")
            for pid in leftovers { kill(pid, SIGKILL) }
        }
        return problems
    }

    /// PIDs of processes running this fixture's binary with this fixture's
    /// directory on their command line.
    func ownProcesses() -> [pid_t] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return names.compactMap { name -> pid_t? in
            guard let pid = pid_t(name), pid != getpid(),
                  let data = FileManager.default.contents(atPath: "/proc/\(name)/cmdline") else { return nil }
            let argv = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            guard argv.contains(where: { $0 == container || $0.hasPrefix(base + "/") }),
                  argv.contains(where: { $0.hasSuffix("purgefs") }) else { return nil }
            // A zombie has already exited.
            if let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
               let close = stat.lastIndex(of: ")"),
               stat[stat.index(close, offsetBy: 2)] == "Z" { return nil }
            return pid
        }
    }

    /// Unmounts, stops the daemon and removes the directory — never while
    /// anything is still mounted below it. Safe to call more than once.
    @discardableResult
    func destroy() -> [String] {
        let first = lock.withLock { () -> Bool in
            defer { destroyed = true }
            return !destroyed
        }
        guard first else { return [] }
        var problems = unmount()
        let left = MountTable.mounts(under: base)
        if left.isEmpty {
            if let failure = removeTree(base) { problems.append("cannot remove \(base): \(failure)") }
        } else {
            problems.append("not removing \(base): still mounted: \(left.map(\.mountPoint))")
        }
        return problems
    }
}

/// A test case with a fresh fixture; mounts it in `setUp` unless
/// `mountsInSetUp` is false, and always unmounts and cleans up.
class MountedTestCase: XCTestCase {
    var fixture: MountFixture!

    /// `-o` options for the mount made in `setUp`.
    var mountOptions: [String] { [] }
    var mountsInSetUp: Bool { true }
    /// The container is the root of a fresh ext4 image (`ScratchExt4`).
    var containerOnFreshExt4: Bool { false }

    override func setUpWithError() throws {
        try super.setUpWithError()
        let fixture = try MountFixture()
        self.fixture = fixture
        addTeardownBlock { [weak self] in
            // `hasSucceeded` is false until the run has stopped, which is after teardown.
            if let run = self?.testRun, run.totalFailureCount > 0 { fixture.printDaemonLog() }
            for problem in fixture.destroy() { XCTFail("teardown: \(problem)") }
        }
        if containerOnFreshExt4 {
            let volume = try ScratchExt4(at: fixture.container)
            // Registered after the fixture's, so run before it: purgefs goes first, then the image.
            addTeardownBlock {
                for problem in fixture.unmount() + volume.release() { XCTFail("teardown: \(problem)") }
            }
        }
        try prepareContainer()
        if mountsInSetUp { try fixture.mount(options: mountOptions) }
    }

    /// Called before mounting: put files into the container here.
    func prepareContainer() throws {}

    override func tearDownWithError() throws {
        if let fixture {
            for problem in fixture.destroy() { XCTFail("teardown: \(problem)") }
        }
        try super.tearDownWithError()
    }
}

/// `rm -rf` through directory fds, so trees deeper than PATH_MAX go too.
/// Returns what failed, or nil.
func removeTree(_ path: String) -> String? {
    func empty(_ dirFD: Int32) -> String? {
        guard let dir = fdopendir(dup(dirFD)) else { return "fdopendir: \(Errno.name(errno))" }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != ".", name != ".." { names.append(name) }
        }
        closedir(dir)
        for name in names {
            var st = stat()
            guard fstatat(dirFD, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            if st.st_mode & S_IFMT == S_IFDIR {
                let child = openat(dirFD, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                guard child >= 0 else { return "open \(name): \(Errno.name(errno))" }
                let failure = empty(child)
                close(child)
                if let failure { return failure }
                guard unlinkat(dirFD, name, AT_REMOVEDIR) == 0 else { return "rmdir \(name): \(Errno.name(errno))" }
            } else {
                guard unlinkat(dirFD, name, 0) == 0 else { return "unlink \(name): \(Errno.name(errno))" }
            }
        }
        return nil
    }
    let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
    guard fd >= 0 else { return errno == ENOENT ? nil : "open: \(Errno.name(errno))" }
    let failure = empty(fd)
    close(fd)
    if let failure { return failure }
    return rmdir(path) == 0 ? nil : "rmdir: \(Errno.name(errno))"
}
