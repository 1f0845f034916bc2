import Foundation
import XCTest

/// The package's own shape, read from its sources: C string and sleep calls
/// go through PurgeSys's wrappers (`CNames`, `CurrentProcess.sleep`), the
/// only target that calls libc; and every target that imports one of the
/// package's modules declares it in Package.swift.
final class SourceBoundaryTests: XCTestCase {
    static let root: String = {
        var dir = (#filePath as NSString).deletingLastPathComponent
        while dir != "/" && !FileManager.default.fileExists(atPath: dir + "/Package.swift") {
            dir = (dir as NSString).deletingLastPathComponent
        }
        return dir
    }()

    /// The Swift files of each target under Sources/, by target name.
    static func swiftFiles() throws -> [String: [String]] {
        var files: [String: [String]] = [:]
        for target in try FileManager.default.contentsOfDirectory(atPath: root + "/Sources") {
            guard let walk = FileManager.default.enumerator(atPath: root + "/Sources/" + target) else { continue }
            for case let path as String in walk where path.hasSuffix(".swift") {
                files[target, default: []].append(root + "/Sources/" + target + "/" + path)
            }
        }
        return files
    }

    func testCStringAndSleepCallsGoThroughPurgeSys() throws {
        let wrapped = ["strcmp", "strncmp", "strlen", "nanosleep", "usleep"]
        var found: [String] = []
        for (target, paths) in try Self.swiftFiles() where target != "PurgeSys" {
            for path in paths {
                let text = try String(contentsOfFile: path, encoding: .utf8)
                for call in wrapped where text.range(of: "\\b\(call)\\(", options: .regularExpression) != nil {
                    found.append("\(path.dropFirst(Self.root.count + 1)): \(call)")
                }
            }
        }
        XCTAssertEqual(found, [], "libc calls outside PurgeSys")
    }

    func testEveryImportedPackageModuleIsDeclared() throws {
        let manifest = try String(contentsOfFile: Self.root + "/Package.swift", encoding: .utf8)
        let files = try Self.swiftFiles()
        let modules = Set(files.keys).union(["CLinux", "CFuse", "CSQLite"])
        var missing: [String] = []
        for (target, paths) in files.sorted(by: { $0.key < $1.key }) {
            // `.target(name: "X", dependencies: [...])`, or an executable target likewise.
            guard let declaration = manifest.range(
                of: "[Tt]arget\\(name: \"\(target)\"(, dependencies: \\[[^\\]]*\\])?", options: .regularExpression)
            else { continue }
            let declared = String(manifest[declaration])
            var imported: Set<String> = []
            for path in paths {
                for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
                    let words = line.split(separator: " ")
                    guard let at = words.firstIndex(of: "import"), at + 1 < words.count,
                          words[..<at].allSatisfy({ ["@testable", "internal", "public", "@_exported"].contains($0) })
                    else { continue }
                    let module = String(words[at + 1])
                    if modules.contains(module) && module != target { imported.insert(module) }
                }
            }
            for module in imported.sorted() where !declared.contains("\"\(module)\"") {
                missing.append("\(target) imports \(module)")
            }
        }
        XCTAssertEqual(missing, [], "imports Package.swift does not declare")
    }
}
