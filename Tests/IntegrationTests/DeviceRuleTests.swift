import Foundation
import Glibc
import PurgeCore
import PurgeSys
import XCTest

/// One rule for every way to change the device (issue 12, item 4): the
/// mount options, `purgefs space` and `setfattr` on the root accept and
/// refuse the same values, for the same reasons (the mount and `space` say
/// it in the same line; setfattr gets `EINVAL` and the daemon log the line).
class DeviceRuleTestCase: PurgefsCommandTestCase {
    /// `purgefs mount` of another container with `options`: its status and
    /// stderr. A mount that succeeds is unmounted again at once.
    func mountOutcome(_ options: String, file: StaticString = #filePath, line: UInt = #line) throws -> CommandResult {
        let other = fixture.base + "/other", target = fixture.base + "/other-mnt"
        for directory in [other, target] where !exists(directory) { XCTAssertEqual(mkdir(directory, 0o755), 0) }
        let result = try purgefs(["mount", other, target, "-o", options])
        if MountTable.isMounted(target) {
            let unmounted = try Subprocess.run(["fusermount3", "-u", target], timeout: 15)
            XCTAssertEqual(unmounted.status, 0, "\(unmounted)", file: file, line: line)
            XCTAssertTrue(eventually(timeout: 10) { !fixture.ownProcesses().contains { pid in
                (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8))?.contains(other) == true } })
        }
        return result
    }

    /// The device as the root's attributes say.
    func device() throws -> [UInt64] { [try attribute("capacity", of: mnt), try attribute("external", of: mnt)] }

    /// The same refusal through the three doors: the mount's line and
    /// `space`'s are equal (exit 64, nothing mounted, nothing changed), and
    /// setfattr gets EINVAL with that line in the daemon log.
    func assertRefusedEverywhere(mount options: String, space arguments: [String], setting attribute: String, to value: String,
                                 reason: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let before = try device()
        let mounted = try mountOutcome(options, file: file, line: line)
        XCTAssertEqual(mounted.status, 64, "mount -o \(options): \(mounted)", file: file, line: line)
        XCTAssertTrue(mounted.stderr.contains(reason), "mount -o \(options) says \(reason.debugDescription): \(mounted)", file: file, line: line)
        let spaced = try purgefs(["space", mnt] + arguments)
        XCTAssertEqual(spaced.status, 64, "space \(arguments): \(spaced)", file: file, line: line)
        XCTAssertEqual(spaced.stderrLines, mounted.stderrLines, "space \(arguments) gives the mount's reason", file: file, line: line)
        XCTAssertEqual(spaced.stdout, "", file: file, line: line)
        XCTAssertEqual(try device(), before, "space \(arguments) changed nothing", file: file, line: line)
        XCTAssertEqual(setAttr(mnt, pf(attribute), value), EINVAL, "setfattr \(attribute)=\(value)", file: file, line: line)
        XCTAssertEqual(try device(), before, "setfattr \(attribute)=\(value) changed nothing", file: file, line: line)
        XCTAssertTrue(eventually { self.fixture.daemonStderrText().contains("refused user.purgefs.\(attribute)=\(value): ") },
                      "the daemon log names the refusal: \(fixture.daemonStderrText())", file: file, line: line)
        let logged = fixture.daemonStderrText().split(separator: "\n").last { $0.contains("refused user.purgefs.\(attribute)=\(value): ") }
        XCTAssertTrue(logged?.contains(reason) == true, "the daemon log gives the reason \(reason.debugDescription): \(logged ?? "")", file: file, line: line)
    }

    /// Values every door accepts.
    func assertAcceptedEverywhere(mount options: String, space arguments: [String], setting attribute: String, to value: String,
                                  file: StaticString = #filePath, line: UInt = #line) throws {
        let mounted = try mountOutcome(options, file: file, line: line)
        XCTAssertEqual(mounted.status, 0, "mount -o \(options): \(mounted)", file: file, line: line)
        let before = try device()
        try succeed(["space", mnt] + arguments, file: file, line: line)
        XCTAssertEqual(setAttr(mnt, pf(attribute), value), 0, "setfattr \(attribute)=\(value)", file: file, line: line)
        // Restored (capacity only where it was changed: setting it makes a real device simulated).
        let changesCapacity = attribute == "capacity" || arguments.contains("--capacity")
        for (name, bytes) in zip(["capacity", "external"], before) where name == "external" || changesCapacity {
            XCTAssertEqual(setAttr(mnt, pf(name), String(bytes)), 0, "restoring \(name)", file: file, line: line)
        }
    }

    func succeed(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        let result = try purgefs(arguments)
        XCTAssertEqual(result.status, 0, "\(result)", file: file, line: line)
    }
}

/// A simulated device of 200 MiB, low 10% (20 MiB) and high 30 MiB.
final class DeviceRuleTests: DeviceRuleTestCase {
    override var mountOptions: [String] { ["capacity=200M", "low=10%", "high=30M"] }

    /// Today's bug: `space --capacity 100M --external 150M` succeeded while the mount refused it.
    func testExternalMustLeaveRoomOnTheDevice() throws {
        let reason = "external=150 MiB leaves no space in capacity=100 MiB"
        try assertRefusedEverywhere(mount: "capacity=100M,external=150M,low=10%,high=30M", space: ["--capacity", "100M", "--external", "150M"],
                                    setting: "external", to: "250M", reason: "leaves no space in capacity=")
        let spaced = try purgefs(["space", mnt, "--capacity", "100M", "--external", "150M"])
        XCTAssertTrue(spaced.stderr.contains(reason), "\(spaced)")
        try assertRefusedEverywhere(mount: "capacity=200M,external=200M,low=10%,high=30M", space: ["--external", "200M"],
                                    setting: "external", to: "200M", reason: "external=200 MiB leaves no space in capacity=200 MiB")
        // Through the capacity: less than the external already set.
        XCTAssertEqual(setAttr(mnt, pf("external"), "50M"), 0)
        try assertRefusedEverywhere(mount: "capacity=40M,external=50M,low=10%,high=30M", space: ["--capacity", "40M"],
                                    setting: "capacity", to: "40M", reason: "external=50 MiB leaves no space in capacity=40 MiB")
        XCTAssertEqual(setAttr(mnt, pf("external"), "0"), 0)
        try assertAcceptedEverywhere(mount: "capacity=100M,external=50M,low=10%,high=30M", space: ["--capacity", "100M", "--external", "50M"],
                                     setting: "external", to: "60M")
    }

    /// A mark in percent and one in bytes are compared at the capacity the change leaves.
    func testLowMustNotExceedHighAtTheNewCapacity() throws {
        try assertRefusedEverywhere(mount: "capacity=2G,low=10%,high=30M", space: ["--capacity", "2G"],
                                    setting: "capacity", to: "2G", reason: "low=10% is above high=30 MiB")
        try assertAcceptedEverywhere(mount: "capacity=300M,low=10%,high=30M", space: ["--capacity", "300M"], setting: "capacity", to: "250M")
    }

    /// Values are read alike: the same reason after each door's own framing.
    func testValuesAreReadAlike() throws {
        for (option, value, reason) in [("capacity", "0", "must be more than 0"), ("capacity", "12X", "not a size"),
                                        ("external", "1.5", "a fraction of a byte"), ("external", "-1M", "must not be negative")] {
            let mounted = try mountOutcome("\(option)=\(value)")
            XCTAssertEqual(mounted.status, 64, "\(mounted)")
            XCTAssertTrue(mounted.stderr.contains("\(option)=\(value): \(reason)"), "\(mounted)")
            let spaced = try purgefs(["space", mnt, "--\(option)", value])
            XCTAssertEqual(spaced.status, 64, "\(spaced)")
            XCTAssertTrue(spaced.stderr.contains("--\(option) \(value): \(reason)"), "\(spaced)")
            XCTAssertEqual(setAttr(mnt, pf(option), value), EINVAL, "setfattr \(option)=\(value)")
            XCTAssertTrue(eventually { self.fixture.daemonStderrText().contains("refused user.purgefs.\(option)=\(value): \(option)=\(value): \(reason)") },
                          "daemon log: \(fixture.daemonStderrText())")
        }
        XCTAssertEqual(try device(), [200 << 20, 0], "nothing changed")
    }
}

/// The real device (no capacity=): external must leave room in its size too.
final class RealDeviceRuleTests: DeviceRuleTestCase {
    override var mountOptions: [String] { [] }

    func testExternalMustLeaveRoomOnTheRealDevice() throws {
        try assertRefusedEverywhere(mount: "external=1000T", space: ["--external", "1000T"],
                                    setting: "external", to: "1000T", reason: "external=1000 TiB leaves no space in capacity=")
        try assertAcceptedEverywhere(mount: "external=1M", space: ["--external", "1M"], setting: "external", to: "2M")
    }
}
