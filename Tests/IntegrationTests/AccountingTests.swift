import Foundation
import Glibc
import TestSupport
import XCTest

/// `user.purgefs.size|files|allocated|purgeable` of every directory equal an
/// independent walk of the backing directory, after a random workload through
/// the mount, after a remount, and after changes made while unmounted.
final class AccountingTests: MountedTestCase {
    static let zones = ["Library/Caches", "caches", "tmp"]

    /// Compares every directory of the backing container with the mount's
    /// answers. `purgeable` is polled (a close reaches the daemon as an
    /// asynchronous release), the other figures must be exact at once.
    func assertMatchesWalk(_ label: String, pinned: Set<UInt64>, open: Set<UInt64> = [],
                           file: StaticString = #filePath, line: UInt = #line) {
        let m = fixture.mountpoint
        var mismatches: [String] = []
        var purgeableMismatches: [String] = []
        let walk = BackingWalk(fixture.container)
        for directory in walk.directories.keys.sorted() {
            let expected = walk.totals(of: directory, zones: Self.zones, pinned: pinned, open: open)
            let path = directory.isEmpty ? m : m + "/" + directory
            guard let seen = mountTotals(path) else {
                mismatches.append("/\(directory): attributes unreadable")
                continue
            }
            if seen.size != expected.size || seen.files != expected.files || seen.allocated != expected.allocated {
                mismatches.append("/\(directory):\n      walk  \(expected)\n      mount \(seen)")
            }
        }
        XCTAssertTrue(mismatches.isEmpty, "\(label): \(mismatches.count) of \(walk.directories.count) directories differ from the walk:\n  "
                      + mismatches.joined(separator: "\n  "), file: file, line: line)
        let settled = eventually {
            purgeableMismatches = []
            for directory in walk.directories.keys.sorted() {
                let expected = walk.totals(of: directory, zones: Self.zones, pinned: pinned, open: open).purgeable
                let path = directory.isEmpty ? m : m + "/" + directory
                let seen = getAttr(path, pf("purgeable"))
                if seen != .value(String(expected)) {
                    purgeableMismatches.append("/\(directory): walk \(expected), mount \(seen) (directory inode \(walk.directories[directory] ?? 0), pinned \(getAttr(path, pf("pinned"))); files below: \(walk.files.filter { $0.value.names.contains { BackingWalk.isBelow($0, directory) } }.prefix(8).map { "\($0.value.names[0]) inode \($0.key) pinned \(getAttr(m + "/" + $0.value.names[0], pf("pinned")))" }); the test's pins: \(pinned.sorted()))")
                }
            }
            return purgeableMismatches.isEmpty
        }
        XCTAssertTrue(settled, "\(label): purgeable differs from the walk (zone files not pinned, not open) after 5 s:\n  "
                      + purgeableMismatches.joined(separator: "\n  "), file: file, line: line)

        // Per file: size, allocated, and the zone mark.
        var fileMismatches: [String] = []
        for (_, entry) in walk.files.sorted(by: { $0.key < $1.key }).prefix(60) {
            let name = entry.names[0]
            let inZone = entry.names.allSatisfy { n in Self.zones.contains { BackingWalk.isBelow(n, $0) } }
            let seen = [getAttr(m + "/" + name, pf("size")), getAttr(m + "/" + name, pf("allocated")), getAttr(m + "/" + name, pf("purgeable"))]
            let expected: [XattrOutcome] = [.value(String(entry.size)), .value(String(entry.allocated)), .value(inZone ? "1" : "0")]
            if seen != expected { fileMismatches.append("\(name): walk \(expected), mount \(seen)") }
        }
        XCTAssertTrue(fileMismatches.isEmpty, "\(label): per-file size/allocated/purgeable differ:\n  "
                      + fileMismatches.joined(separator: "\n  "), file: file, line: line)
    }

    func testRandomWorkloadMatchesWalkAcrossRemounts() throws {
        let m = fixture.mountpoint
        let c = fixture.container
        var rng = SeededGenerator(seed: 0x5EED_0001)
        makeDirectories(m, ["Documents", "Documents/a", "caches", "caches/x", "caches/x/y", "tmp", "Library",
                            "Library/Caches", "Library/Caches/c", "other"])
        var counter = 0
        var pinned: Set<UInt64> = []
        var held: [Int32] = []  // descriptors kept open to the end (unlinked-open files among them)
        var log: [String] = []

        func directories() -> [String] { BackingWalk(c).directories.keys.filter { !$0.isEmpty }.sorted() }
        func fileNames() -> [String] { BackingWalk(c).files.values.flatMap(\.names).sorted() }
        /// A pin belongs to the file: once its last name is gone, so is the pin.
        func forgetIfGone(_ ino: UInt64) {
            if BackingWalk(c).files[ino] == nil { pinned.remove(ino) }
        }
        func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[Int.random(in: 0..<items.count, using: &rng)] }

        for step in 0..<400 {
            let op = Int.random(in: 0..<13, using: &rng)
            switch op {
            case 0, 1:
                guard let dir = pick(directories()) else { continue }
                counter += 1
                let name = "\(dir)/f\(counter)"
                let size = Int.random(in: 0..<200_000, using: &rng)
                XCTAssertEqual(writeBytes(m + "/" + name, tiled(size, seed: UInt64(counter))), 0, "create \(name)")
                log.append("\(step) create \(name) \(size)")
            case 2:
                guard let name = pick(fileNames()) else { continue }
                let fd = open(m + "/" + name, O_WRONLY | O_APPEND | O_CLOEXEC)
                XCTAssertGreaterThanOrEqual(fd, 0, "open \(name) for append: \(Errno.name(errno))")
                let bytes = tiled(Int.random(in: 1..<64_000, using: &rng), seed: 7)
                XCTAssertEqual(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }, bytes.count)
                close(fd)
                log.append("\(step) append \(name) \(bytes.count)")
            case 3:
                guard let name = pick(fileNames()) else { continue }
                let fd = open(m + "/" + name, O_WRONLY | O_CLOEXEC)
                let offset = off_t(Int.random(in: 0..<1_000_000, using: &rng))
                let bytes = tiled(4096, seed: 9)
                XCTAssertEqual(bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, offset) }, 4096, "pwrite \(name)")
                close(fd)
                log.append("\(step) pwrite \(name) at \(offset)")
            case 4:
                guard let name = pick(fileNames()) else { continue }
                let size = off_t(Int.random(in: 0..<300_000, using: &rng))
                XCTAssertEqual(truncate(m + "/" + name, size), 0, "truncate \(name): \(Errno.name(errno))")
                log.append("\(step) truncate \(name) \(size)")
            case 5:
                guard let name = pick(fileNames()) else { continue }
                let size = off_t(Int.random(in: 0..<300_000, using: &rng))
                let fd = open(m + "/" + name, O_RDWR | O_CLOEXEC)
                XCTAssertEqual(ftruncate(fd, size), 0, "ftruncate \(name): \(Errno.name(errno))")
                close(fd)
                log.append("\(step) ftruncate \(name) \(size)")
            case 6:
                guard let name = pick(fileNames()), let dir = pick(directories()) else { continue }
                counter += 1
                let target = "\(dir)/r\(counter)"
                XCTAssertEqual(rename(m + "/" + name, m + "/" + target), 0, "rename \(name) \(target): \(Errno.name(errno))")
                log.append("\(step) rename \(name) \(target)")
            case 7:
                guard let name = pick(fileNames()), let dir = pick(directories()) else { continue }
                counter += 1
                let target = "\(dir)/h\(counter)"
                XCTAssertEqual(link(m + "/" + name, m + "/" + target), 0, "link \(name) \(target): \(Errno.name(errno))")
                log.append("\(step) link \(name) \(target)")
            case 8:
                guard let name = pick(fileNames()), let ino = inodeOf(c + "/" + name) else { continue }
                XCTAssertEqual(unlink(m + "/" + name), 0, "unlink \(name): \(Errno.name(errno))")
                forgetIfGone(ino)
                log.append("\(step) unlink \(name)")
            case 9:
                // A new directory, or a subdirectory moved elsewhere (across zones).
                let movable = directories().filter { !["Documents", "caches", "tmp", "Library", "Library/Caches", "other"].contains($0) }
                if Bool.random(using: &rng), let source = pick(movable),
                   let dir = pick(directories().filter { $0 != source && !$0.hasPrefix(source + "/") }) {
                    counter += 1
                    let target = "\(dir)/m\(counter)"
                    XCTAssertEqual(rename(m + "/" + source, m + "/" + target), 0, "rename dir \(source) \(target): \(Errno.name(errno))")
                    log.append("\(step) rename dir \(source) \(target)")
                } else if let dir = pick(directories()) {
                    counter += 1
                    XCTAssertEqual(mkdir(m + "/\(dir)/d\(counter)", 0o755), 0)
                    log.append("\(step) mkdir \(dir)/d\(counter)")
                }
            case 10:
                // Unlink of an open file that is written to afterwards.
                guard let name = pick(fileNames()), let ino = inodeOf(c + "/" + name) else { continue }
                let fd = open(m + "/" + name, O_RDWR | O_CLOEXEC)
                XCTAssertGreaterThanOrEqual(fd, 0)
                XCTAssertEqual(unlink(m + "/" + name), 0, "unlink open \(name): \(Errno.name(errno))")
                forgetIfGone(ino)
                let bytes = tiled(10_000, seed: 3)
                XCTAssertEqual(bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }, bytes.count)
                if held.count < 4 { held.append(fd) } else { close(fd) }
                log.append("\(step) unlink-open \(name)")
            case 11:
                // Pin or unpin a file or a directory.
                let candidates = fileNames() + directories()
                guard let name = pick(candidates), let ino = inodeOf(c + "/" + name) else { continue }
                let on = pinned.contains(ino) ? "0" : "1"
                XCTAssertEqual(setAttr(m + "/" + name, pf("pinned"), on), 0, "pin \(name) \(on)")
                if on == "1" { pinned.insert(ino) } else { pinned.remove(ino) }
                log.append("\(step) pinned=\(on) \(name)")
            default:
                guard let name = pick(fileNames()) else { continue }
                let fd = open(m + "/" + name, O_RDWR | O_CLOEXEC)
                let length = off_t(Int.random(in: 1..<200_000, using: &rng))
                XCTAssertEqual(posix_fallocate(fd, 0, length), 0, "fallocate \(name)")
                close(fd)
                log.append("\(step) fallocate \(name) \(length)")
            }
        }
        // A zone root moved away stops being a zone; a new one at its path is one.
        XCTAssertEqual(rename(m + "/tmp", m + "/oldtmp"), 0)
        XCTAssertEqual(mkdir(m + "/tmp", 0o755), 0)
        XCTAssertEqual(writeBytes(m + "/tmp/fresh", tiled(50_000, seed: 11)), 0)
        // One linked zone file held open: not purgeable while open.
        let openName = "caches/held-open"
        XCTAssertEqual(writeBytes(m + "/" + openName, tiled(40_000, seed: 12)), 0)
        let openFD = open(m + "/" + openName, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(openFD, 0)
        held.append(openFD)
        let openInodes: Set<UInt64> = [inodeOf(c + "/" + openName)!]

        let context = "workload (seed 0x5EED0001):\n" + log.suffix(40).joined(separator: "\n")
        assertMatchesWalk("after the workload; last steps: \(context)", pinned: pinned, open: openInodes)

        for fd in held { close(fd) }
        assertMatchesWalk("after closing the held files", pinned: pinned)

        try fixture.remount(options: [])
        assertMatchesWalk("after a remount", pinned: pinned)

        // Changes to the backing container while unmounted.
        for problem in fixture.unmount() { XCTFail(problem) }
        let walk = BackingWalk(c)
        let existing = walk.files.values.flatMap(\.names).sorted()
        XCTAssertEqual(writeBytes(c + "/caches/offline-1", tiled(123_456, seed: 21)), 0)
        XCTAssertEqual(writeBytes(c + "/Documents/offline-2", tiled(77_777, seed: 22)), 0)
        XCTAssertEqual(mkdir(c + "/caches/offline-dir", 0o755), 0)
        XCTAssertEqual(writeBytes(c + "/caches/offline-dir/f", tiled(5000, seed: 23)), 0)
        XCTAssertEqual(link(c + "/Documents/offline-2", c + "/caches/offline-dir/link"), 0)
        var removed = 0
        for name in existing where removed < 5 && !pinned.contains(inodeOf(c + "/" + name) ?? 0) {
            XCTAssertEqual(unlink(c + "/" + name), 0)
            removed += 1
        }
        if let name = existing.last, exists(c + "/" + name) { XCTAssertEqual(truncate(c + "/" + name, 999), 0) }
        try fixture.mount()
        assertMatchesWalk("after changes made while unmounted", pinned: pinned)
    }

    /// A hard link outside the zones keeps its zone name from being purgeable;
    /// a file counts once in a directory holding two of its names.
    func testHardLinksCountOnce() throws {
        let m = fixture.mountpoint
        makeDirectories(m, ["caches", "caches/a", "Documents"])
        XCTAssertEqual(writeBytes(m + "/caches/a/one", tiled(100_000, seed: 1)), 0)
        XCTAssertEqual(link(m + "/caches/a/one", m + "/caches/a/two"), 0)
        XCTAssertEqual(link(m + "/caches/a/one", m + "/caches/three"), 0)
        XCTAssertEqual(numberAttr(m + "/caches", "files"), 1)
        XCTAssertEqual(numberAttr(m + "/caches/a", "files"), 1)
        XCTAssertEqual(numberAttr(m, "size"), 100_000)
        XCTAssertEqual(numberAttr(m + "/caches/a", "size"), 100_000)
        let allocated = numberAttr(m + "/caches/a/one", "allocated") ?? 0
        XCTAssertTrue(eventually { getAttr(m + "/caches", pf("purgeable")) == .value(String(allocated)) }, "all names in zones: purgeable")
        XCTAssertEqual(link(m + "/caches/a/one", m + "/Documents/four"), 0)
        XCTAssertEqual(getAttr(m + "/caches", pf("purgeable")), .value("0"), "a name outside the zones: not purgeable")
        XCTAssertEqual(getAttr(m + "/caches/a/one", pf("purgeable")), .value("0"), "file mark with a name outside the zones")
        XCTAssertEqual(numberAttr(m, "files"), 1)
        XCTAssertEqual(numberAttr(m + "/Documents", "files"), 1)
        XCTAssertEqual(unlink(m + "/Documents/four"), 0)
        XCTAssertEqual(getAttr(m + "/caches", pf("purgeable")), .value(String(allocated)))
        XCTAssertEqual(numberAttr(m + "/Documents", "files"), 0)
    }
}
