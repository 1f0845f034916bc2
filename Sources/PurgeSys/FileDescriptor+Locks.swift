import CLinux
import Glibc

extension FileDescriptor {
    /// Takes an exclusive lock on the open file without waiting: true when
    /// taken, false when another open file description holds it. The lock
    /// belongs to this open file description and goes with its last
    /// descriptor: the kernel releases it when the process ends, however it
    /// ends (`kill -9` included). Wraps `flock(2)` with `LOCK_EX | LOCK_NB`.
    public func lockExclusivelyWithoutWaiting() throws(Errno) -> Bool {
        while true {
            if clinux_flock_exclusive_nonblocking(rawValue) == 0 { return true }
            let error = Errno.current
            if error == .interrupted { continue }
            if error == .tryAgain { return false }
            throw error
        }
    }
}
