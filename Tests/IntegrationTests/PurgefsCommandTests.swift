import Foundation
import Glibc
import PurgeCore
import PurgeSys
import XCTest

/// What the tests of the commands that act on a mount (`space`, `purge`,
/// `pin`, `unpin`, `log`, `usage`) share: a container with documents,
/// caches in every default zone and other data, mounted on a simulated
/// device, and ways to run the binary and read the root's attributes.
class PurgefsCommandTestCase: MountedTestCase {
    override var mountOptions: [String] { ["capacity=64M"] }

    var bin: String { fixture.binary }
    var mnt: String { fixture.mountpoint }

    /// The files put in the container before mounting, with their sizes.
    static let files: [(path: String, size: Int)] = [
        ("Documents/report.txt", 20_000),
        ("caches/a.bin", 8192),
        ("caches/b.bin", 8192),
        ("caches/c.bin", 8192),
        ("Library/Caches/x.bin", 4096),
        ("tmp/t.bin", 1000),
        ("other/o.txt", 500),
    ]
    static let purgeablePaths = ["caches/a.bin", "caches/b.bin", "caches/c.bin", "Library/Caches/x.bin", "tmp/t.bin"]

    override func prepareContainer() throws {
        for (path, size) in Self.files {
            let full = fixture.container + "/" + path
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            XCTAssertTrue(FileManager.default.createFile(atPath: full, contents: Data(repeating: 0x61, count: size)))
        }
    }

    /// Runs `purgefs ARGUMENTS`.
    @discardableResult
    func purgefs(_ arguments: String..., file: StaticString = #filePath, line: UInt = #line) throws -> CommandResult {
        let result = try Subprocess.run([bin] + arguments, timeout: 30)
        XCTAssertFalse(result.timedOut, "\(result)", file: file, line: line)
        return result
    }

    /// Runs `purgefs ARGUMENTS` and expects exit 0 with nothing on stderr.
    @discardableResult
    func succeed(_ arguments: String..., file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let result = try Subprocess.run([bin] + arguments, timeout: 30)
        XCTAssertEqual(result.status, 0, "\(result)", file: file, line: line)
        XCTAssertEqual(result.stderr, "", "\(result)", file: file, line: line)
        return result.stdout
    }

    /// Runs `purgefs ARGUMENTS` and expects `status` with exactly one
    /// `purgefs: ` line on stderr naming one of `tokens`, and nothing on stdout.
    func assertRejected(_ arguments: [String], status: Int32, mentioning tokens: [String],
                        file: StaticString = #filePath, line: UInt = #line) throws {
        let result = try Subprocess.run([bin] + arguments, timeout: 30)
        XCTAssertEqual(result.status, status, "\(result)", file: file, line: line)
        XCTAssertEqual(result.stderrLines.count, 1, "one line on stderr: \(result)", file: file, line: line)
        XCTAssertTrue(result.stderr.hasPrefix("purgefs: "), "\(result)", file: file, line: line)
        XCTAssertTrue(tokens.contains { result.stderr.contains($0) }, "names one of \(tokens): \(result)", file: file, line: line)
        XCTAssertEqual(result.stdout, "", "\(result)", file: file, line: line)
    }

    /// A numeric `user.purgefs.NAME` of `path`.
    func attribute(_ name: String, of path: String, file: StaticString = #filePath, line: UInt = #line) throws -> UInt64 {
        let bytes = try Paths.extendedAttribute("user.purgefs." + name, of: path)
        return try XCTUnwrap(UInt64(String(decoding: bytes, as: UTF8.self)), "user.purgefs.\(name) of \(path)", file: file, line: line)
    }

    /// Parses JSON output as an object.
    func object(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: Data(text.utf8))
        return try XCTUnwrap(value as? [String: Any], "a JSON object: \(text)", file: file, line: line)
    }

    func exists(_ path: String) -> Bool { Paths.exists(path) }
}

/// Help and routing of the commands, as a user runs them.
final class PurgefsCommandTests: PurgefsCommandTestCase {
    override var mountsInSetUp: Bool { false }

    func testEveryNewCommandHasHelp() throws {
        for command in ["space", "purge", "pin", "unpin", "log", "usage"] {
            for arguments in [[command, "--help"], ["help", command], [command, "/x", "-h"]] {
                let result = try purgefs(arguments)
                XCTAssertEqual(result.status, 0, "\(result)")
                XCTAssertTrue(result.stdout.contains("Usage: purgefs \(command)"), "\(result)")
                XCTAssertEqual(result.stderr, "")
            }
        }
        let top = try succeed("--help")
        for command in ["space", "purge", "pin", "unpin", "log", "usage"] {
            XCTAssertTrue(top.contains("  \(command) "), "top-level help lists \(command):\n\(top)")
        }
    }

    func testCommandsRefuseWhatIsNotAPurgefsMount() throws {
        let native = fixture.native
        try assertRejected(["space", native], status: 1, mentioning: ["not a purgefs mount"])
        try assertRejected(["purge", native, "--all"], status: 1, mentioning: ["not a purgefs mount"])
        try assertRejected(["pin", native], status: 1, mentioning: ["not inside a purgefs mount"])
        try assertRejected(["unpin", native], status: 1, mentioning: ["not inside a purgefs mount"])
        try assertRejected(["usage", native], status: 1, mentioning: ["not on a purgefs mount"])
        try assertRejected(["log", native], status: 1, mentioning: ["neither a purgefs mount nor a container"])
        try assertRejected(["space", fixture.base + "/missing"], status: 1, mentioning: ["No such file"])
        try assertRejected(["space"], status: 64, mentioning: ["MOUNTPOINT is missing"])
        try assertRejected(["space", native, "--capacity", "12X"], status: 64, mentioning: ["12X"])
        try assertRejected(["purge", native], status: 64, mentioning: ["--bytes SIZE or --all"])
        try assertRejected(["log", native, "--bogus"], status: 64, mentioning: ["--bogus"])
    }
}

/// Runs a command with an array of arguments.
extension PurgefsCommandTestCase {
    func purgefs(_ arguments: [String]) throws -> CommandResult {
        try Subprocess.run([bin] + arguments, timeout: 30)
    }
}
