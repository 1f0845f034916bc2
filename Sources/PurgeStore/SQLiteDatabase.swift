internal import CSQLite

/// One SQLite connection, used from one thread at a time. Typed calls over
/// the C API; statements are prepared, bound, stepped and finalized inside
/// each call, so no C pointer leaves this file.
final class SQLiteDatabase {
    private let handle: OpaquePointer

    enum Mode {
        case readWrite
        case readOnly
    }

    /// The VFS that keeps paths verbatim (see `shim.h`), registered once.
    private static let verbatimVFS: String? = csqlite_register_verbatim_vfs().map { String(cString: $0) }

    /// Wraps `sqlite3_open_v2`. A read-write open creates the file. `path`
    /// must be absolute; it is used as given, symbolic links unresolved (so
    /// `/proc/.../fd/N/` paths reach the directory, never a covered path).
    init(path: String, mode: Mode) throws(SQLiteError) {
        var opened: OpaquePointer?
        let flags = mode == .readWrite
            ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
            : SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX
        guard let vfs = Self.verbatimVFS else { throw SQLiteError(code: SQLITE_ERROR, message: "SQLite has no unix VFS") }
        let status = sqlite3_open_v2(path, &opened, flags, vfs)
        guard let opened else { throw SQLiteError(code: status, message: "out of memory opening \(path)") }
        guard status == SQLITE_OK else {
            let error = SQLiteError(code: status, message: String(cString: sqlite3_errmsg(opened)))
            sqlite3_close_v2(opened)
            throw error
        }
        handle = opened
        sqlite3_extended_result_codes(handle, 1)
        // A reader waits for a writer's commit rather than failing at once.
        sqlite3_busy_timeout(handle, 5000)
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    /// A value bound to a `?` or read from a column.
    enum Value: Equatable {
        case integer(Int64)
        case text(String)
        case null
    }

    /// Runs statements that return no rows (wraps `sqlite3_exec`).
    func execute(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &message)
        guard status == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(status))
            sqlite3_free(message)
            throw SQLiteError(code: status, message: text)
        }
    }

    /// Runs one statement with `bindings` and returns its rows.
    @discardableResult
    func query(_ sql: String, _ bindings: [Value] = []) throws(SQLiteError) -> [[Value]] {
        var rows: [[Value]] = []
        try each(sql, bindings) { rows.append($0) }
        return rows
    }

    /// Runs one statement with `bindings`, handing each row to `body`.
    func each(_ sql: String, _ bindings: [Value] = [], _ body: ([Value]) -> Void) throws(SQLiteError) {
        var prepared: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &prepared, nil) == SQLITE_OK, let statement = prepared else {
            throw lastError()
        }
        defer { sqlite3_finalize(statement) }
        for (offset, value) in bindings.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32
            switch value {
            case .integer(let number): status = sqlite3_bind_int64(statement, index, number)
            case .null: status = sqlite3_bind_null(statement, index)
            case .text(let text):
                status = text.withCString { csqlite_bind_text(statement, index, $0, -1) }
            }
            guard status == SQLITE_OK else { throw lastError() }
        }
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE { return }
            guard status == SQLITE_ROW else { throw lastError() }
            var row: [Value] = []
            let columns = sqlite3_column_count(statement)
            row.reserveCapacity(Int(columns))
            for column in 0..<columns {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(statement, column)))
                case SQLITE_NULL: row.append(.null)
                default:
                    let text = sqlite3_column_text(statement, column).map { String(cString: $0) } ?? ""
                    row.append(.text(text))
                }
            }
            body(row)
        }
    }

    /// Runs `body` in one transaction: all of it or none of it is stored.
    func transaction(_ body: () throws(SQLiteError) -> Void) throws(SQLiteError) {
        try execute("BEGIN IMMEDIATE")
        do {
            try body()
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    private func lastError() -> SQLiteError {
        SQLiteError(code: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)))
    }
}
