import Foundation
import Glibc
import PurgeCore
import XCTest

/// Another local user cannot take a mount over through purgefs's own
/// directories: a runtime directory they made first refuses the mount with
/// one line; the owner's runtime and device directories are 0700 (files
/// 0600), so nobody else can leave a request, read a record or take a lock;
/// root's `/run/purgefs/device/NAME` likewise; a `state=` directory is
/// tightened to 0700 (its metrics history and WAL 0600) or refused.
///
/// The victim is uid `victim`, with no `XDG_RUNTIME_DIR`, so its runtime
/// directory is `/tmp/purgefs-UID`. `/dev/fuse` is root's here, so its
/// daemon runs with `CAP_SYS_ADMIN` and `CAP_DAC_OVERRIDE` kept (to open
/// `/dev/fuse` and mount): the directories are checked by owner and mode,
/// which the capabilities do not change. The attacker is uid 65534.
final class RuntimeDirectoryTests: MountedTestCase {
    override var mountsInSetUp: Bool { false }
    static let victim: uid_t = 64990
    static let attacker: uid_t = 65534
    let runtime = "/tmp/purgefs-\(RuntimeDirectoryTests.victim)"

    override func setUpWithError() throws {
        try super.setUpWithError()
        _ = removeTree(runtime)
        addTeardownBlock { [runtime] in _ = removeTree(runtime) }
    }

    static let victimLauncher = ["setpriv", "--reuid=\(victim)", "--regid=\(victim)", "--clear-groups",
                                 "--inh-caps=+dac_override,+sys_admin", "--ambient-caps=+dac_override,+sys_admin", "--",
                                 "env", "-u", "XDG_RUNTIME_DIR"]

    func runAs(_ uid: uid_t, _ script: String) throws -> CommandResult {
        try Subprocess.run(["setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--", "sh", "-c", script], timeout: 20)
    }

    func giveTheContainerToTheVictim() {
        for path in [fixture.container, fixture.mountpoint] { XCTAssertEqual(chown(path, Self.victim, Self.victim), 0) }
    }

    /// The victim's mount, daemonizing: its exit status and stderr.
    func victimMounts(_ options: [String]) throws -> CommandResult {
        try Subprocess.run(fixture.mountArguments(options, foreground: false, inPlace: false, launcher: Self.victimLauncher), timeout: 30)
    }

    func assertRefused(_ result: CommandResult, _ line: String, file: StaticString = #filePath, line number: UInt = #line) {
        XCTAssertEqual(result.status, 1, "\(result)", file: file, line: number)
        XCTAssertEqual(result.stderr.split(separator: "\n").map(String.init), ["purgefs: " + line], file: file, line: number)
        XCTAssertTrue(MountTable.mounts(at: fixture.mountpoint).isEmpty, "mounted although refused", file: file, line: number)
    }

    func status(_ path: String) -> stat? {
        var result = stat()
        return lstat(path, &result) == 0 ? result : nil
    }

    /// The recipe: the attacker makes the victim's runtime directory first, 0777.
    func testARuntimeDirectoryAnotherUserMadeRefusesTheMount() throws {
        giveTheContainerToTheVictim()
        let made = try runAs(Self.attacker, "umask 0; mkdir -p -m 0777 \(runtime)/device/phone/members \(runtime)/device/phone/requests")
        XCTAssertEqual(made.status, 0, "\(made)")
        assertRefused(try victimMounts(["device=phone", "capacity=64M"]),
                      "cannot use device phone: \(runtime) belongs to uid \(Self.attacker), not to uid \(Self.victim): "
                      + "another user may have made it; only its owner may use it")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: runtime + "/device/phone").sorted(), ["members", "requests"],
                       "nothing was written into the attacker's directory")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: runtime + "/device/phone/members"), [])

        // A symbolic link the attacker left in its place.
        XCTAssertEqual(removeTree(runtime), nil)
        XCTAssertEqual(try runAs(Self.attacker, "mkdir -p /tmp/purgefs-trap-\(Self.victim) && ln -s /tmp/purgefs-trap-\(Self.victim) \(runtime)").status, 0)
        addTeardownBlock { _ = removeTree("/tmp/purgefs-trap-\(Self.victim)") }
        assertRefused(try victimMounts(["device=phone", "capacity=64M"]),
                      "cannot use device phone: \(runtime) is a symbolic link: refused, it could lead anywhere")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: "/tmp/purgefs-trap-\(Self.victim)"), [])

        // The victim's own, but writable by everyone (made under umask 0): anyone may have put files in it.
        XCTAssertEqual(unlink(runtime), 0)
        XCTAssertEqual(try runAs(Self.victim, "umask 0; mkdir -m 0777 \(runtime)").status, 0)
        assertRefused(try victimMounts(["device=phone", "capacity=64M"]),
                      "cannot use device phone: \(runtime) may be written by its group or others (mode 0777): "
                      + "anyone may have put files in it; remove it, or make it 0700 if what is in it is yours")
    }

    /// With its own runtime directory (an older purgefs's 0755 tree
    /// tightened) the victim mounts, and the attacker can neither leave a
    /// request, nor read the settings, nor take a lock.
    func testTheOwnersDeviceDirectoryIsTheOwnersOnly() throws {
        giveTheContainerToTheVictim()
        XCTAssertEqual(try runAs(Self.victim, "umask 022; mkdir -p \(runtime)/device/phone/members \(runtime)/device/phone/requests").status, 0)
        XCTAssertEqual(status(runtime + "/device/phone").map { $0.st_mode & 0o7777 }, 0o755)
        try fixture.mount(options: ["device=phone", "capacity=64M"], foreground: false, launcher: Self.victimLauncher)
        let phone = runtime + "/device/phone"
        for directory in [runtime, runtime + "/device", phone, phone + "/members", phone + "/requests"] {
            XCTAssertEqual(status(directory).map { $0.st_mode & 0o7777 }, 0o700, directory)
            XCTAssertEqual(status(directory)?.st_uid, Self.victim, directory)
        }
        let members = try FileManager.default.contentsOfDirectory(atPath: phone + "/members")
        XCTAssertEqual(members.count, 3, "record, lock, usage: \(members)")
        for file in ["settings", "lock"] + members.map({ "members/" + $0 }) {
            XCTAssertEqual(status(phone + "/" + file).map { $0.st_mode & 0o7777 }, 0o600, file)
        }
        let attack = try runAs(Self.attacker, "echo 'bytes 1048576' > \(phone)/requests/x@y.1.1; cat \(phone)/settings; flock -n \(phone)/lock true")
        XCTAssertNotEqual(attack.status, 0, "\(attack)")
        XCTAssertEqual(attack.stderr.components(separatedBy: "Permission denied").count - 1, 3, "\(attack)")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: phone + "/requests"), [])
    }

    /// Root's device: `/run/purgefs/device` and the device 0700, so another
    /// user cannot open, read or lock anything in it (a lock held by
    /// anyone made a second root mount of the device fail "busy").
    func testRootsDeviceDirectoryIsRootsOnly() throws {
        let name = "it-" + (fixture.base as NSString).lastPathComponent
        try fixture.mount(options: ["device=\(name)", "capacity=64M"])
        let device = "/run/purgefs/device/\(name)"
        for directory in ["/run/purgefs/device", device, device + "/members", device + "/requests"] {
            XCTAssertEqual(status(directory).map { $0.st_mode & 0o7777 }, 0o700, directory)
            XCTAssertEqual(status(directory)?.st_uid, 0, directory)
        }
        XCTAssertEqual(status(device + "/settings").map { $0.st_mode & 0o7777 }, 0o600)
        let attack = try runAs(Self.attacker, "flock -n \(device)/lock sleep 0; cat \(device)/settings; ls \(device)/members")
        XCTAssertNotEqual(attack.status, 0, "\(attack)")
        XCTAssertEqual(attack.stderr.components(separatedBy: "Permission denied").count - 1, 3, "\(attack)")
    }

    /// `state=` an existing 0755 directory, with a metrics history an older
    /// purgefs left 0644: both tightened; the WAL is made 0600 too.
    func testAStateDirectoryIsTightenedAndAnotherUsersRefused() throws {
        let state = fixture.base + "/state"
        XCTAssertEqual(mkdir(state, 0o755), 0)
        XCTAssertEqual(chmod(state, 0o755), 0)
        let old = open(state + "/metrics.db", O_CREAT | O_WRONLY, 0o644)
        XCTAssertEqual(fchmod(old, 0o644), 0)
        close(old)
        try fixture.mount(options: ["state=" + state])
        XCTAssertEqual(status(state).map { $0.st_mode & 0o7777 }, 0o700)
        XCTAssertTrue(eventually(timeout: 10) { self.status(state + "/metrics.db-wal") != nil }, "no WAL")
        for file in ["metrics.db", "metrics.db-wal", "metrics.db-shm", "daemon.log"] {
            XCTAssertEqual(status(state + "/" + file).map { $0.st_mode & 0o7777 }, 0o600, file)
        }
        XCTAssertEqual(fixture.unmount(), [])

        let theirs = fixture.base + "/theirs"
        XCTAssertEqual(mkdir(theirs, 0o755), 0)
        XCTAssertEqual(chown(theirs, Self.attacker, Self.attacker), 0)
        let refused = try Subprocess.run(fixture.mountArguments(["state=" + theirs], foreground: false, inPlace: false), timeout: 30)
        assertRefused(refused, "state directory \(theirs) belongs to uid \(Self.attacker), not to uid 0: "
                      + "another user may have made it; only its owner may use it")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: theirs), [], "nothing made in another user's directory")
    }

    /// What is read back from the device's files is hostile input: capacity
    /// 2^64-1 in `settings` (it killed the daemon at the next `df`) and a
    /// request for 2^64-1 bytes are each one line in the log, and the mount
    /// serves on with the device it had.
    func testMalformedDeviceFilesAreOneLineInTheLogNotACrash() throws {
        let name = "it-" + (fixture.base as NSString).lastPathComponent
        try fixture.mount(options: ["device=\(name)", "capacity=64M"])
        let device = "/run/purgefs/device/\(name)"
        func replace(_ file: String, _ text: String) throws {
            try text.write(toFile: device + "/" + file + ".test", atomically: false, encoding: .utf8)
            XCTAssertEqual(rename(device + "/" + file + ".test", device + "/" + file), 0)
        }
        let settings = try String(contentsOfFile: device + "/settings", encoding: .utf8)
        XCTAssertTrue(settings.contains("capacity 67108864\n"), settings)
        try replace("settings", settings.replacingOccurrences(of: "capacity 67108864", with: "capacity 18446744073709551615"))
        let settingsLine = "device \(name): settings is ignored: capacity 18446744073709551615 is more than 4611686018427387904"
        XCTAssertTrue(eventually(timeout: 10) { self.fixture.daemonStderrText().contains(settingsLine) }, fixture.daemonStderrText())

        let key = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: device + "/members").first { !$0.contains(".") })
        let request = "\(key)@1:2.1.1"
        try replace("requests/" + request, "bytes 18446744073709551615\nreason monitor\n")
        XCTAssertTrue(eventually(timeout: 10) {
            (try? String(contentsOfFile: device + "/requests/\(request).done", encoding: .utf8)) == "freed 0\n"
        }, "the request was not answered: \(fixture.daemonStderrText())")
        let log = fixture.daemonStderrText()
        XCTAssertTrue(log.contains("device \(name): request \(request) is refused: bytes 18446744073709551615 is more than 4611686018427387904"), log)
        XCTAssertEqual(log.components(separatedBy: settingsLine).count - 1, 1, "said once while it stays so: \(log)")

        var figures = statvfs()
        XCTAssertEqual(statvfs(fixture.mountpoint, &figures), 0, "the mount answers: \(Errno.name(errno))")
        XCTAssertEqual(UInt64(figures.f_blocks) * UInt64(figures.f_frsize), 64 << 20, "the device it had")
        XCTAssertEqual(kill(try XCTUnwrap(fixture.daemonPID), 0), 0, "the daemon runs")
    }
}
