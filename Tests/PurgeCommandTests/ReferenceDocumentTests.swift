import Foundation
import PurgeCore
import XCTest
@testable import PurgeCommand

/// docs/REFERENCE.md names everything the code offers, and what users read
/// (README, the reference, --help) links only to files that exist.
final class ReferenceDocumentTests: XCTestCase {
    static let root: String = {
        var dir = (#filePath as NSString).deletingLastPathComponent
        while dir != "/" && !FileManager.default.fileExists(atPath: dir + "/Package.swift") {
            dir = (dir as NSString).deletingLastPathComponent
        }
        return dir
    }()

    /// What users read, README first.
    static let documents = ["README.md", "docs/GUIDE.md", "docs/FAQ.md", "docs/REFERENCE.md", "docs/DESIGN.md",
                            "docs/BENCHMARKS.md", "docs/CONFORMANCE.md"]

    func text(_ path: String) throws -> String {
        try String(contentsOfFile: Self.root + "/" + path, encoding: .utf8)
    }

    func testReferenceNamesEveryCommandOptionAttributeAndMetric() throws {
        let reference = try text("docs/REFERENCE.md")
        for command in Purgefs.subcommands {
            XCTAssertTrue(reference.contains("### \(command.name)") || reference.contains("### pin, unpin") && ["pin", "unpin"].contains(command.name)
                          || reference.contains("### evict, download") && ["evict", "download"].contains(command.name),
                          "a section for \(command.name)")
            XCTAssertTrue(reference.contains("purgefs \(command.name)"), command.name)
        }
        for entry in MountOptionCatalog.purgefsOptions {
            XCTAssertTrue(reference.contains("`\(entry.name)"), "mount option \(entry.name)")
        }
        for word in MountOptionCatalog.passThroughFlags + MountOptionCatalog.ignoredWords {
            XCTAssertTrue(reference.contains(word), word)
        }
        for attribute in PurgeAttribute.allCases {
            let row = reference.split(separator: "\n").first { $0.hasPrefix("| `\(attribute.fullName)` |") }
            let cells = try XCTUnwrap(row, attribute.fullName).split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            XCTAssertEqual(cells[1], attribute.access.rawValue, "\(attribute.fullName): the reference's access is the code's")
            XCTAssertEqual(cells[2].replacingOccurrences(of: "`", with: ""), attribute.placesText,
                           "\(attribute.fullName): the reference's paths are the code's")
            XCTAssertEqual(cells[3].isEmpty, attribute.setterText == nil, "\(attribute.fullName): who may set it")
        }
        let names = PrometheusText.metrics.map(\.name)
        XCTAssertGreaterThan(names.count, 10)
        for name in names { XCTAssertTrue(reference.contains("`\(name)`"), name) }
        XCTAssertTrue(reference.contains("powers of 1024"))
    }

    /// Relative markdown links in the documents, and file names
    /// the help texts mention, point to files in the repository.
    func testNothingPointsToAMissingFile() throws {
        for document in Self.documents {
            let content = try text(document)
            let base = (document as NSString).deletingLastPathComponent
            let pattern = try NSRegularExpression(pattern: #"\]\(([^)#:]+)(#[^)]*)?\)"#)
            for match in pattern.matches(in: content, range: NSRange(content.startIndex..., in: content)) {
                let target = String(content[Range(match.range(at: 1), in: content)!])
                let path = base.isEmpty ? target : base + "/" + target
                XCTAssertTrue(FileManager.default.fileExists(atPath: Self.root + "/" + path), "\(document) links to \(target)")
            }
            XCTAssertFalse(content.contains("SPEC.md"), "\(document) sends users to SPEC.md, which is not in the repository")
        }
        // The front door sends a reader nowhere the repository does not hold.
        let readme = try text("README.md")
        for scheme in ["http://", "https://"] {
            XCTAssertFalse(readme.contains(scheme), "README.md links outside the repository (\(scheme))")
        }
        let helps = [Purgefs.help, AttributesHelp.text] + Purgefs.subcommands.map { $0.help }
        for help in helps {
            XCTAssertFalse(help.contains("SPEC"), help)
            if help.contains("docs/REFERENCE.md") { XCTAssertTrue(FileManager.default.fileExists(atPath: Self.root + "/docs/REFERENCE.md")) }
        }
    }

    /// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as `-`.
    static func anchor(_ heading: String) -> String {
        String(heading.lowercased().unicodeScalars.filter {
            CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_" || $0 == " "
        }.map(Character.init)).replacingOccurrences(of: " ", with: "-")
    }

    /// The anchors of a markdown document's headings, outside fenced code.
    func anchors(_ document: String) throws -> Set<String> {
        var inFence = false, result: Set<String> = []
        for line in try text(document).split(separator: "\n") {
            if line.hasPrefix("```") { inFence.toggle(); continue }
            guard !inFence, line.hasPrefix("#") else { continue }
            result.insert(Self.anchor(String(line.drop { $0 == "#" }.dropFirst())))
        }
        return result
    }

    /// Every `file#anchor` and `#anchor` link among the documents names a heading there.
    func testEveryAnchorNamesAHeading() throws {
        let documents = Self.documents
        let pattern = try NSRegularExpression(pattern: #"\]\(([^)#:]*)#([^)]+)\)"#)
        var checked = 0, headings: [String: Set<String>] = [:]
        for document in documents { headings[document] = try anchors(document) }
        for document in documents {
            let content = try text(document)
            let base = (document as NSString).deletingLastPathComponent
            for match in pattern.matches(in: content, range: NSRange(content.startIndex..., in: content)) {
                let target = String(content[Range(match.range(at: 1), in: content)!])
                let anchor = String(content[Range(match.range(at: 2), in: content)!])
                let path = target.isEmpty ? document
                    : ((base.isEmpty ? target : base + "/" + target) as NSString).standardizingPath
                guard documents.contains(path) else { continue }
                XCTAssertTrue(headings[path]!.contains(anchor), "\(document) links to \(path)#\(anchor), which no heading there makes")
                checked += 1
            }
        }
        XCTAssertGreaterThan(checked, 20)
    }

    /// `purgefs help attributes` lists every attribute once, from the code.
    func testAttributesHelpListsEveryAttribute() {
        let lines = AttributesHelp.text.split(separator: "\n").filter { $0.hasPrefix("  user.purgefs.") }
        XCTAssertEqual(lines.map { String($0.split(separator: " ")[0]) }, PurgeAttribute.allCases.map(\.fullName))
        for line in AttributesHelp.text.split(separator: "\n") { XCTAssertLessThanOrEqual(line.count, 80, String(line)) }
    }

    // MARK: The catalogs against the reference and --help, both ways

    /// The lines of `document` from the heading `heading` to the next heading
    /// of the same or a higher level.
    func section(_ heading: String, of document: String) -> [Substring] {
        let lines = document.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0 == heading }) else { return [] }
        let level = heading.prefix { $0 == "#" }.count
        return Array(lines[(start + 1)...].prefix { line in
            let hashes = line.prefix { $0 == "#" }.count
            return !(hashes > 0 && hashes <= level && line.dropFirst(hashes).hasPrefix(" "))
        })
    }

    /// The first cell of each row of the first table in `lines`, without
    /// backticks, an escaped `\|` read as `|`.
    func firstCells(_ lines: [Substring]) -> [String] {
        lines.drop { !$0.hasPrefix("|") }.prefix { $0.hasPrefix("|") }.dropFirst(2).map { row in
            let cells = row.replacingOccurrences(of: "\\|", with: "\u{0}").split(separator: "|")
            return cells[0].trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "`", with: "")
                .replacingOccurrences(of: "\u{0}", with: "|")
        }
    }

    /// The words after `purgefs ` in `lines`: the subcommands a synopsis names.
    func synopsisCommands(_ lines: [Substring]) -> Set<String> {
        var names: Set<String> = []
        for line in lines {
            var rest = line[...]
            while let range = rest.range(of: "purgefs ") {
                let word = rest[range.upperBound...].prefix { $0.isLetter || $0 == "-" }
                if !word.isEmpty, word.first!.isLowercase { names.insert(String(word)) }
                rest = rest[range.upperBound...]
            }
        }
        return names
    }

    /// Every subcommand `Purgefs.subcommands` routes has a `### NAME` section
    /// under REFERENCE's Commands and a line in its synopsis and in `purgefs
    /// --help`; no section, synopsis line or help line names one that is gone.
    func testSubcommandsMatchTheReferenceAndHelp() throws {
        let reference = try text("docs/REFERENCE.md")
        let known = Set(Purgefs.subcommands.map { $0.name })
        let commands = section("## Commands", of: reference)
        XCTAssertFalse(commands.isEmpty, "REFERENCE has a Commands section")
        let headings = commands.filter { $0.hasPrefix("### ") }.flatMap { $0.dropFirst(4).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        XCTAssertEqual(Set(headings), known.union(["help"]), "REFERENCE's ### sections under Commands are the subcommands")
        let synopsis = commands.prefix { !$0.hasPrefix("### ") }
        XCTAssertEqual(synopsisCommands(Array(synopsis)), known.union(["help"]), "REFERENCE's synopsis names the subcommands")
        let help = Purgefs.help.split(separator: "\n", omittingEmptySubsequences: false)
        let usage = help.drop { $0 != "Usage:" }.prefix { !$0.isEmpty }
        XCTAssertEqual(synopsisCommands(Array(usage)), known.union(["help"]), "purgefs --help's usage names the subcommands")
        let rows = help.drop { $0 != "Commands:" }.dropFirst().prefix { !$0.isEmpty }.filter { !$0.hasPrefix("   ") }
            .map { String($0.split(separator: " ")[0]) }
        XCTAssertEqual(Set(rows), known.union(["help"]), "purgefs --help's Commands rows")
        for command in Purgefs.subcommands {
            XCTAssertTrue(command.help.contains("purgefs \(command.name)"), "\(command.name) --help shows its usage")
        }
    }

    /// The mount options table of REFERENCE and `purgefs mount --help` list
    /// exactly `MountOptionCatalog.purgefsOptions`.
    func testMountOptionsMatchTheReferenceAndHelp() throws {
        let reference = try text("docs/REFERENCE.md")
        let known = MountOptionCatalog.purgefsOptions.map { $0.name }
        let documented = firstCells(section("## Mount options", of: reference)).map { String($0.prefix { $0 != "=" }) }
        XCTAssertEqual(documented.sorted(), known.sorted(), "REFERENCE's mount option table is the catalog")
        let terms = firstCells(section("## Mount options", of: reference))
        for entry in MountOptionCatalog.purgefsOptions {
            let term = entry.valueName.map { "\(entry.name)=\($0)" } ?? entry.name
            XCTAssertTrue(terms.contains(term), "REFERENCE writes \(term) as the catalog does: \(terms)")
        }
        let help = MountHelp.text.split(separator: "\n", omittingEmptySubsequences: false)
        let rows = help.drop { $0 != "purgefs options:" }.dropFirst().prefix { !$0.isEmpty }.filter { !$0.hasPrefix("   ") }
            .map { String($0.split(separator: " ")[0].prefix { $0 != "=" }) }
        XCTAssertEqual(rows.sorted(), known.sorted(), "purgefs mount --help lists the catalog")
    }

    /// The man page's MOUNT OPTIONS list each entry of the option table,
    /// written as the help writes it (`name=PLACEHOLDER`), and no other.
    func testManPageListsTheOptionTable() throws {
        let page = try text("docs/purgefs.1").split(separator: "\n", omittingEmptySubsequences: false)
        let options = page.drop { $0 != ".SH MOUNT OPTIONS" }.dropFirst().prefix { !$0.hasPrefix(".SH ") }
        // Each term is the line after a .TP: `.BI name= PLACEHOLDER`, `.BR name= ...` or `.B name`.
        let terms = zip(options, options.dropFirst()).filter { $0.0 == ".TP" }.map { _, line in
            line.split(separator: " ", maxSplits: 1).dropFirst().joined()
                .replacingOccurrences(of: #"\\f[IRB]"#, with: "", options: .regularExpression)
                .replacingOccurrences(of: "= ", with: "=")
        }
        XCTAssertEqual(terms.sorted(), MountOptionCatalog.purgefsOptions.map(\.term).sorted(),
                       "the man page's MOUNT OPTIONS are the table's, each as name=PLACEHOLDER")
    }

    /// The attribute table of REFERENCE lists exactly `PurgeAttribute`.
    func testAttributesMatchTheReference() throws {
        let reference = try text("docs/REFERENCE.md")
        let documented = firstCells(section("## Attributes", of: reference))
        XCTAssertEqual(documented.sorted(), PurgeAttribute.allCases.map(\.fullName).sorted(), "REFERENCE's attribute table is PurgeAttribute")
        XCTAssertEqual(Set(documented).count, documented.count, "each attribute once")
    }

    /// Each flag a subcommand's --help shows is in REFERENCE, and each flag
    /// REFERENCE's synopsis shows is in some subcommand's --help.
    func testFlagsMatchTheReferenceAndHelp() throws {
        let reference = try text("docs/REFERENCE.md")
        func flags(_ text: some StringProtocol) -> Set<String> {
            let pattern = try! NSRegularExpression(pattern: #"(?<![A-Za-z0-9-])--[a-z][a-z0-9-]*"#)
            let string = String(text)
            return Set(pattern.matches(in: string, range: NSRange(string.startIndex..., in: string)).map {
                String(string[Range($0.range, in: string)!])
            })
        }
        var helped: Set<String> = flags(Purgefs.help)
        for command in Purgefs.subcommands {
            let own = flags(command.help)
            helped.formUnion(own)
            for flag in own {
                XCTAssertTrue(reference.contains(flag), "\(command.name) --help shows \(flag); REFERENCE does not")
            }
        }
        let synopsis = section("## Commands", of: reference).prefix { !$0.hasPrefix("### ") }.joined(separator: "\n")
        for flag in flags(synopsis) {
            XCTAssertTrue(helped.contains(flag), "REFERENCE's synopsis shows \(flag); no --help does")
        }
    }

    /// The README is a front door: short, the quickstart early, no history.
    func testReadmeIsAFrontDoor() throws {
        let readme = try text("README.md")
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertLessThanOrEqual(lines.count, 250, "README.md has \(lines.count) lines")
        let quickstart = try XCTUnwrap(lines.firstIndex(of: "## Quickstart"), "README has ## Quickstart")
        XCTAssertLessThan(quickstart, 60, "the quickstart starts within the first 60 lines")
        for document in Self.documents {
            let content = try text(document)
            let range = NSRange(content.startIndex..., in: content)
            let sessions = try NSRegularExpression(pattern: #"\b[Ss]essions? [0-9]"#)
            XCTAssertEqual(sessions.matches(in: content, range: range).count, 0,
                           "\(document) names a measurement by a session, not by its run, date and commit")
            // Docs say what the code does and why, not which issue asked for it.
            let issues = try NSRegularExpression(pattern: #"\b[Ii]ssues? #?[0-9]+"#)
            for match in issues.matches(in: content, range: range) {
                XCTFail("\(document) names an issue: \(content[Range(match.range, in: content)!])")
            }
        }
    }
}
