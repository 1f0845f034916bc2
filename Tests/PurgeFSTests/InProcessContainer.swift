import Foundation
import Glibc
import PurgeCore
import PurgeSys
import XCTest

@testable import PurgeFS

/// A container served in-process and never mounted: an empty backing
/// directory, a state directory beside it (as for an overlay mount), the
/// ledger as the mount's walk leaves an empty container, no clones, and the
/// `ContainerFileSystem` over them (`MountAssembly`) with the observers given (and a cloud
/// tier, if asked). What the handlers and the reconciler announce can be
/// driven and read without a kernel; the test changes the backing directory
/// by path, as a process behind the mount would. `remove()` deletes both
/// directories.
final class InProcessContainer {
    let path: String
    let statePath: String
    let root: FileDescriptor
    let rootID: EntryID
    let state: ContainerState
    let mount: MountAssembly
    var filesystem: ContainerFileSystem { mount.filesystem }

    /// A cloud tier for the container: its remote directory, its zones and
    /// the manifest it starts from (as a tier finds it at mount).
    struct Cloud {
        var remote: String
        var zones: [String]
        var manifest: CloudManifest
    }

    init(observers: [any FileSystemObserver] = [], cloud: Cloud? = nil) throws {
        path = try Self.temporaryDirectory("container")
        statePath = try Self.temporaryDirectory("state")
        root = try FileDescriptor.open(path: path, flags: O_RDONLY | O_DIRECTORY)
        let stateDirectory = StateDirectory(descriptor: try FileDescriptor.open(path: statePath, flags: O_RDONLY | O_DIRECTORY))
        rootID = EntryID(try root.status())
        var ledger = Ledger()
        try ledger.addDirectory(rootID, parent: nil)
        state = ContainerState(
            ledger: ledger, names: DirectoryNames(root: rootID), model: CapacityModel(), counters: PurgeCounters(),
            flags: StoredFlags(), zones: ZoneSet(paths: []), backing: root, stateDirectory: stateDirectory)
        var tier: CloudTier?
        if let cloud {
            try stateDirectory.replace(CloudManifest.fileName, with: cloud.manifest.encoded)
            tier = CloudTier(store: CloudDirectory(path: cloud.remote), zones: cloud.zones, root: root, stateDirectory: stateDirectory)
        }
        let log = PurgeLog(file: try stateDirectory.openForAppending(PurgeLog.fileName))
        mount = try MountAssembly(
            root: root, hidden: nil, state: state, clones: NoClones(state: state), stateDirectory: stateDirectory,
            log: log, recency: RecencyStore(directory: stateDirectory), cloud: tier, observers: observers) {}
        tier?.attach(to: mount, log: log)
    }

    func remove() {
        for made in [path, statePath] { try? FileManager.default.removeItem(atPath: made) }
    }

    static func temporaryDirectory(_ role: String) throws -> String {
        var template = Array("\(NSTemporaryDirectory())/purgefs-in-process-\(role).XXXXXX".utf8CString)
        return try XCTUnwrap(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) })
    }

    // MARK: Behind the mount

    /// Writes a file of `bytes` bytes at `relative`, and returns its identity.
    @discardableResult
    func write(_ relative: String, bytes: Int) throws -> EntryID {
        let file = try FileDescriptor.open(path: "\(path)/\(relative)", flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
        defer { file.closeQuietly() }
        let written = [UInt8](repeating: 7, count: bytes).withUnsafeBytes { Glibc.write(file.rawValue, $0.baseAddress, $0.count) }
        XCTAssertEqual(written, bytes, relative)
        return EntryID(try file.status())
    }

    @discardableResult
    func makeDirectory(_ relative: String) throws -> EntryID {
        XCTAssertEqual(mkdir("\(path)/\(relative)", 0o755), 0)
        return try identity(relative)
    }

    func identity(_ relative: String) throws -> EntryID {
        var status = stat()
        XCTAssertEqual(lstat("\(path)/\(relative)", &status), 0, relative)
        return EntryID(status)
    }

    /// What reconciling directory `relative` ("" for the root) found, every
    /// entry compared, as the tracker asks after a deletion or a rename.
    @discardableResult
    func reconcile(_ relative: String) throws -> [String] {
        let directory = relative.isEmpty ? try root.duplicate()
            : try FileDescriptor.open(path: "\(path)/\(relative)", flags: O_RDONLY | O_DIRECTORY)
        defer { directory.closeQuietly() }
        let id = EntryID(try directory.status())
        return BehindMountReconciler(mount).reconcile(id, at: directory, names: [], listing: true).repairs
    }

    // MARK: The ledger

    var rootTotals: Totals { state.read { ledger, _ in ledger.rootTotals } }

    func contains(_ id: EntryID) -> Bool { state.read { ledger, _ in ledger.contains(id) } }

    func recordedPath(of directory: EntryID) -> String? { state.read { _, names in names.path(of: directory) } }
}
