/// The recursive figures of a directory, or the contribution of one file to
/// each directory above it.
///
/// All fields are counts that only ever have exact contributions added and
/// removed, so checked arithmetic is right: an underflow means the ledger
/// lost track of a contribution, a bug worth trapping on.
public struct Totals: Equatable, Hashable, Sendable {
    /// Logical bytes: the sum of regular files' sizes.
    public var size: UInt64
    /// Number of regular files.
    public var files: UInt64
    /// Bytes stored on disk; with clones, each file is charged only the data
    /// it does not share with a file charged before it.
    public var allocated: UInt64
    /// Bytes a purge could free: the allocated bytes of purge candidates.
    public var purgeable: UInt64
    /// Number of files a purge would still act on (candidates, minus
    /// tombstoned files already truncated to nothing).
    public var purgeableFiles: UInt64
    /// Bytes not stored thanks to clones (0 until clones exist).
    public var cloneSavings: UInt64

    public init(size: UInt64 = 0, files: UInt64 = 0, allocated: UInt64 = 0,
                purgeable: UInt64 = 0, purgeableFiles: UInt64 = 0, cloneSavings: UInt64 = 0) {
        self.size = size
        self.files = files
        self.allocated = allocated
        self.purgeable = purgeable
        self.purgeableFiles = purgeableFiles
        self.cloneSavings = cloneSavings
    }

    public static let zero = Totals()

    /// Takes `old` out and puts `new` in, in one pass over the fields, so a
    /// change of one file costs one walk up the tree.
    mutating func replace(_ old: Totals, with new: Totals) {
        size = size - old.size + new.size
        files = files - old.files + new.files
        allocated = allocated - old.allocated + new.allocated
        purgeable = purgeable - old.purgeable + new.purgeable
        purgeableFiles = purgeableFiles - old.purgeableFiles + new.purgeableFiles
        cloneSavings = cloneSavings - old.cloneSavings + new.cloneSavings
    }

    static func + (lhs: Totals, rhs: Totals) -> Totals {
        var sum = lhs
        sum.replace(.zero, with: rhs)
        return sum
    }
}
