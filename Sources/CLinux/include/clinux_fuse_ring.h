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

/// Lines for the daemon log (a failed completion, a thread that stops).
typedef void (*clinux_fuse_ring_note)(const char *line);

/// Set before the session starts: the connection's descriptor, whether each
/// queue's threads are pinned to its CPU, what serves a request, where
/// lines for the daemon log go, and how many registrations of each entry
/// to send malformed, which the kernel refuses (0; tests provoke failed
/// completions with it: PURGEFS_RING_REFUSALS). The ring is prepared while
/// the INIT reply is written and started once it is
/// (clinux_fuse_wire_writev), never before.
void clinux_fuse_ring_configure(int device, void *session, int pinned, clinux_fuse_ring_process process,
                                clinux_fuse_ring_note note, int refusals);

/// Makes everything the ring needs before the INIT reply asks for it, so
/// that a ring asked for never lacks a thread (the kernel holds every
/// request until each queue has an entry): one queue per possible CPU (the
/// kernel's count), `per_queue` threads for each online CPU's queue, 64
/// threads in all at most (fewer a queue where CPUs are many, one thread
/// for several queues past 64 online CPUs), each thread with one io_uring
/// and one entry of `payload` bytes, and the queues of CPUs offline now
/// dealt out to those threads as extra entries. The threads wait for
/// clinux_fuse_ring_start. Returns the threads made, or -errno (nothing is
/// left then; clinux_fuse_ring_status says why).
int clinux_fuse_ring_prepare(size_t payload, int per_queue);

/// How prepare lays the ring out (pure; for tests): for `queues` kernel
/// queues of which `online[qid]` says which CPUs are online, with
/// `*per_queue` threads wanted a queue, sets `*per_queue` to the threads
/// each online queue gets, `*threads` to the threads in all (64 at most)
/// and `*served` to the queues with threads of their own, and fills
/// `owners[i]` (a thread) and `qids[i]` (its entry's queue) for each entry,
/// the served queues' entries first. `owners` and `qids` hold
/// 2 * queues + 64. Returns the entries, or -errno.
int clinux_fuse_ring_layout(int queues, const unsigned char *online, int *per_queue, int *threads, int *served,
                            int *owners, int *qids);

/// Lets every thread register its entries (once INIT is answered: the
/// kernel refuses entries before), and returns once the kernel has taken
/// or refused them (2 s at most). An entry whose command fails (a
/// completion with an error) is logged and registers again after a pause
/// (10 ms, doubling to 1.28 s); only the end of the connection, or
/// clinux_fuse_ring_stop, ends a thread.
void clinux_fuse_ring_start(void);

/// Wakes every ring thread, waits for it (a thread inside a handler finishes
/// it first, its reply committed) and closes its ring; the kernel then
/// cancels the entries that wait for requests. Buffers are kept: a late
/// reply finds its entry closed and fails. Idempotent. Call before the
/// unmount: libfuse's unmount closes the connection's descriptor, which
/// every command of the ring names.
void clinux_fuse_ring_stop(void);

/// What the ring is doing, for the daemon log and user.purgefs.transport.
struct clinux_fuse_ring_status {
    int queues;      // the kernel's queues (possible CPUs); 0 before prepare
    int online;      // the queues with threads of their own (online CPUs)
    int per_queue;   // threads for each of those
    int threads;     // threads in all
    int pinned;
    int started;     // prepared and started, not stopped
    int serving;     // every queue has an entry the kernel holds
    int setup_error; // -errno: why prepare failed, else 0
    int last_error;  // -errno of the last failed completion, else 0
};
void clinux_fuse_ring_status(struct clinux_fuse_ring_status *status);

/// Whether the calling thread is a ring thread serving a request (whose
/// reply must go through its entry, never to /dev/fuse).
int clinux_fuse_ring_serving(void);

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
