import PurgeCore
@testable import PurgeEngines
import XCTest
@testable import PurgeCommand

/// A command's flag table drives both its parsing and its help.
final class FlagTableTests: XCTestCase {
    private struct Sample {
        var json = false
        var file: String?
        var size: ByteSize?
        var options: [String] = []
        static let flags = FlagTable<Sample>("sample", options: (\.options, "mount options"), [
            .switch("--json", \.json, "print JSON"),
            .value("--file", "FILE", \.file, "write FILE"),
            .value("--size", "SIZE", \.size, "a size, more than 0") { value throws(CommandExit) in try value.size(positive: true) },
            .helpRow("--other THING", "taken before the table"),
        ])
    }

    private func read(_ arguments: [String]) throws(CommandExit) -> (Sample, [String]) {
        var sample = Sample()
        let parsed = try Sample.flags.read(arguments, help: "HELP", into: &sample)
        return (sample, parsed.paths)
    }

    func testEachFlagSetsItsTypedField() throws {
        let (sample, paths) = try read(["-o", "capacity=1G", "/p", "--json", "--file=f", "--size", "2K", "-olow=1M"])
        XCTAssertTrue(sample.json)
        XCTAssertEqual(sample.file, "f")
        XCTAssertEqual(sample.size, ByteSize(bytes: 2048))
        XCTAssertEqual(sample.options, ["capacity=1G", "low=1M"])
        XCTAssertEqual(paths, ["/p"])
        let (plain, _) = try read([])
        XCTAssertFalse(plain.json)
        XCTAssertNil(plain.size)
    }

    func testMistakesNameTheCommandAndTheFlag() {
        for (arguments, line) in [
            (["--size", "0"], "sample: --size 0: must be more than 0"),
            (["--size", "lots"], "sample: --size lots: not a size (bytes, or a number with K, M, G or T)"),
            (["--file"], "sample: --file needs a FILE"),
            (["--json", "--json"], "sample: --json is given twice"),
            (["--other", "x"], "sample: unknown flag '--other' (see purgefs sample --help)"),
            (["-o"], "sample: -o needs OPT[,OPT...]"),
        ] {
            XCTAssertThrowsError(try read(arguments)) { XCTAssertEqual($0 as? CommandExit, .usage(line), "\(arguments)") }
        }
        XCTAssertThrowsError(try read(["--file", "x", "-h"])) { XCTAssertEqual($0 as? CommandExit, .help("HELP")) }
    }

    func testTheHelpRowsComeFromTheTable() {
        XCTAssertEqual(Sample.flags.rows.split(separator: "\n").map { $0.prefix(22).trimmingCharacters(in: .whitespaces) },
                       ["-o OPT[,OPT...]", "--json", "--file FILE", "--size SIZE", "--other THING", "-h, --help"])
    }

    /// Every converted command's help shows each flag its table parses.
    func testEveryCommandsHelpShowsItsTable() {
        func check<C>(_ help: String, _ table: FlagTable<C>, _ name: String) {
            for flag in table.flags { XCTAssertTrue(help.contains("  " + flag.term), "\(name): \(flag.term)") }
            if table.options != nil { XCTAssertTrue(help.contains("  " + OptionArguments.term), name) }
        }
        check(SpaceCommand.help, SpaceCommand.flags, "space")
        check(ManualPurgeCommand.help, ManualPurgeCommand.flags, "purge")
        check(CrashCommand.help, CrashCommand.flags, "crash")
        check(DemoCommand.help, DemoCommand.flags, "demo")
        check(ReportCommand.help, ReportCommand.flags, "report")
        check(LogCommand.help, LogCommand.flags, "log")
        check(MetricsCommand.help, MetricsCommand.flags, "metrics")
        check(UsageCommand.help, UsageCommand.flags, "usage")
        check(UICommand.help, UICommand.flags, "ui")
        check(RunCommand.help, RunCommand.flags, "run")
        check(FaultListCommand.help, FaultListCommand.flags, "fault list")
        check(FaultCommand.help, FaultListCommand.flags, "fault")
        check(MountCommand.help, MountCommand.flags, "mount")
        check(UnmountCommand.help, UnmountCommand.flags, "unmount")
    }

    /// `mount` and `unmount` look their flags up in their tables, keeping
    /// what their own loops allowed: a switch given twice.
    func testMountAndUnmountReadTheirTables() throws {
        XCTAssertTrue(try MountCommand(parsing: ["-f", "/c", "--foreground"]).foreground)
        XCTAssertFalse(try MountCommand(parsing: ["/c"]).foreground)
        XCTAssertTrue(try UnmountCommand(parsing: ["--force", "/m", "--force"]).force)
        XCTAssertFalse(try UnmountCommand(parsing: ["/m"]).force)
        XCTAssertThrowsError(try UnmountCommand(parsing: ["--force=1", "/m"])) {
            XCTAssertEqual($0 as? CommandExit, .usage("unmount: unknown flag '--force=1' (see purgefs unmount --help)"))
        }
    }
}

/// `fault add|list|clear` and `cloud offline|online|touch` are child
/// commands: each has its own help; the parent routes to them.
final class ChildCommandTests: XCTestCase {
    private func help(_ parse: () throws -> Void) -> String? {
        do {
            try parse()
            return nil
        } catch {
            guard case .help(let text)? = error as? CommandExit else { return nil }
            return text
        }
    }

    func testAChildsHelpIsItsOwnAndTheParentsListsThemAll() {
        XCTAssertEqual(help { _ = try FaultCommand(parsing: ["add", "--help"]) }, FaultAddCommand.help)
        XCTAssertEqual(help { _ = try FaultCommand(parsing: ["list", "/m", "-h"]) }, FaultListCommand.help)
        XCTAssertEqual(help { _ = try FaultCommand(parsing: ["clear", "--help"]) }, FaultClearCommand.help)
        XCTAssertEqual(help { _ = try FaultCommand(parsing: ["--help"]) }, FaultCommand.help)
        XCTAssertEqual(help { _ = try FaultCommand(parsing: ["zap", "--help"]) }, FaultCommand.help)
        XCTAssertEqual(help { _ = try CloudCommand(parsing: ["touch", "-h"]) }, CloudTouchCommand.help)
        XCTAssertEqual(help { _ = try CloudCommand(parsing: ["offline", "/m", "--help"]) }, CloudOfflineCommand.help)
        XCTAssertEqual(help { _ = try CloudCommand(parsing: ["-h"]) }, CloudCommand.help)
        for child in FaultCommand.children.children {
            XCTAssertTrue(FaultCommand.help.contains(child.usage), child.name)
            XCTAssertTrue(child.help.hasPrefix("Usage: " + child.usage), child.name)
        }
        for child in CloudCommand.children.children { XCTAssertTrue(CloudCommand.help.contains(child.usage), child.name) }
    }

    func testChildrenHelpFitsIn80Columns() {
        let helps = FaultCommand.children.children.map { $0.help } + CloudCommand.children.children.map { $0.help }
        for help in helps {
            for line in help.split(separator: "\n") where !line.contains("--short-write | --offline") {
                XCTAssertLessThanOrEqual(line.count, 80, String(line))
            }
        }
    }

    func testTheParentNamesItsChildren() {
        XCTAssertEqual(FaultCommand.children.names, "add, list or clear")
        XCTAssertEqual(CloudCommand.children.names, "offline, online or touch")
        XCTAssertEqual(try CloudCommand(parsing: ["touch", "/m", "Documents/a"]).action, .touch("Documents/a"))
        XCTAssertEqual(try CloudCommand(parsing: ["offline", "/m"]).pathArgument, "/m")
        for (arguments, line) in [
            ([], "cloud: say offline, online or touch (see purgefs cloud --help)"),
            (["zap", "/m"], "cloud: unknown action 'zap' (offline, online or touch)"),
            (["online"], "cloud online: give MOUNTPOINT (see purgefs cloud --help)"),
            (["touch", "/m"], "cloud touch: give MOUNTPOINT and PATH (see purgefs cloud --help)"),
            (["offline", "--now", "/m"], "cloud: unknown flag '--now' (see purgefs cloud --help)"),
        ] {
            XCTAssertThrowsError(try CloudCommand(parsing: arguments)) { XCTAssertEqual($0 as? CommandExit, .usage(line), "\(arguments)") }
        }
    }
}
