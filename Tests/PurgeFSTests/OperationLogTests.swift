import Foundation
import Glibc
import PurgeCore
import PurgeSys
import XCTest

@testable import PurgeFS

/// The reading side of a `record=DIR` directory: the records back as they
/// were written, nil for a log with a line that is not one, the command's
/// output in order, and the tree a log starts from with the identities and
/// kinds the recorder writes.
final class OperationLogTests: XCTestCase {
    var directory = ""

    override func setUpWithError() throws {
        directory = try InProcessContainer.temporaryDirectory("operation-log")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func write(_ text: String, to name: String) throws {
        try text.write(toFile: directory + "/" + name, atomically: false, encoding: .utf8)
    }

    func testTheRecordsComeBackAsWrittenAndTheOutputInOrder() throws {
        let file = EntryID(device: 1, inode: 11)
        let records: [RecordedOperation] = [
            .output(data: 0, length: 3), .write(file, offset: 0, length: 2, data: 3), .synced(file), .output(data: 5, length: 5),
            .output(data: 9, length: 0),
        ]
        try write(records.map { $0.line + "\n" }.joined(), to: RecordedOperation.operationsFileName)
        try write("ok\nABdone\n", to: RecordedOperation.dataFileName)
        XCTAssertEqual(try OperationLog.records(in: directory), records)
        let data = try OperationLog.openData(in: directory)
        defer { data.closeQuietly() }
        XCTAssertEqual(String(decoding: OperationLog.output(records, data: data), as: UTF8.self), "ok\ndone\n")
    }

    func testALogWithALineThatIsNoRecordIsNone() throws {
        try write("S 1:2\nnonsense\n", to: RecordedOperation.operationsFileName)
        XCTAssertNil(try OperationLog.records(in: directory))
        XCTAssertThrowsError(try OperationLog.records(in: directory + "/missing"))
    }

    func testTheTreeHasTheRecordersIdentitiesAndKindsParentsFirstInByteOrder() throws {
        try Paths.makeDirectory(directory + "/b")
        try write("12345", to: "b/file")
        try Paths.makeSymbolicLink(directory + "/a-link", target: Array("b/file".utf8))
        try Paths.makeFIFO(directory + "/c-fifo", mode: 0o600)
        let tree = try OperationLog.tree(of: directory)
        XCTAssertEqual(tree.map(\.path), ["", "a-link", "b", "b/file", "c-fifo"])
        XCTAssertEqual(tree.map(\.kind), [.directory, .symbolicLink, .directory, .file, .other])
        for entry in tree {
            let status = try Paths.linkStatus(entry.path.isEmpty ? directory : directory + "/" + entry.path)
            XCTAssertEqual(entry.id, EntryID(status), entry.path)
            XCTAssertEqual(RecordedOperation.EntryKind(status), entry.kind, entry.path)
        }
        XCTAssertEqual(tree[1].target, Array("b/file".utf8))
        XCTAssertEqual(tree[3].size, 5)
        XCTAssertEqual(tree[3].mode, UInt32(try Paths.linkStatus(directory + "/b/file").st_mode & 0o7777))
    }
}
