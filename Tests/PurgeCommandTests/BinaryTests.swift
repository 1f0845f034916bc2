import PurgeSys
import XCTest
@testable import PurgeCommand

/// Runs the built `purgefs` as a subprocess: exit statuses and the
/// one-line stderr rule, as a user sees them. Mounting itself is left to
/// the integration tests.
final class BinaryTests: XCTestCase {
    private struct Outcome { var status: Int32?; var stdout: String; var stderr: String }

    /// The `purgefs` built next to this test bundle.
    private func binary() throws -> String {
        let bundle = try Paths.canonical("/proc/self/exe")
        let path = String(bundle[..<(bundle.lastIndex(of: "/") ?? bundle.endIndex)]) + "/purgefs"
        guard Paths.exists(path) else { throw XCTSkip("purgefs is not built at \(path)") }
        return path
    }

    private func run(_ arguments: [String]) throws -> Outcome {
        let out = try FileDescriptor.pipe(), err = try FileDescriptor.pipe()
        let pid = try ChildProcess.spawn(try binary(), arguments: ["purgefs"] + arguments, environment: ["PATH=/usr/bin:/bin"],
                                         fileActions: [.duplicate(out.write, to: .standardOutput), .duplicate(err.write, to: .standardError)])
        out.write.closeQuietly()
        err.write.closeQuietly()
        defer { out.read.closeQuietly(); err.read.closeQuietly() }
        // Small outputs: a pipe buffer holds them, so reading one after the other cannot block.
        let stdout = String(decoding: try out.read.readAll(), as: UTF8.self)
        let stderr = String(decoding: try err.read.readAll(), as: UTF8.self)
        return Outcome(status: try ChildProcess.wait(pid).exitCode, stdout: stdout, stderr: stderr)
    }

    private func assertOneLineError(_ arguments: [String], status: Int32, _ line: String, at: UInt = #line) throws {
        let outcome = try run(arguments)
        XCTAssertEqual(outcome.status, status, "\(arguments)", line: at)
        XCTAssertEqual(outcome.stderr, "purgefs: \(line)\n", "\(arguments)", line: at)
        XCTAssertEqual(outcome.stdout, "", line: at)
    }

    func testVersionAndHelp() throws {
        let version = try run(["--version"])
        XCTAssertEqual(version.status, 0)
        // "purgefs VERSION (commit HASH)": HASH is a commit of this
        // repository (the build's HEAD), or "unknown" for a build without git.
        let prefix = "purgefs \(Purgefs.version) (commit "
        XCTAssertTrue(version.stdout.hasPrefix(prefix) && version.stdout.hasSuffix(")\n"), version.stdout)
        let stamp = String(version.stdout.dropFirst(prefix.count).dropLast(2))
        XCTAssertTrue(stamp == "unknown" || stamp.count == 12 && stamp.allSatisfy(\.isHexDigit), stamp)
        if stamp != "unknown", Paths.exists("/usr/bin/git") {
            let root = "/" + #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
            let out = try FileDescriptor.pipe()
            let pid = try ChildProcess.spawn("/usr/bin/git", arguments: ["git", "-C", root, "cat-file", "-t", stamp],
                                             environment: ["PATH=/usr/bin:/bin"], fileActions: [.duplicate(out.write, to: .standardOutput)])
            out.write.closeQuietly()
            defer { out.read.closeQuietly() }
            XCTAssertEqual(String(decoding: try out.read.readAll(), as: UTF8.self), "commit\n", "\(stamp) is a commit of \(root)")
            _ = try ChildProcess.wait(pid)
        }
        for arguments in [["--help"], ["help", "mount"], ["mount", "-h"], ["unmount", "--help"]] {
            let help = try run(arguments)
            XCTAssertEqual(help.status, 0, "\(arguments)")
            XCTAssertTrue(help.stdout.contains("Usage:"), "\(arguments)")
            XCTAssertEqual(help.stderr, "")
        }
    }

    func testUsageErrorsExit64() throws {
        try assertOneLineError([], status: 64, "a command is missing (see purgefs --help)")
        try assertOneLineError(["evict"], status: 64, "evict: PATH is missing (see purgefs evict --help)")
        try assertOneLineError(["clone", "/x"], status: 64, "clone: give SOURCE and DEST (see purgefs clone --help)")
        try assertOneLineError(["mount", "/tmp", "-o", "capacity=-1G"], status: 64, "capacity=-1G: must not be negative")
        try assertOneLineError(["mount", "/tmp", "-o", "optimize_storage=yes"], status: 64,
                               "mount option 'optimize_storage' takes no value (got optimize_storage=yes)")
    }

    func testFailuresExit1() throws {
        try assertOneLineError(["mount", "/nonexistent/purgefs-test"], status: 1,
                               "container /nonexistent/purgefs-test: No such file or directory")
        try assertOneLineError(["unmount", "/proc"], status: 1, "/proc is a proc mount, not a purgefs mount")
    }
}
