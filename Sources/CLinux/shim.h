// Linux calls and constants that Swift's Glibc module leaves out (they sit
// behind _GNU_SOURCE or are macros), wrapped so Swift can call them.
#ifndef PURGEFS_CLINUX_SHIM_H
#define PURGEFS_CLINUX_SHIM_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <linux/fs.h>

static const int clinux_O_PATH = O_PATH;
static const int clinux_O_DIRECT = O_DIRECT;
static const int clinux_O_NOATIME = O_NOATIME;
static const int clinux_O_TMPFILE = O_TMPFILE;
static const int clinux_AT_EMPTY_PATH = AT_EMPTY_PATH;
static const int clinux_AT_SYMLINK_FOLLOW = AT_SYMLINK_FOLLOW;
static const int clinux_AT_EACCESS = AT_EACCESS;
static const long clinux_UTIME_NOW = UTIME_NOW;
static const long clinux_UTIME_OMIT = UTIME_OMIT;
static const unsigned clinux_RENAME_NOREPLACE = RENAME_NOREPLACE;
static const unsigned clinux_RENAME_EXCHANGE = RENAME_EXCHANGE;
static const unsigned clinux_RENAME_WHITEOUT = RENAME_WHITEOUT;
static const int clinux_SEEK_DATA = SEEK_DATA;
static const int clinux_SEEK_HOLE = SEEK_HOLE;
static const unsigned long clinux_FICLONE = FICLONE;

static inline int clinux_renameat2(int olddirfd, const char *oldpath,
                                   int newdirfd, const char *newpath, unsigned flags) {
    return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, flags);
}

static inline ssize_t clinux_copy_file_range(int fd_in, int64_t *off_in, int fd_out,
                                             int64_t *off_out, size_t len, unsigned flags) {
    return (ssize_t)syscall(SYS_copy_file_range, fd_in, (loff_t *)off_in, fd_out,
                            (loff_t *)off_out, len, flags);
}

static inline int clinux_fallocate(int fd, int mode, int64_t offset, int64_t len) {
    return fallocate(fd, mode, (off_t)offset, (off_t)len);
}

/// setgroups(2) for the calling thread only: glibc's wrapper changes every
/// thread of the process, which a multithreaded server must never do.
static inline int clinux_thread_setgroups(size_t size, const gid_t *list) {
    return (int)syscall(SYS_setgroups, size, list);
}

/// setfsuid/setfsgid return the previous id and never fail visibly.
static inline int clinux_setfsuid(uid_t uid) { return (int)syscall(SYS_setfsuid, uid); }
static inline int clinux_setfsgid(gid_t gid) { return (int)syscall(SYS_setfsgid, gid); }

static inline int clinux_ioctl_ficlone(int dest_fd, int src_fd) {
    return ioctl(dest_fd, FICLONE, src_fd);
}

static inline int clinux_errno(void) { return errno; }
static inline void clinux_set_errno(int value) { errno = value; }

#endif
