internal import CSQLite

/// What SQLite said when a call failed: its result code and message.
public struct SQLiteError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The primary result code (`SQLITE_CORRUPT`, `SQLITE_NOTADB`, ...).
    public let code: Int32
    public let message: String

    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// The file does not exist (or cannot be opened at all).
    public var isCannotOpen: Bool { code & 0xff == SQLITE_CANTOPEN }
}
