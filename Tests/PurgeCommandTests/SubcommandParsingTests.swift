import PurgeCore
@testable import PurgeEngines
import XCTest
@testable import PurgeCommand

/// Parsing of the commands that act on a mount: what each accepts, and
/// the one line each gives for what it does not.
final class SubcommandParsingTests: XCTestCase {
    private func assertUsage<C: Subcommand>(_ type: C.Type, _ arguments: [String], _ line: String, at: UInt = #line) {
        do throws(CommandExit) {
            _ = try C(parsing: arguments)
            XCTFail("\(arguments) parsed", line: at)
        } catch {
            XCTAssertEqual(error, .usage(line), line: at)
        }
    }

    func testSpace() throws {
        let show = try SpaceCommand(parsing: ["/m"])
        XCTAssertEqual(show.pathArgument, "/m")
        XCTAssertNil(show.capacity)
        XCTAssertFalse(show.json)
        let set = try SpaceCommand(parsing: ["/m", "--capacity", "1G", "--external=100M", "--json"])
        XCTAssertEqual(set.capacity, ByteSize(bytes: 1 << 30))
        XCTAssertEqual(set.external, ByteSize(bytes: 100 << 20))
        XCTAssertTrue(set.json)
        XCTAssertEqual(try SpaceCommand(parsing: ["/m", "--external", "0"]).external, ByteSize(bytes: 0))
        assertUsage(SpaceCommand.self, [], "space: MOUNTPOINT is missing (see purgefs space --help)")
        assertUsage(SpaceCommand.self, ["/m", "--capacity", "0"], "space: --capacity 0: must be more than 0")
        assertUsage(SpaceCommand.self, ["/m", "--capacity", "lots"], "space: --capacity lots: not a size (bytes, or a number with K, M, G or T)")
        assertUsage(SpaceCommand.self, ["/m", "--low", "1G"], "space: unknown flag '--low' (see purgefs space --help)")
        XCTAssertEqual(try SpaceCommand(parsing: ["/m", "--available", "5M"]).available, ByteSize(bytes: 5 << 20))
        assertUsage(SpaceCommand.self, ["/m", "--available", "5M", "--external", "1M"],
                    "space: --available sets external itself; give it alone, without --external or --capacity")
        assertUsage(SpaceCommand.self, ["/m", "--available", "5X"], "space: --available 5X: not a size (bytes, or a number with K, M, G or T)")
    }

    func testRun() throws {
        let run = try RunCommand(parsing: ["-o", "capacity=1G", "-olow=1M", "--scenario", "s.txt", "--scratch", "--json",
                                           "--report=r.json", "/app", "--", "sh", "-c", "exit 3", "--", "-o"])
        XCTAssertEqual(run.options, ["capacity=1G", "low=1M"])
        XCTAssertEqual(run.scenarioArgument, "s.txt")
        XCTAssertEqual(run.reportArgument, "r.json")
        XCTAssertTrue(run.scratch)
        XCTAssertTrue(run.json)
        XCTAssertEqual(run.containerArgument, "/app")
        XCTAssertEqual(run.command, ["sh", "-c", "exit 3", "--", "-o"], "everything after the first -- is the command's")
        let plain = try RunCommand(parsing: ["/app", "--", "true"])
        XCTAssertEqual(plain.options, [])
        XCTAssertFalse(plain.scratch)
        assertUsage(RunCommand.self, ["/app", "true"],
                    "run: put -- before the command: purgefs run CONTAINER -- COMMAND [ARG...] (see purgefs run --help)")
        assertUsage(RunCommand.self, ["/app", "--"], "run: the command after -- is missing (see purgefs run --help)")
        assertUsage(RunCommand.self, ["--", "true"], "run: CONTAINER is missing (see purgefs run --help)")
        assertUsage(RunCommand.self, ["/app", "-o"], "run: put -- before the command: purgefs run CONTAINER -- COMMAND [ARG...] (see purgefs run --help)")
        assertUsage(RunCommand.self, ["/app", "-o", "--", "true"], "run: -o needs OPT[,OPT...]")
        assertUsage(RunCommand.self, ["/app", "--keep", "--", "true"], "run: unknown flag '--keep' (see purgefs run --help)")
        assertUsage(RunCommand.self, ["-o", "bogus=1", "/app", "--", "true"], "unknown mount option 'bogus'")
    }

    func testCrash() throws {
        let crash = try CrashCommand(parsing: ["/m"])
        XCTAssertEqual(crash.pathArgument, "/m")
        XCTAssertFalse(crash.dryRun)
        XCTAssertTrue(try CrashCommand(parsing: ["--dry-run", "/m"]).dryRun)
        assertUsage(CrashCommand.self, [], "crash: MOUNTPOINT is missing (see purgefs crash --help)")
        assertUsage(CrashCommand.self, ["/m", "--now"], "crash: unknown flag '--now' (see purgefs crash --help)")
    }

    func testPurge() throws {
        XCTAssertEqual(try ManualPurgeCommand(parsing: ["/m", "--all"]).amount, .all)
        XCTAssertEqual(try ManualPurgeCommand(parsing: ["--bytes", "1M", "/m"]).amount, .bytes(ByteSize(bytes: 1 << 20)))
        XCTAssertEqual(ManualPurgeCommand.Amount.all.attributeValue, "all")
        XCTAssertEqual(ManualPurgeCommand.Amount.bytes(ByteSize(bytes: 1 << 20)).attributeValue, "1048576")
        assertUsage(ManualPurgeCommand.self, ["/m"], "purge: say how much: --bytes SIZE or --all (see purgefs purge --help)")
        assertUsage(ManualPurgeCommand.self, ["/m", "--all", "--bytes", "1K"], "purge: give either --bytes SIZE or --all, not both")
        assertUsage(ManualPurgeCommand.self, ["/m", "--bytes", "0"], "purge: --bytes 0: must be more than 0")
        assertUsage(ManualPurgeCommand.self, ["/m", "--bytes"], "purge: --bytes needs a SIZE")
        assertUsage(ManualPurgeCommand.self, ["--all"], "purge: MOUNTPOINT is missing (see purgefs purge --help)")
    }

    func testPinAndUnpin() throws {
        XCTAssertEqual(try PinCommand(parsing: ["/m/a"]).pathArgument, "/m/a")
        XCTAssertEqual(try UnpinCommand(parsing: ["--", "-a"]).pathArgument, "-a")
        assertUsage(PinCommand.self, [], "pin: PATH is missing (see purgefs pin --help)")
        assertUsage(UnpinCommand.self, ["/a", "/b"], "unpin: unexpected argument '/b'; give one PATH")
        assertUsage(PinCommand.self, ["-r", "/a"], "pin: unknown flag '-r' (see purgefs pin --help)")
        XCTAssertThrowsError(try PinCommand(parsing: ["--help"])) { XCTAssertEqual($0 as? CommandExit, .help(PinCommand.help)) }
        XCTAssertTrue(PinCommand.help.contains("Usage: purgefs pin PATH"))
        XCTAssertTrue(UnpinCommand.help.contains("Usage: purgefs unpin PATH"))
    }

    func testLogAndUsage() throws {
        XCTAssertTrue(try LogCommand(parsing: ["/m", "--json"]).json)
        XCTAssertFalse(try UsageCommand(parsing: ["/m"]).json)
        assertUsage(LogCommand.self, ["/m", "--days", "3"], "log: unknown flag '--days' (see purgefs log --help)")
        assertUsage(UsageCommand.self, [], "usage: PATH is missing (see purgefs usage --help)")
    }

    func testUsageHelpNamesEveryJSONField() {
        let figures = DirectoryFigures(size: 1, files: 1, allocated: 1, purgeable: 1, cloneSavings: 0)
        let device = DeviceFigures(capacity: 1, external: 0, containerUsed: 1, deviceUsed: 1, available: 0, availableImportant: 0, availableOpportunistic: 0,
                                   purgeable: 0, purgedBytes: 0, purgedFiles: 0)
        let report = UsageReport(path: "/m", mountpoint: "/m", app: nil, documents: 0, zones: [], directory: figures, device: device)
        guard case .object(let fields) = report.json, case .object(let deviceFields)? = report.json["device"] else {
            return XCTFail("not an object")
        }
        for (name, _) in fields + deviceFields { XCTAssertTrue(UsageCommand.help.contains(name), name) }
    }

    func testSpaceHelpNamesEveryJSONField() {
        let device = DeviceFigures(capacity: 1, external: 0, containerUsed: 1, deviceUsed: 1, available: 0, availableImportant: 0, availableOpportunistic: 0,
                                   purgeable: 0, purgedBytes: 0, purgedFiles: 0)
        guard case .object(let fields) = SpaceCommand.json(device, mountpoint: "/m") else { return XCTFail("not an object") }
        for (name, _) in fields where name != "mountpoint" { XCTAssertTrue(SpaceCommand.help.contains(name), name) }
    }
}

final class SpaceOrderTests: XCTestCase {
    private func order(capacity: UInt64?, external: UInt64?, current: (UInt64, UInt64)) -> [String] {
        SpaceCommand.order(capacity: capacity.map(ByteSize.init(bytes:)), external: external.map(ByteSize.init(bytes:)),
                           current: (capacity: current.0, external: current.1)).map { "\($0.0.rawValue)=\($0.1.bytes)" }
    }

    func testChangesThatFreeSpaceGoFirst() {
        XCTAssertEqual(order(capacity: 200, external: 50, current: (100, 10)), ["capacity=200", "external=50"])
        XCTAssertEqual(order(capacity: 50, external: 5, current: (100, 10)), ["external=5", "capacity=50"])
        XCTAssertEqual(order(capacity: 50, external: 20, current: (100, 10)), ["capacity=50", "external=20"])
        XCTAssertEqual(order(capacity: nil, external: 20, current: (100, 10)), ["external=20"])
        XCTAssertEqual(order(capacity: nil, external: nil, current: (100, 10)), [])
    }
}
