import PurgeCore
import XCTest

/// Entry identities for tests: one device, inode numbers chosen by the test.
func entry(_ inode: UInt64) -> EntryID { EntryID(device: 7, inode: inode) }

/// Fails the test with every invariant the ledger breaks.
func assertConsistent(_ ledger: Ledger, _ message: @autoclosure () -> String = "",
                      file: StaticString = #filePath, line: UInt = #line) {
    let problems = ledger.invariantViolations()
    XCTAssert(problems.isEmpty, "\(message()) \(problems.prefix(5).joined(separator: "; "))", file: file, line: line)
}
