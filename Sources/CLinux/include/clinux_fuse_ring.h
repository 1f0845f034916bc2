// FUSE over io_uring (Linux 6.14+), driven beside libfuse 3.14, which knows
// nothing of it. The kernel hands each request to a ring entry of the queue
// of the CPU the caller runs on; the entry's thread serves it and commits
// the reply through the same ring: no read(2) and write(2) on /dev/fuse,
// and the request comes to the thread as io_uring task work, on the
// thread's own CPU. FORGET and INTERRUPT still come through read(2) of /dev/fuse,
// as does everything before every queue has an entry (libfuse's own loop
// keeps serving those). Plain types only (see clinux.h).
#ifndef PURGEFS_CLINUX_FUSE_RING_H
#define PURGEFS_CLINUX_FUSE_RING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/// Serves one request: `message` holds it as read(2) of /dev/fuse would
/// (header, argument, payload: `length` bytes). Its reply comes back through
/// the custom I/O `writev` (clinux_fuse_wire_writev).
typedef void (*clinux_fuse_ring_process)(void *session, const void *message, size_t length);

/// Set before the session starts: the connection's descriptor, whether each
/// queue's threads are pinned to its CPU, what serves a request, and with
/// what. The ring starts once the INIT reply asking for it is written
/// (clinux_fuse_wire_writev), never before.
void clinux_fuse_ring_configure(int device, void *session, int pinned, clinux_fuse_ring_process process);

/// Starts one queue per possible CPU, `per_queue` threads each (fewer where
/// that would pass 64 threads, never fewer than 2), every thread with one
/// entry of `payload` bytes. Returns the threads started, or -errno.
int clinux_fuse_ring_start(size_t payload, int per_queue);

/// Wakes every ring thread, waits for it (a thread inside a handler finishes
/// it first) and closes its ring; the kernel then cancels the entries that
/// wait for requests. Buffers are kept: a late reply finds its entry closed
/// and fails. Idempotent. Call after the unmount, before closing the
/// connection.
void clinux_fuse_ring_stop(void);

/// Where the calling ring thread may put `size` bytes of the reply to the
/// request it serves, so that the reply needs no copy: its entry's payload
/// buffer (the request's own payload is spent by then only for requests
/// that carry none, such as READ). NULL on any other thread, or when larger.
void *clinux_fuse_ring_reply_area(size_t size);

/// Before a long wait inside a handler (a fault's delay): whether the
/// calling thread may take it. A ring thread may while fewer than half of
/// its queue's threads wait so: the kernel gives a CPU's requests only to
/// that CPU's queue, which must keep a thread to answer. Any other thread
/// may (libfuse's workers have limits of their own). Pair a 1 with
/// clinux_fuse_ring_done_waiting.
int clinux_fuse_ring_may_wait(void);
void clinux_fuse_ring_done_waiting(void);

/// If the reply in `iov` answers a request a ring entry holds, commits it
/// through that entry's ring and returns its length (-1 with errno if the
/// ring refused it). Returns 0 for any other message: the caller writes it
/// to /dev/fuse.
ssize_t clinux_fuse_ring_reply(const struct iovec *iov, int count);

#endif
