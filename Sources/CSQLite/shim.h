// SQLite 3 from Debian (libsqlite3-dev) for Swift: wraps what Swift cannot
// call directly. SQLITE_TRANSIENT is a macro casting -1 to a function
// pointer, which Swift cannot import.
#ifndef PURGEFS_CSQLITE_SHIM_H
#define PURGEFS_CSQLITE_SHIM_H

#include <sqlite3.h>
#include <string.h>

/// `sqlite3_bind_text` with `SQLITE_TRANSIENT`: SQLite copies the bytes
/// before returning, so the caller's buffer may go at once.
static inline int csqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int length) {
    return sqlite3_bind_text(statement, index, text, length, SQLITE_TRANSIENT);
}

/// The name of a VFS that is SQLite's "unix" VFS in everything but one
/// thing: it takes a database's path as given instead of resolving its
/// symbolic links. purgefs opens its history as `/proc/self/fd/N/metrics.db`
/// (or `/proc/PID/fd/N/...` from the command); resolved, that magic link
/// becomes the state directory's path, which an in-place mount covers, so
/// SQLite would reach the file (and its -wal and -shm) through the mount the
/// daemon itself serves. Kept verbatim, the kernel follows the link to the
/// directory itself.
#define CSQLITE_VERBATIM_VFS "purgefs-verbatim"

static inline int csqlite_verbatim_full_pathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    (void)vfs;
    if (name == NULL || name[0] != '/') return SQLITE_CANTOPEN;
    size_t length = strlen(name);
    if (length + 1 > (size_t)size) return SQLITE_CANTOPEN;
    memcpy(out, name, length + 1);
    return SQLITE_OK;
}

/// Registers the verbatim VFS (once; the caller serializes calls) and
/// returns its name, or NULL if SQLite has no "unix" VFS.
static inline const char *csqlite_register_verbatim_vfs(void) {
    static sqlite3_vfs verbatim;
    static int registered = 0;
    if (!registered) {
        sqlite3_vfs *unix_vfs = sqlite3_vfs_find("unix");
        if (unix_vfs == NULL) return NULL;
        verbatim = *unix_vfs;
        verbatim.zName = CSQLITE_VERBATIM_VFS;
        verbatim.pNext = NULL;
        verbatim.xFullPathname = csqlite_verbatim_full_pathname;
        if (sqlite3_vfs_register(&verbatim, 0) != SQLITE_OK) return NULL;
        registered = 1;
    }
    return CSQLITE_VERBATIM_VFS;
}

#endif
