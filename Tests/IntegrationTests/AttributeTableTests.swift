import Foundation
import Glibc
import XCTest

/// `purgefs help attributes` against a real mount: every name the table
/// lists is answered where it says (read) or accepted (write), and every
/// name the daemon answers on the paths below is in the table.
final class AttributeTableTests: MountedTestCase {
    var remote: String { fixture.base + "/remote" }
    /// With cloud=, device= and crashable, so that every name applies somewhere.
    override var mountOptions: [String] { ["capacity=64M", "cloud=" + remote, "device=attribute-table-\(getpid())", "crashable"] }

    override func prepareContainer() throws {
        try FileManager.default.createDirectory(atPath: remote, withIntermediateDirectories: true)
        for directory in ["Library/Caches/sub", "Documents", "data"] {
            try FileManager.default.createDirectory(atPath: fixture.container + "/" + directory, withIntermediateDirectories: true)
        }
        for path in ["Library/Caches/sub/c.bin", "Documents/doc.txt", "data/f"] {
            XCTAssertEqual(writeBytes(fixture.container + "/" + path, Array(repeating: 7, count: 5000)), 0, path)
        }
    }

    /// One row of the table as the binary prints it.
    struct Row {
        var name: String
        var access: String
        var places: String
    }

    func tableRows() throws -> [Row] {
        let result = try Subprocess.run([fixture.binary, "help", "attributes"])
        XCTAssertEqual(result.status, 0, "\(result)")
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var rows: [Row] = []
        for (index, line) in lines.enumerated() where line.hasPrefix("  user.purgefs.") {
            let fields = line.split(separator: " ")
            let description = lines.dropFirst(index + 1).prefix { $0.hasPrefix("      ") }.joined(separator: " ")
            rows.append(Row(name: String(fields[0]), access: String(fields[1]), places: description))
        }
        return rows
    }

    func testEveryListedNameIsAnsweredAndEveryAnsweredNameIsListed() throws {
        let rows = try tableRows()
        XCTAssertGreaterThan(rows.count, 20, "the table lists the attributes")
        let m = fixture.mountpoint
        let paths: [(kind: String, path: String)] = [
            ("root", m), ("directories", m + "/data"), ("directories", m + "/Library/Caches/sub"),
            ("files", m + "/data/f"), ("files", m + "/Documents/doc.txt"), ("files", m + "/Library/Caches/sub/c.bin"),
        ]
        var answered: Set<String> = []
        for row in rows {
            var answers: [String: XattrOutcome] = [:]
            for (_, path) in paths { answers[path] = getAttr(path, row.name) }
            let readAnywhere = answers.values.contains { if case .value = $0 { return true } else { return false } }
            if readAnywhere { answered.insert(row.name) }
            switch row.access {
            case "write-only":
                XCTAssertFalse(readAnywhere, "\(row.name) is write-only but was read: \(answers)")
                for (_, path) in paths {
                    XCTAssertEqual(answers[path]?.errorCode, ENODATA, "\(row.name) read on \(path)")
                }
            case "read-only", "read-write":
                // Readable on every kind of path its row names (the first
                // path of that kind that meets the row's condition).
                for kind in ["root", "directories", "files"] where row.places.hasPrefix("On ") {
                    let on = row.places.prefix { $0 != "." && $0 != ";" }
                    // The root is a directory too, but not in a purgeable zone.
                    let listed = on.contains(kind) || (kind == "root" && on.contains("directories") && !on.contains("zone"))
                    let candidates = paths.filter { $0.kind == kind }.map(\.path)
                    let readable = candidates.contains { if case .value = answers[$0]! { return true } else { return false } }
                    if listed {
                        XCTAssertTrue(readable, "\(row.name) is listed on \(kind) but no \(kind) path answers it: \(answers)")
                    } else {
                        XCTAssertFalse(readable, "\(row.name) is not listed on \(kind) but a \(kind) path answers it: \(answers)")
                        for path in candidates {
                            XCTAssertEqual(answers[path]?.errorCode, ENODATA, "\(row.name) on \(path)")
                        }
                    }
                }
            default:
                XCTFail("\(row.name): unknown access \(row.access)")
            }
        }
        let readable = Set(rows.filter { $0.access != "write-only" }.map(\.name))
        XCTAssertEqual(answered, readable, "names the daemon answers vs the table's readable names")

        // A write-only name is known (its write is not EINVAL for the name), unlike a name outside the table.
        let writeOnly = Set(rows.filter { $0.access == "write-only" }.map(\.name))
        XCTAssertEqual(writeOnly, [pf("purge"), pf("evict"), pf("download"), pf("metrics_sample"), pf("flatten")])
        XCTAssertEqual(setAttr(m + "/data/f", pf("flatten"), "1"), 0, "flattening a flat file leaves it as it is")
        XCTAssertEqual(setAttr(m + "/data/f", pf("flatten"), "0"), EINVAL, "a bad value")
        XCTAssertEqual(setAttr(m, pf("purge"), "0"), 0, "purge 0 on the root")
        XCTAssertEqual(setAttr(m, pf("metrics_sample"), "1"), 0, "a sample on request")
        XCTAssertEqual(setAttr(m, pf("metrics_sample"), "0"), EINVAL, "a bad value")
        XCTAssertNotEqual(setAttr(m + "/Documents/doc.txt", pf("evict"), "1"), EINVAL, "evict is a name the daemon knows")
        XCTAssertEqual(setAttr(m + "/Documents/doc.txt", pf("evict"), "2"), EINVAL, "a bad value")

        // Names outside the table: not answered, not accepted.
        for name in [pf("bogus"), pf("Size"), pf(""), pf("evictable.x")] {
            XCTAssertEqual(getAttr(m, name).errorCode, ENODATA, name)
            XCTAssertEqual(getAttr(m + "/data/f", name).errorCode, ENODATA, name)
            XCTAssertEqual(setAttr(m, name, "1"), EINVAL, name)
        }
        // None of them is listed.
        XCTAssertEqual(listAttrs(m + "/data/f")?.filter { $0.hasPrefix("user.purgefs.") }, [])
    }
}
