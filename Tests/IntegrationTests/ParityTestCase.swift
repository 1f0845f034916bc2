import Foundation
import XCTest

/// Runs one scenario on the native twin directory and through the mount,
/// and compares the outcomes one for one (the idea of mergerfs
/// `tests/posix_parity.py`). Afterwards the backing container must hold the
/// same tree as the native directory.
class ParityTestCase: MountedTestCase {
    func assertParity(compareBacking: Bool = true, file: StaticString = #filePath, line: UInt = #line,
                      _ scenario: (ParityRecorder) throws -> Void) throws {
        let native = try ParityRecorder(root: fixture.native)
        defer { native.finish() }
        try scenario(native)
        native.finish()
        let mounted = try ParityRecorder(root: fixture.mountpoint)
        defer { mounted.finish() }
        try scenario(mounted)
        mounted.finish()

        var differences: [String] = []
        for (index, (a, b)) in zip(native.log, mounted.log).enumerated() where a.label != b.label || !a.outcome.matches(b.outcome) {
            differences.append("#\(index) \(abbreviate(a.label))\n      native: \(a.outcome)\n      mount:  \(b.outcome)")
        }
        if native.log.count != mounted.log.count {
            differences.append("the native run recorded \(native.log.count) outcomes, the mount \(mounted.log.count)")
        }
        if !differences.isEmpty {
            XCTFail("parity: \(differences.count) of \(native.log.count) outcomes differ\n  " + differences.joined(separator: "\n  "), file: file, line: line)
        }
        XCTAssertGreaterThan(native.log.count, 0, "the scenario recorded nothing", file: file, line: line)

        if compareBacking {
            let expected = TreeSnapshot.take(fixture.native)
            let backing = TreeSnapshot.take(fixture.container, skipping: [".purgefs"])
            if expected != backing {
                let missing = expected.filter { !backing.contains($0) }
                let extra = backing.filter { !expected.contains($0) }
                XCTFail("backing container differs from the native twin\n  only native:  \(missing.joined(separator: "\n                "))\n  only backing: \(extra.joined(separator: "\n                "))", file: file, line: line)
            }
        }
    }
}

/// Long labels (4 KB paths) shortened for failure messages: runs of one
/// repeated character become `c×N`.
func abbreviate(_ text: String) -> String {
    var out = ""
    var run: (Character, Int)?
    func flush() {
        if let (c, n) = run { out += n > 8 ? "\(c)×\(n)" : String(repeating: c, count: n) }
    }
    for c in text {
        if let (r, n) = run, r == c { run = (r, n + 1); continue }
        flush()
        run = (c, 1)
    }
    flush()
    return out
}
