// What libfuse 3.14 cannot negotiate, reached through its custom I/O hook
// (fuse_session_custom_io): every message read from /dev/fuse and every
// reply written to it passes through these functions. They add
// FUSE_HANDLE_KILLPRIV_V2 to the INIT reply when asked, and tell the handler
// of the request a thread is serving what libfuse does not pass on: the
// kernel's instruction to clear suid/sgid (FUSE_WRITE_KILL_SUIDGID,
// FUSE_OPEN_KILL_SUIDGID, FATTR_KILL_SUIDGID). Plain types only (see clinux.h).
#ifndef PURGEFS_CLINUX_FUSE_WIRE_H
#define PURGEFS_CLINUX_FUSE_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <sys/uio.h>

/// Asks for killpriv v2, for kernel passthrough (FUSE_PASSTHROUGH, with a
/// stack depth of 1), for FUSE_DIRECT_IO_ALLOW_MMAP and, when
/// `ring_per_queue` > 0, for FUSE over io_uring with that many threads per
/// CPU (clinux_fuse_ring.h, asked for only once its threads exist) in the
/// INIT reply, each when the kernel offers it. `initialized` is called once
/// that reply is written (and the ring started). Set before the session
/// starts; one session per process.
void clinux_fuse_wire_configure(int want_killpriv_v2, int want_passthrough, int ring_per_queue,
                                void (*initialized)(void));

/// Whether the ring was asked for (`ring_per_queue` > 0).
int clinux_fuse_wire_ring_asked(void);
/// Whether the INIT reply sent asked for the ring (its threads made).
int clinux_fuse_wire_ring(void);
/// Whether the INIT reply sent asked for FUSE_DIRECT_IO_ALLOW_MMAP.
int clinux_fuse_wire_direct_io_mmap(void);

/// Whether the kernel's INIT offers the ring and it was asked for: known
/// when libfuse's init callback runs, before the reply is sent.
int clinux_fuse_wire_ring_offered(void);

/// Notes what a request tells the thread that serves it (the ring's threads
/// call it for the requests they are handed).
void clinux_fuse_wire_note(const void *message, size_t length);

/// Whether the INIT reply sent turned killpriv v2 on (0 before INIT).
int clinux_fuse_wire_killpriv_v2(void);
/// Whether the INIT reply sent turned kernel passthrough on (0 before INIT).
int clinux_fuse_wire_passthrough(void);

/// The open reply (fuse_open_out, 7.40): `backing_id` with FOPEN_PASSTHROUGH
/// (and FOPEN_DIRECT_IO: reads and writes go to the daemon, mmap to the backing file).
struct clinux_fuse_open_out {
    uint64_t fh;
    uint32_t open_flags;
    int32_t backing_id;
};
extern const uint32_t clinux_FOPEN_PASSTHROUGH;
extern const uint32_t clinux_FOPEN_DIRECT_IO;
/// No FUSE_FLUSH at close (5.15+; without the writeback cache).
extern const uint32_t clinux_FOPEN_NOFLUSH;

/// FUSE_DEV_IOC_BACKING_OPEN on a descriptor of the connection: registers
/// `fd` as a backing file. Returns its id (> 0), or -errno.
int clinux_fuse_backing_open(int device, int fd);
/// FUSE_DEV_IOC_BACKING_CLOSE: drops a backing id. Returns 0 or -errno.
int clinux_fuse_backing_close(int device, int backing_id);

/// The custom I/O `read`: read(2) of one message, noted on the way.
ssize_t clinux_fuse_wire_read(int fd, void *buf, size_t buf_len, void *userdata);
/// The custom I/O `writev`: writev(2) of one reply, the INIT reply amended
/// (and the ring started after it); a reply to a request a ring entry holds
/// is committed through the ring instead.
ssize_t clinux_fuse_wire_writev(int fd, struct iovec *iov, int count, void *userdata);
/// The custom I/O `splice_send`: splice(2) as libfuse would call it, so that
/// read replies stay zero-copy; on a ring thread serving a request, the
/// message is drained from the pipe and committed through the ring instead.
ssize_t clinux_fuse_wire_splice_send(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
                                     unsigned int flags, void *userdata);

/// Whether the request the calling thread read last carries the kernel's
/// instruction to clear suid/sgid (write, open, create or setattr). libfuse
/// serves a request on the thread that read it.
int clinux_fuse_wire_kill_suidgid(void);

#endif
