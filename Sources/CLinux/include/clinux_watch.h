// Change notification for the backing store: fanotify with directory file
// handles, and inotify as the fallback. Plain types only (see clinux.h).
#ifndef PURGEFS_CLINUX_WATCH_H
#define PURGEFS_CLINUX_WATCH_H

#include <stdint.h>

extern const uint64_t clinux_FAN_CREATE;
extern const uint64_t clinux_FAN_DELETE;
extern const uint64_t clinux_FAN_RENAME;
extern const uint64_t clinux_FAN_MOVED_FROM;
extern const uint64_t clinux_FAN_MOVED_TO;
extern const uint64_t clinux_FAN_MODIFY;
extern const uint64_t clinux_FAN_CLOSE_WRITE;
extern const uint64_t clinux_FAN_ATTRIB;
extern const uint64_t clinux_FAN_ONDIR;
extern const uint64_t clinux_FAN_Q_OVERFLOW;

/// fanotify_init(2) for notification only, reporting the directory's file
/// handle and the entry's name (FAN_REPORT_DFID_NAME), close-on-exec.
int clinux_fanotify_init(void);
/// fanotify_mark(2): adds a filesystem mark (FAN_MARK_FILESYSTEM) for
/// `mask` on the filesystem of `dirfd`.
int clinux_fanotify_mark_filesystem(int fd, uint64_t mask, int dirfd);

/// One fanotify event, pointing into the buffer it was parsed from.
struct clinux_fan_event {
    uint64_t mask;
    int32_t pid;
    /// The directory and name the event is about (for FAN_RENAME: the old ones).
    int32_t handle_type;
    uint32_t handle_bytes;
    const unsigned char *handle;
    const char *name;
    /// FAN_RENAME only: the new directory and name (handle_bytes 0 otherwise).
    int32_t new_handle_type;
    uint32_t new_handle_bytes;
    const unsigned char *new_handle;
    const char *new_name;
};

/// Parses the event at `offset` of the `length` bytes read into `buffer`.
/// Returns the offset of the next event, or -1 when none is left.
long clinux_fanotify_next(const unsigned char *buffer, long length, long offset, struct clinux_fan_event *out);

extern const uint32_t clinux_IN_CREATE;
extern const uint32_t clinux_IN_DELETE;
extern const uint32_t clinux_IN_MOVED_FROM;
extern const uint32_t clinux_IN_MOVED_TO;
extern const uint32_t clinux_IN_MODIFY;
extern const uint32_t clinux_IN_CLOSE_WRITE;
extern const uint32_t clinux_IN_ATTRIB;
extern const uint32_t clinux_IN_ONLYDIR;
extern const uint32_t clinux_IN_DONT_FOLLOW;
extern const uint32_t clinux_IN_EXCL_UNLINK;
extern const uint32_t clinux_IN_Q_OVERFLOW;
extern const uint32_t clinux_IN_IGNORED;

/// inotify_init1(2) with IN_CLOEXEC.
int clinux_inotify_init(void);
/// inotify_add_watch(2) on the directory `dirfd` (through /proc/self/fd).
int clinux_inotify_watch(int fd, int dirfd, uint32_t mask);
/// inotify_rm_watch(2).
int clinux_inotify_unwatch(int fd, int wd);

/// One inotify event, pointing into the buffer it was parsed from.
struct clinux_in_event {
    int32_t wd;
    uint32_t mask;
    uint32_t cookie;
    const char *name;  /// "" when the event has no name
};

/// As clinux_fanotify_next, for inotify.
long clinux_inotify_next(const unsigned char *buffer, long length, long offset, struct clinux_in_event *out);

#endif
