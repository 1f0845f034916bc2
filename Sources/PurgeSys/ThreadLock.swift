import Glibc

/// A plain mutual-exclusion lock for critical sections whose results are
/// not `Sendable` (C structs, descriptors) and so cannot leave
/// `Synchronization.Mutex.withLock`. Wraps `pthread_mutex_t`.
public final class ThreadLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` holding the lock.
    @inline(__always)
    public func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Runs `body` holding the lock if it is free now; nil (`body` not run)
    /// when another holds it, this thread included: it never waits.
    public func withLockIfFree<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
