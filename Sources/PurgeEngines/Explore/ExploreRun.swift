import Glibc
import PurgeCore
import PurgeSys

/// The one run `purgefs explore` records: the copy mounted with `record=`,
/// the command started in its own process group with `PURGEFS_MOUNT` set,
/// stdin on /dev/null, stdout into the FIFO the daemon drains before each
/// operation it logs, stderr into `stderrPath` (the report keeps its end).
/// What is left in the FIFO when the command has ended came after the last
/// operation. After `timeout` seconds the command's group gets SIGTERM, and
/// SIGKILL if it is still there after the grace period; so does it on
/// SIGINT or SIGTERM to explore.
struct ExploreRun {
    let workspace: ExploreWorkspace
    let command: [String]
    let options: [String]
    var timeout: UInt64?
    var stderrPath: String { workspace.work + "/command.stderr" }

    struct Outcome {
        var status: WaitStatus?
        var interruptedBy: Int32?
        /// Stopped at `timeout`.
        var timedOut = false
        /// The last lines of its stderr.
        var stderrTail = ""
        /// Printed after the last operation (or while the FIFO was nearly
        /// full, which explore then empties itself).
        var trailingOutput: [UInt8] = []
    }

    /// The FIFO's capacity asked for (the default limit for anyone).
    static let pipeCapacity: Int32 = 1 << 20

    func run() throws(CommandExit) -> Outcome {
        let fifo = workspace.record + "/" + RecordedOperation.outputFileName
        do throws(Errno) { try Paths.makeFIFO(fifo, mode: 0o600) } catch {
            throw .failure("explore: cannot make \(fifo): \(error)")
        }
        let reader: FileDescriptor
        do throws(Errno) {
            // Read and write: opening does not wait for a writer, and the pipe lives while we hold it.
            reader = try FileDescriptor.open(path: fifo, flags: O_RDWR | O_NONBLOCK | O_CLOEXEC)
        } catch {
            throw .failure("explore: cannot open \(fifo): \(error)")
        }
        defer { reader.closeQuietly() }
        let capacity = max(4096, reader.setPipeCapacity(Self.pipeCapacity))
        try workspace.mount(options: options)
        let writer: FileDescriptor
        do throws(Errno) {
            writer = try FileDescriptor.open(path: fifo, flags: O_WRONLY | O_CLOEXEC)
        } catch {
            throw .failure("explore: cannot open \(fifo): \(error)")
        }
        var outcome = Outcome()
        let environment = CurrentProcess.environment.filter {
            !$0.hasPrefix("PURGEFS_MOUNT=") && !$0.hasPrefix(ReadySignal.environmentName + "=") && !$0.hasPrefix("PURGEFS_CRASH_")
        } + ["PURGEFS_MOUNT=" + workspace.runCopy]
        let pid: ProcessID
        do throws(Errno) {
            let errors = try FileDescriptor.open(path: stderrPath, flags: O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o600)
            defer { errors.closeQuietly() }
            pid = try ChildProcess.spawn(command[0], arguments: command, environment: environment,
                                         fileActions: [.open("/dev/null", as: .standardInput, flags: OpenFlags.readOnly),
                                                       .duplicate(writer, to: .standardOutput), .duplicate(errors, to: .standardError)],
                                         searchPath: !command[0].contains("/"), ownProcessGroup: true)
        } catch {
            // The one line: nothing ran, so there is nothing more to say.
            writer.closeQuietly()
            throw .failure("explore: cannot start \(command[0]): \(error)")
        }
        writer.closeQuietly()
        let started = WallClock.seconds()
        var signalledAt: Double?
        while true {
            if let status = try? ChildProcess.poll(pid) {
                outcome.status = status
                break
            }
            if outcome.interruptedBy == nil, let signal = TerminationRequests.pending {
                outcome.interruptedBy = signal
                if signalledAt == nil {
                    try? ProcessGroup.signal(pid, signal)
                    signalledAt = WallClock.seconds()
                }
            }
            if signalledAt == nil, let timeout, WallClock.seconds() - started >= Double(timeout) {
                outcome.timedOut = true
                try? ProcessGroup.signal(pid, SIGTERM)
                signalledAt = WallClock.seconds()
            }
            if let signalledAt, WallClock.seconds() - signalledAt > Double(RunJob.graceMilliseconds) / 1000 {
                try? ProcessGroup.signal(pid, SIGKILL)
            }
            // A command that prints a pipe's worth between two operations would block: empty it here.
            if reader.bytesWaiting >= capacity - 65536 {
                outcome.trailingOutput += Self.drain(reader)
            }
            CurrentProcess.sleep(milliseconds: RunJob.tickMilliseconds)
        }
        try? ProcessGroup.signal(pid, SIGKILL)
        outcome.trailingOutput += Self.drain(reader)
        outcome.stderrTail = ExploreReport.tail(of: stderrPath)
        return outcome
    }

    /// What waits in the FIFO now.
    static func drain(_ reader: FileDescriptor) -> [UInt8] {
        var result: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
        defer { buffer.deallocate() }
        while let count = try? reader.read(into: buffer), count > 0 {
            result += buffer[..<count]
        }
        return result
    }
}
