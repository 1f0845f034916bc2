import Foundation
import Glibc
import PurgeCore
import XCTest

/// A filesystem the tests make on a loop image of their own.
enum ImageKind: String {
    /// XFS with reflinks: clones share extents.
    case xfs
    /// ext4: no reflinks, clones fall back to sharing whole files.
    case ext4

    /// The command that makes the filesystem on an image file (appended).
    var mkfs: [String] {
        switch self {
        case .xfs: return ["mkfs.xfs", "-q", "-m", "reflink=1"]
        case .ext4: return ["mkfs.ext4", "-q", "-F"]
        }
    }

    /// The Debian package that has `mkfs[0]`.
    var package: String {
        switch self {
        case .xfs: return "xfsprogs"
        case .ext4: return "e2fsprogs"
        }
    }
}

/// A mount whose container is a directory on a filesystem image made by
/// the test itself on a loop device: `truncate`, `mkfs`, `losetup`,
/// `mount`, so the backing filesystem holds only this test's files.
/// Skipped with a message where that cannot be made. Teardown unmounts
/// purgefs, then the image, then detaches the loop device and removes the
/// image. The image file itself lives in memory (`imageDirectory`) where it
/// can: every fsync inside the image then costs a copy, not a write to the
/// host's disk, which other work on the machine may keep busy for seconds.
/// Subclasses say which filesystem (`kind`) and how to count its shared
/// data independently (`walkFigures`).
class LoopImageTestCase: XCTestCase {
    var fixture: MountFixture!
    private var loopDevice: String?
    private var imageMounted = false
    /// Where the image is mounted, and the container inside it (below the
    /// image's root, which ext4 gives a `lost+found`).
    var volume: String { fixture.base + "/volume" }
    var container: String { volume + "/container" }
    var m: String { fixture.mountpoint }
    /// Run before `purgefs mount` (`prlimit --nofile=...`: the daemon inherits its limits).
    var launcher: [String] = []

    var kind: ImageKind { preconditionFailure("\(Self.self) must say which filesystem it tests on") }
    /// The image's size in bytes (`truncate -s`): sparse, so only what the test writes costs space.
    var imageSize: Int { 512 << 20 }
    /// Where the image file is: a directory of its own, removed in teardown.
    private var imageDirectory: String?
    /// Keep the image file in a purgefs mount of its own (the loop device
    /// reading it with direct I/O), whose daemon a test can stop
    /// (`suspendImage`) to hold every I/O of the image: this kernel has no
    /// device mapper to suspend.
    var throughPausableStore: Bool { false }
    private var store: MountFixture?

    override func setUpWithError() throws {
        try super.setUpWithError()
        let fixture = try MountFixture()
        self.fixture = fixture
        if throughPausableStore {
            let store = try MountFixture()
            self.store = store
            // Registered before the image's teardown below (so run after it:
            // blocks run in reverse order).
            addTeardownBlock { [kind] in
                // A detached loop device lets go of its file a moment later.
                let image = store.mountpoint + "/\(kind).img"
                _ = eventually(timeout: 20) { (try? Subprocess.run(["losetup", "-j", image], timeout: 30))?.stdout.isEmpty ?? true }
                for problem in store.destroy() { XCTFail("teardown of the image's store: \(problem)") }
            }
        }
        addTeardownBlock { [self] in
            // `hasSucceeded` is false until the run has stopped, which is after teardown.
            if let run = testRun, run.totalFailureCount > 0 { printDaemonLog() }
            for problem in unmountPurgefs() { XCTFail("teardown: \(problem)") }
            // The image can stay busy for a moment after the daemon exits: retry.
            if imageMounted, !eventually(timeout: 10, { (try? Subprocess.run(["umount", volume], timeout: 30))?.status == 0 }) {
                XCTFail("teardown: cannot unmount the \(kind) image at \(volume): \(String(describing: try? Subprocess.run(["fuser", "-vm", volume], timeout: 30)))")
            }
            if let loopDevice, (try? Subprocess.run(["losetup", "-d", loopDevice], timeout: 30))?.status != 0 {
                XCTFail("teardown: cannot detach \(loopDevice)")
            }
            if let imageDirectory, imageDirectory != fixture.base, let failure = removeTree(imageDirectory) {
                XCTFail("teardown: cannot remove \(imageDirectory): \(failure)")
            }
            for problem in fixture.destroy() { XCTFail("teardown: \(problem)") }
        }
        // Run first: nothing above can unmount while the image's I/O is held.
        if throughPausableStore { addTeardownBlock { [self] in resumeImage() } }
        guard access("/sbin/\(kind.mkfs[0])", X_OK) == 0 || access("/usr/sbin/\(kind.mkfs[0])", X_OK) == 0 else {
            throw Self.unavailable("\(kind.mkfs[0]) is not installed (package \(kind.package)): \(kind) image tests skipped")
        }
        let directory: String
        if !throughPausableStore {
            directory = Self.memoryDirectory(room: imageSize) ?? fixture.base
            imageDirectory = directory
        } else {
            guard let store else { preconditionFailure() }
            try store.mount()
            directory = store.mountpoint
        }
        let image = directory + "/\(kind).img"
        let truncated = try Subprocess.run(["truncate", "-s", String(imageSize), image], timeout: 30)
        let made = truncated.status == 0 ? try Subprocess.run(kind.mkfs + [image], timeout: 60) : truncated
        guard made.status == 0 else { throw Self.unavailable("cannot make an \(kind) image: \(made)") }
        let attached = try Subprocess.run(["losetup", "-f", "--show"] + (throughPausableStore ? ["--direct-io=on"] : []) + [image], timeout: 30)
        guard attached.status == 0 else { throw Self.unavailable("no loop device for the \(kind) image: \(attached)") }
        loopDevice = attached.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(mkdir(volume, 0o755), 0)
        let mounted = try Subprocess.run(["mount", loopDevice!, volume], timeout: 30)
        guard mounted.status == 0 else { throw Self.unavailable("cannot mount the \(kind) image: \(mounted)") }
        imageMounted = true
        XCTAssertEqual(mkdir(container, 0o755), 0)
        try prepareContainer()
        try mountPurgefs()
    }

    /// A skip where an image cannot be made; under CI (`CI=true`), where
    /// scripts/bootstrap installs everything and runs as root, a failure:
    /// these tests (clones, hangs) must never pass there by not running.
    static func unavailable(_ reason: String) -> Error {
        ProcessInfo.processInfo.environment["CI"] == "true" ? SubprocessError("under CI: " + reason) : XCTSkip(reason)
    }

    /// A new directory for the image on a tmpfs with room for all of it:
    /// under `PURGEFS_TEST_IMAGES` (scripts/test makes one per run and
    /// removes it), else `/dev/shm`. nil where there is none: the image then
    /// goes into the fixture's directory, on the host's disk.
    static func memoryDirectory(room: Int) -> String? {
        let parent = ProcessInfo.processInfo.environment["PURGEFS_TEST_IMAGES"] ?? "/dev/shm"
        var figures = statvfs()
        guard (try? MountTable.current())?.mount(containing: parent)?.fileSystemType == "tmpfs",
              statvfs(parent, &figures) == 0, UInt64(figures.f_bavail) * UInt64(figures.f_frsize) >= UInt64(room) else { return nil }
        var template = Array((parent + "/purgefs-image-XXXXXX").utf8CString)
        guard mkdtemp(&template) != nil else { return nil }
        return String(cString: template)
    }

    /// Holds every I/O to the image from now on (`throughPausableStore`):
    /// what is in the page cache still reads, and writes still dirty pages.
    /// Returns once every thread of the store's daemon has stopped: kill(2)
    /// returns before they do, and one still running could answer the
    /// image's I/O meanwhile.
    func suspendImage() throws {
        guard let pid = store?.daemonPID else { throw SubprocessError("the image is not in a store of its own") }
        XCTAssertEqual(kill(pid, SIGSTOP), 0)
        let stopped = eventually(timeout: 20) {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            return !tasks.isEmpty && tasks.allSatisfy { task in
                guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
                      let close = stat.lastIndex(of: ")") else { return true }  // gone
                return "Tt".contains(stat[stat.index(close, offsetBy: 2)])
            }
        }
        guard stopped else { throw SubprocessError("the image's store did not stop: \(describeThreads(of: [pid]))") }
    }

    /// Lets the image's I/O through again.
    func resumeImage() {
        guard let pid = store?.daemonPID else { return }
        kill(pid, SIGCONT)
    }

    /// Waits (against a deadline) until a thread of `pid` sleeps on the disk
    /// (`D`) in a system call that `inCall` accepts (its `/proc/.../syscall`
    /// fields, and what its first argument names as a descriptor of `pid`);
    /// false at the deadline.
    func waitForThreadInDiskSleep(of pid: pid_t, timeout: TimeInterval = 20, _ inCall: @escaping ([String], String) -> Bool) -> Bool {
        eventually(timeout: timeout) {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            return tasks.contains { task in
                guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
                      let close = stat.lastIndex(of: ")"),
                      stat[stat.index(close, offsetBy: 2)] == "D",
                      let call = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/syscall", encoding: .utf8)
                else { return false }
                let fields = call.split(separator: " ").map(String.init)
                return inCall(fields, Self.descriptorTarget(of: pid, fields) ?? "")
            }
        }
    }

    /// One line per thread of `pids`: its state, its system call (number and
    /// the descriptor's target), `wchan` and, for a thread in disk sleep, the
    /// top of its kernel stack: what a failure says the daemon was doing.
    func describeThreads(of pids: [pid_t]) -> String {
        var lines: [String] = []
        for pid in pids {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            for task in tasks.sorted(by: { Int($0) ?? 0 < Int($1) ?? 0 }) {
                let directory = "/proc/\(pid)/task/\(task)"
                func read(_ name: String) -> String { ((try? String(contentsOfFile: directory + "/" + name, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines) }
                let stat = read("stat")
                guard let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")") else { continue }
                let name = stat[stat.index(after: open)..<close]
                let state = stat[stat.index(after: close)...].split(separator: " ").first.map(String.init) ?? "?"
                let call = read("syscall").split(separator: " ").map(String.init)
                var line = "\(task) \(name) \(state) syscall \(call.first ?? "?")"
                if let target = Self.descriptorTarget(of: pid, call) { line += " on \(target)" }
                let wchan = read("wchan")
                if !wchan.isEmpty, wchan != "0" { line += " wchan \(wchan)" }
                if state == "D" {
                    let frames = read("stack").split(separator: "\n").prefix(8).compactMap { $0.split(separator: " ").dropFirst().first }
                    if !frames.isEmpty { line += " stack " + frames.joined(separator: " <- ") }
                }
                lines.append(line)
            }
        }
        return lines.joined(separator: "; ")
    }

    /// What the first argument of a thread's system call (its
    /// `/proc/.../syscall` fields) names as a descriptor of `pid`.
    static func descriptorTarget(of pid: pid_t, _ call: [String]) -> String? {
        guard call.count > 1, let descriptor = UInt64(call[1].dropFirst(2), radix: 16) else { return nil }
        return try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(descriptor)")
    }

    /// Called before the first mount: put files into the container here.
    func prepareContainer() throws {}

    /// Variables the daemons `mountPurgefs` starts get besides the test's own.
    var daemonEnvironment: [String: String] = [:]

    /// `purgefs mount CONTAINER MOUNTPOINT`, which returns once the mount is usable.
    func mountPurgefs(options: [String] = []) throws {
        let result = try Subprocess.run(
            launcher + [fixture.binary, "mount", container, m] + (options.isEmpty ? [] : ["-o", options.joined(separator: ",")]), timeout: 30,
            environment: daemonEnvironment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(daemonEnvironment) { $1 })
        guard result.status == 0, MountTable.mounts(at: m).last?.fileSystemType == "fuse.purgefs" else {
            throw SubprocessError("mount of \(container) on \(m) failed: \(result)")
        }
    }

    /// The daemon's log (`daemon.log` in the default state directory, kept
    /// across remounts and kills), as far as it goes now.
    func daemonLogText() -> String {
        (try? String(contentsOfFile: container + "/.purgefs/daemon.log", encoding: .utf8)) ?? ""
    }

    /// Prints the end of the daemon's log, so that a test that failed (in
    /// CI, where nothing else is kept) says what the daemon saw, as
    /// `MountFixture.printDaemonLog` does for a foreground daemon.
    func printDaemonLog(lines: Int = 80) {
        if let excerpt = DaemonLogExcerpt.render(daemonLogText(), lines: lines) { print(excerpt) }
    }

    /// Unmounts the purgefs mount (only it) and waits for its daemon to exit.
    @discardableResult
    func unmountPurgefs() -> [String] {
        var problems: [String] = []
        if MountTable.isMounted(m), (try? Subprocess.run(["fusermount3", "-u", m], timeout: 15))?.status != 0 {
            problems.append("fusermount3 -u \(m) failed")
        }
        if !eventually(timeout: 10, { fixture.ownProcesses().isEmpty }) {
            problems.append("purgefs daemons \(fixture.ownProcesses()) outlived the unmount")
        }
        return problems
    }

    // MARK: Helpers

    /// Free bytes of the backing filesystem (the image).
    func backingFree() -> UInt64 {
        var status = statvfs()
        XCTAssertEqual(statvfs(container, &status), 0)
        return UInt64(status.f_bfree) * UInt64(status.f_frsize)
    }

    /// Writes `count` pseudo-random bytes to `path` (a new file).
    func writeRandom(_ path: String, count: Int, seed: UInt64 = 1) throws {
        var state = seed
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            for i in 0..<words.count {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                words[i] = state
            }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    func run(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) {
        let result = try? Subprocess.run(arguments, timeout: 60)
        XCTAssertEqual(result?.status, 0, "\(arguments.joined(separator: " ")): \(String(describing: result))", file: file, line: line)
    }

    func sameContent(_ a: String, _ b: String) -> Bool {
        FileManager.default.contentsEqual(atPath: a, andPath: b)
    }

    /// Writes `bytes` at `offset` of `path` through a descriptor.
    func overwrite(_ path: String, at offset: Int64, _ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        let fd = open(path, O_WRONLY)
        XCTAssertGreaterThanOrEqual(fd, 0, "open \(path): \(Errno.name(errno))", file: file, line: line)
        XCTAssertEqual(bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, bytes.count, off_t(offset)) }, bytes.count,
                       "pwrite \(path): \(Errno.name(errno))", file: file, line: line)
        close(fd)
    }

    /// `allocated` and `clone_savings` of the backing container by a walk
    /// independent of purgefs, each subclass in its filesystem's terms.
    func walkFigures() -> (allocated: UInt64, savings: UInt64) {
        preconditionFailure("\(Self.self) must say how its filesystem shares data")
    }

    func assertAccounting(_ label: String, file: StaticString = #filePath, line: UInt = #line) {
        let walk = walkFigures()
        let allocated = numberAttr(fixture.mountpoint, "allocated"), savings = numberAttr(fixture.mountpoint, "clone_savings")
        XCTAssertEqual(allocated, walk.allocated, "\(label): allocated vs the walk", file: file, line: line)
        XCTAssertEqual(savings, walk.savings, "\(label): clone_savings vs the walk", file: file, line: line)
        if allocated != walk.allocated || savings != walk.savings { print(describeSharedInodes()) }
    }

    /// Every backing inode with several names in the container, and what
    /// each name is through the mount (its inode number, `content_id` and
    /// `shared`): what a failed accounting check prints (CI keeps nothing else).
    func describeSharedInodes() -> String {
        var lines = ["--- backing inodes with several names ---"]
        for (inode, entry) in BackingWalk(container).files.sorted(by: { $0.key < $1.key }) where entry.names.count > 1 {
            let names = entry.names.map { name -> String in
                var st = stat()
                let shown = stat(m + "/" + name, &st) == 0 ? "\(st.st_ino)" : Errno.name(errno)
                return "\(name) (mount ino \(shown), content_id \(getAttr(m + "/" + name, pf("content_id"))), shared \(getAttr(m + "/" + name, pf("shared"))))"
            }
            lines.append("\(inode) allocated \(entry.allocated): " + names.joined(separator: "; "))
        }
        return lines.joined(separator: "\n")
    }
}
