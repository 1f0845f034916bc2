import Foundation
import Glibc
import PurgeCore
import PurgeSys
import XCTest

/// A scratch directory with a container holding `config.json` (version 0)
/// and `tmp/`, and the built binary: what the explore suites run on. Each
/// run checks that nothing is left mounted and the work directory is gone.
final class ExploreFixture {
    let directory: CommandScratch
    let binary: String
    var scratch: String { directory.path }
    var container: String { scratch + "/app" }
    var report: String { scratch + "/report.json" }

    init() throws {
        binary = try MountFixture.locateBinary()
        directory = try CommandScratch(prefix: "purgefs-explore-test")
        chmod(directory.path, 0o755)
        try FileManager.default.createDirectory(atPath: directory.path + "/app/tmp", withIntermediateDirectories: true)
        try Data("{\"version\": 0}\n".utf8).write(to: URL(fileURLWithPath: directory.path + "/app/config.json"))
    }

    func remove() { directory.remove() }

    /// `purgefs explore ARGUMENTS`.
    func explore(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> CommandResult {
        let result = try Subprocess.run([binary, "explore"] + arguments, timeout: 240, environment: directory.environment)
        XCTAssertFalse(result.timedOut, "\(result)", file: file, line: line)
        XCTAssertEqual(MountTable.mounts(under: scratch).map(\.mountPoint), [], "nothing left mounted: \(result)", file: file, line: line)
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: scratch)) ?? []
        XCTAssertEqual(entries.filter { $0.hasPrefix("purgefs-explore.") }, [], "the work directory is removed: \(result)", file: file, line: line)
        return result
    }

    /// An executable shell script in the scratch directory.
    func script(_ name: String, _ text: String) throws -> String {
        let path = scratch + "/" + name
        try Data(("#!/bin/sh\n" + text).utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o755)
        return path
    }

    /// Saves config.json `rounds` times by an atomic replace, printing
    /// `saved N` after each: with `fsync`, the new file is synced before the
    /// rename and the directory after it; without, neither.
    func writer(fsync: Bool, rounds: Int = 2) throws -> String {
        try script(fsync ? "careful" : "careless", """
            cd "$PURGEFS_MOUNT" || exit 1
            for i in $(seq 1 \(rounds)); do
              printf '{"version": %d}\\n' $i > tmp/config.json.new
              \(fsync ? "sync tmp/config.json.new" : ":")
              mv tmp/config.json.new config.json
              \(fsync ? "sync ." : ":")
              echo "saved $i"
            done
            """)
    }

    func reportJSON() throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
    }

    func failures(_ json: [String: Any]) -> [[String: Any]] { json["failures"] as? [[String: Any]] ?? [] }
}
