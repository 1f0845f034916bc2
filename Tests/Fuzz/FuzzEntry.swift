import FuzzHarness
import Glibc

/// libFuzzer's entry points (scripts/fuzz): the target is named by
/// PURGEFS_FUZZ_TARGET, so one binary serves every parser.
nonisolated(unsafe) private var target: ParserFuzzTarget?

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    guard let name = getenv("PURGEFS_FUZZ_TARGET").map({ String(cString: $0) }), let named = ParserFuzzTarget(rawValue: name) else {
        fatalError("PURGEFS_FUZZ_TARGET names none of: \(ParserFuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    target = named
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    if let failure = target?.check(input) { fatalError(failure) }
    return 0
}
