internal import CLinux
import Foundation
import Glibc
import XCTest

/// The space figures on a simulated device: available = capacity − external −
/// allocated, the important and opportunistic figures, and statfs/df.
final class SpaceRelationTests: MountedTestCase {
    static let capacity: UInt64 = 100 << 20
    static let external: UInt64 = 7 << 20
    static let low: UInt64 = 10 << 20  // low=10% of 100 MiB
    override var mountOptions: [String] { ["capacity=100M", "external=7M", "low=10%", "high=20%"] }

    struct Figures: CustomStringConvertible {
        var capacity, external, allocated, purgeable, available, important, opportunistic: UInt64
        var description: String {
            "capacity \(capacity) external \(external) allocated \(allocated) purgeable \(purgeable) available \(available) important \(important) opportunistic \(opportunistic)"
        }
    }

    func figures(file: StaticString = #filePath, line: UInt = #line) -> Figures? {
        let m = fixture.mountpoint
        guard let capacity = numberAttr(m, "capacity", file: file, line: line),
              let external = numberAttr(m, "external", file: file, line: line),
              let allocated = numberAttr(m, "allocated", file: file, line: line),
              let purgeable = numberAttr(m, "purgeable", file: file, line: line),
              let available = numberAttr(m, "available", file: file, line: line),
              let important = numberAttr(m, "available_important", file: file, line: line),
              let opportunistic = numberAttr(m, "available_opportunistic", file: file, line: line)
        else { return nil }
        return Figures(capacity: capacity, external: external, allocated: allocated, purgeable: purgeable,
                       available: available, important: important, opportunistic: opportunistic)
    }

    func assertRelations(_ label: String, low: UInt64 = SpaceRelationTests.low, file: StaticString = #filePath, line: UInt = #line) {
        guard let f = figures(file: file, line: line) else { return }
        let used = f.external + f.allocated
        let expectedAvailable = f.capacity > used ? f.capacity - used : 0
        XCTAssertEqual(f.available, expectedAvailable, "\(label): available = capacity − external − allocated(root); \(f)", file: file, line: line)
        XCTAssertEqual(f.important, f.available + f.purgeable, "\(label): available_important = available + purgeable; \(f)", file: file, line: line)
        XCTAssertEqual(f.opportunistic, f.available > low ? f.available - low : 0, "\(label): available_opportunistic = max(0, available − low); \(f)", file: file, line: line)

        var figures = statvfs()
        XCTAssertEqual(statvfs(fixture.mountpoint, &figures), 0, file: file, line: line)
        let unit = UInt64(figures.f_frsize)
        XCTAssertGreaterThan(unit, 0, file: file, line: line)
        let size = UInt64(figures.f_blocks) * unit
        let free = UInt64(figures.f_bfree) * unit
        let avail = UInt64(figures.f_bavail) * unit
        XCTAssertTrue(size <= f.capacity && f.capacity - size < unit, "\(label): statfs size \(size) (\(figures.f_blocks) × \(unit)) vs capacity \(f.capacity)", file: file, line: line)
        XCTAssertTrue(free <= f.available && f.available - free < unit, "\(label): statfs free \(free) vs available \(f.available)", file: file, line: line)
        XCTAssertTrue(avail <= f.available && f.available - avail < unit, "\(label): statfs avail \(avail) vs available \(f.available)", file: file, line: line)

        if let df = try? Subprocess.run(["df", "-B1", "--output=size,avail", fixture.mountpoint]) {
            let numbers = df.stdout.split(separator: "\n").last?.split(separator: " ").compactMap { UInt64($0) } ?? []
            XCTAssertEqual(numbers, [size, avail], "\(label): df -B1 of the mount: \(df)", file: file, line: line)
        }
    }

    func testAvailableRelationsOnASimulatedDevice() throws {
        let m = fixture.mountpoint
        XCTAssertEqual(numberAttr(m, "capacity"), Self.capacity)
        XCTAssertEqual(numberAttr(m, "external"), Self.external)
        assertRelations("empty container")

        makeDirectories(m, ["Documents", "caches", "tmp", "Library", "Library/Caches"])
        XCTAssertEqual(writeBytes(m + "/Documents/doc", tiled(3 * MiB + 123, seed: 1)), 0)
        XCTAssertEqual(writeBytes(m + "/caches/c1", tiled(2 * MiB, seed: 2)), 0)
        XCTAssertEqual(writeBytes(m + "/Library/Caches/c2", tiled(MiB + 1, seed: 3)), 0)
        XCTAssertEqual(writeBytes(m + "/tmp/t", tiled(5000, seed: 4)), 0)
        // Let the releases of the closed files reach the daemon.
        XCTAssertTrue(eventually { numberAttr(m, "purgeable") == (numberAttr(m + "/caches", "allocated") ?? 0)
                + (numberAttr(m + "/Library/Caches", "allocated") ?? 0) + (numberAttr(m + "/tmp", "allocated") ?? 0) })
        let walk = BackingWalk(fixture.container).totals(of: "", zones: AccountingTests.zones)
        XCTAssertEqual(numberAttr(m, "allocated"), walk.allocated, "root allocated vs the walk")
        assertRelations("with documents and caches")

        // An external squeeze that leaves available below low, with nothing
        // purgeable: the opportunistic figure is 0, nothing is deleted.
        XCTAssertEqual(setAttr(m + "/caches/c1", pf("pinned"), "1"), 0)
        XCTAssertEqual(setAttr(m + "/Library/Caches/c2", pf("pinned"), "1"), 0)
        XCTAssertEqual(setAttr(m + "/tmp/t", pf("pinned"), "1"), 0)
        XCTAssertEqual(numberAttr(m, "purgeable"), 0)
        XCTAssertEqual(setAttr(m, pf("external"), "90M"), 0)
        assertRelations("external 90M, nothing purgeable")
        XCTAssertEqual(numberAttr(m, "available_opportunistic"), 0)

        // External beyond the capacity is refused (DeviceRuleTests); one that
        // leaves less than the container uses: available is 0, not negative or wrapped.
        XCTAssertEqual(setAttr(m, pf("external"), "200M"), EINVAL)
        XCTAssertEqual(setAttr(m, pf("external"), "99M"), 0)
        assertRelations("external and the container beyond the capacity")
        XCTAssertEqual(numberAttr(m, "available"), 0)
        for name in ["c1", "doc", "c2", "t"] {
            let path = ["c1": "caches/c1", "doc": "Documents/doc", "c2": "Library/Caches/c2", "t": "tmp/t"][name]!
            XCTAssertTrue(exists(fixture.container + "/" + path), "\(path) is pinned or a document: never purged")
        }

        // A new capacity: statfs follows.
        XCTAssertEqual(setAttr(m, pf("external"), "0"), 0)
        XCTAssertEqual(setAttr(m, pf("capacity"), "1G"), 0)
        XCTAssertEqual(numberAttr(m, "capacity"), 1 << 30)
        assertRelations("capacity 1G", low: (1 << 30) / 10)
    }
}

/// The xattr surface: which names apply where, the errors, the size probe,
/// ERANGE, listxattr, and the container's own attributes passing through.
final class XattrSurfaceTests: MountedTestCase {
    override var mountOptions: [String] { ["capacity=64M"] }

    override func prepareContainer() throws {
        let c = fixture.container
        makeDirectories(c, ["Documents", "caches", "caches/sub"])
        XCTAssertEqual(writeBytes(c + "/Documents/doc", tiled(1_048_576, seed: 1)), 0)
        XCTAssertEqual(writeBytes(c + "/caches/sub/cached", tiled(10_000, seed: 2)), 0)
        XCTAssertEqual(symlink("doc", c + "/Documents/link"), 0)
        XCTAssertEqual(mkfifo(c + "/Documents/fifo", 0o644), 0)
    }

    func testNamesThatDoNotApplyAndBadValues() throws {
        let m = fixture.mountpoint
        let doc = m + "/Documents/doc"
        let docs = m + "/Documents"
        // Reads: ENODATA for unknown names and names that do not apply.
        let reads: [(String, String, Int32)] = [
            (m, "nonsense", ENODATA), (doc, "nonsense", ENODATA), (docs, "nonsense", ENODATA),
            (doc, "files", ENODATA), (doc, "capacity", ENODATA), (docs, "capacity", ENODATA),
            (docs, "available", ENODATA), (docs, "purged_bytes", ENODATA), (docs, "last_used", ENODATA),
            (docs, "group", ENODATA), (docs, "tombstone", ENODATA), (doc, "group", ENODATA),
            (m, "purge", ENODATA), (m + "/Documents/link", "size", ENODATA),
        ]
        for (path, name, code) in reads {
            XCTAssertEqual(getAttr(path, pf(name)), .failed(code), "getxattr \(pf(name)) on \(path.dropFirst(m.count))")
        }
        // The ones that do apply answer numbers.
        for (path, name) in [(m, "capacity"), (m, "available"), (m, "purged_files"), (docs, "files"), (doc, "size"),
                             (doc, "allocated"), (doc, "last_used"), (doc, "pinned"), (doc, "purgeable"), (docs, "pinned"),
                             (m + "/caches/sub", "group"), (m + "/caches/sub", "tombstone"), (m + "/caches", "clone_savings")] {
            guard case .value(let text) = getAttr(path, pf(name)), UInt64(text) != nil else {
                XCTFail("\(pf(name)) on \(path.dropFirst(m.count)): \(getAttr(path, pf(name)))")
                continue
            }
        }
        XCTAssertEqual(getAttr(doc, pf("size")), .value("1048576"))

        // Writes: EINVAL for unknown, not applying, read-only names, and bad values.
        let writes: [(String, String, String, Int32)] = [
            (m, "nonsense", "1", EINVAL), (doc, "nonsense", "1", EINVAL),
            (m, "size", "1", EINVAL), (m, "available", "1", EINVAL), (doc, "last_used", "1", EINVAL),
            (docs, "capacity", "1M", EINVAL), (doc, "capacity", "1M", EINVAL), (docs, "purge", "all", EINVAL),
            (docs, "group", "1", EINVAL), (docs, "tombstone", "1", EINVAL), (doc, "group", "1", EINVAL),
            (doc, "pinned", "2", EINVAL), (doc, "pinned", "", EINVAL), (doc, "pinned", "yes", EINVAL),
            (m + "/caches/sub", "group", "x", EINVAL),
            (m, "capacity", "12X", EINVAL), (m, "capacity", "-1", EINVAL), (m, "capacity", "", EINVAL),
            (m, "external", "12X", EINVAL), (m, "external", "-1", EINVAL), (m, "external", "", EINVAL),
            (m, "purge", "12X", EINVAL), (m, "purge", "-1", EINVAL), (m, "purge", "", EINVAL), (m, "purge", "al", EINVAL),
        ]
        for (path, name, value, code) in writes {
            XCTAssertEqual(setAttr(path, pf(name), value), code, "setxattr \(pf(name))=\(value.debugDescription) on \(path.dropFirst(m.count))")
        }
        XCTAssertEqual(numberAttr(m, "capacity"), 64 << 20, "rejected values changed nothing")
        XCTAssertEqual(numberAttr(m, "external"), 0)
        XCTAssertEqual(getAttr(doc, pf("pinned")), .value("0"))
        XCTAssertEqual(getAttr(m + "/caches/sub", pf("group")), .value("0"))
        XCTAssertTrue(exists(fixture.container + "/caches/sub/cached"), "a rejected purge purged nothing")
        // Nothing of these reached the backing store.
        for path in ["", "/Documents", "/Documents/doc", "/caches/sub"] {
            let names = listAttrs(fixture.container + path) ?? []
            XCTAssertFalse(names.contains { $0.hasPrefix("user.purgefs.") }, "backing \(path) holds purgefs names: \(names)")
        }
    }

    func testProbeShortBufferAndList() throws {
        let m = fixture.mountpoint
        let doc = m + "/Documents/doc"
        // Size probe: at least the value's length, 20 for numbers.
        for (path, name) in [(doc, "size"), (m, "capacity"), (m, "available"), (m + "/Documents", "files"), (doc, "pinned")] {
            guard case .value(let probe) = getAttr(path, pf(name), size: 0), let probed = Int(probe),
                  case .value(let value) = getAttr(path, pf(name)) else {
                XCTFail("probe of \(pf(name)): \(getAttr(path, pf(name), size: 0))")
                continue
            }
            XCTAssertGreaterThanOrEqual(probed, value.utf8.count, "probe of \(pf(name))")
            XCTAssertGreaterThanOrEqual(probed, 20, "probe of numeric \(pf(name))")
            XCTAssertEqual(getAttr(path, pf(name), size: probed), .value(value), "read with the probed size")
            XCTAssertEqual(getAttr(path, pf(name), size: value.utf8.count), .value(value), "read with the exact size")
        }
        // "1048576" does not fit in 3 bytes.
        XCTAssertEqual(getAttr(doc, pf("size"), size: 3), .failed(ERANGE))
        XCTAssertEqual(getAttr(m, pf("capacity"), size: 1), .failed(ERANGE))
        // getfattr (probe, then read) works.
        let getfattr = try Subprocess.run(["getfattr", "--only-values", "-n", pf("capacity"), m])
        XCTAssertEqual(getfattr.status, 0, "\(getfattr)")
        XCTAssertEqual(getfattr.stdout, String(64 << 20))

        // The container's own attributes pass through and are stored on the backing file.
        XCTAssertEqual(setAttr(doc, "user.x", "mine"), 0)
        XCTAssertEqual(setAttr(m + "/Documents", "user.dir", "d"), 0)
        XCTAssertEqual(setAttr(doc, pf("pinned"), "1"), 0)
        XCTAssertEqual(getAttr(doc, "user.x"), .value("mine"))
        XCTAssertEqual(getAttr(fixture.container + "/Documents/doc", "user.x"), .value("mine"), "user.x on the backing file")
        XCTAssertEqual(getAttr(fixture.container + "/Documents", "user.dir"), .value("d"))
        XCTAssertEqual(getAttr(doc, "user.absent"), .failed(ENODATA))
        XCTAssertEqual(getAttr(doc, "user.x", size: 2), .failed(ERANGE))

        // listxattr never shows user.purgefs.*; it shows the container's own.
        XCTAssertEqual(listAttrs(doc), ["user.x"])
        XCTAssertEqual(listAttrs(m + "/Documents"), ["user.dir"])
        for path in [m, m + "/caches", m + "/caches/sub", m + "/caches/sub/cached"] {
            let names = listAttrs(path)
            XCTAssertNotNil(names, "listxattr \(path)")
            XCTAssertFalse((names ?? []).contains { $0.hasPrefix("user.purgefs.") }, "listxattr \(path): \(names ?? [])")
        }
        let dump = try Subprocess.run(["getfattr", "-d", "-m", "-", doc])
        XCTAssertFalse(dump.stdout.contains("user.purgefs."), "getfattr -d shows a purgefs name: \(dump.stdout)")
        // Backing store: only the own attribute, no purgefs names.
        XCTAssertEqual(listAttrs(fixture.container + "/Documents/doc"), ["user.x"])
        // A purgefs-named attribute planted in the backing store is not shown or answered from there.
        XCTAssertEqual(setAttr(fixture.container + "/Documents/doc", pf("planted"), "v"), 0)
        XCTAssertEqual(listAttrs(doc), ["user.x"])
        XCTAssertEqual(getAttr(doc, pf("planted")), .failed(ENODATA))
        // removexattr of the pin clears it.
        XCTAssertEqual(clinux_lremovexattr(doc, pf("pinned")), 0)
        XCTAssertEqual(getAttr(doc, pf("pinned")), .value("0"))
        XCTAssertEqual(clinux_lremovexattr(doc, "user.x"), 0)
        XCTAssertEqual(getAttr(fixture.container + "/Documents/doc", "user.x"), .failed(ENODATA))
    }
}
