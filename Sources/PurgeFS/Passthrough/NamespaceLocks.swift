import PurgeCore
import PurgeSys

/// Serializes changes to directory entries between the FUSE handlers and the
/// purger, per directory: a purge checks that a name still holds its victim
/// and unlinks it under the directory's lock, so no rename through the mount
/// can slip another file under that name in between.
///
/// Striped: a directory maps to one of a fixed set of locks. Several locks
/// are always taken in stripe order, so two renames cannot deadlock.
/// One more lock, the tree lock, keeps directories in place: a rename of a
/// directory takes it, and the purger holds it while it checks and removes
/// one victim's name (never across a directory's listing), so no directory
/// can move out of a zone (taking a victim with it) between the check and
/// the unlink.
///
/// Lock order: the tree lock, then stripes, then the clone backend's lock,
/// then `ContainerState`'s lock.
final class NamespaceLocks: Sendable {
    private let stripes: [ThreadLock]
    private let tree = ThreadLock()

    init(stripes count: Int = 64) {
        stripes = (0..<count).map { _ in ThreadLock() }
    }

    /// Runs `body` holding the locks of `directories` (one or two).
    func withLocks<T>(_ directories: EntryID..., body: () throws(Errno) -> T) throws(Errno) -> T {
        var indices = directories.map(stripe)
        indices.sort()
        return try hold(indices[...], body)
    }

    /// Runs `body` holding the tree lock.
    func withTreeLock<T>(_ body: () throws(Errno) -> T) throws(Errno) -> T {
        try tree.withLock { () throws(Errno) -> T in try body() }
    }

    private func hold<T>(_ indices: ArraySlice<Int>, _ body: () throws(Errno) -> T) throws(Errno) -> T {
        guard let first = indices.first else { return try body() }
        let rest = indices.dropFirst().drop { $0 == first }
        return try stripes[first].withLock { () throws(Errno) -> T in try hold(rest, body) }
    }

    private func stripe(_ key: EntryID) -> Int {
        var hasher = Hasher()
        hasher.combine(key)
        return Int(UInt(bitPattern: hasher.finalize()) % UInt(stripes.count))
    }
}
