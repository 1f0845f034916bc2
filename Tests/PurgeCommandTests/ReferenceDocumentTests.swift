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

    /// Relative markdown links in the README and the reference, and file names
    /// the help texts mention, point to files in the repository.
    func testNothingPointsToAMissingFile() throws {
        for document in ["README.md", "docs/REFERENCE.md", "docs/DESIGN.md"] {
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
        let helps = [Purgefs.help, AttributesHelp.text] + Purgefs.subcommands.map { $0.help }
        for help in helps {
            XCTAssertFalse(help.contains("SPEC"), help)
            if help.contains("docs/REFERENCE.md") { XCTAssertTrue(FileManager.default.fileExists(atPath: Self.root + "/docs/REFERENCE.md")) }
        }
    }

    /// `purgefs help attributes` lists every attribute once, from the code.
    func testAttributesHelpListsEveryAttribute() {
        let lines = AttributesHelp.text.split(separator: "\n").filter { $0.hasPrefix("  user.purgefs.") }
        XCTAssertEqual(lines.map { String($0.split(separator: " ")[0]) }, PurgeAttribute.allCases.map(\.fullName))
        for line in AttributesHelp.text.split(separator: "\n") { XCTAssertLessThanOrEqual(line.count, 80, String(line)) }
    }
}
