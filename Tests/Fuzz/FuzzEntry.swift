import FuzzHarness
import Glibc

/// libFuzzer's entry points around the target PURGEFS_FUZZ_TARGET names, so
/// one binary serves every parser (scripts/fuzz). SwiftPM links an
/// executable's `main` to its module's entry point (this `@main`), which
/// hands over to libFuzzer's driver; `LLVMFuzzerTestOneInput` is the same
/// check under the name libFuzzer's own `main` looks for.
@main
enum FuzzEntry {
    static let target: ParserFuzzTarget = {
        guard let name = getenv("PURGEFS_FUZZ_TARGET").map({ String(cString: $0) }), let named = ParserFuzzTarget(rawValue: name) else {
            print("purgefs-fuzz: PURGEFS_FUZZ_TARGET names none of: \(ParserFuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))")
            exit(64)
        }
        return named
    }()

    static func main() {
        _ = target
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(runDriver(&argc, &argv, { data, size in fuzzerTestOneInput(data, size) }))
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    if let failure = FuzzEntry.target.check(input) { fatalError(failure) }
    return 0
}

/// `int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*UserCb)(const uint8_t *Data, size_t Size))`.
@_silgen_name("LLVMFuzzerRunDriver")
func runDriver(_ argc: UnsafeMutablePointer<Int32>,
               _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
               _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32
