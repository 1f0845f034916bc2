/// A record set stored as lines: a snapshot (`encoded`) followed by the
/// lines of the changes made since (`takeChanges`), each line replacing or
/// dropping what an earlier one said. `init(decoding:)` reads both.
public protocol JournaledRecords: Equatable, Sendable {
    init()
    init?(decoding data: [UInt8])
    var encoded: [UInt8] { get }
    /// The lines describing the changes since the last call.
    mutating func takeChanges() -> [UInt8]
}

enum JournalLines {
    /// The lines of `data`, fields split on spaces, without an unfinished
    /// last line (an append a crash cut short).
    static func complete(_ data: [UInt8]) -> [[Substring]] {
        var lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
        if let last = data.last, last != UInt8(ascii: "\n"), !lines.isEmpty { lines.removeLast() }
        return lines.map { String(decoding: $0, as: UTF8.self).split(separator: " ") }
    }
}
