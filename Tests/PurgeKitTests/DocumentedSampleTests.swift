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

    /// The forms an app writes these calls in (through implicit self, in a
    /// closure, optional chaining, a literal, a Set, through an inout
    /// parameter), beside Foundation: each is PurgeKit's in the code Swift
    /// generates (the mangled name of a member PurgeKit declares on URL has
    /// `3URLV8PurgeKitE`; Foundation's, `3URLV0A0E`).
    @Test func everyFormOfTheCallsIsPurgeKits() throws {
        let source = """
            import Foundation
            import PurgeKit
            extension URL {
                var excluded: Bool { (try? resourceValues(forKeys: [.isExcludedFromBackupKey]))?.isExcludedFromBackup ?? false }
                func important(_ keys: Set<URLResourceKey>) throws -> Int64? {
                    try resourceValues(forKeys: keys).volumeAvailableCapacityForImportantUsage
                }
                mutating func exclude(_ values: URLResourceValues) throws { try setResourceValues(values) }
            }
            func sizes(_ urls: [URL], _ keys: Set<URLResourceKey>) throws -> [Int?] { try urls.map { try $0.resourceValues(forKeys: keys).fileSize } }
            func first(_ urls: [URL], _ keys: Set<URLResourceKey>) throws -> URLResourceValues? { try urls.first?.resourceValues(forKeys: keys) }
            func set(_ url: inout URL, _ values: URLResourceValues) throws { try url.setResourceValues(values) }
            func set(_ url: URL?, _ values: URLResourceValues) throws { var url = url; try url?.setResourceValues(values) }
            func set(_ urls: [URL], _ values: URLResourceValues) throws { try urls.forEach { var url = $0; try url.setResourceValues(values) } }
            """
        let result = try Self.swiftc(source, mode: "-emit-silgen")
        #expect(result.status == 0, "\(result.errors)")
        let references = result.output.split(separator: "\n").filter {
            $0.contains("function_ref @") && $0.contains("3URLV") && ($0.contains("14resourceValues") || $0.contains("17setResourceValues"))
        }
        #expect(references.count >= 8, "one or more for each of the eight calls:\n\(references.joined(separator: "\n"))")
        for reference in references {
            #expect(reference.contains("3URLV8PurgeKitE"), "not PurgeKit's: \(reference)")
        }
    }

    static func typecheck(_ source: String) throws -> (status: Int32, errors: String) {
        let result = try swiftc(source, mode: "-typecheck")
        return (result.status, result.errors)
    }

    /// `swiftc MODE` of `source` as a main file, with this build's modules
    /// and the C modules PurgeKit's own modules import.
    static func swiftc(_ source: String, mode: String) throws -> (status: Int32, output: String, errors: String) {
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
        process.arguments = [mode, "-I", build + "/Modules",
                             "-Xcc", "-fmodule-map-file=" + build + "/CLinux.build/module.modulemap",
                             "-Xcc", "-fmodule-map-file=" + root + "/Sources/CSQLite/module.modulemap",
                             "-module-cache-path", build + "/ModuleCache", file.path]
        // The output to a file, the errors through a pipe: neither fills a pipe nobody reads.
        let output = file.appendingPathExtension("out")
        FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, try String(contentsOf: output, encoding: .utf8), text)
    }
}
