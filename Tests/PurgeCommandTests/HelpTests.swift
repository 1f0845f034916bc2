import XCTest
import PurgeCore
@testable import PurgeCommand

/// The help must stay true to the parser: every option it accepts is documented.
final class HelpTests: XCTestCase {
    func testMountHelpDocumentsEveryOption() {
        let help = MountCommand.help
        for entry in MountOptionCatalog.purgefsOptions {
            XCTAssertTrue(help.contains("  \(entry.name)"), entry.name)
            XCTAssertTrue(help.contains("Default: \(entry.defaultText)."), entry.name)
        }
        for word in MountOptionCatalog.passThroughFlags + MountOptionCatalog.ignoredWords {
            XCTAssertTrue(help.contains(word), word)
        }
    }

    func testHelpFitsIn80Columns() {
        for text in [Purgefs.help] + Purgefs.subcommands.map({ $0.help }) {
            for line in text.split(separator: "\n") where !line.contains("fuse.purgefs  capacity") {
                XCTAssertLessThanOrEqual(line.count, 90, String(line))
            }
        }
    }

    func testTopLevelHelpListsEveryCommand() {
        for command in Purgefs.subcommands { XCTAssertTrue(Purgefs.help.contains("  \(command.name) ")) }
    }
}
