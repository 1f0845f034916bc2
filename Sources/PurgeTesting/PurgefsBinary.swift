import Foundation
import PurgeSys

/// The `purgefs` executable the library drives: every `SimulatedDevice`
/// call is one of its commands or one of the attributes of its mount, so
/// the library never does what the binary does a second way.
public struct PurgefsBinary: Equatable, Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    /// `PURGEFS_BIN` when set, else `purgefs` found on `PATH`.
    public static func locate() throws(PurgeTestingError) -> PurgefsBinary {
        let environment = ProcessInfo.processInfo.environment
        if let explicit = environment["PURGEFS_BIN"], !explicit.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: explicit) else {
                throw PurgeTestingError("PURGEFS_BIN=\(explicit) is not an executable file")
            }
            return PurgefsBinary(path: explicit)
        }
        for directory in (environment["PATH"] ?? "").split(separator: ":") where !directory.isEmpty {
            let candidate = String(directory) + "/purgefs"
            if FileManager.default.isExecutableFile(atPath: candidate) { return PurgefsBinary(path: candidate) }
        }
        throw PurgeTestingError("purgefs not found: set PURGEFS_BIN to the binary, or put purgefs on PATH")
    }

    /// Runs `purgefs ARGUMENTS` as a child process (stdin on /dev/null,
    /// stdout and stderr together into a file, never a pipe: the daemon that
    /// `mount` starts keeps them until it detaches) and returns what it
    /// printed; a non-zero exit throws its last line.
    @discardableResult
    func run(_ arguments: [String]) throws(PurgeTestingError) -> String {
        let outputPath = FileManager.default.temporaryDirectory.path + "/purgefs-testing-\(UUID().uuidString).out"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let status: WaitStatus
        do throws(Errno) {
            let output = try FileDescriptor.open(path: outputPath, flags: O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600)
            defer { output.closeQuietly() }
            let pid = try ChildProcess.spawn(
                path, arguments: ["purgefs"] + arguments, environment: ProcessInfo.processInfo.environment.map { "\($0)=\($1)" },
                fileActions: [.open("/dev/null", as: .standardInput, flags: O_RDONLY),
                              .duplicate(output, to: .standardOutput), .duplicate(output, to: .standardError)])
            status = try ChildProcess.wait(pid)
        } catch {
            throw PurgeTestingError("cannot run \(path) \(arguments.first ?? ""): \(error)")
        }
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard status.exitCode == 0 else {
            let last = text.split(whereSeparator: \.isNewline).last.map(String.init) ?? "purgefs \(status)"
            throw PurgeTestingError("purgefs \(arguments.joined(separator: " ")): \(last)")
        }
        return text
    }
}
