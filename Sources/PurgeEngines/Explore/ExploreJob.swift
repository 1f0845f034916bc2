import Glibc
import PurgeCore
import PurgeSys

/// One run of a command explore gives a crash state: the checker (`--check`,
/// from explore's working directory, stdout discarded) or the `--golden`
/// command (in the state's directory, stdout to a file: the view). Through
/// `sh -c`, in its own process group, stdin on /dev/null, stderr to a
/// file, with `PURGEFS_CRASH_STATE`, `PURGEFS_CRASH_POINT` and
/// `PURGEFS_CRASH_OUTPUT`.
enum ExploreJob {
    /// The environment of every run: explore's, without its own variables.
    static var environment: [String] {
        CurrentProcess.environment.filter { !$0.hasPrefix("PURGEFS_CRASH_") && !$0.hasPrefix("PURGEFS_MOUNT=") }
    }

    /// Starts `command` on the state in `state` at `point`; `view`: the
    /// file its stdout goes to, and run in `state` (nil: a checker).
    static func start(_ command: String, state: String, point: Int, output: String, view: String?, stderr: String,
                      environment: [String]) throws(Errno) -> ProcessID {
        let errors = try FileDescriptor.open(path: stderr, flags: O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o600)
        defer { errors.closeQuietly() }
        var actions: [ChildProcess.FileAction] = [.open("/dev/null", as: .standardInput, flags: OpenFlags.readOnly)]
        if let view {
            actions += [.open(view, as: .standardOutput, flags: O_WRONLY | O_CREAT | O_TRUNC), .changeDirectory(state)]
        } else {
            actions.append(.open("/dev/null", as: .standardOutput, flags: OpenFlags.writeOnly))
        }
        actions.append(.duplicate(errors, to: .standardError))
        return try ChildProcess.spawn(
            "/bin/sh", arguments: ["sh", "-c", command],
            environment: environment + ["PURGEFS_CRASH_STATE=" + state, "PURGEFS_CRASH_POINT=\(point)", "PURGEFS_CRASH_OUTPUT=" + output],
            fileActions: actions, ownProcessGroup: true)
    }

    /// Writes the first `length` bytes of `output` (what the command had
    /// printed by a state's point) to `path`: `PURGEFS_CRASH_OUTPUT`.
    static func writeOutput(_ output: [UInt8], length: UInt64, to path: String) throws(Errno) {
        let file = try FileDescriptor.open(path: path, flags: O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o644)
        defer { file.closeQuietly() }
        var failure: Errno?
        output[..<Int(min(length, UInt64(output.count)))].withUnsafeBytes { bytes in
            do throws(Errno) { try file.writeAll(bytes) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    enum Ending {
        case exited(WaitStatus)
        case timedOut
        /// A SIGINT or SIGTERM came for explore.
        case interrupted(Int32)
    }

    /// Waits for `pid`, killing its group after `timeout` seconds or on a
    /// termination request; its group is killed when it ends, whatever it
    /// left running.
    static func wait(_ pid: ProcessID, timeout: UInt64?) -> Ending {
        let started = WallClock.seconds()
        while true {
            if let status = try? ChildProcess.poll(pid) {
                try? ProcessGroup.signal(pid, SIGKILL)
                return .exited(status)
            }
            let signal = TerminationRequests.pending
            let late = timeout.map { WallClock.seconds() - started >= Double($0) } ?? false
            if signal != nil || late {
                try? ProcessGroup.signal(pid, SIGKILL)
                _ = try? ChildProcess.wait(pid)
                return signal.map { .interrupted($0) } ?? .timedOut
            }
            CurrentProcess.sleep(milliseconds: 2)
        }
    }

    /// The view a `--golden` run printed into `path`, with how it exited.
    static func view(at path: String, status: WaitStatus) -> CrashView {
        var view = CrashView(status: ExploreSession.status(status))
        guard let file = try? FileDescriptor.open(path: path, flags: O_RDONLY | O_CLOEXEC) else { return view }
        defer { file.closeQuietly() }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while let count = try? file.read(into: buffer, at: offset), count > 0 {
            view.fold(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            offset += Int64(count)
        }
        return view
    }
}
