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
