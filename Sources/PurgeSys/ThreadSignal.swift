import Glibc

/// A place to wait until a condition kept elsewhere (under another lock)
/// holds, woken by whoever may have made it hold. No wake-up is lost: the
/// waiter checks the condition holding this lock, and a waker takes it
/// before it signals. Wraps `pthread_cond_wait(3)` / `pthread_cond_broadcast(3)`.
public final class ThreadSignal: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Returns once `holds` (which may take locks of its own, never this
    /// one's waiters') returns true.
    public func wait(until holds: () -> Bool) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !holds() { pthread_cond_wait(condition, mutex) }
    }

    /// Wakes every waiter to check its condition again.
    public func wake() {
        pthread_mutex_lock(mutex)
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }
}
