#define _GNU_SOURCE
#include "clinux_fuse_wire.h"
#include "clinux_fuse_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
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

// Kernel passthrough (7.40, Linux 6.9): flags2 bit, open flag, ioctls.
#define WIRE_PASSTHROUGH_FLAGS2 (1u << (37 - 32))
#define WIRE_FOPEN_PASSTHROUGH (1u << 7)
struct wire_backing_map {
    int32_t fd;
    uint32_t flags;
    uint64_t padding;
};
#define WIRE_DEV_IOC_BACKING_OPEN _IOW(229, 1, struct wire_backing_map)
#define WIRE_DEV_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)

const uint32_t clinux_FOPEN_PASSTHROUGH = WIRE_FOPEN_PASSTHROUGH;
const uint32_t clinux_FOPEN_DIRECT_IO = 1u << 0;
const uint32_t clinux_FOPEN_NOFLUSH = 1u << 5;

// FUSE over io_uring (7.42, Linux 6.14): a flags2 bit, offered only where
// /sys/module/fuse/parameters/enable_uring is on.
#define WIRE_OVER_IO_URING_FLAGS2 (1u << (41 - 32))
// mmap(MAP_SHARED) of a file in direct I/O (7.39, Linux 6.6): a flags2 bit.
#define WIRE_DIRECT_IO_ALLOW_MMAP_FLAGS2 (1u << (36 - 32))

static int want_killpriv_v2;
static int want_passthrough;
static int ring_threads_per_queue;
static _Atomic int negotiated_ring;
/// The largest payload a request or reply may carry, from the INIT reply.
static _Atomic size_t ring_payload;
static _Atomic uint32_t offered_flags2;
static _Atomic int negotiated_passthrough;
/// The INIT request's unique and the flags the kernel offered in it.
static _Atomic uint64_t init_unique;
static _Atomic uint32_t offered_flags;
static _Atomic int negotiated_killpriv_v2;
static _Atomic int negotiated_direct_io_mmap;
/// Called once the INIT reply is written (and the ring started).
static void (*initialized)(void);
/// Set by `read` for the request this thread serves next.
static _Thread_local int kill_suidgid;

void clinux_fuse_wire_configure(int killpriv_v2, int passthrough, int ring_per_queue, void (*on_initialized)(void)) {
    want_killpriv_v2 = killpriv_v2;
    want_passthrough = passthrough;
    ring_threads_per_queue = ring_per_queue;
    initialized = on_initialized;
}

int clinux_fuse_wire_ring_asked(void) { return ring_threads_per_queue > 0; }

int clinux_fuse_wire_ring(void) { return atomic_load(&negotiated_ring); }

int clinux_fuse_wire_direct_io_mmap(void) { return atomic_load(&negotiated_direct_io_mmap); }

int clinux_fuse_wire_ring_offered(void) {
    return ring_threads_per_queue > 0 && (atomic_load(&offered_flags) & FUSE_INIT_EXT) &&
           (atomic_load(&offered_flags2) & WIRE_OVER_IO_URING_FLAGS2);
}

int clinux_fuse_wire_killpriv_v2(void) { return atomic_load(&negotiated_killpriv_v2); }

int clinux_fuse_wire_passthrough(void) { return atomic_load(&negotiated_passthrough); }

int clinux_fuse_backing_open(int device, int fd) {
    struct wire_backing_map map = {.fd = fd, .flags = 0, .padding = 0};
    int id = ioctl(device, WIRE_DEV_IOC_BACKING_OPEN, &map);
    return id < 0 ? -errno : id;
}

int clinux_fuse_backing_close(int device, int backing_id) {
    uint32_t id = (uint32_t)backing_id;
    return ioctl(device, WIRE_DEV_IOC_BACKING_CLOSE, &id) < 0 ? -errno : 0;
}

int clinux_fuse_wire_kill_suidgid(void) { return kill_suidgid; }

/// The request's argument of type T, when the message is long enough.
#define ARGUMENT(T, message, length) \
    ((length) >= sizeof(struct fuse_in_header) + sizeof(T) \
         ? (const T *)((const char *)(message) + sizeof(struct fuse_in_header)) : NULL)

void clinux_fuse_wire_note(const void *message, size_t length) {
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
        // major, minor, max_readahead, flags: the first four words since 7.6;
        // flags2 the fifth since 7.36 (with FUSE_INIT_EXT).
        if (length < sizeof(struct fuse_in_header) + 4 * sizeof(uint32_t)) break;
        const uint32_t *in = (const uint32_t *)((const char *)message + sizeof(struct fuse_in_header));
        atomic_store(&offered_flags, in[3]);
        if ((in[3] & FUSE_INIT_EXT) && length >= sizeof(struct fuse_in_header) + 5 * sizeof(uint32_t))
            atomic_store(&offered_flags2, in[4]);
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
        clinux_fuse_wire_note(buf, (size_t)length);
        errno = saved;
    }
    return length;
}

/// Amends libfuse's INIT reply in place (the vector's second element is the
/// reply's argument: libfuse sends header and argument as two elements).
/// Returns whether it was the INIT reply.
static int amend_init(struct iovec *iov, int count) {
    if (count < 2 || iov[0].iov_len < sizeof(struct fuse_out_header)) return 0;
    const struct fuse_out_header *header = iov[0].iov_base;
    uint64_t unique = atomic_load(&init_unique);
    if (unique == 0 || header->unique != unique || header->error != 0) return 0;
    atomic_store(&init_unique, 0);
    // flags is the fourth word of fuse_init_out in every version.
    if (iov[1].iov_len < 4 * sizeof(uint32_t)) return 1;
    uint32_t *out = iov[1].iov_base;
    uint32_t offered = atomic_load(&offered_flags);
    if (want_killpriv_v2 && (offered & FUSE_HANDLE_KILLPRIV_V2)) {
        out[3] |= FUSE_HANDLE_KILLPRIV_V2;
        atomic_store(&negotiated_killpriv_v2, 1);
    }
    // fuse_init_out words: 3 flags, 8 flags2, 9 max_stack_depth (7.40). The
    // kernel refuses passthrough with the writeback cache (purgefs never
    // asks for it) and ignores it without a stack depth of 1 or 2; 1 lets
    // the backing files live on any non-stacked filesystem.
    if (want_passthrough && (offered & FUSE_INIT_EXT) && (atomic_load(&offered_flags2) & WIRE_PASSTHROUGH_FLAGS2) &&
        iov[1].iov_len >= 10 * sizeof(uint32_t) && !(out[3] & FUSE_WRITEBACK_CACHE)) {
        out[3] |= FUSE_INIT_EXT;
        out[8] |= WIRE_PASSTHROUGH_FLAGS2;
        out[9] = 1;
        atomic_store(&negotiated_passthrough, 1);
    }
    // A shared mapping of a file opened in direct I/O (O_DIRECT, or
    // write-only: see describe(_:opened:in:)) works as on ext4; without
    // it the kernel answers mmap ENODEV.
    if ((offered & FUSE_INIT_EXT) && (atomic_load(&offered_flags2) & WIRE_DIRECT_IO_ALLOW_MMAP_FLAGS2) &&
        iov[1].iov_len >= 9 * sizeof(uint32_t)) {
        out[3] |= FUSE_INIT_EXT;
        out[8] |= WIRE_DIRECT_IO_ALLOW_MMAP_FLAGS2;
        atomic_store(&negotiated_direct_io_mmap, 1);
    }
    // fuse_init_out: max_write is word 5, max_pages the low half of word 7;
    // the kernel refuses ring entries smaller than either allows. Asked
    // for only once its threads and rings exist: from this reply on the
    // kernel holds every request until each queue has an entry.
    if (clinux_fuse_wire_ring_offered() && iov[1].iov_len >= 9 * sizeof(uint32_t)) {
        size_t pages = (size_t)(out[7] & 0xffff) * (size_t)sysconf(_SC_PAGESIZE);
        size_t payload = out[5] > pages ? out[5] : pages;
        payload = payload > 8192 ? payload : 8192;
        if (clinux_fuse_ring_prepare(payload, ring_threads_per_queue) > 0) {
            out[3] |= FUSE_INIT_EXT;
            out[8] |= WIRE_OVER_IO_URING_FLAGS2;
            atomic_store(&ring_payload, payload);
            atomic_store(&negotiated_ring, 1);
        }
    }
    return 1;
}

ssize_t clinux_fuse_wire_writev(int fd, struct iovec *iov, int count, void *userdata) {
    (void)userdata;
    if (atomic_load_explicit(&init_unique, memory_order_relaxed) != 0) {
        int init = amend_init(iov, count);
        ssize_t written = writev(fd, iov, count);
        // The kernel registers ring entries only once INIT is answered.
        if (written > 0 && atomic_load(&negotiated_ring)) clinux_fuse_ring_start();
        if (init && written > 0 && initialized) initialized();
        return written;
    }
    if (atomic_load_explicit(&negotiated_ring, memory_order_relaxed)) {
        ssize_t committed = clinux_fuse_ring_reply(iov, count);
        if (committed != 0) return committed;
    }
    return writev(fd, iov, count);
}

ssize_t clinux_fuse_wire_splice_send(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
                                     unsigned int flags, void *userdata) {
    (void)userdata;
    if (!clinux_fuse_ring_serving()) return splice(fdin, offin, fdout, offout, len, flags);
    // A ring thread's reply (the read handler copies into its entry, so
    // only a spliced reply of some other handler): the kernel waits for it
    // on the ring, never on /dev/fuse. Drained from libfuse's pipe, which
    // holds the whole message, and committed as a copied reply.
    char *message = malloc(len > 0 ? len : 1);
    if (!message) {
        errno = ENOMEM;
        return -1;
    }
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fdin, message + got, len - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    ssize_t result = -1;
    if (got == len && len >= sizeof(struct fuse_out_header)) {
        struct iovec iov[2] = {{message, sizeof(struct fuse_out_header)},
                               {message + sizeof(struct fuse_out_header), len - sizeof(struct fuse_out_header)}};
        result = clinux_fuse_ring_reply(iov, 2);
        if (result == 0) result = writev(fdout, iov, 2);
    } else {
        errno = EIO;
    }
    int saved = errno;
    free(message);
    errno = saved;
    return result;
}
