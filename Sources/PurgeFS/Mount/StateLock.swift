import Glibc
import PurgeCore
import PurgeSys

/// The daemon's hold on its state directory: one daemon per state
/// directory, and so per container.
///
/// An exclusive `flock` on `daemon.lock` in the state directory, taken in
/// the process that serves (the daemon itself, not the command that
/// launches it) before anything in the state directory is read or written
/// and before anything is mounted, and never released: the descriptor is
/// close-on-exec and never closed, so the kernel drops the lock exactly
/// when the daemon ends, `kill -9` included. The file then says who holds
/// it (`StateLockHolder`), so a second mount is refused with one line
/// naming the first. The state directory is hidden through the mount, and
/// so is the lock.
struct StateLock {
    let descriptor: FileDescriptor

    /// How long a mount waits for a holder that has locked but not yet
    /// written its name (a daemon starting).
    static let unnamedHolderPatienceMilliseconds = 500
    /// How long it waits for a holder that was killed and has not ended yet:
    /// its lock goes with its last thread, which may still be finishing a
    /// call in the kernel (a long copy, say).
    static let exitingHolderPatienceMilliseconds = 10_000
    /// How long it waits for a live holder whose mount is not in the table:
    /// a daemon just unmounted, saving its state before it ends.
    static let leavingHolderPatienceMilliseconds = 10_000

    /// Takes the lock in `state` (whose path is `statePath`) for `request`,
    /// or throws the line naming who holds it.
    static func take(in state: FileDescriptor, statePath: String, request: MountRequest) throws(MountError) -> StateLock {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(StateLockHolder.fileName, in: state, flags: O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o600)
        } catch {
            throw MountError("cannot lock state directory \(statePath): \(error)")
        }
        var waited = 0
        while true {
            let taken: Bool
            do {
                taken = try file.lockExclusivelyWithoutWaiting()
            } catch {
                file.closeQuietly()
                throw MountError("cannot lock state directory \(statePath): \(error)")
            }
            if taken { break }
            let holder = (try? file.readAll(from: 0)).flatMap(StateLockHolder.init(decoding:))
            if let holder, ProcessID(rawValue: holder.processID).isRunning {
                // A holder whose mount is gone is ending (just unmounted) or
                // starting: it lets go, or mounts, in a moment.
                let mounted = Self.isMounted(holder)
                guard !mounted, waited < leavingHolderPatienceMilliseconds else {
                    file.closeQuietly()
                    throw MountError(mounted
                        ? holder.refusal(container: request.container, stateDirectory: statePath)
                        : "state directory \(statePath) is held by pid \(holder.processID), the daemon of \(holder.container), "
                            + "which has no mount at \(holder.mountpoint) and did not let go within "
                            + "\(leavingHolderPatienceMilliseconds / 1000) s; try again once it has ended")
                }
                CurrentProcess.sleep(milliseconds: 20)
                waited += 20
                continue
            }
            let patience = holder == nil ? unnamedHolderPatienceMilliseconds : exitingHolderPatienceMilliseconds
            guard waited < patience else {
                file.closeQuietly()
                throw MountError(holder.map {
                    "state directory \(statePath) is still held by pid \($0.processID), the daemon of \($0.container) "
                        + "at \($0.mountpoint), which has exited but not ended (a thread of it still in the kernel); "
                        + "try again once it is gone"
                } ?? "state directory \(statePath) is in use by another purgefs daemon that is starting")
            }
            CurrentProcess.sleep(milliseconds: 20)
            waited += 20
        }
        let holder = StateLockHolder(processID: CurrentProcess.id.rawValue, container: request.container, mountpoint: request.mountpoint)
        do {
            try file.truncate(to: 0)
            _ = try holder.encoded.withUnsafeBytes { buffer in
                Result { () throws(Errno) -> Int in try file.write(buffer, at: 0) }
            }.get()
        } catch {
            // The lock is what counts; the name only helps the next refusal.
            Diagnostics.note("cannot write who holds \(statePath)/\(StateLockHolder.fileName): \(error)")
        }
        return StateLock(descriptor: file)
    }
}

extension StateLock {
    /// Whether a purgefs mount is at the holder's mountpoint.
    private static func isMounted(_ holder: StateLockHolder) -> Bool {
        guard let table = try? MountTable.current() else { return true }  // unknown: refuse, as before
        return table.topmost(at: holder.mountpoint)?.isPurgefs ?? false
    }
}

private extension FileDescriptor {
    /// The file's bytes from `offset` (a lock file: a few hundred bytes).
    func readAll(from offset: Int64) throws(Errno) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = try buffer.withUnsafeMutableBytes { raw in
            Result { () throws(Errno) -> Int in try read(into: raw, at: offset) }
        }.get()
        return Array(buffer[..<count])
    }
}
