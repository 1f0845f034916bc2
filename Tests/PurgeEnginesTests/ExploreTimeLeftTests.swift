@testable import PurgeEngines
import XCTest

/// explore's time left: a run that makes files has its smallest states
/// first, each costing a fixed time plus a time per entry. After a tenth of
/// the states the estimate is within a factor of two of the time the rest
/// take; the average rate so far (what the progress line said before) is
/// off by far more.
final class ExploreTimeLeftTests: XCTestCase {
    func testAfterATenthTheEstimateIsWithinAFactorOfTwo() throws {
        let sizes = (0..<4000).map { $0 / 2 }  // names-kept and names-lost of 2,000 files
        let cost = { (entries: Int) in 0.004 + 0.00002 * Double(entries) }
        let check = 0.003
        var estimate = ExploreChecker.TimeLeft(sizes: sizes, parallel: 2)
        let tenth = sizes.count / 10
        for index in 0..<tenth {
            estimate.built(index, seconds: cost(sizes[index]))
            estimate.checked(seconds: check)
        }
        // The rest, built one at a time while two checks run: building is the longer here.
        let truth = sizes[tenth...].reduce(0) { $0 + cost($1) }
        let left = try XCTUnwrap(estimate.secondsLeft)
        XCTAssertGreaterThan(left, truth / 2, "estimated \(left) s for \(truth) s")
        XCTAssertLessThan(left, truth * 2, "estimated \(left) s for \(truth) s")
        let averageSoFar = sizes[..<tenth].reduce(0) { $0 + cost($1) } / Double(tenth) * Double(sizes.count - tenth)
        XCTAssertLessThan(averageSoFar, truth / 2, "the average rate so far is fooled by the small first states")
    }

    func testNothingIsEstimatedBeforeACheckEnded() {
        var estimate = ExploreChecker.TimeLeft(sizes: [1, 2, 3], parallel: 2)
        XCTAssertNil(estimate.secondsLeft)
        estimate.built(0, seconds: 0.1)
        XCTAssertNil(estimate.secondsLeft)
        estimate.checked(seconds: 0.2)
        XCTAssertNotNil(estimate.secondsLeft)
    }
}
