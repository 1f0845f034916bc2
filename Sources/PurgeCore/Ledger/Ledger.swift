/// The accounting tree of a container: every directory and regular file,
/// with recursive totals per directory answered in O(1), and the purge order.
///
/// The adapter tells the ledger about every change it makes through the
/// passthrough (and about what it finds when it walks the container at
/// mount); the ledger propagates each change up the ancestor chain, O(depth).
/// A file with several hard links counts once in every directory whose
/// subtree holds at least one of its names, as `du` counts it.
///
/// An unlinked file leaves the totals at once, as it leaves `du`'s; if it is
/// still open its record stays (size updates and `close` still work, and its
/// bytes are in `unlinkedOpenAllocated`) until the last close.
///
/// Purging: a file is a *candidate* when every one of its names lies inside a
/// purgeable zone, neither it nor any directory above any of its names is
/// pinned, and it is not open. Candidates (or, inside a group directory, the
/// group as a whole) are kept in a `RecencyIndex`, in step with every change,
/// so `PurgePlanner` never scans.
///
/// A value type meant to be owned by one lock in the adapter (for example a
/// `Mutex<Ledger>`) and mutated in place; copying it copies a large table.
public struct Ledger: Sendable {
    var files: [FileRecord] = []
    var directories: [DirectoryRecord] = []
    var freeFiles: [UInt32] = []
    var freeDirectories: [UInt32] = []
    var identities = IdentityTable()
    var rootSlot = noSlot

    /// Names of a file beyond its first, as directory slots (a directory can
    /// appear twice: two names of one file in one directory).
    var extraLinks: [UInt32: [UInt32]] = [:]
    var openCounts: [UInt32: UInt32] = [:]
    var cloneSavings: [UInt32: UInt64] = [:]

    var index = RecencyIndex()
    /// Files whose stamp changed since `takeRecencyChanges`, each once.
    var recencyChanges: [UInt32] = []
    /// Where stamps for `markUsed` come from.
    public var clock: RecencyClock
    var generation: UInt64 = 0
    /// Allocated bytes of files with no name left but still open.
    public internal(set) var unlinkedOpenAllocated: UInt64 = 0
    /// Files with at least one name (not counting unlinked open files).
    public internal(set) var linkedFileCount = 0

    public init(clock: RecencyClock = RecencyClock()) {
        self.clock = clock
    }

    /// Makes room for `files` file records and `directories` directories
    /// before a mount-time walk, so the tables do not regrow along the way.
    public mutating func reserveCapacity(files: Int, directories: Int) {
        self.files.reserveCapacity(files)
        self.directories.reserveCapacity(directories)
        identities.reserveCapacity(files + directories, records)
    }

    // MARK: Looking entries up

    /// The root directory, once added.
    public var root: EntryID? { rootSlot == noSlot ? nil : directories[Int(rootSlot)].id }

    /// Totals of the whole container (zero before the root is added).
    public var rootTotals: Totals { rootSlot == noSlot ? .zero : directories[Int(rootSlot)].totals }

    /// Physical bytes the container holds: what the simulated device counts
    /// as its usage U (the root's allocated plus unlinked files still open).
    public var usage: UInt64 { rootTotals.allocated + unlinkedOpenAllocated }

    public enum Kind: Equatable, Sendable { case file, directory }

    public func kind(of id: EntryID) -> Kind? {
        ref(of: id).map { $0.isDirectory ? .directory : .file }
    }

    public func contains(_ id: EntryID) -> Bool { ref(of: id) != nil }

    /// The slot of `id`, if the ledger holds it.
    @inline(__always)
    func ref(of id: EntryID) -> NodeRef? { identities.find(id, in: records) }

    /// The record arrays, for the identity table to read identities from.
    var records: IdentityTable.Records { IdentityTable.Records(files: files, directories: directories) }

    func fileSlot(_ id: EntryID) throws(PurgeCoreError) -> UInt32 {
        guard let ref = ref(of: id) else { throw .unknownEntry(id) }
        guard !ref.isDirectory else { throw .notAFile(id) }
        return ref.slot
    }

    func directorySlot(_ id: EntryID) throws(PurgeCoreError) -> UInt32 {
        guard let ref = ref(of: id) else { throw .unknownEntry(id) }
        guard ref.isDirectory else { throw .notADirectory(id) }
        return ref.slot
    }
}

/// A ledger slot with its kind, as stored in the identity dictionary: one
/// 4-byte value for files and directories alike.
struct NodeRef: Hashable, Sendable {
    let raw: UInt32
    private static let directoryBit: UInt32 = 1 << 31

    static func file(_ slot: UInt32) -> NodeRef { NodeRef(raw: slot) }
    static func directory(_ slot: UInt32) -> NodeRef { NodeRef(raw: slot | directoryBit) }

    var isDirectory: Bool { raw & NodeRef.directoryBit != 0 }
    var slot: UInt32 { raw & ~NodeRef.directoryBit }
}
