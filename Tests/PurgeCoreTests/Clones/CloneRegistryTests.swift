@testable import PurgeCore
import XCTest

/// Reflink clone groups: membership, content ids, and the stored form (a
/// snapshot followed by appended changes).
final class CloneRegistryTests: XCTestCase {
    let a = EntryID(device: 1, inode: 10), b = EntryID(device: 1, inode: 11)
    let c = EntryID(device: 1, inode: 12), d = EntryID(device: 1, inode: 13)

    func testContentIDsFollowModificationAndTheFileRoundTrips() throws {
        var registry = CloneRegistry()
        XCTAssertEqual(registry.contentID(of: a), 10)
        registry.addClone(source: a, sourceHandle: (1, [0xAB, 0x01]), destination: b, destinationHandle: (1, [0xCD]))
        registry.addClone(source: b, sourceHandle: (1, [0xCD]), destination: c, destinationHandle: (1, []))
        XCTAssertEqual(registry.contentID(of: a), registry.contentID(of: b))
        XCTAssertEqual(registry.contentID(of: b), registry.contentID(of: c))
        XCTAssertGreaterThanOrEqual(registry.contentID(of: a), 1 << 63)
        XCTAssertEqual(registry.group(of: c), [a, b, c])
        XCTAssertTrue(registry.modified(b))
        XCTAssertFalse(registry.modified(b), "a member whose content is its own keeps its id")
        XCTAssertNotEqual(registry.contentID(of: a), registry.contentID(of: b))
        XCTAssertEqual(registry.contentID(of: a), registry.contentID(of: c))

        let decoded = try XCTUnwrap(CloneRegistry(decoding: registry.encoded))
        XCTAssertEqual(decoded, registry)
        XCTAssertNil(CloneRegistry(decoding: Array("member 1 2 x\n".utf8)))

        XCTAssertEqual(Set(registry.remove(a)), [b, c])
        XCTAssertEqual(registry.remove(b), [], "the last member leaves a dissolved group")
        XCTAssertFalse(registry.contains(c))
        XCTAssertEqual(registry.contentID(of: c), 12)
    }

    func testSnapshotAndChangesReadBackAsTheRegistry() throws {
        var registry = CloneRegistry()
        registry.addClone(source: a, sourceHandle: (1, [1]), destination: b, destinationHandle: (1, [2]))
        let snapshot = registry.encoded
        _ = registry.takeChanges()
        registry.addClone(source: a, sourceHandle: (1, [1]), destination: c, destinationHandle: (1, [3]))
        registry.modified(c)
        var journal = registry.takeChanges()
        registry.remove(b)
        registry.addClone(source: c, sourceHandle: (1, [3]), destination: d, destinationHandle: (2, []))
        journal += registry.takeChanges()
        XCTAssertEqual(CloneRegistry(decoding: snapshot + journal), registry)
        XCTAssertEqual(CloneRegistry(decoding: snapshot + journal + Array("member 1 9".utf8)), registry,
                       "a last line cut short is left out")
        XCTAssertNil(CloneRegistry(decoding: snapshot + Array("member 1 9\n".utf8) + journal))
        var decoded = try XCTUnwrap(CloneRegistry(decoding: snapshot + journal))
        XCTAssertEqual(decoded.takeChanges(), [], "reading records no changes")
    }
}
