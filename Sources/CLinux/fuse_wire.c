#define _GNU_SOURCE
#include "clinux_fuse_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

// linux/fuse.h on this system may predate 7.33; the ABI is stable.
#ifndef FUSE_HANDLE_KILLPRIV_V2
#define FUSE_HANDLE_KILLPRIV_V2 (1 << 28)
#endif
#ifndef FUSE_INIT_EXT
#define FUSE_INIT_EXT (1 << 30)
#endif
#ifndef FUSE_WRITE_KILL_SUIDGID
#define FUSE_WRITE_KILL_SUIDGID (1 << 2)
#endif
#ifndef FUSE_OPEN_KILL_SUIDGID
#define FUSE_OPEN_KILL_SUIDGID (1 << 0)
#endif
#ifndef FATTR_KILL_SUIDGID
#define FATTR_KILL_SUIDGID (1 << 11)
#endif

static int want_killpriv_v2;
/// The INIT request's unique and the flags the kernel offered in it.
static _Atomic uint64_t init_unique;
static _Atomic uint32_t offered_flags;
static _Atomic int negotiated_killpriv_v2;
/// Set by `read` for the request this thread serves next.
static _Thread_local int kill_suidgid;

void clinux_fuse_wire_configure(int want) { want_killpriv_v2 = want; }

int clinux_fuse_wire_killpriv_v2(void) { return atomic_load(&negotiated_killpriv_v2); }

int clinux_fuse_wire_kill_suidgid(void) { return kill_suidgid; }

/// The request's argument of type T, when the message is long enough.
#define ARGUMENT(T, message, length) \
    ((length) >= sizeof(struct fuse_in_header) + sizeof(T) \
         ? (const T *)((const char *)(message) + sizeof(struct fuse_in_header)) : NULL)

static void note(const void *message, size_t length) {
    kill_suidgid = 0;
    if (length < sizeof(struct fuse_in_header)) return;
    const struct fuse_in_header *header = message;
    switch (header->opcode) {
    case FUSE_WRITE: {
        const struct fuse_write_in *in = ARGUMENT(struct fuse_write_in, message, length);
        kill_suidgid = in && (in->write_flags & FUSE_WRITE_KILL_SUIDGID);
        break;
    }
    case FUSE_OPEN: {
        const struct fuse_open_in *in = ARGUMENT(struct fuse_open_in, message, length);
        kill_suidgid = in && (in->open_flags & FUSE_OPEN_KILL_SUIDGID);
        break;
    }
    case FUSE_CREATE: {
        const struct fuse_create_in *in = ARGUMENT(struct fuse_create_in, message, length);
        kill_suidgid = in && (in->open_flags & FUSE_OPEN_KILL_SUIDGID);
        break;
    }
    case FUSE_SETATTR: {
        const struct fuse_setattr_in *in = ARGUMENT(struct fuse_setattr_in, message, length);
        kill_suidgid = in && (in->valid & FATTR_KILL_SUIDGID);
        break;
    }
    case FUSE_INIT: {
        // major, minor, max_readahead, flags: the first four words since 7.6.
        if (length < sizeof(struct fuse_in_header) + 4 * sizeof(uint32_t)) break;
        const uint32_t *in = (const uint32_t *)((const char *)message + sizeof(struct fuse_in_header));
        atomic_store(&offered_flags, in[3]);
        atomic_store(&init_unique, header->unique);
        break;
    }
    default:
        break;
    }
}

ssize_t clinux_fuse_wire_read(int fd, void *buf, size_t buf_len, void *userdata) {
    (void)userdata;
    ssize_t length = read(fd, buf, buf_len);
    if (length > 0) {
        int saved = errno;
        note(buf, (size_t)length);
        errno = saved;
    }
    return length;
}

/// Amends libfuse's INIT reply in place (the vector's second element is the
/// reply's argument: libfuse sends header and argument as two elements).
static void amend_init(struct iovec *iov, int count) {
    if (count < 2 || iov[0].iov_len < sizeof(struct fuse_out_header)) return;
    const struct fuse_out_header *header = iov[0].iov_base;
    uint64_t unique = atomic_load(&init_unique);
    if (unique == 0 || header->unique != unique || header->error != 0) return;
    atomic_store(&init_unique, 0);
    // flags is the fourth word of fuse_init_out in every version.
    if (iov[1].iov_len < 4 * sizeof(uint32_t)) return;
    uint32_t *out = iov[1].iov_base;
    uint32_t offered = atomic_load(&offered_flags);
    if (want_killpriv_v2 && (offered & FUSE_HANDLE_KILLPRIV_V2)) {
        out[3] |= FUSE_HANDLE_KILLPRIV_V2;
        atomic_store(&negotiated_killpriv_v2, 1);
    }
}

ssize_t clinux_fuse_wire_writev(int fd, struct iovec *iov, int count, void *userdata) {
    (void)userdata;
    if (atomic_load_explicit(&init_unique, memory_order_relaxed) != 0) amend_init(iov, count);
    return writev(fd, iov, count);
}

ssize_t clinux_fuse_wire_splice_send(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
                                     unsigned int flags, void *userdata) {
    (void)userdata;
    return splice(fdin, offin, fdout, offout, len, flags);
}
