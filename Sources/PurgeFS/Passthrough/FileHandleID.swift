import Synchronization

/// An open file's number: handed out in increasing order, never reused
/// within the process, taken when the open begins (before the backing file
/// is opened). A feature keeps what it knows of open files in its own
/// table keyed by it, not in `OpenFile`; the crash era keeps the first
/// handle opened after the last crash (`CrashEra`).
struct FileHandleID: Hashable, Comparable, Sendable, CustomStringConvertible {
    let rawValue: UInt64

    /// The next number: above every one handed out before it.
    static func next() -> FileHandleID {
        FileHandleID(rawValue: handedOut.add(1, ordering: .relaxed).newValue)
    }

    static func < (lhs: FileHandleID, rhs: FileHandleID) -> Bool { lhs.rawValue < rhs.rawValue }

    var description: String { "handle \(rawValue)" }
}

private let handedOut = Atomic<UInt64>(0)
