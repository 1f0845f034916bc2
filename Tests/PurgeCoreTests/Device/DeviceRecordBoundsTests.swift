import PurgeCore
import XCTest

/// The device's files are read back as hostile input: every number bounded,
/// every count and length limited; a file that does not parse is refused
/// with the reason, never a trap.
final class DeviceRecordBoundsTests: XCTestCase {
    let settingsText = "generation 3\ncapacity 67108864\nexternal 0\nlow b:1048576\nhigh b:2097152\npolicy quota\nbacking 2049\n"
    let memberText = "key 2049:12\npid 42\nbacking 2049\nused 10\nsize 11\npurgeable 3\nlast_use 99\nactive 4\nitems 5:3,6:0\n"
        + "container /srv/a b\nmountpoint /srv/m\n"

    private func settings(_ text: String) -> Result<DeviceSettings, DeviceRecordError> {
        Result { () throws(DeviceRecordError) in try DeviceSettings(reading: Array(text.utf8)) }
    }

    private func member(_ text: String) -> Result<DeviceMember, DeviceRecordError> {
        Result { () throws(DeviceRecordError) in try DeviceMember(reading: Array(text.utf8)) }
    }

    private func assertRefused<T>(_ result: Result<T, DeviceRecordError>, _ words: String, file: StaticString = #filePath, line: UInt = #line) {
        switch result {
        case .success(let value): XCTFail("accepted: \(value)", file: file, line: line)
        case .failure(let error): XCTAssertTrue(error.description.contains(words), "\(error) does not say \(words)", file: file, line: line)
        }
    }

    func testTheFilesAsMembersWriteThemAreRead() throws {
        XCTAssertEqual(try settings(settingsText).get().capacity, 64 << 20)
        XCTAssertEqual(try member(memberText).get().items.count, 2)
        XCTAssertEqual(try member(memberText.replacingOccurrences(of: "items 5:3,6:0", with: "items ")).get().items, [])
    }

    /// Capacity 2^64-1 in `settings` killed every member's daemon.
    func testSizesAboveTheBoundAreRefused() {
        for name in ["capacity", "external"] {
            let line = settingsText.split(separator: "\n").first { $0.hasPrefix(name + " ") }!
            assertRefused(settings(settingsText.replacingOccurrences(of: line, with: "\(name) 18446744073709551615")),
                          "\(name) 18446744073709551615 is more than \(DeviceRecordLines.maximumBytes)")
            assertRefused(settings(settingsText.replacingOccurrences(of: line, with: "\(name) 99999999999999999999999")),
                          "is not a number")
            assertRefused(settings(settingsText.replacingOccurrences(of: line, with: "\(name) -1")), "is not a number")
            assertRefused(settings(settingsText.replacingOccurrences(of: line, with: "\(name) +5")), "is not a number")
        }
        XCTAssertEqual(try settings(settingsText.replacingOccurrences(of: "capacity 67108864", with: "capacity \(DeviceRecordLines.maximumBytes)")).get().capacity,
                       DeviceRecordLines.maximumBytes)
        assertRefused(settings(settingsText.replacingOccurrences(of: "low b:1048576", with: "low b:18446744073709551615")), "not a mark")
        assertRefused(settings(settingsText.replacingOccurrences(of: "low b:1048576", with: "low p:nan")), "not a mark")
        assertRefused(settings(settingsText.replacingOccurrences(of: "generation 3", with: "generation 18446744073709551615")),
                      "more than")
        assertRefused(settings(settingsText.replacingOccurrences(of: "policy quota", with: "policy all")), "unknown")
        for line in ["used 10", "size 11", "purgeable 3"] {
            let name = line.split(separator: " ")[0]
            assertRefused(member(memberText.replacingOccurrences(of: line, with: "\(name) 4611686018427387905")), "more than 4611686018427387904")
        }
        assertRefused(member(memberText.replacingOccurrences(of: "items 5:3", with: "items 5:18446744073709551615")), "an item's bytes")
    }

    func testMalformedLinesAndShapesAreRefused() {
        assertRefused(settings("generation 1\n"), "no policy line")
        assertRefused(settings(settingsText + "garbage\n"), "has no value")
        assertRefused(settings(settingsText + "external 5\n"), "a second external")
        assertRefused(settings(String(repeating: "x 1\n", count: 100)), "more than 64 lines")
        assertRefused(settings("x " + String(repeating: "9", count: 40_000) + "\n"), "longer than")
        assertRefused(Result { () throws(DeviceRecordError) in try DeviceSettings(reading: [0xff, 0xfe, 0x0a]) }, "not UTF-8")
        assertRefused(member(memberText.replacingOccurrences(of: "key 2049:12", with: "key ../../x")), "DEVICE:INODE")
        assertRefused(member(memberText.replacingOccurrences(of: "pid 42", with: "pid 0")), "pid 0")
        assertRefused(member(memberText.replacingOccurrences(of: "pid 42", with: "pid 4294967296")), "more than")
        assertRefused(member(memberText.replacingOccurrences(of: "container /srv/a b", with: "container srv")), "absolute path")
        assertRefused(member(memberText.replacingOccurrences(of: "items 5:3,6:0", with: "items 5:3,,6:0")), "STAMP:BYTES")
        let many = (0...DeviceMember.itemLimit).map { "\($0):1" }.joined(separator: ",")
        assertRefused(member(memberText.replacingOccurrences(of: "items 5:3,6:0", with: "items " + many)), "more than 512 items")
    }

    /// Items at the bound, more than 4 of them: the planner's sums
    /// saturate (2^62 × 4 is 2^64) instead of trapping.
    func testThePlannerSumsBoundedItemsWithoutOverflow() {
        let big = DeviceMember.Item(stamp: 1, bytes: DeviceRecordLines.maximumBytes)
        let members = [DevicePlanner.Member(name: "m0", cached: .max, quota: 0, lastUse: 0, items: Array(repeating: big, count: 32))]
        for policy in DevicePolicy.allCases {
            XCTAssertEqual(DevicePlanner.plan(.max, members: members, policy: policy), [.init(member: "m0", bytes: .max, items: 4)])
        }
    }
}
