// Linux calls and constants that Swift's Glibc module leaves out (they sit
// behind _GNU_SOURCE, are macros, or are variadic). Declared here with plain
// types so that this header never redefines what Glibc's module defines;
// clinux.c includes the real headers.
#ifndef PURGEFS_CLINUX_H
#define PURGEFS_CLINUX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

extern const int clinux_O_PATH;
extern const int clinux_O_DIRECT;
extern const int clinux_O_NOATIME;
extern const int clinux_O_TMPFILE;
extern const int clinux_AT_EMPTY_PATH;
extern const int clinux_AT_SYMLINK_FOLLOW;
extern const int clinux_AT_EACCESS;
extern const long clinux_UTIME_NOW;
extern const long clinux_UTIME_OMIT;
extern const unsigned clinux_RENAME_NOREPLACE;
extern const unsigned clinux_RENAME_EXCHANGE;
extern const unsigned clinux_RENAME_WHITEOUT;
extern const int clinux_SEEK_DATA;
extern const int clinux_SEEK_HOLE;
extern const int clinux_FALLOC_FL_KEEP_SIZE;
extern const int clinux_FALLOC_FL_PUNCH_HOLE;
extern const int clinux_FALLOC_FL_COLLAPSE_RANGE;
extern const int clinux_FALLOC_FL_INSERT_RANGE;
extern const int clinux_FALLOC_FL_ZERO_RANGE;
extern const int clinux_XATTR_CREATE;
extern const int clinux_XATTR_REPLACE;

/// posix_spawn_file_actions_addchdir_np(3) on a `posix_spawn_file_actions_t *`.
int clinux_spawn_addchdir(void *actions, const char *path);
/// renameat2(2).
int clinux_renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned flags);
/// The birth time of `name` in `dirfd` (or of `dirfd` itself for ""), not
/// following a symlink, in nanoseconds since the epoch: statx(2) with
/// STATX_BTIME. 0 when the filesystem does not keep it, -errno on error.
int64_t clinux_birth_time(int dirfd, const char *name);
/// copy_file_range(2).
ssize_t clinux_copy_file_range(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out, size_t len, unsigned flags);
/// pipe2(2), for `O_CLOEXEC` on both ends at once.
int clinux_pipe2(int fds[2], int flags);
/// flock(2) with `LOCK_EX | LOCK_NB` (Swift sees only `struct flock`).
int clinux_flock_exclusive_nonblocking(int fd);
/// fallocate(2).
int clinux_fallocate(int fd, int mode, int64_t offset, int64_t len);
/// setgroups(2) for the calling thread only: glibc's wrapper changes every
/// thread of the process, which a multithreaded server must never do.
int clinux_thread_setgroups(size_t size, const gid_t *list);
/// setfsuid(2) / setfsgid(2): return the previous id.
int clinux_setfsuid(uid_t uid);
int clinux_setfsgid(gid_t gid);
/// ioctl(FICLONE).
int clinux_ioctl_ficlone(int dest_fd, int src_fd);

/// One extent of a file as FS_IOC_FIEMAP reports it, in bytes.
struct clinux_extent {
    uint64_t logical;
    uint64_t physical;
    uint64_t length;
    uint32_t flags;
};
extern const uint32_t clinux_FIEMAP_EXTENT_LAST;
extern const uint32_t clinux_FIEMAP_EXTENT_UNKNOWN;
extern const uint32_t clinux_FIEMAP_EXTENT_SHARED;
/// ioctl(FS_IOC_FIEMAP) from byte `start` to the end of the file, with
/// FIEMAP_FLAG_SYNC when `sync`: up to `capacity` extents into `out`.
/// Returns how many, or -1 with errno.
int clinux_fiemap(int fd, uint64_t start, int sync, struct clinux_extent *out, unsigned capacity);
/// The xattr calls (sys/xattr.h is not in Glibc's module).
ssize_t clinux_getxattr(const char *path, const char *name, void *value, size_t size);
ssize_t clinux_fgetxattr(int fd, const char *name, void *value, size_t size);
ssize_t clinux_lgetxattr(const char *path, const char *name, void *value, size_t size);
int clinux_setxattr(const char *path, const char *name, const void *value, size_t size, int flags);
int clinux_lsetxattr(const char *path, const char *name, const void *value, size_t size, int flags);
ssize_t clinux_listxattr(const char *path, char *list, size_t size);
ssize_t clinux_llistxattr(const char *path, char *list, size_t size);
int clinux_removexattr(const char *path, const char *name);
int clinux_lremovexattr(const char *path, const char *name);

/// name_to_handle_at(2) with AT_EMPTY_PATH: the handle of the file `fd`
/// refers to, as handle type then bytes in `buffer` (at most `capacity`).
/// Returns the number of handle bytes, or -1 with errno.
int clinux_handle_of(int fd, int *type, unsigned char *buffer, unsigned capacity);
/// open_by_handle_at(2).
int clinux_open_by_handle(int mount_fd, int type, const unsigned char *bytes, unsigned length, int flags);

/// FUSE notices written straight to a `/dev/fuse` descriptor (the kernel's
/// stable ABI, `linux/fuse.h`), so that sending one needs no libfuse session
/// and no lock. Each returns 0 or -errno (ENOENT: the kernel does not know
/// the node or name, which is no failure for an invalidation).
/// FUSE_NOTIFY_INVAL_ENTRY: drop the kernel's entry `name` in `parent`.
int clinux_fuse_notify_inval_entry(int fd, uint64_t parent, const char *name, size_t length);
/// FUSE_NOTIFY_DELETE: `name` in `parent`, which named `child`, is gone.
int clinux_fuse_notify_delete(int fd, uint64_t parent, uint64_t child, const char *name, size_t length);
/// FUSE_NOTIFY_INVAL_INODE: drop cached attributes, and pages from `offset`
/// for `length` bytes (0: to the end) unless `offset` is negative.
int clinux_fuse_notify_inval_inode(int fd, uint64_t node, int64_t offset, int64_t length);

/// gettid(2) (glibc declares it under _GNU_SOURCE only).
pid_t clinux_gettid(void);

/// malloc_trim(3): hands freed heap memory back to the system.
int clinux_malloc_trim(void);

/// mallopt(3): at most `arenas` malloc arenas (M_ARENA_MAX) and a fixed
/// mmap threshold of `mmap_threshold` bytes (M_MMAP_THRESHOLD, which also
/// stops glibc from raising the threshold as mapped blocks are freed).
/// 1 when both were set, 0 when glibc refused one.
int clinux_malloc_bound(int arenas, int mmap_threshold);

/// The heap's figures from mallinfo2(3), each in bytes but `mapped_blocks`:
/// what the arenas took from the system, what is allocated in them, and the
/// blocks (and their bytes) mapped on their own.
struct clinux_heap_figures {
    uint64_t arena_bytes;
    uint64_t allocated_bytes;
    uint64_t mapped_blocks;
    uint64_t mapped_bytes;
};
struct clinux_heap_figures clinux_heap_figures(void);

/// Pins the calling thread to one CPU (pthread_setaffinity_np). 0 or -errno.
int clinux_pin_thread(int cpu);

#endif
