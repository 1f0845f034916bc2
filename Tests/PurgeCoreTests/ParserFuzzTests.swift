import FuzzHarness
import PurgeCore
import XCTest

/// The fast slice of the parser fuzzing (`scripts/fuzz` runs the long one):
/// each of PurgeCore's parsers of user input gets a few thousand inputs
/// mutated from its valid ones with a fixed seed, and none may trap, hang or
/// break its invariants (what it prints reads back the same, an error is
/// one line). A failure names the seed and the case, which replay exactly.
final class ParserFuzzTests: XCTestCase {
    static let inputs = 2000

    func fuzz(_ target: ParserFuzzTarget, seed: UInt64 = 1, inputs: Int = inputs) throws {
        let failures = try target.seededRun(seed: seed, count: inputs)
        XCTAssertEqual(failures.count, 0, failures.prefix(5).joined(separator: "\n"))
    }

    func testMountOptions() throws { try fuzz(.mountOptions) }
    func testValues() throws { try fuzz(.values) }
    func testFaultRule() throws { try fuzz(.faultRule) }
    func testFaultRulesFile() throws { try fuzz(.faultRulesFile) }
    func testFaultGlob() throws { try fuzz(.faultGlob) }
    func testScenario() throws { try fuzz(.scenario) }
    func testDeviceRecords() throws { try fuzz(.deviceRecords) }
    func testDeviceRequests() throws { try fuzz(.deviceRequests) }
    func testCloudManifest() throws { try fuzz(.cloudManifest) }
    func testBlockMaps() throws { try fuzz(.blockMaps) }

    /// Inputs libFuzzer found (scripts/fuzz), each once a failure; they are in
    /// Tests/FuzzCorpus too, so both runners start from them.
    func testFoundInputs() throws {
        for (target, name) in [(ParserFuzzTarget.mountOptions, "found-backslash-before-combining-mark"),
                               (.mountOptions, "found-escaped-line-break-in-a-name"),
                               (.values, "found-delay-through-double"), (.faultRule, "found-quote-before-combining-mark"),
                               (.faultRulesFile, "found-crlf-in-the-check")] {
            XCTAssertNil(target.check(try FuzzCorpus.seeds(target, named: name)), name)
        }
    }

    func testEveryCoreTargetHasATest() {
        XCTAssertEqual(ParserFuzzTarget.allCases.filter(\.isCore).count, 10)
    }
}
