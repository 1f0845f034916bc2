import Foundation
import Glibc
import PurgeCore
import PurgeSys
import XCTest

/// The `purgefs` command run as a subprocess: help, bad input, the
/// daemonizing form, the mount.fuse3/fstab form, unmount, in-place mounts.
final class CommandLineTests: MountedTestCase {
    override var mountsInSetUp: Bool { false }

    var bin: String { fixture.binary }

    override func prepareContainer() throws {
        XCTAssertEqual(mkdir(fixture.container + "/Documents", 0o755), 0)
        try "report\n".write(toFile: fixture.container + "/Documents/report.txt", atomically: false, encoding: .utf8)
        XCTAssertEqual(mkdir(fixture.container + "/.purgefs", 0o755), 0)
        try "state\n".write(toFile: fixture.container + "/.purgefs/marker", atomically: false, encoding: .utf8)
    }

    // MARK: Help

    func testHelpForEverySubcommand() throws {
        for arguments in [["--help"], ["-h"], ["help"], ["mount", "--help"], ["unmount", "--help"], ["help", "mount"], ["help", "unmount"]] {
            let result = try Subprocess.run([bin] + arguments, timeout: 20)
            XCTAssertEqual(result.status, 0, "\(result)")
            XCTAssertFalse(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "help text on stdout: \(result)")
            if arguments.count == 2 {
                let subcommand = arguments[0] == "help" ? arguments[1] : arguments[0]
                XCTAssertTrue(result.stdout.contains(subcommand), "help of \(subcommand) names it: \(result)")
            }
        }
        let top = try Subprocess.run([bin, "--help"], timeout: 20)
        for subcommand in ["mount", "unmount"] {
            XCTAssertTrue(top.stdout.contains(subcommand), "top-level help lists \(subcommand)")
        }
        XCTAssertTrue(MountTable.mounts(under: fixture.base).isEmpty)
    }

    // MARK: Bad input

    /// A bad command: non-zero exit, exactly one line on stderr naming
    /// `mentioning`, no crash dump, nothing mounted, the container unchanged.
    /// Exit statuses (STYLE.md): 1 for a failure, 64 for a usage error.
    static let failure: Int32 = 1, usage: Int32 = 64

    func assertRejected(_ arguments: [String], mentioning tokens: [String], status expected: Int32, mountsBefore: Int = 0,
                        file: StaticString = #filePath, line: UInt = #line) throws {
        // A daemon already serving may write its own state; the rejected command may not write anything.
        let skipping: Set<String> = mountsBefore > 0 ? [".purgefs"] : []
        let before = TreeSnapshot.take(fixture.container, skipping: skipping)
        let result = try Subprocess.run([bin] + arguments, timeout: 15)
        let shown = "`purgefs \(arguments.joined(separator: " "))`"
        XCTAssertFalse(result.timedOut, "\(shown) did not return: it accepted the input and kept serving", file: file, line: line)
        XCTAssertEqual(result.status, expected, "\(shown) must fail with status \(expected): \(result)", file: file, line: line)
        XCTAssertLessThan(result.status, 128, "\(shown) died of a signal: \(result)", file: file, line: line)
        XCTAssertEqual(result.stderrLines.count, 1, "\(shown) must print exactly one line on stderr: \(result)", file: file, line: line)
        for marker in ["Fatal error", "Stack dump", "Backtrace", "💣"] {
            XCTAssertFalse(result.stderr.contains(marker), "\(shown) crashed: \(result)", file: file, line: line)
        }
        if let message = result.stderrLines.first {
            XCTAssertTrue(tokens.contains { message.localizedCaseInsensitiveContains($0) },
                          "\(shown): the message should name one of \(tokens): \(message)", file: file, line: line)
        }
        XCTAssertEqual(MountTable.mounts(at: fixture.mountpoint).count, mountsBefore, "\(shown) changed the mounts on mnt", file: file, line: line)
        XCTAssertEqual(MountTable.mounts(at: fixture.container).count, 0, "\(shown) mounted over the container", file: file, line: line)
        XCTAssertEqual(TreeSnapshot.take(fixture.container, skipping: skipping), before, "\(shown) changed the container", file: file, line: line)
    }

    func testBadInputInBothForms() throws {
        let c = fixture.container, m = fixture.mountpoint
        let file = fixture.base + "/plain-file"
        try "not a directory\n".write(toFile: file, atomically: false, encoding: .utf8)
        let missing = fixture.base + "/does-not-exist"
        for foreground in [["-f"], []] {
            try assertRejected(["mount", missing, m] + foreground, mentioning: [missing, "does-not-exist"], status: Self.failure)
            try assertRejected(["mount", file, m] + foreground, mentioning: [file, "plain-file"], status: Self.failure)
            try assertRejected(["mount", c, missing] + foreground, mentioning: [missing, "does-not-exist"], status: Self.failure)
            try assertRejected(["mount", c, file] + foreground, mentioning: [file, "plain-file"], status: Self.failure)
            try assertRejected(["mount", c, m] + foreground + ["-o", "bogus"], mentioning: ["bogus"], status: Self.usage)
            try assertRejected(["mount", c, m] + foreground + ["-o", "capacity=12X"], mentioning: ["12X", "capacity"], status: Self.usage)
            try assertRejected(["mount", c, m] + foreground + ["-o", "low=30%,high=20%"], mentioning: ["low", "high"], status: Self.usage)
            try assertRejected(["mount", c, m] + foreground + ["-o", "low=150%"], mentioning: ["150%", "low"], status: Self.usage)
            try assertRejected(["mount", c, m] + foreground + ["-o", "capacity="], mentioning: ["capacity"], status: Self.usage)
        }
        try assertRejected(["mount"], mentioning: ["container", "usage", "missing", "argument"], status: Self.usage)
        try assertRejected(["frobnicate"], mentioning: ["frobnicate"], status: Self.usage)
        try assertRejected(["mount", c, m, "extra"], mentioning: ["extra"], status: Self.usage)
        try assertRejected([missing, m, "-o", "allow_other"], mentioning: [missing, "does-not-exist"], status: Self.failure)
    }

    /// `cloud=` the container, inside it, or holding it (`/`, the
    /// container's parent, the same through a symlink), or overlapping the
    /// state directory: one line, exit 64, and nothing made anywhere (a
    /// store is given `files/` and `incoming/` at mount; `cloud=/` made them at the root).
    func testACloudStoreOverlappingTheContainerIsRefusedBeforeAnythingIsMade() throws {
        let c = fixture.container, m = fixture.mountpoint
        let parent = String(c[..<c.lastIndex(of: "/")!])
        let link = fixture.base + "/store-link"
        XCTAssertEqual(symlink(parent, link), 0)
        let state = fixture.base + "/state"
        XCTAssertFalse(Paths.exists("/files") || Paths.exists("/incoming"), "left by something else: the test cannot tell")
        let cases: [(store: String, state: [String])] = [
            ("/", []), (parent, []), (c, []), (c + "/Documents/remote", []), (c + "/.purgefs", []),
            (link, []), (link + "/" + String(c.split(separator: "/").last!), []), (link + "/container/new/remote", []),
            (state, ["state=" + state]), (state + "/remote", ["state=" + state]),
        ]
        for (store, options) in cases {
            let before = TreeSnapshot.take(fixture.base)
            for foreground in [["-f"], []] {
                try assertRejected(["mount", c, m] + foreground + ["-o", (["cloud=" + store] + options).joined(separator: ",")],
                                   mentioning: ["the remote store must be outside"], status: Self.usage)
            }
            XCTAssertEqual(TreeSnapshot.take(fixture.base), before, "cloud=\(store): nothing made")
        }
        XCTAssertFalse(Paths.exists("/files") || Paths.exists("/incoming"), "cloud=/ made nothing at the root")
    }

    func testMountpointAlreadyMountedIsBusy() throws {
        try fixture.mount()
        let other = fixture.base + "/other"
        XCTAssertEqual(mkdir(other, 0o755), 0)
        try assertRejected(["mount", other, fixture.mountpoint, "-f"], mentioning: [fixture.mountpoint, "busy", "mounted"], status: Self.failure, mountsBefore: 1)
        try assertRejected(["mount", other, fixture.mountpoint], mentioning: [fixture.mountpoint, "busy", "mounted"], status: Self.failure, mountsBefore: 1)
        // The first mount still serves.
        XCTAssertEqual(try String(contentsOfFile: fixture.mountpoint + "/Documents/report.txt", encoding: .utf8), "report\n")
    }

    func testUnmountOfSomethingNotMounted() throws {
        let result = try Subprocess.run([bin, "unmount", fixture.mountpoint], timeout: 15)
        XCTAssertNotEqual(result.status, 0, "\(result)")
        XCTAssertEqual(result.stderrLines.count, 1, "\(result)")
        let missing = try Subprocess.run([bin, "unmount", fixture.base + "/nope"], timeout: 15)
        XCTAssertNotEqual(missing.status, 0, "\(missing)")
        XCTAssertEqual(missing.stderrLines.count, 1, "\(missing)")
        XCTAssertTrue(missing.stderr.contains(fixture.base + "/nope does not exist"), "names the real cause: \(missing)")
    }

    // MARK: Daemonizing

    /// Without `-f` the command returns only once the mount is usable:
    /// stat and readdir work the instant it returns, with no waiting.
    func assertUsableAtOnce(_ mountpoint: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(MountTable.mounts(at: mountpoint).last?.fileSystemType, "fuse.purgefs", "mounted when the command returned", file: file, line: line)
        var st = stat()
        XCTAssertEqual(stat(mountpoint + "/Documents/report.txt", &st), 0, "stat right after return: \(Errno.name(errno))", file: file, line: line)
        XCTAssertEqual(st.st_size, 7, file: file, line: line)
        XCTAssertEqual(try? FileManager.default.contentsOfDirectory(atPath: mountpoint).sorted(), ["Documents"], file: file, line: line)
        XCTAssertEqual(try? String(contentsOfFile: mountpoint + "/Documents/report.txt", encoding: .utf8), "report\n", file: file, line: line)
    }

    func assertUnmounts(_ mountpoint: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let result = try Subprocess.run([bin, "unmount", mountpoint], timeout: 20)
        XCTAssertEqual(result.status, 0, "\(result)", file: file, line: line)
        XCTAssertFalse(MountTable.isMounted(mountpoint), "`purgefs unmount` returned with the mount still there", file: file, line: line)
        let deadline = Date().addingTimeInterval(10)
        while !fixture.ownProcesses().isEmpty, Date() < deadline { usleep(10_000) }
        XCTAssertEqual(fixture.ownProcesses(), [], "the daemon outlived the unmount", file: file, line: line)
        XCTAssertEqual(try String(contentsOfFile: fixture.container + "/Documents/report.txt", encoding: .utf8), "report\n", file: file, line: line)
        XCTAssertEqual(try String(contentsOfFile: fixture.container + "/.purgefs/marker", encoding: .utf8), "state\n", file: file, line: line)
    }

    func testDaemonizingMountIsUsableWhenItReturns() throws {
        let result = try Subprocess.run([bin, "mount", fixture.container, fixture.mountpoint], timeout: 30)
        XCTAssertEqual(result.status, 0, "\(result)")
        XCTAssertFalse(result.timedOut, "without -f the command must return")
        guard result.status == 0 else { return }
        assertUsableAtOnce(fixture.mountpoint)
        XCTAssertFalse(fixture.ownProcesses().isEmpty, "a daemon serves the mount")
        try "new\n".write(toFile: fixture.mountpoint + "/Documents/new.txt", atomically: false, encoding: .utf8)
        try assertUnmounts(fixture.mountpoint)
        XCTAssertEqual(try String(contentsOfFile: fixture.container + "/Documents/new.txt", encoding: .utf8), "new\n")
    }

    /// `purgefs CONTAINER MOUNTPOINT -o OPTS`, the form mount.fuse3 runs.
    func testMountHelperForm() throws {
        let result = try Subprocess.run([bin, fixture.container, fixture.mountpoint, "-o", "rw,capacity=1G"], timeout: 30)
        XCTAssertEqual(result.status, 0, "\(result)")
        guard result.status == 0 else { return }
        assertUsableAtOnce(fixture.mountpoint)
        try assertUnmounts(fixture.mountpoint)
    }

    /// `mount -t fuse` and an fstab line, through mount.fuse3. mount(8)
    /// runs its helpers without our PATH, so the `fuse.purgefs` type (which
    /// needs `purgefs` installed in the system PATH) is reached here through
    /// mount.fuse3's `PROGRAM#SOURCE` form with the built binary's full path:
    /// the same hand-off, `purgefs CONTAINER MOUNTPOINT -o OPTS`.
    func testMountCommandAndFstabLine() throws {
        let source = "\(bin)#\(fixture.container)"
        let viaType = try Subprocess.run(["mount", "-t", "fuse", "-o", "capacity=1G", source, fixture.mountpoint], timeout: 30)
        XCTAssertEqual(viaType.status, 0, "\(viaType)")
        if viaType.status == 0 {
            assertUsableAtOnce(fixture.mountpoint)
            try assertUnmounts(fixture.mountpoint)
        }

        let fstab = fixture.base + "/fstab"
        try "\(source) \(fixture.mountpoint) fuse capacity=1G,low=5%,high=10%,allow_other 0 0\n"
            .write(toFile: fstab, atomically: false, encoding: .utf8)
        let viaFstab = try Subprocess.run(["mount", "-T", fstab, fixture.mountpoint], timeout: 30)
        XCTAssertEqual(viaFstab.status, 0, "\(viaFstab)")
        if viaFstab.status == 0 {
            assertUsableAtOnce(fixture.mountpoint)
            XCTAssertTrue(MountTable.mounts(at: fixture.mountpoint).last?.superOptions.contains("allow_other") == true,
                          "allow_other from the fstab line reached the mount")
            try assertUnmounts(fixture.mountpoint)
        }
    }

    // MARK: In place

    func assertInPlaceView(file: StaticString = #filePath, line: UInt = #line) throws {
        let c = fixture.container
        XCTAssertEqual(MountTable.mounts(at: c).last?.fileSystemType, "fuse.purgefs", "mounted over the container", file: file, line: line)
        XCTAssertEqual(try String(contentsOfFile: c + "/Documents/report.txt", encoding: .utf8), "report\n",
                       "files keep their paths", file: file, line: line)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: c).sorted(), ["Documents"], "state dir not listed", file: file, line: line)
        var st = stat()
        XCTAssertEqual(lstat(c + "/.purgefs", &st), -1, "state dir hidden in place", file: file, line: line)
        XCTAssertEqual(errno, ENOENT, file: file, line: line)
        try "written in place\n".write(toFile: c + "/Documents/in-place.txt", atomically: false, encoding: .utf8)
    }

    func testInPlaceForegroundMount() throws {
        try fixture.mount(inPlace: true)
        try assertInPlaceView()
        for problem in fixture.unmount() { XCTFail(problem) }
        XCTAssertFalse(MountTable.isMounted(fixture.container))
        XCTAssertEqual(try String(contentsOfFile: fixture.container + "/Documents/in-place.txt", encoding: .utf8), "written in place\n")
        XCTAssertEqual(try String(contentsOfFile: fixture.container + "/.purgefs/marker", encoding: .utf8), "state\n")
    }

    func testInPlaceDaemonizingMount() throws {
        let result = try Subprocess.run([bin, "mount", fixture.container], timeout: 30)
        XCTAssertEqual(result.status, 0, "\(result)")
        guard result.status == 0 else { return }
        try assertInPlaceView()
        try assertUnmounts(fixture.container)
        XCTAssertEqual(try String(contentsOfFile: fixture.container + "/Documents/in-place.txt", encoding: .utf8), "written in place\n")
    }
}
