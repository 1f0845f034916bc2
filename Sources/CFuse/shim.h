// libfuse3 for Swift: pins the API version and wraps what Swift cannot call
// directly (function-like macros, bitfields, versioned symbols).
#ifndef PURGEFS_CFUSE_SHIM_H
#define PURGEFS_CFUSE_SHIM_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>

/// `fuse_session_loop_mt` is a macro that selects a versioned symbol.
/// libfuse starts a worker whenever none is free, up to `max_threads`, and
/// keeps at most `idle_threads` of them waiting.
static inline int cfuse_session_loop_mt(struct fuse_session *se,
                                        unsigned max_threads, unsigned idle_threads, int clone_fd) {
    struct fuse_loop_config *config = fuse_loop_cfg_create();
    if (config == NULL) return -1;
    fuse_loop_cfg_set_max_threads(config, max_threads);
    fuse_loop_cfg_set_idle_threads(config, idle_threads);
    fuse_loop_cfg_set_clone_fd(config, (unsigned)clone_fd);
    int rc = fuse_session_loop_mt(se, config);
    fuse_loop_cfg_destroy(config);
    return rc;
}

// fuse_file_info keeps its flags in bitfields.
static inline void cfuse_fi_set_keep_cache(struct fuse_file_info *fi, int v) { fi->keep_cache = v ? 1 : 0; }
static inline void cfuse_fi_set_direct_io(struct fuse_file_info *fi, int v) { fi->direct_io = v ? 1 : 0; }
static inline void cfuse_fi_set_noflush(struct fuse_file_info *fi, int v) { fi->noflush = v ? 1 : 0; }
static inline int cfuse_fi_noflush(const struct fuse_file_info *fi) { return fi->noflush; }
static inline void cfuse_fi_set_cache_readdir(struct fuse_file_info *fi, int v) { fi->cache_readdir = v ? 1 : 0; }
static inline int cfuse_fi_writepage(const struct fuse_file_info *fi) { return fi->writepage; }

/// A one-buffer vector whose data is read from `fd` at `offset` (splice-capable).
static inline struct fuse_bufvec cfuse_bufvec_fd(int fd, size_t size, off_t offset) {
    struct fuse_bufvec v = FUSE_BUFVEC_INIT(size);
    v.buf[0].flags = (enum fuse_buf_flags)(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
    v.buf[0].fd = fd;
    v.buf[0].pos = offset;
    return v;
}

/// A buffer vector over `size` bytes of memory at `mem`.
static inline struct fuse_bufvec cfuse_bufvec_mem(void *mem, size_t size) {
    struct fuse_bufvec v = FUSE_BUFVEC_INIT(size);
    v.buf[0].mem = mem;
    return v;
}

/// Copies an incoming write buffer vector into `fd` at `offset`; returns bytes or -errno.
static inline ssize_t cfuse_write_bufvec_to_fd(struct fuse_bufvec *in, int fd, off_t offset, int splice) {
    struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));
    out.buf[0].flags = (enum fuse_buf_flags)(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
    out.buf[0].fd = fd;
    out.buf[0].pos = offset;
    return fuse_buf_copy(&out, in, splice ? (enum fuse_buf_copy_flags)0 : FUSE_BUF_NO_SPLICE);
}

static inline struct fuse_args cfuse_args(int argc, char **argv) {
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    return args;
}

/// The last line libfuse logged while capturing (see cfuse_capture_log).
static inline char *cfuse_captured_log(void) {
    static char line[512];
    return line;
}

static void cfuse_capture_log_line(enum fuse_log_level level, const char *format, va_list ap) {
    (void)level;
    char *line = cfuse_captured_log();
    vsnprintf(line, 512, format, ap);
    size_t length = strlen(line);
    while (length > 0 && line[length - 1] == '\n') line[--length] = 0;
}

/// While mounting, libfuse's messages are kept (not printed) so that a
/// failure is reported as one line; afterwards they go to stderr again.
static inline void cfuse_capture_log(int capture) {
    cfuse_captured_log()[0] = 0;
    fuse_set_log_func(capture ? cfuse_capture_log_line : NULL);
}

#endif
