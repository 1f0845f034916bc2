import PurgeCore
@testable import PurgeEngines
import PurgeSys
import XCTest
@testable import PurgeCommand

final class AttributeAccessTests: XCTestCase {
    func testDecimal() {
        XCTAssertEqual(AttributeAccess.decimal(Array("42".utf8)), 42)
        XCTAssertEqual(AttributeAccess.decimal(Array("42\n".utf8)), 42)
        XCTAssertEqual(AttributeAccess.decimal(Array("18446744073709551615".utf8)), UInt64.max)
        for bad in ["", "-1", "1.5", "x", "18446744073709551616", " 1"] {
            XCTAssertNil(AttributeAccess.decimal(Array(bad.utf8)), bad)
        }
    }

    func testReadingFailures() {
        let fake = FakeAttributes(["/m": ["size": "12", "files": "abc"]])
        XCTAssertEqual(try fake.access.number(.size, of: "/m"), 12)
        XCTAssertNil(try fake.access.numberIfAnswered(.capacity, of: "/m"))
        XCTAssertNil(try fake.access.numberIfAnswered(.capacity, of: "/missing"))
        XCTAssertThrowsError(try fake.access.number(.capacity, of: "/m")) {
            XCTAssertEqual($0 as? CommandExit,
                           .failure("/m does not answer user.purgefs.capacity (not a purgefs mount, or not one that has it)"))
        }
        XCTAssertThrowsError(try fake.access.number(.files, of: "/m")) {
            XCTAssertEqual($0 as? CommandExit, .failure("user.purgefs.files of /m is not a number: 'abc'"))
        }
        let dead = AttributeAccess(read: { (_, _) throws(Errno) in throw Errno.notConnected }, write: { (_, _, _) throws(Errno) in })
        XCTAssertThrowsError(try dead.number(.size, of: "/m")) {
            XCTAssertEqual($0 as? CommandExit,
                           .failure("/m: the purgefs daemon is not answering (did it die? purgefs unmount the mount)"))
        }
    }

    func testWritingFailures() {
        let fake = FakeAttributes([:])
        XCTAssertNoThrow(try fake.access.set(.capacity, of: "/m", to: "100"))
        XCTAssertEqual(fake.writes.map(\.value), ["100"])
        fake.writeError = .notPermitted
        XCTAssertThrowsError(try fake.access.set(.capacity, of: "/m", to: "1")) {
            XCTAssertEqual($0 as? CommandExit, .failure("only the mount's owner or root may set user.purgefs.capacity on /m"))
        }
        fake.writeError = .invalidArgument
        XCTAssertThrowsError(try fake.access.set(.purge, of: "/m", to: "x")) {
            XCTAssertEqual($0 as? CommandExit, .failure("/m refused user.purgefs.purge=x"))
        }
        XCTAssertThrowsError(try fake.access.set(.pinned, of: "/m/f", to: "1", refusal: "no")) {
            XCTAssertEqual($0 as? CommandExit, .failure("no"))
        }
    }

    func testSpaceFigures() throws {
        let fake = FakeAttributes(["/m": FakeAttributes.root(size: 1000, files: 10, purgeable: 300, capacity: 10_000, external: 2000,
                                                              available: 7000)])
        let figures = try DeviceFigures.read(root: "/m", fake.access)
        XCTAssertEqual(figures.containerUsed, 1000)
        XCTAssertEqual(figures.deviceUsed, 3000)
        XCTAssertEqual(SpaceCommand.json(figures, mountpoint: "/m")["container_used"], .integer(UInt64(1000)))
        XCTAssertEqual(SpaceCommand.json(figures, mountpoint: "/m")["device_used"], .integer(UInt64(3000)))
        XCTAssertNil(SpaceCommand.json(figures, mountpoint: "/m")["used"], "no figure is called just used")
        XCTAssertEqual(SpaceCommand.json(figures, mountpoint: "/m")["available_opportunistic"], .integer(UInt64(3500)))
        let text = SpaceCommand.text(figures, mountpoint: "/m", changed: ["capacity 9.8 KiB"])
        XCTAssertEqual(text, """
            Set capacity 9.8 KiB.
            Space of /m:
              capacity                           9.8 KiB
              external                             2 KiB
              used by the container               1000 B
              used on the device                 2.9 KiB
              available                          6.8 KiB
              available for important usage      7.1 KiB
              available for opportunistic usage  3.4 KiB
              purgeable                            300 B
              purged                                 7 B in 1 file
            """)
    }

    func testPurgeReport() {
        XCTAssertEqual(ManualPurgeCommand.report(freed: 8192, files: 2, purgeableLeft: 0),
                       "Purged 2 files, freeing 8 KiB (8192 bytes). 0 B purgeable left.")
        XCTAssertTrue(ManualPurgeCommand.report(freed: 0, files: 0, purgeableLeft: 4096).hasPrefix("Nothing was purged"))
    }
}
