import PurgeCore
import PurgeEngines
import PurgeSys

/// `purgefs report REPORT.json --html FILE`: draws a report again as its
/// page: a `purgefs run` report (`--report`, `--json`) as `run --html`
/// draws it, an explore report as its strip of states.
struct ReportCommand: Subcommand {
    static let name = "report"
    static let abstract = "Draw a run or explore report (JSON) as a self-contained page"
    static let help = """
        Usage: purgefs report REPORT.json --html FILE

        \(TextLayout.paragraph(
            "Reads REPORT.json and writes FILE, one self-contained HTML page (no network, no external script, "
            + "style or font). A purgefs run report (run --report, --json) gives the page run --html writes: the "
            + "timeline of the samples with its marks, the summary and the storage at the start and the end. "
            + "An explore report (states, results, failures) gives the crash states as a strip along the "
            + "operations, passed and failed, each failed state opening its details. Anything else is refused."))

        Flags:
        \(flags.rows)

        Example:
          purgefs run --report run.json ~/app -- ./stress
          purgefs report run.json --html run.html
        """

    /// The largest report read.
    static let sizeLimit = 256 << 20

    static let flags = FlagTable<Self>(name, [
        .value("--html", "FILE", \.htmlArgument, "the page to write (required)"),
    ])

    var reportPath = ""
    var htmlPath = ""
    private var htmlArgument: String?

    init(parsing arguments: [String]) throws(CommandExit) {
        let parsed = try Self.flags.parse(arguments, help: Self.help, into: &self)
        reportPath = try parsed.onePath("REPORT.json", command: Self.name)
        try Self.flags.apply(parsed, to: &self)
        guard let html = htmlArgument else {
            throw .usage("report: --html FILE is missing (see purgefs report --help)")
        }
        htmlPath = html
    }

    mutating func validate() throws(CommandExit) {}

    func run(_ context: CommandContext) throws(CommandExit) {
        let bytes: [UInt8]
        do throws(Errno) {
            bytes = try FileDescriptor.readFile(reportPath, limit: Self.sizeLimit)
        } catch {
            throw .failure("report: cannot read \(reportPath): \(error)")
        }
        let page = try Self.page(for: String(decoding: bytes, as: UTF8.self), named: reportPath)
        do throws(Errno) {
            try page.write(to: htmlPath)
        } catch {
            throw .failure("report: cannot write \(htmlPath): \(error)")
        }
    }

    /// The page of a report's text, or the line saying why there is none.
    static func page(for text: String, named name: String) throws(CommandExit) -> HTMLPage {
        guard let report = JSONValue(parsing: text) else { throw .failure("report: \(name) is not JSON") }
        if ExplorePage.recognises(report) { return ExplorePage(report).page }
        if TimelinePage.recognises(report) { return TimelinePage(report).page }
        throw .failure("report: \(name) is neither a purgefs run report (command, duration_ms) "
            + "nor an explore report (states, results)")
    }
}
