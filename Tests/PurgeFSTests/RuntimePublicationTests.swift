import Foundation
import PurgeCore
import PurgeSys
import XCTest

@testable import PurgeFS

/// `RuntimePublication.withdraw` removes only its own daemon's record: after
/// an unmount the kernel may give the mount's ID (and so the record's name)
/// to a new mount before the old daemon withdraws.
final class RuntimePublicationTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("purgefs-runtime-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    private func writeRecord(processID: Int32, named name: String) throws {
        let record = RuntimeRecord(processID: processID, stateDescriptor: 7, container: "/c")
        try Data(record.encoded).write(to: directory.appendingPathComponent(name))
    }

    private func exists(_ name: String) -> Bool {
        FileManager.default.fileExists(atPath: directory.appendingPathComponent(name).path)
    }

    func testWithdrawRemovesItsOwnRecord() throws {
        try writeRecord(processID: CurrentProcess.id.rawValue, named: "mount-41")
        RuntimePublication(directory: directory.path, fileName: "mount-41").withdraw()
        XCTAssertFalse(exists("mount-41"))
    }

    func testWithdrawLeavesANewMountsRecordUnderTheSameName() throws {
        try writeRecord(processID: CurrentProcess.id.rawValue + 1, named: "mount-42")
        RuntimePublication(directory: directory.path, fileName: "mount-42").withdraw()
        XCTAssertTrue(exists("mount-42"), "another daemon's record was removed")
        let kept = try XCTUnwrap(RuntimeRecord(decoding: Array(Data(contentsOf: directory.appendingPathComponent("mount-42")))))
        XCTAssertEqual(kept.processID, CurrentProcess.id.rawValue + 1)
    }

    func testWithdrawOfAMissingRecordIsQuiet() {
        RuntimePublication(directory: directory.path, fileName: "mount-43").withdraw()
        XCTAssertFalse(exists("mount-43"))
    }

    func testWithdrawRemovesAnUnreadableRecord() throws {
        try Data("not a record".utf8).write(to: directory.appendingPathComponent("mount-44"))
        RuntimePublication(directory: directory.path, fileName: "mount-44").withdraw()
        XCTAssertFalse(exists("mount-44"))
    }
}
