import PurgeCore
@testable import PurgeEngines
import XCTest
@testable import PurgeCommand

/// `purgefs demo`: its arguments, and the pure parts of the tour (the
/// transcript's quoting, df's figures, the sample's numbers). The tour
/// itself runs in IntegrationTests/DemoTourTests.
final class DemoArgumentTests: XCTestCase {
    private func usage(_ arguments: [String]) -> CommandExit? {
        do throws(CommandExit) {
            _ = try DemoCommand(parsing: arguments)
            return nil
        } catch {
            return error
        }
    }

    func testArguments() throws {
        XCTAssertFalse(try DemoCommand(parsing: []).keep)
        XCTAssertTrue(try DemoCommand(parsing: ["--keep"]).keep)
        XCTAssertEqual(usage(["--help"]), .help(DemoCommand.help))
        XCTAssertEqual(usage(["--keep", "-h"]), .help(DemoCommand.help))
        XCTAssertEqual(usage(["--bogus"]), .usage("demo: unknown flag '--bogus' (see purgefs demo --help)"))
        XCTAssertEqual(usage(["/tmp/x"]), .usage("demo: unexpected argument '/tmp/x' (see purgefs demo --help)"))
        XCTAssertEqual(usage(["--keep", "--keep"]), .usage("demo: --keep is given twice"))
        XCTAssertEqual(usage(["--keep=yes"]), .usage("demo: --keep takes no value (got --keep=yes)"))
    }

    func testRouted() throws {
        guard case .run(let command) = try Purgefs.route(["demo", "--keep"], pathExists: { _ in false }),
              let demo = command as? DemoCommand else { return XCTFail("demo is not routed to DemoCommand") }
        XCTAssertTrue(demo.keep)
        XCTAssertTrue(Purgefs.help.contains("purgefs demo [--keep]"))
        XCTAssertTrue(Purgefs.help.contains("  demo "))
    }

    func testShellQuoting() {
        XCTAssertEqual(DemoTranscript.shellLine(["purgefs", "space", "mnt", "--capacity", "12M"]),
                       "purgefs space mnt --capacity 12M")
        XCTAssertEqual(DemoTranscript.shellLine(["echo", "two words"]), "echo 'two words'")
        XCTAssertEqual(DemoTranscript.shellLine(["echo", "it's"]), "echo 'it'\\''s'")
        XCTAssertEqual(DemoTranscript.shellLine(["find", "-printf", "%y %8s  %P\\n"]), "find -printf '%y %8s  %P\\n'")
        XCTAssertEqual(DemoTranscript.shellWord(""), "''")
        XCTAssertEqual(DemoTranscript.shellWord("capacity=64M,low=8M"), "capacity=64M,low=8M")
    }

    func testTranscriptShape() {
        final class Sink { var text = "" }
        let sink = Sink()
        let transcript = DemoTranscript(emit: { sink.text += $0 })
        transcript.heading("Step")
        transcript.command(["cat", "a b"], redirect: "> out")
        transcript.output("")
        transcript.output("one")
        transcript.output("two\n")
        transcript.rows(["x", "y"])
        XCTAssertEqual(sink.text, "\n== Step\n$ cat 'a b' > out\none\ntwo\n  x\n  y\n")
    }

    func testDiskFreeFigures() {
        XCTAssertEqual(DiskFreeFigures.human(0), "0")
        XCTAssertEqual(DiskFreeFigures.human(1023), "1023")
        XCTAssertEqual(DiskFreeFigures.human(1024), "1.0K")
        XCTAssertEqual(DiskFreeFigures.human(64 << 20), "64M")
        XCTAssertEqual(DiskFreeFigures.human(55_001_088), "53M", "rounded up, as df -h does")
        XCTAssertEqual(DiskFreeFigures.human(3_565_158), "3.4M")
        XCTAssertEqual(DiskFreeFigures.human(3_565_159), "3.5M", "just over 3.4 MiB")
        XCTAssertEqual(DiskFreeFigures.human(10 << 20), "10M")
        XCTAssertEqual(DiskFreeFigures.human((10 << 20) - 1), "10M")
        XCTAssertEqual(DiskFreeFigures.human((1 << 30) - 1), "1.0G")

        let figures = DiskFreeFigures(fragmentSize: 4096, blocks: 16384, freeBlocks: 14000, availableBlocks: 13000)
        XCTAssertEqual(figures, DiskFreeFigures(size: 64 << 20, used: 2384 * 4096, available: 13000 * 4096))
        XCTAssertEqual(figures.usePercent, 16, "2384 / 15384, rounded up")
        XCTAssertEqual(DiskFreeFigures(size: 0, used: 0, available: 0).usePercent, 0)
        XCTAssertEqual(figures.table(source: "/c", mountPoint: "/m"), [
            "Filesystem  Size  Used Avail Use% Mounted on",
            "/c           64M  9.4M   51M  16% /m",
        ])
    }

    func testSqueezeLeavesLessThanLowButSomethingAvailable() {
        for (capacity, available) in [(UInt64(64 << 20), UInt64(57 << 20)), (64 << 20, 60_000_000), (1 << 30, 1 << 29)] {
            let squeezed = DemoSample.squeezedCapacity(capacity: capacity, available: available)
            XCTAssertEqual(squeezed % (1 << 20), 0, "whole MiB")
            let left = squeezed - (capacity - available)
            XCTAssertGreaterThanOrEqual(left, DemoSample.squeezedAvailable)
            XCTAssertLessThan(left, DemoSample.squeezedAvailable + (1 << 20))
            XCTAssertLessThan(left, DemoSample.low, "the monitor must have work")
        }
    }

    /// The story the tour tells holds for the sample: the manual purge takes
    /// some caches and leaves others, and what is left is less than the
    /// monitor wants back after the squeeze, so it purges all of it and the
    /// write into Documents then finds nothing purgeable.
    func testTheSampleTellsTheStory() throws {
        let purgeable = DemoSample.files
            .filter { file in DemoSample.zones.contains { file.path.hasPrefix($0 + "/") } }
            .sorted { $0.age > $1.age }
        XCTAssertEqual(Set(purgeable.map(\.age)).count, purgeable.count, "distinct ages, so the order is clear")
        let asked = try ByteSize(parsing: DemoSample.manualPurge).bytes
        var freed: UInt64 = 0
        let taken = purgeable.prefix { file in
            defer { freed += UInt64(file.size) }
            return freed < asked
        }
        XCTAssertGreaterThan(taken.count, 1)
        XCTAssertLessThan(taken.count, purgeable.count)
        let left = purgeable.dropFirst(taken.count).reduce(UInt64(0)) { $0 + UInt64($1.size) }
        XCTAssertLessThan(DemoSample.squeezedAvailable + (1 << 20) + left, DemoSample.high,
                          "the monitor cannot reach high, so it purges everything left")
        XCTAssertTrue(DemoSample.files.contains { $0.path.hasPrefix("Documents/") && $0.path.split(separator: "/").count > 2 },
                      "a nested directory in Documents")
        XCTAssertTrue(DemoSample.files.contains { $0.path.hasPrefix("Library/Preferences/") })
        XCTAssertEqual(DemoSample.mountOptions, "capacity=64M,low=8M,high=10M")
    }
}
