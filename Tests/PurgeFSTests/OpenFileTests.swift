import CFuse
import Foundation
import Glibc
import PurgeCore
import PurgeSys
import XCTest

@testable import PurgeFS

/// An open file's life in-process: an open whose reply fails (the caller
/// was interrupted) is announced closed, once; an `OpenFile` that cannot
/// pin its inode closes the descriptor it was given.
final class OpenFileTests: XCTestCase {
    func testAnOpenWhoseReplyFailsIsAnnouncedClosedOnce() throws {
        let container = try InProcessContainer()
        defer { container.remove() }
        let id = try container.write("doc", bytes: 100)
        try container.reconcile("")  // the ledger learns of it, as the mount's walk would
        let fs = container.filesystem
        let entry = try "doc".withCString { name in try fs.lookup(parent: .root, name: name) }
        func openCount() -> Int? { container.state.read { ledger, _ in (try? ledger.file(id)).map { Int($0.openCount) } } }

        let kept = try fs.open(NodeID(entry.ino), flags: O_RDONLY)
        let interrupted = try fs.open(NodeID(entry.ino), flags: O_RDONLY)
        XCTAssertEqual(openCount(), 2)
        var info = fuse_file_info()
        withUnsafeMutablePointer(to: &info) { info in
            fs.describe(interrupted, opened: O_RDONLY, in: info)
            fs.handOver(interrupted, in: info) { -ENOENT }  // what fuse_reply_open returns for an interrupted caller
        }
        XCTAssertEqual(openCount(), 1, "the open the kernel never got is closed")
        fs.release(interrupted)  // any later path that gives it up
        XCTAssertEqual(openCount(), 1, "announced closed once")

        var replied = fuse_file_info()
        withUnsafeMutablePointer(to: &replied) { info in
            fs.describe(kept, opened: O_RDONLY, in: info)
            fs.handOver(kept, in: info) { 0 }
        }
        XCTAssertEqual(openCount(), 1, "a reply that went through keeps it open until release")
        fs.release(kept)
        withUnsafeMutablePointer(to: &replied) { OpenFile.detach(from: $0) }
        XCTAssertEqual(openCount(), 0)
    }

    func testAnOpenFileThatCannotPinItsInodeClosesTheDescriptorItWasGiven() throws {
        let directory = try InProcessContainer.temporaryDirectory("pin")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let root = try FileDescriptor.open(path: directory, flags: O_RDONLY | O_DIRECTORY)
        defer { root.closeQuietly() }
        let gone = try FileDescriptor.open(path: directory + "/gone", flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
        let key = EntryID(try gone.status())
        gone.closeQuietly()
        let inode = Inode(
            id: NodeID(2), descriptor: try FileDescriptor.open(path: directory + "/gone", flags: OpenFlags.path),
            key: key, backing: key, fileType: S_IFREG, pool: DescriptorPool(filesystem: root, openFilesLimit: 1024))
        XCTAssertTrue(inode.evict(), "its descriptor closed, its handle kept")
        XCTAssertEqual(unlink(directory + "/gone"), 0)  // the handle cannot be reopened now

        let given = try FileDescriptor.open(path: directory + "/other", flags: O_RDONLY | O_CREAT, mode: 0o644)
        XCTAssertThrowsError(try OpenFile(descriptor: given, inode: inode, flags: O_RDONLY))
        XCTAssertEqual(fcntl(given.rawValue, F_GETFD), -1, "the descriptor is closed, not leaked")
        XCTAssertEqual(errno, EBADF)
    }
}
