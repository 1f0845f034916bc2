import Foundation
import Glibc
import PurgeCore
import PurgeSys
import XCTest

/// The README's quickstart works as printed: every `sh` block of its
/// "Quickstart" section, taken from README.md itself, runs in order in one
/// scratch directory with the built purgefs first on PATH, and each exits 0.
/// A newcomer pastes these; when one stops working, this fails.
final class ReadmeQuickstartTests: MountedTestCase {
    override var mountsInSetUp: Bool { false }

    /// The `sh` blocks of the README section headed `## Quickstart`.
    static func quickstartBlocks() throws -> [String] {
        let readme = try String(contentsOfFile: MountFixture.packageRoot() + "/README.md", encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let start = lines.firstIndex(of: "## Quickstart") else { return [] }
        let section = lines[(start + 1)...].prefix { !$0.hasPrefix("## ") }
        var blocks: [String] = [], current: [String]?
        for line in section {
            if current == nil {
                if line == "```sh" { current = [] }
            } else if line == "```" {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
            } else {
                current!.append(line)
            }
        }
        return blocks
    }

    func testEveryQuickstartBlockRuns() throws {
        let blocks = try Self.quickstartBlocks()
        // The quickstart's job, so that an edit cannot empty it unnoticed:
        // run an app under a scenario, then read the attributes.
        XCTAssertGreaterThanOrEqual(blocks.count, 3, "the README's quickstart has its sh blocks")
        XCTAssertTrue(blocks.contains { $0.contains("purgefs run ") && $0.contains("--scenario") }, "\(blocks)")
        XCTAssertTrue(blocks.contains { $0.contains("getfattr -n user.purgefs.") }, "\(blocks)")

        let scratch = fixture.base + "/quickstart"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        // What the blocks mount, they unmount; this is for a block that fails half way.
        addTeardownBlock {
            for path in [scratch + "/app"] where MountTable.isMounted(path) {
                _ = try? Subprocess.run(["fusermount3", "-u", path], timeout: 15)
            }
        }
        let bin = (fixture.binary as NSString).deletingLastPathComponent
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = bin + ":/usr/sbin:/usr/bin:/sbin:/bin"
        for (index, block) in blocks.enumerated() {
            let result = try Subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block], cwd: scratch, timeout: 120,
                                            environment: environment)
            XCTAssertEqual(result.status, 0, "quickstart block \(index + 1):\n\(block)\n\(result)")
            guard result.status == 0 else { return }
        }
        XCTAssertFalse(MountTable.isMounted(scratch + "/app"), "the quickstart unmounts what it mounts")
    }
}
