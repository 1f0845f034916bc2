@testable import PurgeCore
import XCTest

/// The cloud tier's durable state and its policy, in-process: the stored
/// form of the manifest, which remote version is newer, the zones, and the
/// retry backoff of failed uploads.
final class CloudManifestTests: XCTestCase {
    private func signature(_ inode: UInt64, _ size: UInt64, _ modified: UInt64) -> CloudSignature {
        CloudSignature(inode: inode, size: size, modified: modified)
    }

    func testTheManifestRoundTripsWithEscapedPaths() throws {
        var manifest = CloudManifest()
        manifest.records["Documents/a b"] = CloudRecord(
            signature: signature(12, 300, 1_700_000_000_123_456_789), evicted: false,
            remoteVersion: signature(0, 300, 1_700_000_001_000_000_000))
        manifest.records["Documents/100%\tdone\nreally"] = CloudRecord(signature: signature(13, 0, 5), evicted: true)
        manifest.intents = [.remove("Documents/gone"), .rename("Documents/x\ty", "Documents/%z")]
        let decoded = try XCTUnwrap(CloudManifest(decoding: manifest.encoded))
        XCTAssertEqual(decoded, manifest)
        // One line per record and per intent: escaped paths never split a line.
        XCTAssertEqual(manifest.encoded.filter { $0 == UInt8(ascii: "\n") }.count, 4)
    }

    /// Found by the parser fuzzing (ParserFuzzTests.testCloudManifest, "D a\r"): read by
    /// Character, a name that ends in a carriage return made "\r\n" one Character, so its line
    /// swallowed the next record; one that starts with a combining mark fused with the space
    /// before it, and the whole manifest was refused (every upload forgotten).
    func testNamesEndingInACarriageReturnOrStartingWithACombiningMarkKeepEveryRecord() throws {
        var manifest = CloudManifest()
        manifest.records["Documents/report\r"] = CloudRecord(signature: signature(12, 300, 7), evicted: true)
        manifest.records["Documents/\u{301}accent"] = CloudRecord(signature: signature(13, 10, 8), evicted: false)
        manifest.records["Documents/z"] = CloudRecord(signature: signature(14, 20, 9), evicted: true)
        manifest.intents = [.remove("Documents/old\r"), .rename("\u{301}p\r\n", "Documents/\u{301}q\r")]
        XCTAssertEqual(CloudManifest(decoding: manifest.encoded), manifest)
        XCTAssertEqual(manifest.encoded.filter { $0 == UInt8(ascii: "\n") }.count, 5, "one line each")
        XCTAssertEqual(CloudManifest(decoding: Array("D a\r".utf8))?.intents, [.remove("a\r")])
    }

    func testTheStoredLinesAreTheDocumentedForm() throws {
        let text = "F 12 300 7 1 300 9 Documents/a%09b\nD Documents/old\nR Documents/p\tDocuments/q\n"
        let manifest = try XCTUnwrap(CloudManifest(decoding: Array(text.utf8)))
        var record = CloudRecord(signature: signature(12, 300, 7), evicted: true)
        record.remoteSize = 300
        record.remoteModified = 9
        XCTAssertEqual(manifest.records, ["Documents/a\tb": record])
        XCTAssertEqual(manifest.intents, [.remove("Documents/old"), .rename("Documents/p", "Documents/q")])
        XCTAssertEqual(String(decoding: manifest.encoded, as: UTF8.self), text)
    }

    func testMalformedLinesDecodeToNil() {
        for text in ["F 1 2 3\n", "X what\n", "R only-one-path\n", "F a 2 3 0 0 0 p\n",
                     // A size above the largest taken: no sum of the manifest's sizes can overflow.
                     "F 1 18446744073709551615 3 0 0 0 p\n", "F 1 2 3 0 4611686018427387905 0 p\n"] {
            XCTAssertNil(CloudManifest(decoding: Array(text.utf8)), text)
        }
        XCTAssertEqual(CloudManifest(decoding: []), CloudManifest())
    }

    func testARemoteCopyIsNewerOnlyWhenItsVersionIsKnownAndDiffers() {
        var record = CloudRecord(signature: signature(1, 10, 100), evicted: false)
        XCTAssertFalse(record.isNewer(signature(0, 99, 999)), "nothing known of the remote copy")
        record.setRemote(signature(0, 10, 200))
        XCTAssertFalse(record.isNewer(signature(7, 10, 200)), "the same version (the inode is not the remote's)")
        XCTAssertTrue(record.isNewer(signature(0, 11, 200)))
        XCTAssertTrue(record.isNewer(signature(0, 10, 201)))
    }

    func testARecordIsHeldByAnyCopyUnderItsNameOnceTheRemotesVersionIsKnown() {
        var record = CloudRecord(signature: signature(1, 10, 100), evicted: false)
        XCTAssertFalse(record.isHeld(by: nil), "no copy under the name")
        XCTAssertTrue(record.isHeld(by: signature(0, 10, 5)), "the remote's version unknown: the local size")
        XCTAssertFalse(record.isHeld(by: signature(0, 11, 5)))
        record.setRemote(signature(0, 10, 200))
        XCTAssertFalse(record.isHeld(by: nil))
        XCTAssertTrue(record.isHeld(by: signature(0, 10, 200)), "the recorded version")
        XCTAssertTrue(record.isHeld(by: signature(0, 10, 150)), "the recorded size, the store's time its own")
        XCTAssertTrue(record.isHeld(by: signature(0, 25, 200)), "another version (WebDAV: the same second)")
    }

    func testZonesHoldWhatIsBelowThemOnly() {
        let zones = ["Documents", "Library/Mobile Documents"]
        XCTAssertTrue(CloudZones.contains(zones, "Documents/a"))
        XCTAssertTrue(CloudZones.contains(zones, "Library/Mobile Documents/x/y"))
        XCTAssertFalse(CloudZones.contains(zones, "Documents"), "the zone itself")
        XCTAssertFalse(CloudZones.contains(zones, "Documents2/a"))
        XCTAssertFalse(CloudZones.contains(zones, "Library/a"))
    }

    func testTheBackoffDoublesUpToItsLongest() {
        let second: UInt64 = 1_000_000_000
        let backoff = CloudBackoff(base: second, longest: 30 * second)
        XCTAssertEqual((1...6).map { backoff.delay(afterFailures: $0) / second }, [2, 4, 8, 16, 30, 30])
        XCTAssertEqual(backoff.delay(afterFailures: 1_000), 30 * second, "no overflow however long it fails")
        let patient = CloudBackoff(base: second, longest: UInt64.max)
        XCTAssertEqual(patient.delay(afterFailures: 64), second << 10, "at most ten doublings")
    }
}
