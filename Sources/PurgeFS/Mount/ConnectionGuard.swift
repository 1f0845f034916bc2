import Glibc
import PurgeCore
import PurgeSys

/// A small process that outlives the daemon to abort its FUSE connection
/// when the daemon dies without unmounting (`kill -9`, a crash).
///
/// The kernel aborts a connection only when the last descriptor on
/// `/dev/fuse` closes, and a process's descriptors close only when its last
/// thread exits. A daemon thread waiting in the kernel (a notice waiting for
/// a directory lock that a request to the now dead daemon holds) never
/// exits, so without the guard the daemon would stay a zombie and every
/// process touching the mount would hang until someone aborted it by hand.
///
/// The guard holds no descriptor on the connection or the container, and
/// works from `/proc` and `/sys` only: it polls the daemon; once it has
/// exited but some of its threads are still stuck (a zombie with threads),
/// and its mount is still listed, it writes to the connection's `abort`
/// (the mount then answers `ENOTCONN`, like any FUSE mount whose daemon
/// died, until it is unmounted). A daemon that exits whole needs nothing:
/// the kernel aborts its connection as its descriptors close.
public enum ConnectionGuard {
    /// The hidden first argument that runs the guard (`purgefs VERB PID MOUNT-ID CONNECTION MOUNTPOINT`).
    public static let verb = "__connection-guard"
    static let pollMilliseconds = 200

    /// Starts the guard for the mount with `mountID` and `connection`, served by this process.
    /// The daemon stops it (`stop`) once its session is over, before it exits: a
    /// daemon that exits is a zombie with threads for a moment, and by then
    /// the mount's ID and connection number may serve another mount.
    static func start(_ mount: MountTable.Entry, connection: Int) -> ProcessID? {
        let arguments = ["purgefs-guard", verb, CurrentProcess.id.description, String(mount.id), String(connection), mount.mountPoint]
        do throws(Errno) {
            // The guard outlives the command that mounted: it must hold none of
            // the caller's descriptors (mount(8)'s output pipe, a terminal), or a
            // caller reading that output to its end waits as long as the mount lives.
            return try ChildProcess.spawn("/proc/self/exe", arguments: arguments, environment: CurrentProcess.environment,
                                          fileActions: [.open("/dev/null", as: .standardInput, flags: O_RDONLY),
                                                        .open("/dev/null", as: .standardOutput, flags: O_WRONLY),
                                                        .open("/dev/null", as: .standardError, flags: O_WRONLY)],
                                          ownProcessGroup: true)
        } catch {
            Diagnostics.note("cannot start the connection guard (a daemon killed mid-request may then hang the mount): \(error)")
            return nil
        }
    }

    static func stop(_ guardProcess: ProcessID) {
        ChildProcess.terminate(guardProcess)
    }

    /// The guard's life; returns its exit status.
    public static func run(_ arguments: [String]) -> Int32 {
        guard arguments.count == 4, let number = pid_t(arguments[0]), let mountID = Int(arguments[1]),
              let connection = Int(arguments[2]), case let pid = ProcessID(rawValue: number),
              let started = pid.status?.startTime
        else { return 64 }
        let mountpoint = arguments[3]
        // Nothing of the daemon's is held here: no descriptor, no working directory in the container.
        CurrentProcess.closeDescriptors(from: 3)
        try? CurrentProcess.changeDirectory("/")
        // A terminal's hangup or Ctrl-C is for the daemon; the guard goes when it does.
        CurrentProcess.ignore([SIGHUP, SIGINT])
        while isAlive(pid, started: started) {
            CurrentProcess.sleep(milliseconds: pollMilliseconds)
        }
        // Gone for good: its descriptors are closed, and the kernel aborted
        // the connection itself (its number may already serve another mount).
        // A zombie with threads left holds the connection, so the number is
        // still its own.
        guard isStuckZombie(pid, started: started),
              let table = try? MountTable.current(),
              // Mount IDs and connection numbers are reused: all three must still be its mount's.
              table.entries.contains(where: { $0.id == mountID && $0.deviceMinor == connection && $0.mountPoint == mountpoint })
        else { return 0 }
        do throws(Errno) {
            try FuseConnection(number: connection).abort()
        } catch {
            return 1
        }
        return 0
    }

    /// The mount just made at `mountpoint` (the topmost FUSE mount there), from the mount table.
    static func mount(at mountpoint: String) -> MountTable.Entry? {
        (try? MountTable.current())?.fuseMount(at: mountpoint)
    }

    /// Alive: listed, not exited, and the same process (its start time).
    private static func isAlive(_ pid: ProcessID, started: UInt64) -> Bool {
        pid.isRunning && pid.status?.startTime == started
    }

    /// Exited (a zombie) while some of its threads live on, stuck in the kernel.
    private static func isStuckZombie(_ pid: ProcessID, started: UInt64) -> Bool {
        guard let status = pid.status, status.state == UInt8(ascii: "Z"), status.startTime == started else { return false }
        return pid.threadCount > 1
    }
}
