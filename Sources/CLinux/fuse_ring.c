#define _GNU_SOURCE
#include "clinux_fuse_ring.h"
#include "clinux.h"

#include <errno.h>
#include <liburing.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// The ring's ABI (linux/fuse.h 7.42, Linux 6.14); this system's header predates it.
enum { RING_CMD_REGISTER = 1, RING_CMD_COMMIT_AND_FETCH = 2 };
struct ring_entry_in_out {
    uint64_t flags;
    uint64_t commit_id;
    uint32_t payload_sz;
    uint32_t padding;
    uint64_t reserved;
};
struct ring_header {
    char in_out[128]; // fuse_in_header in, fuse_out_header out
    char op_in[128];  // the request's first argument (fuse_write_in, ...)
    struct ring_entry_in_out entry;
};
struct ring_cmd {
    uint64_t flags;
    uint64_t commit_id;
    uint16_t qid;
    uint8_t padding[6];
};

/// Room before the payload for the header and first argument, so that a
/// request is handed to libfuse in one piece, as read(2) would give it.
#define PREFIX 4096
/// user_data of the no-op that wakes a thread to stop.
#define WAKE_TAG 1

struct ring_thread {
    struct io_uring ring;
    /// Guards the submission queue: a reply may come from another thread.
    pthread_mutex_t lock;
    pthread_t thread;
    int qid;
    /// Cleared, under `lock`, once the thread has ended: a late reply then fails.
    int running;
    struct ring_header *header;
    char *area; // PREFIX + payload
    struct iovec iov[2];
    /// The unique of the request this entry holds until its reply, else 0.
    _Atomic uint64_t serving;
};

static struct {
    int device;
    void *session;
    int pinned;
    clinux_fuse_ring_process process;
    size_t payload;
    /// Never freed: a late reply may still look an entry up (one session a process).
    struct ring_thread *threads;
    int per_queue;
    /// Per queue: its threads now in a long wait (clinux_fuse_ring_may_wait).
    _Atomic int *waiting;
    _Atomic int count;
    _Atomic int stopping;
    pthread_mutex_t lifecycle;
} R = {.device = -1, .lifecycle = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local struct ring_thread *self;

// fuse_wire.c: what a request tells the thread that serves it.
void clinux_fuse_wire_note(const void *message, size_t length);

void clinux_fuse_ring_configure(int device, void *session, int pinned, clinux_fuse_ring_process process) {
    R.device = device;
    R.session = session;
    R.pinned = pinned;
    R.process = process;
}

/// The kernel makes one queue per possible CPU (num_possible_cpus).
static int possible_cpus(void) {
    FILE *file = fopen("/sys/devices/system/cpu/possible", "r");
    if (!file) return -1;
    int highest = -1, low, high;
    char separator;
    while (fscanf(file, "%d", &low) == 1) {
        high = low;
        if (fscanf(file, "%c", &separator) == 1 && separator == '-') {
            if (fscanf(file, "%d", &high) != 1) break;
            if (fscanf(file, "%c", &separator) != 1) separator = '\n';
        }
        if (high > highest) highest = high;
        if (separator != ',') break;
    }
    fclose(file);
    return highest + 1;
}

/// Queues a command for this thread's entry; the caller holds `lock`.
static int queue_command(struct ring_thread *t, uint32_t op, uint64_t commit_id) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
    if (!sqe) {
        io_uring_submit(&t->ring);
        sqe = io_uring_get_sqe(&t->ring);
        if (!sqe) return -EBUSY;
    }
    memset(sqe, 0, 2 * sizeof(*sqe)); // SQE128
    sqe->opcode = IORING_OP_URING_CMD;
    sqe->fd = R.device;
    sqe->cmd_op = op;
    sqe->addr = (uint64_t)(uintptr_t)t->iov;
    sqe->len = 2;
    sqe->user_data = (uint64_t)(uintptr_t)t;
    struct ring_cmd *cmd = (struct ring_cmd *)sqe->cmd;
    cmd->commit_id = commit_id;
    cmd->qid = (uint16_t)t->qid;
    return 0;
}

static void submit_locked(struct ring_thread *t) {
    pthread_mutex_lock(&t->lock);
    io_uring_submit(&t->ring);
    pthread_mutex_unlock(&t->lock);
}

/// Commits the reply now in the entry's buffers and fetches the next request.
static int commit(struct ring_thread *t, uint64_t unique) {
    atomic_store(&t->serving, 0);
    pthread_mutex_lock(&t->lock);
    int status = t->running ? queue_command(t, RING_CMD_COMMIT_AND_FETCH, unique) : -ENOTCONN;
    // The thread itself submits at the top of its loop; anyone else now.
    if (status == 0 && self != t) io_uring_submit(&t->ring);
    pthread_mutex_unlock(&t->lock);
    return status;
}

/// Answers a request the kernel handed over malformed, without libfuse.
static void refuse(struct ring_thread *t, uint64_t unique, int error) {
    struct fuse_out_header out = {.len = sizeof out, .error = -error, .unique = unique};
    memcpy(t->header->in_out, &out, sizeof out);
    t->header->entry.payload_sz = 0;
    commit(t, unique);
}

/// Hands the request in the entry to libfuse, laid out as read(2) gives it.
static void serve(struct ring_thread *t) {
    struct fuse_in_header in;
    memcpy(&in, t->header->in_out, sizeof in);
    uint32_t payload = t->header->entry.payload_sz;
    // The first argument's size is not sent: it is what the length leaves.
    if (in.len < sizeof in + (size_t)payload || payload > R.payload ||
        in.len - sizeof in - payload > sizeof t->header->op_in) {
        refuse(t, in.unique, EIO);
        return;
    }
    size_t argument = in.len - sizeof in - payload;
    char *message = t->area + PREFIX - argument - sizeof in;
    memcpy(message, &in, sizeof in);
    memcpy(message + sizeof in, t->header->op_in, argument);
    atomic_store(&t->serving, in.unique);
    clinux_fuse_wire_note(message, in.len);
    R.process(R.session, message, in.len);
}

static void *ring_main(void *argument) {
    struct ring_thread *t = argument;
    self = t;
    // Pinned (`uring=pinned`, the default), a request never wakes another
    // CPU: creates, small files, stats and cached reads go faster.
    // Unpinned (`uring=on`), a thread that waits in a handler (an fsync, a
    // read from disk) is woken where the I/O completes, and a busy CPU's
    // requests are served on an idle one: a database's bulk load goes a
    // tenth faster (BENCHMARKS, run P). An offline CPU's queue stays unpinned.
    if (R.pinned) clinux_pin_thread(t->qid);
    pthread_mutex_lock(&t->lock);
    queue_command(t, RING_CMD_REGISTER, 0);
    pthread_mutex_unlock(&t->lock);
    for (;;) {
        submit_locked(t);
        struct io_uring_cqe *cqe;
        int status = io_uring_wait_cqe(&t->ring, &cqe);
        if (status == -EINTR) continue;
        if (status < 0) break;
        uint64_t tag = cqe->user_data;
        int result = cqe->res;
        io_uring_cqe_seen(&t->ring, cqe);
        if (tag == WAKE_TAG) {
            if (atomic_load(&R.stopping)) break;
            continue;
        }
        // Refused (the ring turned off), or cancelled at the end of the connection.
        if (result < 0) break;
        serve(t);
    }
    return NULL;
}

static int prepare(struct ring_thread *t, int qid, size_t payload) {
    memset(t, 0, sizeof *t);
    t->qid = qid;
    if (posix_memalign((void **)&t->header, 4096, sizeof *t->header) != 0) return -ENOMEM;
    memset(t->header, 0, sizeof *t->header);
    if (posix_memalign((void **)&t->area, 4096, PREFIX + payload) != 0) {
        free(t->header);
        return -ENOMEM;
    }
    t->iov[0] = (struct iovec){.iov_base = t->header, .iov_len = sizeof *t->header};
    t->iov[1] = (struct iovec){.iov_base = t->area + PREFIX, .iov_len = payload};
    pthread_mutex_init(&t->lock, NULL);
    // Two submissions at most wait at once: a command and the wake-up.
    int status = io_uring_queue_init(4, &t->ring, IORING_SETUP_SQE128 | IORING_SETUP_COOP_TASKRUN);
    if (status == -EINVAL) status = io_uring_queue_init(4, &t->ring, IORING_SETUP_SQE128);
    return status;
}

int clinux_fuse_ring_start(size_t payload, int per_queue) {
    pthread_mutex_lock(&R.lifecycle);
    int status = 0;
    int queues = possible_cpus();
    if (R.threads || R.device < 0 || !R.process || queues <= 0 || per_queue <= 0) {
        status = -EINVAL;
        goto out;
    }
    // At most about 64 threads in all (libfuse's own limit), 2 a queue at least.
    if (queues * per_queue > 64) per_queue = 64 / queues > 2 ? 64 / queues : 2;
    R.threads = calloc((size_t)(queues * per_queue), sizeof *R.threads);
    R.waiting = calloc((size_t)queues, sizeof *R.waiting);
    if (!R.threads || !R.waiting) {
        status = -ENOMEM;
        goto out;
    }
    R.per_queue = per_queue;
    R.payload = payload;
    for (int index = 0; index < queues * per_queue; index++) {
        struct ring_thread *t = &R.threads[index];
        status = prepare(t, index % queues, payload);
        if (status < 0) break;
        t->running = 1;
        if ((status = -pthread_create(&t->thread, NULL, ring_main, t)) < 0) {
            io_uring_queue_exit(&t->ring);
            t->running = 0;
            break;
        }
        atomic_store(&R.count, index + 1);
    }
    status = atomic_load(&R.count) > 0 ? atomic_load(&R.count) : status;
out:
    pthread_mutex_unlock(&R.lifecycle);
    return status;
}

void clinux_fuse_ring_stop(void) {
    pthread_mutex_lock(&R.lifecycle);
    atomic_store(&R.stopping, 1);
    for (int index = 0; index < atomic_load(&R.count); index++) {
        struct ring_thread *t = &R.threads[index];
        pthread_mutex_lock(&t->lock);
        int running = t->running;
        if (running) {
            struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
            if (sqe) {
                memset(sqe, 0, 2 * sizeof(*sqe));
                io_uring_prep_nop(sqe);
                sqe->user_data = WAKE_TAG;
                io_uring_submit(&t->ring);
            }
        }
        pthread_mutex_unlock(&t->lock);
        if (!running) continue;
        pthread_join(t->thread, NULL);
        // Closing the ring cancels the commands still waiting for a request.
        pthread_mutex_lock(&t->lock);
        t->running = 0;
        io_uring_queue_exit(&t->ring);
        pthread_mutex_unlock(&t->lock);
    }
    pthread_mutex_unlock(&R.lifecycle);
}

void *clinux_fuse_ring_reply_area(size_t size) {
    if (!self || atomic_load(&self->serving) == 0 || size > R.payload) return NULL;
    return self->area + PREFIX;
}

int clinux_fuse_ring_may_wait(void) {
    if (!self) return 1;
    _Atomic int *waiting = &R.waiting[self->qid];
    if (atomic_fetch_add(waiting, 1) < R.per_queue / 2) return 1;
    atomic_fetch_sub(waiting, 1);
    return 0;
}

void clinux_fuse_ring_done_waiting(void) {
    if (self) atomic_fetch_sub(&R.waiting[self->qid], 1);
}

ssize_t clinux_fuse_ring_reply(const struct iovec *iov, int count) {
    if (count < 1 || iov[0].iov_len < sizeof(struct fuse_out_header)) return 0;
    const struct fuse_out_header *out = iov[0].iov_base;
    uint64_t unique = out->unique;
    if (unique == 0) return 0; // a notice: never through the ring
    struct ring_thread *t = NULL;
    if (self && atomic_load(&self->serving) == unique) {
        t = self;
    } else {
        // Threads are only added while INIT is answered, before any ring request.
        for (int index = 0; index < atomic_load(&R.count) && !t; index++)
            if (atomic_load(&R.threads[index].serving) == unique) t = &R.threads[index];
    }
    if (!t) return 0;
    size_t total = 0;
    for (int index = 1; index < count; index++) total += iov[index].iov_len;
    if (total > R.payload) {
        refuse(t, unique, EIO);
        errno = EMSGSIZE;
        return -1;
    }
    memcpy(t->header->in_out, out, sizeof *out);
    char *payload = t->area + PREFIX;
    // Data read straight into the entry (clinux_fuse_ring_reply_area) is in place.
    if (!(count == 2 && iov[1].iov_base == payload)) {
        for (int index = 1; index < count; index++) {
            memcpy(payload, iov[index].iov_base, iov[index].iov_len);
            payload += iov[index].iov_len;
        }
    }
    t->header->entry.payload_sz = (uint32_t)total;
    int status = commit(t, unique);
    if (status < 0) {
        errno = -status;
        return -1;
    }
    return (ssize_t)(sizeof *out + total);
}
