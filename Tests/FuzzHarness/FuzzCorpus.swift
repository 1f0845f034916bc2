import Foundation

/// The seed inputs of each target, committed under `Tests/FuzzCorpus/TARGET/`
/// (one input a file): what the seeded tests mutate and what `scripts/fuzz`
/// starts libFuzzer from.
public enum FuzzCorpus {
    /// `Tests/FuzzCorpus`, found from this file's place in the repository.
    public static let directory: String = {
        var path = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        path.removeLast(2)
        return (path + ["FuzzCorpus"]).joined(separator: "/")
    }()

    /// One seed of `target`, by its file name.
    public static func seeds(_ target: ParserFuzzTarget, named name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/" + target.rawValue + "/" + name)))
    }

    /// The seeds of `target`, in file-name order.
    public static func seeds(_ target: ParserFuzzTarget) throws -> [[UInt8]] {
        let folder = directory + "/" + target.rawValue
        return try FileManager.default.contentsOfDirectory(atPath: folder).sorted().map { name in
            [UInt8](try Data(contentsOf: URL(fileURLWithPath: folder + "/" + name)))
        }
    }
}

extension ParserFuzzTarget {
    /// Feeds `count` inputs mutated from the target's seeds (the seeds
    /// themselves first) with the generator seeded `seed`; returns each
    /// broken invariant with its case number and input. A trap ends the
    /// process: the test's log then names the target and the seed.
    public func seededRun(seed: UInt64, count: Int) throws -> [String] {
        let seeds = try FuzzCorpus.seeds(self)
        var mutator = InputMutator(seed: seed, corpus: seeds)
        var failures: [String] = []
        for number in 0..<count {
            let input = number < seeds.count ? seeds[number] : mutator.next()
            if let failure = check(input) {
                failures.append("\(rawValue) seed \(seed) case \(number): \(failure); input \(Self.shown(input))")
            }
        }
        return failures
    }

    /// An input as a Swift literal can hold it (at most 600 characters of it).
    public static func shown(_ input: [UInt8]) -> String {
        let text = String(decoding: input, as: UTF8.self).debugDescription
        let valid = String(validating: input, as: UTF8.self) != nil
        return (text.count > 600 ? String(text.prefix(600)) + "…" : text) + " (\(input.count) bytes\(valid ? "" : ", not UTF-8"))"
    }
}
