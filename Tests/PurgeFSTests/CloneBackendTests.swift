import Foundation
import Glibc
import PurgeCore
import PurgeSys
import XCTest

@testable import PurgeFS

/// The clone backend in-process: which one a mount's probe chooses, and the
/// answers every path asks of it (identities, listed inode numbers, shared
/// data, attributes) without mounting.
final class CloneBackendTests: XCTestCase {
    private var made: [String] = []

    override func tearDown() {
        for path in made.reversed() { try? FileManager.default.removeItem(atPath: path) }
        made = []
    }

    /// A fresh directory under `base`, opened.
    private func directory(under base: String) throws -> (String, FileDescriptor) {
        var template = Array("\(base)/purgefs-clone-backend.XXXXXX".utf8CString)
        let path = try XCTUnwrap(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) })
        made.append(path)
        let descriptor = open(path, O_RDONLY | O_DIRECTORY)
        XCTAssertGreaterThanOrEqual(descriptor, 0)
        return (path, FileDescriptor(rawValue: descriptor))
    }

    private func state(root: FileDescriptor, stateDirectory: FileDescriptor) throws -> ContainerState {
        var rootStatus = stat()
        XCTAssertEqual(fstat(root.rawValue, &rootStatus), 0)
        return ContainerState(
            ledger: Ledger(), names: DirectoryNames(root: EntryID(rootStatus)), model: CapacityModel(),
            counters: PurgeCounters(), flags: StoredFlags(), zones: ZoneSet(paths: []), backing: root,
            stateDirectory: StateDirectory(descriptor: stateDirectory))
    }

    private func choose(
        root: FileDescriptor, stateDirectory: FileDescriptor, reflinks: Bool, registry: LinkedCloneRegistry = LinkedCloneRegistry()
    ) throws -> any CloneBackend {
        let directory = StateDirectory(descriptor: stateDirectory)
        let store = RegistryStore<LinkedCloneRegistry>(directory: directory, named: LinkedCloneRegistry.fileName)
        return CloneBackends.choose(
            state: try state(root: root, stateDirectory: stateDirectory), directory: directory, root: root,
            reflinks: reflinks, linked: (store, registry), blockMaps: try BlockMaps(directory: directory))
    }

    private func file(_ id: EntryID) -> stat {
        var status = stat()
        status.st_mode = S_IFREG | 0o644
        status.st_dev = dev_t(id.device)
        status.st_ino = ino_t(id.inode)
        status.st_nlink = 2
        return status
    }

    func testTheProbeChoosesReflinksThenLinkedClonesBesideTheContainerThenNone() throws {
        let (_, root) = try directory(under: NSTemporaryDirectory())
        let (_, beside) = try directory(under: NSTemporaryDirectory())
        XCTAssertEqual(try choose(root: root, stateDirectory: beside, reflinks: true).kind, .reflink)
        let linked = try choose(root: root, stateDirectory: beside, reflinks: false)
        XCTAssertEqual(linked.kind, .linked)
        XCTAssertTrue(linked.makesClones)
        // /dev/shm is another filesystem: anchors there cannot be linked into the container.
        guard access("/dev/shm", W_OK) == 0 else { throw XCTSkip("no writable /dev/shm") }
        let (_, elsewhere) = try directory(under: "/dev/shm")
        let none = try choose(root: root, stateDirectory: elsewhere, reflinks: false)
        XCTAssertEqual(none.kind, .none)
        XCTAssertFalse(none.makesClones)
    }

    func testLinkedClonesOfAnEarlierMountKeepTheirIdentitiesWhereNoneAreMade() throws {
        let (_, root) = try directory(under: NSTemporaryDirectory())
        guard access("/dev/shm", W_OK) == 0 else { throw XCTSkip("no writable /dev/shm") }
        let (_, elsewhere) = try directory(under: "/dev/shm")
        let parent = EntryID(device: 9, inode: 2), backing = EntryID(device: 9, inode: 100)
        let anchor = EntryID(device: 9, inode: 500)
        var registry = LinkedCloneRegistry()
        registry.add(anchor: anchor, named: .init(parent: parent, name: Array("copy".utf8)), backing: backing, handle: (1, [1]))
        let clones = try choose(root: root, stateDirectory: elsewhere, reflinks: false, registry: registry)
        XCTAssertEqual(clones.kind, .linked)
        XCTAssertFalse(clones.makesClones)
        // The clone's name stands for its anchor, the original's for the backing file.
        XCTAssertEqual("copy".withCString { clones.identity(of: file(backing), parent: parent, name: $0) }, anchor)
        XCTAssertEqual("original".withCString { clones.identity(of: file(backing), parent: parent, name: $0) }, backing)
        XCTAssertEqual("copy".withCString { clones.identity(ofListed: backing, parent: parent, name: $0) }, anchor)
        // A directory's name is never a clone.
        var directory = file(backing)
        directory.st_mode = S_IFDIR | 0o755
        XCTAssertEqual("copy".withCString { clones.identity(of: directory, parent: parent, name: $0) }, backing)
        // Listings show the clone by its shared data's number; the data is shared.
        XCTAssertEqual(clones.listedInode(of: anchor), backing.inode)
        XCTAssertTrue(clones.sharesBacking(backing))
        XCTAssertTrue(clones.charges(anchor))
        XCTAssertFalse(clones.charges(backing))
        // A whole break asks for its own room; one that makes the clone sparse asks with the write: its blocks, and one more.
        XCTAssertEqual(clones.bytesCopiedOnWrite(of: anchor, length: 1 << 20), SparseMembers.makesSparse ? (1 << 20) + (64 << 10) : 0)
    }

    func testWithoutClonesEveryNameIsItsBackingFile() throws {
        let (_, root) = try directory(under: NSTemporaryDirectory())
        let (_, stateDirectory) = try directory(under: NSTemporaryDirectory())
        let clones = NoClones(state: try state(root: root, stateDirectory: stateDirectory))
        let parent = EntryID(device: 9, inode: 2), backing = EntryID(device: 9, inode: 100)
        XCTAssertEqual("a".withCString { clones.identity(of: file(backing), parent: parent, name: $0) }, backing)
        XCTAssertEqual("a".withCString { clones.identity(ofListed: backing, parent: parent, name: $0) }, backing)
        XCTAssertEqual(clones.listedInode(of: backing), backing.inode)
        XCTAssertFalse(clones.sharesBacking(backing))
        XCTAssertEqual(clones.contentID(of: backing), backing.inode)
        XCTAssertEqual(clones.sharedBytes(of: backing), 0)
        XCTAssertNil(try clones.attributeHolder(of: backing))
        let shown = clones.present(file(backing), as: backing)
        XCTAssertEqual(shown.st_nlink, 2)
        XCTAssertEqual(shown.st_ino, ino_t(backing.inode))
    }
}
