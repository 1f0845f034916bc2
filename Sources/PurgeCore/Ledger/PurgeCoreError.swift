/// What the ledger refuses to do.
///
/// The ledger mirrors a backing directory that can change behind the
/// adapter's back (another process, a crash, a change made while unmounted),
/// so a request that disagrees with the ledger's picture is an error the
/// adapter can recover from (by resynchronising), not a bug. Counting
/// mistakes inside the adapter's own protocol, such as closing a file more
/// often than it was opened, are bugs and trap.
///
/// Precedence, when several apply, is the order of the checks: the subject
/// entry is looked up first, then the directories named in the request, then
/// their kinds, then the structural rule (not linked there, not empty,
/// cycle). It follows POSIX, where `ENOENT` and `ENOTDIR` win over `EEXIST`
/// and `ENOTEMPTY`. Additions (`addDirectory`, `addFile`) look up the parent
/// before refusing an existing entry.
public enum PurgeCoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The ledger has no entry with this identity.
    case unknownEntry(EntryID)
    /// The identity is already recorded (use `addLink` for another name of a file).
    case entryExists(EntryID)
    /// A directory was required, the entry is a file.
    case notADirectory(EntryID)
    /// A regular file was required, the entry is a directory.
    case notAFile(EntryID)
    /// The entry has no name in that directory.
    case notLinked(EntryID, directory: EntryID)
    /// The directory still holds files or directories.
    case directoryNotEmpty(EntryID)
    /// Moving the directory would put it inside its own subtree.
    case wouldCreateCycle(EntryID)
    /// A second root was added; the existing root is named.
    case rootExists(EntryID)
    /// A recency snapshot could not be decoded.
    case malformedSnapshot
    /// A close with no open counted: the file's entry was made after its
    /// open (which found no entry), as behind the mount or under a purge.
    case notOpen(EntryID)

    public var description: String {
        switch self {
        case .unknownEntry(let id): return "no entry \(id) in the ledger"
        case .entryExists(let id): return "entry \(id) is already in the ledger"
        case .notADirectory(let id): return "entry \(id) is not a directory"
        case .notAFile(let id): return "entry \(id) is not a regular file"
        case .notLinked(let id, let directory): return "entry \(id) has no name in directory \(directory)"
        case .directoryNotEmpty(let id): return "directory \(id) is not empty"
        case .wouldCreateCycle(let id): return "moving directory \(id) would put it inside itself"
        case .rootExists(let id): return "the ledger already has a root, \(id)"
        case .malformedSnapshot: return "the recency snapshot is malformed"
        case .notOpen(let id): return "entry \(id) was closed with no open counted"
        }
    }
}
