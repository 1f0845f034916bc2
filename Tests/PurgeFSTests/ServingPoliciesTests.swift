import Glibc
import PurgeCore
import PurgeSys
import XCTest

@testable import PurgeFS

/// `ServingPolicies` in-process: each question is answered yes when any
/// registered policy says yes, and only for the question it says yes to;
/// `presented` passes the status through every policy in registration order.
final class ServingPoliciesTests: XCTestCase {
    /// Answers what it is given; `presented` appends `digit` to the link count (in decimal).
    private struct Policy: ServingPolicy {
        var reads = false
        var flush = false
        var refuses = false
        var digit: nlink_t?

        func mustSeeReads(of inode: Inode) -> Bool { reads }
        func mustSeeFlush(of inode: Inode) -> Bool { flush }
        func refusesPassthrough(_ inode: Inode) -> Bool { refuses }
        func presented(_ status: stat) -> stat {
            guard let digit else { return status }
            var shown = status
            shown.st_nlink = status.st_nlink * 10 + digit
            return shown
        }
    }

    func testAQuestionIsYesWhenAnyPolicySaysSoAndOnlyForThatQuestion() throws {
        let inode = try makeTestInode()
        let none = ServingPolicies([Policy(), Policy()])
        XCTAssertFalse(none.mustSeeReads(of: inode))
        XCTAssertFalse(none.mustSeeFlush(of: inode))
        XCTAssertFalse(none.refusesPassthrough(inode))
        let reads = ServingPolicies([Policy(), Policy(reads: true)])
        XCTAssertTrue(reads.mustSeeReads(of: inode))
        XCTAssertFalse(reads.mustSeeFlush(of: inode))
        XCTAssertFalse(reads.refusesPassthrough(inode))
        let flush = ServingPolicies([Policy(flush: true), Policy()])
        XCTAssertFalse(flush.mustSeeReads(of: inode))
        XCTAssertTrue(flush.mustSeeFlush(of: inode))
        let refuses = ServingPolicies([Policy(), Policy(refuses: true), Policy()])
        XCTAssertTrue(refuses.refusesPassthrough(inode))
        XCTAssertFalse(refuses.mustSeeReads(of: inode))
        XCTAssertFalse(ServingPolicies([]).refusesPassthrough(inode))
    }

    func testPresentedGoesThroughEveryPolicyInRegistrationOrder() {
        var status = stat()
        status.st_nlink = 0
        let policies = ServingPolicies([Policy(digit: 1), Policy(), Policy(digit: 2), Policy(digit: 3)])
        XCTAssertEqual(policies.presented(status).st_nlink, 123)
        XCTAssertEqual(ServingPolicies([]).presented(status).st_nlink, 0)
    }
}
