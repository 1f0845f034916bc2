import PurgeCore
import PurgeSys
import Synchronization

/// One lock per key (a clone group, a backing file's data), made when first
/// asked for and dropped when nobody holds or waits for it: work on one
/// group or file never waits for another's. Several keys are always taken
/// in key order, so two callers cannot deadlock.
final class KeyedLocks<Key: Hashable & Comparable & Sendable>: Sendable {
    private let table = Mutex<[Key: Holder]>([:])

    private struct Holder {
        let lock: ThreadLock
        /// Callers holding or waiting for it.
        var holders: Int
    }

    /// Runs `body` holding the locks of `keys`.
    func withLocks<T>(_ keys: [Key], _ body: () throws(Errno) -> T) throws(Errno) -> T {
        let sorted = Array(Set(keys)).sorted()
        let locks = sorted.map(enter)
        defer { for key in sorted { leave(key) } }
        return try hold(locks[...], body)
    }

    func withLock<T>(_ key: Key, _ body: () throws(Errno) -> T) throws(Errno) -> T {
        try withLocks([key], body)
    }

    /// Runs `body` holding the lock of `key` if it is free now; nil when it
    /// is held (by this thread too): taken out of order without waiting.
    func withLockIfFree<T>(_ key: Key, _ body: () throws(Errno) -> T) throws(Errno) -> T? {
        let lock = enter(key)
        defer { leave(key) }
        return try lock.withLockIfFree(body)
    }

    /// Keys held or waited for now (for tests and diagnostics).
    var count: Int { table.withLock { $0.count } }

    private func enter(_ key: Key) -> ThreadLock {
        table.withLock { table in
            if var holder = table[key] {
                holder.holders += 1
                table[key] = holder
                return holder.lock
            }
            let lock = ThreadLock()
            table[key] = Holder(lock: lock, holders: 1)
            return lock
        }
    }

    private func leave(_ key: Key) {
        table.withLock { table in
            guard var holder = table[key] else { return }
            holder.holders -= 1
            table[key] = holder.holders == 0 ? nil : holder
        }
    }

    private func hold<T>(_ locks: ArraySlice<ThreadLock>, _ body: () throws(Errno) -> T) throws(Errno) -> T {
        guard let first = locks.first else { return try body() }
        return try first.withLock { () throws(Errno) -> T in try hold(locks.dropFirst(), body) }
    }
}
