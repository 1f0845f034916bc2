import Foundation
import Glibc
import PurgeCore
import PurgeSys
import XCTest

/// `scripts/install` into a temporary prefix: what it installs works (the
/// binary, the man page, the unit, the fstab helper path), and
/// `--uninstall` leaves nothing behind.
final class InstallTests: MountedTestCase {
    override var mountsInSetUp: Bool { false }
    var prefix: String { fixture.base + "/prefix" }
    static var script: String { MountFixture.packageRoot() + "/scripts/install" }

    func install(_ extra: [String] = []) throws -> CommandResult {
        try Subprocess.run([Self.script, "--prefix", prefix, "--binary", fixture.binary] + extra, timeout: 120)
    }

    /// Every file and directory under `path`, relative to it.
    func tree(_ path: String) -> [String] {
        (FileManager.default.enumerator(atPath: path)?.allObjects as? [String] ?? []).sorted()
    }

    func testInstallIntoAPrefixAndUninstallLeavesNothing() throws {
        let result = try install()
        XCTAssertEqual(result.status, 0, "\(result)")
        XCTAssertEqual(Set(tree(prefix).filter { !$0.hasSuffix("/") }), [
            "bin", "bin/purgefs", "lib", "lib/systemd", "lib/systemd/system", "lib/systemd/system/purgefs@.service",
            "share", "share/doc", "share/doc/purgefs", "share/doc/purgefs/REFERENCE.md", "share/man", "share/man/man1",
            "share/man/man1/purgefs.1", "share/purgefs", "share/purgefs/install-manifest",
        ])
        XCTAssertTrue(result.stderr.contains("not on the PATH mount(8) gives"), "a prefix mount cannot find says so: \(result.stderr)")
        let version = try Subprocess.run([prefix + "/bin/purgefs", "--version"])
        XCTAssertTrue(version.stdout.hasPrefix("purgefs 0.1.0 (commit "), version.stdout)
        let unit = try String(contentsOfFile: prefix + "/lib/systemd/system/purgefs@.service", encoding: .utf8)
        XCTAssertTrue(unit.contains("Type=notify"))
        XCTAssertTrue(unit.contains("ExecStart=\(prefix)/bin/purgefs mount -f /%I $PURGEFS_ARGS"), unit)
        XCTAssertFalse(unit.contains("@BINDIR@"))
        if let analyze = Subprocess.which("systemd-analyze") {
            // Offline: checks the syntax and that ExecStart's binary exists.
            let verify = try Subprocess.run([analyze, "verify", "--man=no", prefix + "/lib/systemd/system/purgefs@.service"])
            XCTAssertEqual(verify.status, 0, "\(verify)")
        }

        // Installing again changes nothing; uninstalling removes everything, the prefix included (the install made it).
        XCTAssertEqual(try install().status, 0)
        let uninstall = try install(["--uninstall"])
        XCTAssertEqual(uninstall.status, 0, "\(uninstall)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: prefix), "left behind: \(tree(prefix))")
        let again = try install(["--uninstall"])
        XCTAssertEqual(again.status, 1, "nothing to uninstall: \(again)")
        XCTAssertTrue(again.stderr.contains("nothing to uninstall"), again.stderr)
    }

    /// A prefix that exists keeps what was there: only what the install made goes.
    func testUninstallKeepsWhatWasThereBefore() throws {
        try FileManager.default.createDirectory(atPath: prefix + "/share/man/man1", withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: prefix + "/share/man/man1/other.1", contents: Data("x".utf8))
        XCTAssertEqual(try install().status, 0)
        XCTAssertEqual(try install(["--uninstall"]).status, 0)
        XCTAssertEqual(tree(prefix), ["share", "share/man", "share/man/man1", "share/man/man1/other.1"])
    }

    func testBadArguments() throws {
        let unknown = try Subprocess.run([Self.script, "--bogus"])
        XCTAssertEqual(unknown.status, 1)
        XCTAssertEqual(unknown.stderr, "error: install: unknown argument '--bogus' (try --help)\n")
        let relative = try Subprocess.run([Self.script, "--prefix", "relative/dir"])
        XCTAssertEqual(relative.stderr, "error: install: --prefix must be an absolute path, not 'relative/dir'\n")
        XCTAssertFalse(FileManager.default.fileExists(atPath: "relative"))
    }

    /// The installed man page renders without a warning and names every
    /// command `purgefs --help` lists.
    func testManPageRendersAndListsEveryCommand() throws {
        XCTAssertEqual(try install().status, 0)
        defer { _ = try? install(["--uninstall"]) }
        let page = prefix + "/share/man/man1/purgefs.1"
        let groff = try XCTUnwrap(Subprocess.which("groff"), "groff is missing: scripts/bootstrap installs groff-base")
        // -rHY=0: no hyphenation, so a word is never split across lines.
        let rendered = try Subprocess.run([groff, "-man", "-Tutf8", "-ww", "-rHY=0", page], environment: ["LC_ALL": "C.UTF-8"])
        XCTAssertEqual(rendered.status, 0, "\(rendered)")
        XCTAssertEqual(rendered.stderr, "", "groff warnings")
        // groff marks bold by overstriking: strip it.
        let text = rendered.stdout.replacingOccurrences(of: #".\u0008"#, with: "", options: .regularExpression)
            .split(whereSeparator: \.isWhitespace).joined(separator: " ")
        XCTAssertTrue(text.contains("powers of 1024"))
        let help = try Subprocess.run([fixture.binary, "--help"])
        let commands = help.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            .drop { $0 != "Commands:" }.dropFirst().prefix { !$0.isEmpty }
            .filter { !$0.hasPrefix("   ") }  // a wrapped description goes on, indented
            .map { String($0.split(separator: " ")[0]) }
        XCTAssertGreaterThan(commands.count, 10, help.stdout)
        for command in commands {
            XCTAssertTrue(text.contains("purgefs \(command)"), "the man page's synopsis lacks purgefs \(command)")
        }
        if let man = Subprocess.which("man") {
            let viaMan = try Subprocess.run([man, "-l", page], environment: ["MANWIDTH": "80", "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "MAN_KEEP_FORMATTING": ""])
            XCTAssertEqual(viaMan.status, 0, "\(viaMan)")
            XCTAssertTrue(viaMan.stdout.contains("PURGEFS(1)"))
        }
    }

    /// fstab's path: `mount.fuse3` runs the program named by the type's
    /// subtype (`fuse.purgefs` → `purgefs`) through the shell, found on PATH.
    func testMountHelperRunsTheInstalledBinary() throws {
        XCTAssertEqual(try install().status, 0)
        defer { _ = try? install(["--uninstall"]) }
        let helper = try XCTUnwrap(Subprocess.which("mount.fuse3"), "mount.fuse3 is missing: fuse3 provides it")
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = prefix + "/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        let result = try Subprocess.run(
            [helper, fixture.container, fixture.mountpoint, "-t", "fuse.purgefs", "-o", "capacity=16M"], environment: environment)
        XCTAssertEqual(result.status, 0, "\(result)")
        XCTAssertEqual(MountTable.mounts(at: fixture.mountpoint).last?.fileSystemType, "fuse.purgefs")
        XCTAssertEqual(getAttr(fixture.mountpoint, pf("capacity")), .value(String(16 << 20)))
        let daemon = fixture.ownProcesses()
        XCTAssertFalse(daemon.isEmpty)
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(daemon[0])/exe")
        XCTAssertEqual(exe, prefix + "/bin/purgefs", "the daemon is the installed binary")
        XCTAssertTrue(fixture.unmount().isEmpty)
    }

    /// What systemd does with the installed unit, done by hand where systemd
    /// does not run: the unit's ExecStart (instance and PURGEFS_ARGS filled
    /// in) with NOTIFY_SOCKET, ready when READY=1 comes, and SIGTERM (what
    /// `systemctl stop` sends) unmounts and ends it with status 0.
    func testTheUnitsCommandLineAsSystemdRunsIt() throws {
        XCTAssertEqual(try install().status, 0)
        defer { _ = try? install(["--uninstall"]) }
        let unit = try String(contentsOfFile: prefix + "/lib/systemd/system/purgefs@.service", encoding: .utf8)
        let execStart = try XCTUnwrap(unit.split(separator: "\n").first { $0.hasPrefix("ExecStart=") }).dropFirst("ExecStart=".count)
        XCTAssertTrue(unit.contains("Type=notify"))
        // %I is the unescaped instance (the container without its leading /); $PURGEFS_ARGS splits at spaces.
        let arguments = execStart.split(separator: " ").flatMap { word -> [String] in
            switch word {
            case "/%I": return [fixture.container]
            case "$PURGEFS_ARGS": return ["-o", "capacity=8M"]
            default: return [String(word)]
            }
        }
        XCTAssertEqual(arguments.first, prefix + "/bin/purgefs")
        let address = "@purgefs-unit-test-\(getpid())-\(UUID().uuidString)"
        let socket = try DatagramSocket.bound(to: address)
        defer { socket.close() }
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = address
        let process = try Subprocess.spawn(arguments, stdoutPath: fixture.base + "/unit.stdout",
                                           stderrPath: fixture.base + "/unit.stderr", environment: environment)
        let deadline = Date().addingTimeInterval(MountFixture.mountDeadline)
        var ready = false
        while !ready {
            guard process.isRunning, Date() < deadline else {
                XCTFail("no READY=1: \((try? String(contentsOfFile: fixture.base + "/unit.stderr", encoding: .utf8)) ?? "")")
                return
            }
            if let message = try socket.receive(waitingAtMost: 100) { ready = message.split(separator: "\n").contains("READY=1") }
        }
        XCTAssertEqual(MountTable.mounts(at: fixture.container).last?.fileSystemType, "fuse.purgefs", "mounted in place")
        XCTAssertEqual(getAttr(fixture.container, pf("capacity")), .value(String(8 << 20)))
        kill(process.processIdentifier, SIGTERM)
        XCTAssertTrue(Subprocess.wait(process, timeout: 20), "SIGTERM ends the daemon")
        XCTAssertEqual(process.terminationReason, .exit)
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertTrue(MountTable.mounts(at: fixture.container).isEmpty, "SIGTERM unmounts")
    }

    /// The unit started by systemd: only where systemd runs the machine.
    func testUnitStartsUnderSystemd() throws {
        guard FileManager.default.fileExists(atPath: "/run/systemd/system") else {
            throw XCTSkip("systemd is not running on this machine (/run/systemd/system is missing): the unit cannot be started")
        }
        XCTAssertEqual(try install().status, 0)
        defer { _ = try? install(["--uninstall"]) }
        // A runtime copy of the template, found by systemd without touching /etc.
        let unitName = "purgefs-test-\(getpid())@.service"
        let runtimeUnit = "/run/systemd/system/" + unitName
        try FileManager.default.copyItem(atPath: prefix + "/lib/systemd/system/purgefs@.service", toPath: runtimeUnit)
        defer {
            unlink(runtimeUnit)
            _ = try? Subprocess.run(["systemctl", "daemon-reload"])
        }
        XCTAssertEqual(try Subprocess.run(["systemctl", "daemon-reload"]).status, 0)
        let escaped = try Subprocess.run(["systemd-escape", "--path", fixture.container]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let instance = "purgefs-test-\(getpid())@\(escaped).service"
        defer { _ = try? Subprocess.run(["systemctl", "stop", instance], timeout: 60) }
        // `systemctl start` of a Type=notify unit returns once READY=1 arrived.
        let start = try Subprocess.run(["systemctl", "start", instance], timeout: 120)
        XCTAssertEqual(start.status, 0, "\(start)")
        XCTAssertEqual(MountTable.mounts(at: fixture.container).last?.fileSystemType, "fuse.purgefs", "mounted in place when the start returned")
        let status = try Subprocess.run(["systemctl", "show", "-p", "StatusText", "--value", instance])
        XCTAssertEqual(status.stdout, "serving \(fixture.container) in place\n")
        XCTAssertEqual(try Subprocess.run(["systemctl", "stop", instance], timeout: 60).status, 0)
        XCTAssertTrue(MountTable.mounts(at: fixture.container).isEmpty, "the stop unmounts")
    }
}
