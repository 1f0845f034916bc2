import Glibc
import PurgeSys
import XCTest

/// `CStringArray`: the strings as C sees them, NULL-terminated, at a
/// pointer that holds still while the array lives.
final class CStringArrayTests: XCTestCase {
    func testTheStringsAreCopiedInOrderAndEndInNull() {
        let array = CStringArray(["purgefs", "-o", "fsname=a b,subtype=purgefs", ""])
        XCTAssertEqual(array.count, 4)
        let pointer = array.pointer
        XCTAssertEqual((0..<4).map { String(cString: pointer[$0]!) }, ["purgefs", "-o", "fsname=a b,subtype=purgefs", ""])
        XCTAssertNil(pointer[4])
        // The same storage through the scoped form.
        array.withPointer { XCTAssertEqual(UnsafeMutablePointer(mutating: $0), pointer) }
    }

    func testAnEmptyArrayIsOneNull() {
        let array = CStringArray([])
        XCTAssertEqual(array.count, 0)
        XCTAssertNil(array.pointer[0])
    }
}

/// `CNames`: a kernel name kept with its NUL, as bytes, and its prefix.
final class CNamesTests: XCTestCase {
    func testCopyKeepsTheNulAndBytesDropIt() {
        "a b".withCString { name in
            XCTAssertEqual(CNames.copy(name), [97, 32, 98, 0])
            XCTAssertEqual(CNames.bytes(name), [97, 32, 98])
        }
        "".withCString { name in
            XCTAssertEqual(CNames.copy(name), [0])
            XCTAssertEqual(CNames.bytes(name), [])
        }
    }

    func testHasPrefixComparesOnlyThePrefix() {
        ".purgefs-clone.x1".withCString { XCTAssertTrue(CNames.hasPrefix($0, ".purgefs-clone.")) }
        ".purgefs-clone".withCString { XCTAssertFalse(CNames.hasPrefix($0, ".purgefs-clone.")) }
        "other".withCString { XCTAssertFalse(CNames.hasPrefix($0, ".purgefs-clone.")) }
        "anything".withCString { XCTAssertTrue(CNames.hasPrefix($0, "")) }
    }
}
