#define _GNU_SOURCE
#include <malloc.h>
#include "clinux.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <linux/fs.h>
#include <linux/fiemap.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <sys/uio.h>
#include <stdlib.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

const int clinux_O_PATH = O_PATH;
const int clinux_O_DIRECT = O_DIRECT;
const int clinux_O_NOATIME = O_NOATIME;
const int clinux_O_TMPFILE = O_TMPFILE;
const int clinux_AT_EMPTY_PATH = AT_EMPTY_PATH;
const int clinux_AT_SYMLINK_FOLLOW = AT_SYMLINK_FOLLOW;
const int clinux_AT_EACCESS = AT_EACCESS;
const long clinux_UTIME_NOW = UTIME_NOW;
const long clinux_UTIME_OMIT = UTIME_OMIT;
const unsigned clinux_RENAME_NOREPLACE = RENAME_NOREPLACE;
const unsigned clinux_RENAME_EXCHANGE = RENAME_EXCHANGE;
const unsigned clinux_RENAME_WHITEOUT = RENAME_WHITEOUT;
const int clinux_SEEK_DATA = SEEK_DATA;
const int clinux_SEEK_HOLE = SEEK_HOLE;
const int clinux_FALLOC_FL_KEEP_SIZE = FALLOC_FL_KEEP_SIZE;
const int clinux_FALLOC_FL_PUNCH_HOLE = FALLOC_FL_PUNCH_HOLE;
const int clinux_FALLOC_FL_COLLAPSE_RANGE = FALLOC_FL_COLLAPSE_RANGE;
const int clinux_FALLOC_FL_INSERT_RANGE = FALLOC_FL_INSERT_RANGE;
const int clinux_FALLOC_FL_ZERO_RANGE = FALLOC_FL_ZERO_RANGE;
const int clinux_XATTR_CREATE = XATTR_CREATE;
const int clinux_XATTR_REPLACE = XATTR_REPLACE;

int clinux_renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned flags) {
    return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, flags);
}

ssize_t clinux_copy_file_range(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out, size_t len, unsigned flags) {
    return (ssize_t)syscall(SYS_copy_file_range, fd_in, (loff_t *)off_in, fd_out, (loff_t *)off_out, len, flags);
}

int clinux_pipe2(int fds[2], int flags) { return pipe2(fds, flags); }

int64_t clinux_birth_time(int dirfd, const char *name) {
    struct statx status;
    int flags = AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC | (name[0] == 0 ? AT_EMPTY_PATH : 0);
    if (statx(dirfd, name, flags, STATX_BTIME, &status) != 0) return -errno;
    if (!(status.stx_mask & STATX_BTIME)) return 0;
    return (int64_t)status.stx_btime.tv_sec * 1000000000 + status.stx_btime.tv_nsec;
}

int clinux_flock_exclusive_nonblocking(int fd) { return flock(fd, LOCK_EX | LOCK_NB); }

int clinux_fallocate(int fd, int mode, int64_t offset, int64_t len) {
    return fallocate(fd, mode, (off_t)offset, (off_t)len);
}

int clinux_thread_setgroups(size_t size, const gid_t *list) {
    return (int)syscall(SYS_setgroups, size, list);
}

int clinux_setfsuid(uid_t uid) { return (int)syscall(SYS_setfsuid, uid); }
int clinux_setfsgid(gid_t gid) { return (int)syscall(SYS_setfsgid, gid); }

int clinux_ioctl_ficlone(int dest_fd, int src_fd) { return ioctl(dest_fd, FICLONE, src_fd); }

const uint32_t clinux_FIEMAP_EXTENT_LAST = FIEMAP_EXTENT_LAST;
const uint32_t clinux_FIEMAP_EXTENT_UNKNOWN = FIEMAP_EXTENT_UNKNOWN;
const uint32_t clinux_FIEMAP_EXTENT_SHARED = FIEMAP_EXTENT_SHARED;

int clinux_fiemap(int fd, uint64_t start, int sync, struct clinux_extent *out, unsigned capacity) {
    size_t size = sizeof(struct fiemap) + capacity * sizeof(struct fiemap_extent);
    struct fiemap *map = calloc(1, size);
    if (map == NULL) { errno = ENOMEM; return -1; }
    map->fm_start = start;
    map->fm_length = FIEMAP_MAX_OFFSET - start;
    map->fm_flags = sync ? FIEMAP_FLAG_SYNC : 0;
    map->fm_extent_count = capacity;
    if (ioctl(fd, FS_IOC_FIEMAP, map) != 0) {
        int saved = errno;
        free(map);
        errno = saved;
        return -1;
    }
    unsigned count = map->fm_mapped_extents;
    for (unsigned i = 0; i < count; i++) {
        out[i].logical = map->fm_extents[i].fe_logical;
        out[i].physical = map->fm_extents[i].fe_physical;
        out[i].length = map->fm_extents[i].fe_length;
        out[i].flags = map->fm_extents[i].fe_flags;
    }
    free(map);
    return (int)count;
}

ssize_t clinux_getxattr(const char *path, const char *name, void *value, size_t size) { return getxattr(path, name, value, size); }
ssize_t clinux_fgetxattr(int fd, const char *name, void *value, size_t size) { return fgetxattr(fd, name, value, size); }
ssize_t clinux_lgetxattr(const char *path, const char *name, void *value, size_t size) { return lgetxattr(path, name, value, size); }
int clinux_setxattr(const char *path, const char *name, const void *value, size_t size, int flags) { return setxattr(path, name, value, size, flags); }
int clinux_lsetxattr(const char *path, const char *name, const void *value, size_t size, int flags) { return lsetxattr(path, name, value, size, flags); }
ssize_t clinux_listxattr(const char *path, char *list, size_t size) { return listxattr(path, list, size); }
ssize_t clinux_llistxattr(const char *path, char *list, size_t size) { return llistxattr(path, list, size); }
int clinux_removexattr(const char *path, const char *name) { return removexattr(path, name); }
int clinux_lremovexattr(const char *path, const char *name) { return lremovexattr(path, name); }

int clinux_handle_of(int fd, int *type, unsigned char *buffer, unsigned capacity) {
    struct {
        struct file_handle header;
        unsigned char bytes[MAX_HANDLE_SZ];
    } handle;
    handle.header.handle_bytes = MAX_HANDLE_SZ;
    int mount_id;
    if (name_to_handle_at(fd, "", &handle.header, &mount_id, AT_EMPTY_PATH) != 0) return -1;
    if (handle.header.handle_bytes > capacity) { errno = EOVERFLOW; return -1; }
    *type = handle.header.handle_type;
    memcpy(buffer, handle.header.f_handle, handle.header.handle_bytes);
    return (int)handle.header.handle_bytes;
}

int clinux_open_by_handle(int mount_fd, int type, const unsigned char *bytes, unsigned length, int flags) {
    struct {
        struct file_handle header;
        unsigned char bytes[MAX_HANDLE_SZ];
    } handle;
    if (length > MAX_HANDLE_SZ) { errno = EINVAL; return -1; }
    handle.header.handle_bytes = length;
    handle.header.handle_type = type;
    memcpy(handle.header.f_handle, bytes, length);
    return open_by_handle_at(mount_fd, &handle.header, flags);
}

int clinux_malloc_trim(void) {
    return malloc_trim(0);
}

int clinux_malloc_bound(int arenas, int mmap_threshold) {
    int arena = mallopt(M_ARENA_MAX, arenas);
    int threshold = mallopt(M_MMAP_THRESHOLD, mmap_threshold);
    return arena == 1 && threshold == 1;
}

struct clinux_heap_figures clinux_heap_figures(void) {
    struct mallinfo2 info = mallinfo2();
    struct clinux_heap_figures figures = {
        .arena_bytes = info.arena,
        .allocated_bytes = info.uordblks,
        .mapped_blocks = info.hblks,
        .mapped_bytes = info.hblkhd,
    };
    return figures;
}

// A notice is one message: fuse_out_header (unique 0, the notice's code in
// `error`), its struct, then the name and its NUL where it has one.
static int clinux_fuse_notify(int fd, int code, const void *body, size_t body_size, const char *name, size_t length) {
    struct fuse_out_header header = {0};
    char nul = 0;
    struct iovec parts[4] = {
        { &header, sizeof header }, { (void *)body, body_size }, { (void *)name, length }, { &nul, 1 },
    };
    int count = name ? 4 : 2;
    header.error = code;
    header.len = (uint32_t)(sizeof header + body_size + (name ? length + 1 : 0));
    ssize_t written;
    do {
        written = writev(fd, parts, count);
    } while (written < 0 && errno == EINTR);
    return written < 0 ? -errno : 0;
}

int clinux_fuse_notify_inval_entry(int fd, uint64_t parent, const char *name, size_t length) {
    struct fuse_notify_inval_entry_out out = { .parent = parent, .namelen = (uint32_t)length };
    return clinux_fuse_notify(fd, FUSE_NOTIFY_INVAL_ENTRY, &out, sizeof out, name, length);
}

int clinux_fuse_notify_delete(int fd, uint64_t parent, uint64_t child, const char *name, size_t length) {
    struct fuse_notify_delete_out out = { .parent = parent, .child = child, .namelen = (uint32_t)length };
    return clinux_fuse_notify(fd, FUSE_NOTIFY_DELETE, &out, sizeof out, name, length);
}

int clinux_fuse_notify_inval_inode(int fd, uint64_t node, int64_t offset, int64_t length) {
    struct fuse_notify_inval_inode_out out = { .ino = node, .off = offset, .len = length };
    return clinux_fuse_notify(fd, FUSE_NOTIFY_INVAL_INODE, &out, sizeof out, NULL, 0);
}

// Asked once per request (the watchdog's record): a thread's ID never
// changes, so the system call is made once per thread.
pid_t clinux_gettid(void) {
    static __thread pid_t cached;
    if (cached == 0) cached = (pid_t)syscall(SYS_gettid);
    return cached;
}

int clinux_pin_thread(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return -pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

int clinux_spawn_addchdir(void *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np((posix_spawn_file_actions_t *)actions, path);
}
