import Foundation
import Glibc

/// What a finished (or stopped) command left behind.
struct CommandResult: CustomStringConvertible {
    var arguments: [String]
    /// Exit status, or 128 + signal when it was killed.
    var status: Int32
    var stdout: String
    var stderr: String
    /// True when the deadline passed and the command was killed.
    var timedOut: Bool

    var stderrLines: [String] {
        stderr.split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init)
            .filter { !$0.isEmpty }
    }

    var description: String {
        "`\(arguments.joined(separator: " "))` exited \(status)\(timedOut ? " (killed at the deadline)" : "")"
            + "\n--- stdout ---\n\(stdout)--- stderr ---\n\(stderr)"
    }
}

struct SubprocessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs programs as subprocesses with their output in files (never pipes: a
/// daemonizing child may keep a pipe open long after its parent returned).
enum Subprocess {
    /// Resolves a program name against PATH and the sbin directories.
    static func which(_ name: String) -> String? {
        if name.contains("/") { return access(name, X_OK) == 0 ? name : nil }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let dirs = path.split(separator: ":").map(String.init) + ["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        for dir in dirs where access(dir + "/" + name, X_OK) == 0 {
            return dir + "/" + name
        }
        return nil
    }

    /// A running process whose output goes to `stdoutPath` / `stderrPath`.
    static func spawn(_ arguments: [String], cwd: String? = nil, stdoutPath: String, stderrPath: String,
                      environment: [String: String]? = nil) throws -> Process {
        guard let executable = which(arguments[0]) else {
            throw SubprocessError("cannot find executable \(arguments[0])")
        }
        // open(2), not FileManager.createFile: that writes a new file and
        // renames it over the path, which (as root) replaced /dev/null with
        // a regular file when a test sent output there.
        let outDescriptor = open(stdoutPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        let errDescriptor = open(stderrPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard outDescriptor >= 0, errDescriptor >= 0 else {
            if outDescriptor >= 0 { close(outDescriptor) }
            if errDescriptor >= 0 { close(errDescriptor) }
            throw SubprocessError("cannot open output files \(stdoutPath), \(stderrPath)")
        }
        let out = FileHandle(fileDescriptor: outDescriptor, closeOnDealloc: true)
        let err = FileHandle(fileDescriptor: errDescriptor, closeOnDealloc: true)
        defer {
            try? out.close()
            try? err.close()
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = Array(arguments.dropFirst())
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        var env = environment ?? ProcessInfo.processInfo.environment
        env["LC_ALL"] = "C"
        process.environment = env
        if let cwd { process.currentDirectoryURL = URL(fileURLWithPath: cwd) }
        try process.run()
        return process
    }

    /// Waits until `process` exits; false when the deadline passed first.
    @discardableResult
    static func wait(_ process: Process, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > deadline { return false }
            usleep(5_000)
        }
        return true
    }

    /// Runs a command to completion, killing it at the deadline.
    static func run(_ arguments: [String], cwd: String? = nil, timeout: TimeInterval = 30,
                    environment: [String: String]? = nil) throws -> CommandResult {
        let scratch = NSTemporaryDirectory() + "/purgefs-cmd-\(getpid())-\(UUID().uuidString)"
        let outPath = scratch + ".out", errPath = scratch + ".err"
        defer {
            unlink(outPath)
            unlink(errPath)
        }
        let process = try spawn(arguments, cwd: cwd, stdoutPath: outPath, stderrPath: errPath, environment: environment)
        var timedOut = false
        if !wait(process, timeout: timeout) {
            timedOut = true
            kill(process.processIdentifier, SIGKILL)
            wait(process, timeout: 10)
        }
        let status: Int32
        if process.isRunning {
            // Still there after SIGKILL: stuck in the kernel (a hung mount). Foundation traps on its status then.
            status = -1
        } else {
            switch process.terminationReason {
            case .exit: status = process.terminationStatus
            case .uncaughtSignal: status = 128 + process.terminationStatus
            @unknown default: status = process.terminationStatus
            }
        }
        return CommandResult(
            arguments: arguments,
            status: status,
            stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "",
            timedOut: timedOut)
    }
}
