// SQLite 3 from Debian (libsqlite3-dev) for Swift: wraps what Swift cannot
// call directly. SQLITE_TRANSIENT is a macro casting -1 to a function
// pointer, which Swift cannot import.
#ifndef PURGEFS_CSQLITE_SHIM_H
#define PURGEFS_CSQLITE_SHIM_H

#include <sqlite3.h>

/// `sqlite3_bind_text` with `SQLITE_TRANSIENT`: SQLite copies the bytes
/// before returning, so the caller's buffer may go at once.
static inline int csqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int length) {
    return sqlite3_bind_text(statement, index, text, length, SQLITE_TRANSIENT);
}

#endif
