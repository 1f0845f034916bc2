import Foundation
import Testing

/// The app code the README and the reference show (each ```swift block that
/// begins with `import Foundation`) compiles as written, without a warning, against this
/// build's PurgeKit, with `swiftc -typecheck`; and the one spelling they say
/// differs in a file that imports Foundation too still does not compile
/// there, so the documents change if a Swift ever ranks it.
@Suite struct DocumentedSampleTests {
    static let root: String = {
        var dir = (#filePath as NSString).deletingLastPathComponent
        while dir != "/" && !FileManager.default.fileExists(atPath: dir + "/Package.swift") {
            dir = (dir as NSString).deletingLastPathComponent
        }
        return dir
    }()

    /// The Swift blocks of `document` that are an app's code.
    static func appSamples(in document: String) throws -> [String] {
        let text = try String(contentsOfFile: root + "/" + document, encoding: .utf8)
        var samples: [String] = [], current: [String]?
        for line in text.components(separatedBy: "\n") {
            if current == nil {
                if line == "```swift" { current = [] }
            } else if line == "```" {
                if current?.first == "import Foundation" { samples.append(current!.joined(separator: "\n")) }
                current = nil
            } else {
                current?.append(line)
            }
        }
        return samples
    }

    @Test(arguments: ["README.md", "docs/REFERENCE.md"])
    func theAppSamplesCompileWithBothImports(document: String) throws {
        let samples = try Self.appSamples(in: document)
        #expect(!samples.isEmpty, "\(document) shows an app's code")
        for sample in samples {
            #expect(sample.contains("\nimport PurgeKit\n"), "\(document): the sample imports PurgeKit beside Foundation")
            let result = try Self.typecheck(sample)
            #expect(result.status == 0, "\(document): the sample\n\(sample)\ndoes not compile:\n\(result.errors)")
            // Nor a warning, such as a `var` URL "never mutated" that iOS needs for setResourceValues.
            #expect(!result.errors.contains("warning:"), "\(document): the sample\n\(sample)\nwarns:\n\(result.errors)")
        }
    }

    @Test func urlTemporaryDirectoryIsAmbiguousWithBothImports() throws {
        let both = try Self.typecheck("import Foundation\nimport PurgeKit\nlet folder = URL.temporaryDirectory\n")
        #expect(both.status != 0)
        #expect(both.errors.contains("ambiguous use of 'temporaryDirectory'"), "\(both.errors)")
        // PurgeKit's alone, and the spelling the reference gives for a file that imports both.
        #expect(try Self.typecheck("import PurgeKit\nlet folder = URL.temporaryDirectory\n").status == 0)
        #expect(try Self.typecheck("import Foundation\nimport PurgeKit\nlet folder = FileManager.default.temporaryDirectory\n").status == 0)
    }

    /// `swiftc -typecheck` of `source` as a main file, with this build's
    /// modules and the C modules PurgeKit's own modules import.
    static func typecheck(_ source: String) throws -> (status: Int32, errors: String) {
        let build = try #require(Bundle.main.executableURL?.deletingLastPathComponent().path, "where the test binary is")
        let swiftc = try #require(
            (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { $0 + "/swiftc" }
                .first { FileManager.default.isExecutableFile(atPath: $0) },
            "swiftc on PATH")
        let file = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("purgekit-sample-\(UUID().uuidString).swift")
        try Data(source.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: swiftc)
        process.arguments = ["-typecheck", "-I", build + "/Modules",
                             "-Xcc", "-fmodule-map-file=" + build + "/CLinux.build/module.modulemap",
                             "-Xcc", "-fmodule-map-file=" + root + "/Sources/CSQLite/module.modulemap",
                             "-module-cache-path", build + "/ModuleCache", file.path]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }
}
