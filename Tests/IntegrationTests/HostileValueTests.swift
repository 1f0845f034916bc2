import Foundation
import Glibc
import PurgeCore
import XCTest

/// Values a user picks to break a mount for everyone: sizes past what the
/// space figures can add, and a fault rule's glob that once took
/// exponential time. The mount is touched only through subprocesses with
/// deadlines; one that stops answering is aborted (`purgefs unmount
/// --force` writes its connection's `abort`), so a regression fails this
/// test and never hangs the run.
final class HostileValueTests: PurgefsCommandTestCase {
    override var mountsInSetUp: Bool { false }

    /// How long a request that should be answered at once may take before
    /// the mount is taken to be stuck (generous: the machine may be busy).
    static let stuckAfter: TimeInterval = 20

    override func setUpWithError() throws {
        try super.setUpWithError()
        // Runs before the fixture's own teardown, which could not unmount a stuck mount.
        addTeardownBlock { [self] in freeIfStuck("teardown") }
    }

    /// Aborts the mount's connection when it does not answer a `statfs`.
    private func freeIfStuck(_ when: String) {
        guard MountTable.isMounted(mnt) else { return }
        let probe = try? Subprocess.run(["stat", "-f", mnt], timeout: 5)
        if probe?.status != 0 {
            XCTFail("\(when): the mount does not answer (\(probe.map { $0.timedOut ? "timed out" : $0.stderr } ?? "?")); aborting it")
            _ = try? Subprocess.run([bin, "unmount", "--force", mnt], timeout: 30)
        }
    }

    /// Runs `arguments` against the mount; past `stuckAfter` the mount is aborted and the test fails.
    private func answered(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> CommandResult {
        let result = try Subprocess.run(arguments, timeout: Self.stuckAfter)
        if result.timedOut {
            XCTFail("`\(arguments.joined(separator: " "))` got no answer within \(Int(Self.stuckAfter)) s; aborting the mount", file: file, line: line)
            _ = try? Subprocess.run([bin, "unmount", "--force", mnt], timeout: 30)
        }
        return result
    }

    private func assertAlive(_ when: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let probe = try answered(["stat", "-f", "-c", "%b", mnt], file: file, line: line)
        XCTAssertEqual(probe.status, 0, "\(when): \(probe)\ndaemon: \(fixture.daemonStderrText())", file: file, line: line)
        if let daemon = fixture.daemonPID {
            XCTAssertEqual(kill(daemon, 0), 0, "\(when): the daemon died: \(fixture.daemonStderrText())", file: file, line: line)
        }
    }

    // MARK: Sizes

    /// `capacity=2^64-1,external=2^64-2` once mounted, and the first `df`
    /// killed the daemon (device used rounded up to a block overflowed).
    func testSizesPastTheLargestAreRefusedAtMount() throws {
        let arguments = fixture.mountArguments(["capacity=18446744073709551615", "external=18446744073709551614"],
                                               foreground: false, inPlace: false)
        try assertRejected(Array(arguments.dropFirst()), status: 64, mentioning: ["4 EiB"])
        XCTAssertFalse(MountTable.isMounted(mnt), "mounted with a capacity past the largest size")
    }

    /// At the largest sizes taken, `df` works; past them `setfattr` gets
    /// `EINVAL` (and `purgefs space` exit 64), and the mount keeps answering.
    func testTheLargestSizesWorkAndLargerOnesAreRefusedOnAMount() throws {
        try fixture.mount(options: ["capacity=\(ByteSize.maximum)", "external=\(ByteSize.maximum - 1)"])
        let df = try answered(["df", "-B1", "--output=size,used,avail", mnt])
        XCTAssertEqual(df.status, 0, "\(df)")
        let figures = df.stdout.split(separator: "\n").last.map { $0.split(separator: " ").compactMap { UInt64($0) } }
        XCTAssertEqual(figures?.first.map { $0 / 4096 }, ByteSize.maximum / 4096, df.stdout)
        XCTAssertEqual(figures?.last, 0, "less than a block available: \(df.stdout)")
        try assertAlive("after df at the largest sizes")

        for (attribute, value) in [("capacity", "18446744073709551615"), ("external", "18446744073709551614"),
                                   ("capacity", "\(ByteSize.maximum + 1)"), ("purge", "18446744073709551615")] {
            let set = try answered(["setfattr", "-n", pf(attribute), "-v", value, mnt])
            XCTAssertNotEqual(set.status, 0, "\(attribute)=\(value) was taken: \(set)")
            XCTAssertTrue(set.stderr.contains("Invalid argument"), "\(attribute)=\(value): \(set)")
            try assertAlive("after setfattr \(attribute)=\(value)")
        }
        // The largest purge taken: everything purgeable goes, and the figures add up.
        let purge = try answered(["setfattr", "-n", pf("purge"), "-v", "\(ByteSize.maximum)", mnt])
        XCTAssertEqual(purge.status, 0, "\(purge)")
        try assertAlive("after purging the largest size")
        let capacity = try answered(["getfattr", "--only-values", "-n", pf("capacity"), mnt])
        XCTAssertEqual(capacity.stdout, "\(ByteSize.maximum)", "\(capacity)")
        try assertRejected(["space", mnt, "--capacity", "18446744073709551615"], status: 64, mentioning: ["4 EiB"])

        // The issue's order: a capacity, then an external one byte below it, then df.
        let shrunk = try answered(["setfattr", "-n", pf("external"), "-v", "1", mnt])
        XCTAssertEqual(shrunk.status, 0, "\(shrunk)")
        let grown = try answered(["setfattr", "-n", pf("external"), "-v", "\(ByteSize.maximum - 1)", mnt])
        XCTAssertEqual(grown.status, 0, "\(grown)")
        let again = try answered(["df", mnt])
        XCTAssertEqual(again.status, 0, "\(again)")
        try assertAlive("after the last df")
    }

    // MARK: Globs

    /// A rule whose glob has 30 stars, and the lookup of a 60-letter name
    /// it does not match: the matcher tried every split and spun for
    /// minutes, the `stat` unkillable, and `fault clear` waited too.
    func testAGlobWithThirtyStarsAnswersALookupAtOnce() throws {
        let name = String(repeating: "a", count: 60)
        XCTAssertTrue(FileManager.default.createFile(atPath: fixture.container + "/" + name, contents: Data("x".utf8)))
        try fixture.mount()
        let pattern = String(repeating: "*a", count: 30) + "b"
        try succeed("fault", "add", mnt, "--op", "lookup", "--path", pattern, "--errno", "EIO")

        let unmatched = try answered(["stat", "-c", "%s", mnt + "/" + name])
        XCTAssertEqual(unmatched.status, 0, "\(unmatched)")
        XCTAssertEqual(unmatched.stdout, "1\n", "the file, not the rule's error")
        let matched = try answered(["stat", "-c", "%s", mnt + "/" + name + "b"])
        XCTAssertNotEqual(matched.status, 0, "\(matched)")
        XCTAssertTrue(matched.stderr.contains("Input/output error"), "the rule matches \(name)b: \(matched)")
        let cleared = try answered([bin, "fault", "clear", mnt])
        XCTAssertEqual(cleared.status, 0, "\(cleared)")
        let after = try answered(["stat", "-c", "%s", mnt + "/" + name + "c"])
        XCTAssertTrue(after.stderr.contains("No such file"), "rules cleared: \(after)")
        try assertAlive("after the glob")
    }

    /// A pattern longer than a rule may have: one line and exit 64 from
    /// `fault add`, and a rules file naming its line.
    func testAPatternPastTheBoundIsRefused() throws {
        try fixture.mount()
        let pattern = String(repeating: "*a", count: FaultGlob.maximumLength / 2) + "b"
        try assertRejected(["fault", "add", mnt, "--op", "lookup", "--path", pattern, "--errno", "EIO"],
                           status: 64, mentioning: ["at most \(FaultGlob.maximumLength)"])
        XCTAssertEqual(try succeed("fault", "list", mnt, "--json").filter { $0 == "{" }.count, 0, "no rule was added")
    }
}
