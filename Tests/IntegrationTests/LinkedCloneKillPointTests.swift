import Foundation
import Glibc
import XCTest

/// `kill -9` at every step of a linked clone's making, breaking, renaming
/// and removal (a debug build's `PURGEFS_KILL_AT`, which kills the daemon
/// when it reaches the named step), then a clean mount. What must hold in
/// every state the next mount finds: no two names in the container share
/// a backing inode unless the mount knows them as a clone and what it
/// shares (each shows its own inode number), every name reads through the
/// mount what its backing file holds, and `allocated` and `clone_savings`
/// are what a walk of the container says.
final class LinkedCloneKillPointTests: Ext4ImageTestCase {
    /// The original each round clones (`data`): a few blocks.
    static let size = 256 << 10
    /// What a round writes into a file: one block, unlike any random data.
    static let block = [UInt8](repeating: 0xC3, count: 4096)

    func testKilledWhileACloneIsMade() throws {
        for step in ["clone-registered", "clone-anchored", "clone-linked", "clone-renamed"] {
            try killed(at: step) { run(["cp", m + "/data", m + "/copy"], expectingFailure: true) }
        }
    }

    func testKilledWhileACloneBreaks() throws {
        for step in ["member-filled", "member-renamed"] {
            try killed(at: step) { XCTAssertNotEqual(tryOverwrite(m + "/clone", at: 0, Self.block), 0, step) }
        }
    }

    func testKilledWhileAnOriginalBreaks() throws {
        for step in ["primary-copied", "primary-saved", "primary-moved"] {
            try killed(at: step) { XCTAssertNotEqual(tryOverwrite(m + "/data", at: 0, Self.block), 0, step) }
        }
    }

    /// Renamed (into another directory, and over another file there): the
    /// daemon dies after rename(2), before it has recorded the clone's new name.
    func testKilledWhileACloneIsRenamed() throws {
        try killed(at: "member-moved") {
            XCTAssertEqual(rename(m + "/clone", m + "/sub/moved"), -1, "the rename outlived its daemon")
        }
        try killed(at: "member-moved", before: { try writeRandom(m + "/sub/other", count: 8192, seed: 9) }) {
            XCTAssertEqual(rename(m + "/clone", m + "/sub/other"), -1, "the rename outlived its daemon")
        }
    }

    func testKilledWhileACloneIsRemoved() throws {
        try killed(at: "member-removed") { XCTAssertEqual(unlink(m + "/clone"), -1, "the unlink outlived its daemon") }
    }

    // MARK: One round

    /// From a fresh container and state holding `data` and its linked clone
    /// `clone` (and an empty `sub`): `before`, then `action` with the daemon
    /// set to die at `step`; then the checks above after a clean mount.
    private func killed(at step: String, before: () throws -> Void = {}, _ action: () throws -> Void) throws {
        #if !DEBUG
        throw XCTSkip("kill points are in debug builds only")
        #else
        XCTAssertEqual(unmountPurgefs(), [])
        for name in (try FileManager.default.contentsOfDirectory(atPath: container)) {
            let path = container + "/" + name
            var st = stat()
            let problem = lstat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR ? removeTree(path) : (unlink(path) == 0 ? nil : Errno.name(errno))
            if let problem { throw SubprocessError("cannot empty the container: \(name): \(problem)") }
        }
        try writeRandom(container + "/data", count: Self.size, seed: 7)
        XCTAssertEqual(mkdir(container + "/sub", 0o755), 0)
        try mountPurgefs()
        run(["cp", m + "/data", m + "/clone"])
        XCTAssertEqual(try status(container + "/clone").st_ino, try status(container + "/data").st_ino, "\(step): not a linked clone")
        try before()
        XCTAssertEqual(unmountPurgefs(), [])

        daemonEnvironment = ["PURGEFS_KILL_AT": step]
        defer { daemonEnvironment = [:] }
        try mountPurgefs()
        daemonEnvironment = [:]
        try action()
        XCTAssertTrue(eventually(timeout: 30) { fixture.ownProcesses().isEmpty }, "\(step): the daemon lives on past its kill point")
        XCTAssertTrue(daemonLogText().contains("kill point \(step): killed"), "\(step): the daemon never reached its kill point")
        XCTAssertEqual(unmountPurgefs(), [], "\(step): cleaning the dead mount")
        try mountPurgefs()

        assertEveryShareKnown("killed at \(step)")
        assertAccounting("killed at \(step)")
        #endif
    }

    /// Names of one backing inode are as many files through the mount (the
    /// rounds make no hard links), and each reads what its backing file holds.
    private func assertEveryShareKnown(_ label: String, file: StaticString = #filePath, line: UInt = #line) {
        for (inode, entry) in BackingWalk(container).files {
            let shown = entry.names.map { name in (try? status(m + "/" + name))?.st_ino }
            XCTAssertEqual(Set(shown.compactMap { $0 }).count, entry.names.count,
                           "\(label): \(entry.names) share backing inode \(inode) but are one file through the mount (\(shown)): a clone the mount does not know",
                           file: file, line: line)
            for name in entry.names {
                XCTAssertTrue(sameContent(m + "/" + name, container + "/" + name), "\(label): \(name) reads other bytes through the mount",
                              file: file, line: line)
            }
        }
    }

    private func run(_ arguments: [String], expectingFailure: Bool) {
        let result = try? Subprocess.run(arguments, timeout: 60)
        XCTAssertNotEqual(result?.status, 0, "\(arguments.joined(separator: " ")) outlived its daemon: \(String(describing: result))")
    }
}
