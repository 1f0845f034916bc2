import PurgeCore
import XCTest

final class CloneChargesTests: XCTestCase {
    func testSharedDataIsChargedOnceToTheFirstMember() {
        let original = [FileExtent(physical: 0, length: 1000)]
        let clone = [FileExtent(physical: 0, length: 1000)]
        let charges = CloneCharges(members: [original, clone]).charges
        XCTAssertEqual(charges.map(\.charged), [1000, 0])
        XCTAssertEqual(charges.map(\.savings), [0, 1000])
        XCTAssertEqual(charges.map(\.shared), [1000, 1000])
    }

    func testAChangedBlockIsChargedToItsOwner() {
        let original = [FileExtent(physical: 0, length: 1000)]
        let clone = [FileExtent(physical: 0, length: 100), FileExtent(physical: 5000, length: 100),
                     FileExtent(physical: 200, length: 800)]
        let result = CloneCharges(members: [original, clone])
        XCTAssertEqual(result.charges.map(\.charged), [1000, 100])
        XCTAssertEqual(result.charges.map(\.shared), [900, 900])
        XCTAssertEqual(result.charged, 1100)
    }

    func testDataSharedOnlyByLaterMembersIsChargedOnce() {
        // The original rewrote its first block; the old one is held by two clones.
        let original = [FileExtent(physical: 9000, length: 100), FileExtent(physical: 100, length: 900)]
        let clone = [FileExtent(physical: 0, length: 1000)]
        let other = [FileExtent(physical: 0, length: 1000)]
        let result = CloneCharges(members: [original, clone, other])
        XCTAssertEqual(result.charges.map(\.charged), [1000, 100, 0])
        XCTAssertEqual(result.charged, 1100)
        XCTAssertEqual(result.charges.map(\.savings).reduce(0, +), 3000 - 1100)
    }

    func testUnmappedBytesAreTheFilesOwn() {
        let charges = CloneCharges(members: [[FileExtent(physical: 0, length: 10, isUnmapped: true)],
                                             [FileExtent(physical: 0, length: 10, isUnmapped: true)]]).charges
        XCTAssertEqual(charges.map(\.charged), [10, 10])
        XCTAssertEqual(charges.map(\.shared), [0, 0])
    }
}

final class CloneRegistryTests: XCTestCase {
    let a = EntryID(device: 1, inode: 10), b = EntryID(device: 1, inode: 11), c = EntryID(device: 1, inode: 12)

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
}
