#define _GNU_SOURCE
#include "clinux_fuse_ring.h"
#include "clinux.h"

#include <errno.h>
#include <liburing.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
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
/// user_data of the no-ops: wake a thread to stop; let it register its entries.
#define WAKE_TAG 1
#define START_TAG 2
/// Ring threads in all at most, whatever the number of CPUs (libfuse's own
/// limit for its workers).
#define MOST_THREADS 64
/// An entry whose command failed registers again after this long, doubled
/// at each failure in a row up to LAST_RETRY_MS.
#define FIRST_RETRY_MS 10
#define LAST_RETRY_MS 1280

struct ring_thread;

/// One ring entry: a header and a payload buffer the kernel fills with one
/// request of its queue at a time.
struct ring_entry {
    struct ring_thread *owner;
    int qid;
    struct ring_header *header;
    char *area; // PREFIX + payload
    struct iovec iov[2];
    /// The unique of the request this entry holds until its reply, else 0.
    _Atomic uint64_t serving;
    /// Whether the kernel holds a command of this entry: cleared by a failed
    /// completion, set when the entry registers again.
    _Atomic int live;
    // The owner's only:
    uint32_t command;    // the last command queued
    int failures;        // failed completions in a row
    int64_t retry_at;    // when to register again (CLOCK_MONOTONIC ms), else 0
    int ended;           // the connection ended it
    int refusals;        // registrations still to send malformed (tests)
};

/// One thread, one io_uring, one or more entries: one entry of its CPU's
/// queue, plus one of each queue of a CPU that was offline at the start
/// and fell to it (such a queue's requests, should its CPU come online,
/// are served by this thread between its own).
struct ring_thread {
    struct io_uring ring;
    /// Guards the submission queue: a reply may come from another thread.
    pthread_mutex_t lock;
    pthread_t thread;
    /// Set, under `lock`, while the thread runs: a late reply then fails.
    int running;
    int has_ring;
    /// The thread's own: START seen, and its first registrations answered.
    int started, settled;
    struct ring_entry *entries;
    int count;
    /// The online CPUs of its queues: where it runs with `uring=pinned`.
    cpu_set_t cpus;
};

static struct {
    int device;
    void *session;
    int pinned;
    clinux_fuse_ring_process process;
    clinux_fuse_ring_note note;
    int refusals;
    size_t payload;
    /// Never freed once started: a late reply may still look an entry up
    /// (one session a process).
    struct ring_thread *threads;
    int thread_count;
    int queues, online, per_queue;
    /// Per queue: the threads of that queue now in a long wait (clinux_fuse_ring_may_wait).
    _Atomic int *waiting;
    _Atomic int started;
    _Atomic int stopping;
    /// Threads whose first registrations the kernel has answered (accepted
    /// or refused: a refusal completes at once), for the line at mount.
    int settled;
    pthread_mutex_t settle_lock;
    pthread_cond_t settle_change;
    /// -errno: why the ring could not be set up, or the last failed completion.
    _Atomic int setup_error;
    _Atomic int last_error;
    pthread_mutex_t lifecycle;
} R = {.device = -1, .lifecycle = PTHREAD_MUTEX_INITIALIZER, .settle_lock = PTHREAD_MUTEX_INITIALIZER,
       .settle_change = PTHREAD_COND_INITIALIZER};

/// The ring thread running, and the entry whose request it is serving.
static _Thread_local struct ring_thread *self;
static _Thread_local struct ring_entry *current;

// fuse_wire.c: what a request tells the thread that serves it.
void clinux_fuse_wire_note(const void *message, size_t length);

void clinux_fuse_ring_configure(int device, void *session, int pinned, clinux_fuse_ring_process process,
                                clinux_fuse_ring_note note, int refusals) {
    R.device = device;
    R.session = session;
    R.pinned = pinned;
    R.process = process;
    R.note = note;
    R.refusals = refusals > 0 ? refusals : 0;
}

static void note(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *format, ...) {
    if (!R.note) return;
    char line[256];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(line, sizeof line, format, arguments);
    va_end(arguments);
    R.note(line);
}

/// A CPU list as /sys/devices/system/cpu gives it ("0-3,8"); -1 if unreadable.
static int read_cpus(const char *path, cpu_set_t *set) {
    CPU_ZERO(set);
    FILE *file = fopen(path, "r");
    if (!file) return -1;
    int low, high;
    char separator;
    while (fscanf(file, "%d", &low) == 1) {
        high = low;
        separator = '\n';
        if (fscanf(file, "%c", &separator) == 1 && separator == '-') {
            if (fscanf(file, "%d", &high) != 1) break;
            if (fscanf(file, "%c", &separator) != 1) separator = '\n';
        }
        for (int cpu = low; cpu <= high && cpu < CPU_SETSIZE; cpu++) CPU_SET(cpu, set);
        if (separator != ',') break;
    }
    fclose(file);
    return CPU_COUNT(set);
}

static int64_t now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static const char *command_name(uint32_t command) {
    return command == RING_CMD_REGISTER ? "registration" : "commit";
}

/// Queues a command for entry `e` of thread `t`; the caller holds `lock`.
static int queue_command(struct ring_thread *t, struct ring_entry *e, uint32_t op, uint64_t commit_id) {
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
    sqe->addr = (uint64_t)(uintptr_t)e->iov;
    sqe->len = 2;
    // PURGEFS_RING_REFUSALS (tests): one buffer where the kernel wants two, which it refuses.
    if (op == RING_CMD_REGISTER && e->refusals > 0) {
        e->refusals--;
        sqe->len = 1;
    }
    sqe->user_data = (uint64_t)(uintptr_t)e;
    struct ring_cmd *cmd = (struct ring_cmd *)sqe->cmd;
    cmd->commit_id = commit_id;
    cmd->qid = (uint16_t)e->qid;
    e->command = op;
    return 0;
}

static void submit_locked(struct ring_thread *t) {
    pthread_mutex_lock(&t->lock);
    io_uring_submit(&t->ring);
    pthread_mutex_unlock(&t->lock);
}

/// Registers entry `e` (again): the thread itself submits it at the top of its loop.
static void register_entry(struct ring_thread *t, struct ring_entry *e) {
    pthread_mutex_lock(&t->lock);
    e->retry_at = 0;
    if (queue_command(t, e, RING_CMD_REGISTER, 0) == 0) atomic_store(&e->live, 1);
    else e->retry_at = now_ms() + FIRST_RETRY_MS;
    pthread_mutex_unlock(&t->lock);
}

/// Commits the reply now in the entry's buffers and fetches the next request.
static int commit(struct ring_entry *e, uint64_t unique) {
    struct ring_thread *t = e->owner;
    atomic_store(&e->serving, 0);
    pthread_mutex_lock(&t->lock);
    int status = t->running ? queue_command(t, e, RING_CMD_COMMIT_AND_FETCH, unique) : -ENOTCONN;
    // The thread itself submits at the top of its loop; anyone else now.
    if (status == 0 && self != t) io_uring_submit(&t->ring);
    pthread_mutex_unlock(&t->lock);
    return status;
}

/// Answers a request the kernel handed over malformed, without libfuse.
static void refuse(struct ring_entry *e, uint64_t unique, int error) {
    struct fuse_out_header out = {.len = sizeof out, .error = -error, .unique = unique};
    memcpy(e->header->in_out, &out, sizeof out);
    e->header->entry.payload_sz = 0;
    commit(e, unique);
}

/// Hands the request in the entry to libfuse, laid out as read(2) gives it.
static void serve(struct ring_entry *e) {
    struct fuse_in_header in;
    memcpy(&in, e->header->in_out, sizeof in);
    uint32_t payload = e->header->entry.payload_sz;
    // The first argument's size is not sent: it is what the length leaves.
    if (in.len < sizeof in + (size_t)payload || payload > R.payload ||
        in.len - sizeof in - payload > sizeof e->header->op_in) {
        refuse(e, in.unique, EIO);
        return;
    }
    size_t argument = in.len - sizeof in - payload;
    char *message = e->area + PREFIX - argument - sizeof in;
    memcpy(message, &in, sizeof in);
    memcpy(message + sizeof in, e->header->op_in, argument);
    atomic_store(&e->serving, in.unique);
    current = e;
    clinux_fuse_wire_note(message, in.len);
    R.process(R.session, message, in.len);
    current = NULL;
}

/// Whether a failed completion means the connection is over (aborted,
/// unmounted, the ring closed): nothing to register again with.
static int connection_ended(int result) {
    return result == -ENOTCONN || result == -ECONNABORTED || result == -ECANCELED || result == -ENODEV ||
           result == -EBADF;
}

/// A failed completion of `e`'s command: logged, and the entry registers
/// again after a pause (it has no command in the kernel now, so its queue
/// would lose it for good), unless the connection is over.
static void failed(struct ring_thread *t, struct ring_entry *e, int result) {
    atomic_store(&e->live, 0);
    if (atomic_load(&R.stopping)) return;
    if (connection_ended(result)) {
        e->ended = 1;
        return;
    }
    atomic_store(&R.last_error, result);
    note("ring: a %s of queue %d failed (%s); its entry registers again", command_name(e->command), e->qid,
         strerror(-result));
    int shift = e->failures < 7 ? e->failures : 7;
    int delay = FIRST_RETRY_MS << shift;
    e->failures++;
    e->retry_at = now_ms() + (delay < LAST_RETRY_MS ? delay : LAST_RETRY_MS);
    (void)t;
}

/// The earliest pending registration of `t`'s entries, else 0.
static int64_t next_retry(struct ring_thread *t) {
    int64_t earliest = 0;
    for (int index = 0; index < t->count; index++) {
        int64_t at = t->entries[index].retry_at;
        if (at && (!earliest || at < earliest)) earliest = at;
    }
    return earliest;
}

static int all_ended(struct ring_thread *t) {
    for (int index = 0; index < t->count; index++)
        if (!t->entries[index].ended) return 0;
    return 1;
}

static void *ring_main(void *argument) {
    struct ring_thread *t = argument;
    self = t;
    // Pinned (`uring=pinned`, the default), a request never wakes another
    // CPU: creates, small files, stats and cached reads go faster.
    // Unpinned (`uring=on`), a thread that waits in a handler (an fsync, a
    // read from disk) is woken where the I/O completes, and a busy CPU's
    // requests are served on an idle one: a database's bulk load goes a
    // tenth faster (BENCHMARKS, run P).
    if (R.pinned && CPU_COUNT(&t->cpus) > 0) pthread_setaffinity_np(pthread_self(), sizeof t->cpus, &t->cpus);
    for (;;) {
        submit_locked(t);
        // Nothing completed after its first registrations: the kernel took
        // them (a refusal would have completed in the submission).
        if (t->started && !t->settled && io_uring_cq_ready(&t->ring) == 0) {
            t->settled = 1;
            pthread_mutex_lock(&R.settle_lock);
            R.settled++;
            pthread_cond_broadcast(&R.settle_change);
            pthread_mutex_unlock(&R.settle_lock);
        }
        struct io_uring_cqe *cqe;
        int64_t retry = next_retry(t);
        int status;
        if (retry) {
            int64_t wait = retry - now_ms();
            if (wait < 0) wait = 0;
            struct __kernel_timespec timeout = {.tv_sec = wait / 1000, .tv_nsec = (wait % 1000) * 1000000};
            status = io_uring_wait_cqe_timeout(&t->ring, &cqe, &timeout);
        } else {
            status = io_uring_wait_cqe(&t->ring, &cqe);
        }
        if (status == -EINTR) continue;
        if (status == -ETIME) {
            int64_t now = now_ms();
            for (int index = 0; index < t->count; index++) {
                struct ring_entry *e = &t->entries[index];
                if (e->retry_at && e->retry_at <= now && !atomic_load(&R.stopping)) register_entry(t, e);
            }
            continue;
        }
        if (status < 0) {
            note("ring: a thread cannot wait for its ring (%s) and stops", strerror(-status));
            break;
        }
        uint64_t tag = cqe->user_data;
        int result = cqe->res;
        io_uring_cqe_seen(&t->ring, cqe);
        if (tag == WAKE_TAG) {
            if (atomic_load(&R.stopping)) break;
            continue;
        }
        if (tag == START_TAG) {
            for (int index = 0; index < t->count; index++) register_entry(t, &t->entries[index]);
            t->started = 1;
            continue;
        }
        struct ring_entry *e = (struct ring_entry *)(uintptr_t)tag;
        if (result < 0) {
            failed(t, e, result);
            // Only the end of the connection (or `stop`) ends the thread.
            if (all_ended(t)) break;
            continue;
        }
        if (e->failures > 0)
            note("ring: queue %d serves again, after %d failed command%s", e->qid, e->failures, e->failures > 1 ? "s" : "");
        e->failures = 0;
        serve(e);
    }
    return NULL;
}

static int prepare_entry(struct ring_entry *e, struct ring_thread *owner, int qid, size_t payload) {
    memset(e, 0, sizeof *e);
    e->owner = owner;
    e->qid = qid;
    e->refusals = R.refusals;
    if (posix_memalign((void **)&e->header, 4096, sizeof *e->header) != 0) return -ENOMEM;
    memset(e->header, 0, sizeof *e->header);
    if (posix_memalign((void **)&e->area, 4096, PREFIX + payload) != 0) return -ENOMEM;
    e->iov[0] = (struct iovec){.iov_base = e->header, .iov_len = sizeof *e->header};
    e->iov[1] = (struct iovec){.iov_base = e->area + PREFIX, .iov_len = payload};
    return 0;
}

/// Frees what prepare built, before anything was registered (threads joined).
static void discard(void) {
    for (int index = 0; index < R.thread_count; index++) {
        struct ring_thread *t = &R.threads[index];
        if (t->has_ring) io_uring_queue_exit(&t->ring);
        for (int entry = 0; entry < t->count; entry++) {
            free(t->entries[entry].header);
            free(t->entries[entry].area);
        }
        free(t->entries);
        pthread_mutex_destroy(&t->lock);
    }
    free(R.threads);
    free((void *)R.waiting);
    R.threads = NULL;
    R.waiting = NULL;
    R.thread_count = 0;
}

static void wake(struct ring_thread *t, uint64_t tag) {
    pthread_mutex_lock(&t->lock);
    if (t->running) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
        if (!sqe) {
            io_uring_submit(&t->ring);
            sqe = io_uring_get_sqe(&t->ring);
        }
        if (sqe) {
            memset(sqe, 0, 2 * sizeof(*sqe));
            io_uring_prep_nop(sqe);
            sqe->user_data = tag;
            io_uring_submit(&t->ring);
        }
    }
    pthread_mutex_unlock(&t->lock);
}

/// Wakes, joins and closes every thread; the caller holds `lifecycle`.
static void stop_locked(void) {
    atomic_store(&R.stopping, 1);
    for (int index = 0; index < R.thread_count; index++) {
        struct ring_thread *t = &R.threads[index];
        pthread_mutex_lock(&t->lock);
        int running = t->running;
        pthread_mutex_unlock(&t->lock);
        if (!running) continue;
        wake(t, WAKE_TAG);
        pthread_join(t->thread, NULL);
        // Closing the ring cancels the commands still waiting for a request.
        pthread_mutex_lock(&t->lock);
        t->running = 0;
        io_uring_queue_exit(&t->ring);
        t->has_ring = 0;
        pthread_mutex_unlock(&t->lock);
    }
}

int clinux_fuse_ring_layout(int queues, const unsigned char *online, int *per_queue, int *threads, int *served,
                            int *owners, int *qids) {
    // The online CPUs' queues have threads of their own (CPU 0's if none
    // reads as online).
    int n = 0;
    for (int qid = 0; qid < queues; qid++) n += online[qid] != 0;
    int first_online = -1;
    for (int qid = 0; qid < queues && first_online < 0; qid++)
        if (online[qid]) first_online = qid;
    int *onlines = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (!onlines) return -ENOMEM;
    int count = 0;
    for (int qid = 0; qid < queues; qid++)
        if (online[qid]) onlines[count++] = qid;
    if (n == 0) onlines[n++] = 0;
    // MOST_THREADS in all: per_queue a queue while they fit, fewer where
    // CPUs are many, and past MOST_THREADS online CPUs one thread serves
    // several queues.
    int pq = *per_queue;
    if (n * pq > MOST_THREADS) pq = MOST_THREADS / n > 1 ? MOST_THREADS / n : 1;
    int made = n * pq < MOST_THREADS ? n * pq : MOST_THREADS;
    // Thread i: an entry of online queue i % n (or of every MOST_THREADS-th
    // online queue from i); then the other queues (CPUs offline now), one
    // entry each, dealt out in turn. The served queues' entries come first.
    int total = 0, dealt = 0;
    if (n * pq <= MOST_THREADS) {
        for (int index = 0; index < made; index++) owners[total] = index, qids[total++] = onlines[index % n];
    } else {
        for (int index = 0; index < n; index++) owners[total] = index % MOST_THREADS, qids[total++] = onlines[index];
    }
    for (int qid = 0; qid < queues; qid++) {
        int mine = first_online < 0 ? qid == 0 : online[qid];
        if (!mine) owners[total] = dealt++ % made, qids[total++] = qid;
    }
    free(onlines);
    *per_queue = pq;
    *threads = made;
    *served = n;
    return total;
}

int clinux_fuse_ring_prepare(size_t payload, int per_queue) {
    pthread_mutex_lock(&R.lifecycle);
    int status = 0;
    cpu_set_t possible, online;
    int queues = read_cpus("/sys/devices/system/cpu/possible", &possible);
    if (R.threads || R.device < 0 || !R.process || queues <= 0 || per_queue <= 0) {
        status = -EINVAL;
        goto out;
    }
    // The kernel makes one queue per possible CPU (num_possible_cpus) and
    // sends a request to the queue of the CPU it was made on.
    if (read_cpus("/sys/devices/system/cpu/online", &online) <= 0) online = possible;
    unsigned char *is_online = calloc((size_t)queues, 1);
    size_t most = 2 * (size_t)queues + MOST_THREADS;
    int *owner = malloc(sizeof(int) * most), *qids = malloc(sizeof(int) * most);
    if (!is_online || !owner || !qids) {
        free(is_online);
        free(owner);
        free(qids);
        status = -ENOMEM;
        goto fail;
    }
    for (int qid = 0; qid < queues; qid++) is_online[qid] = CPU_ISSET(qid, &online) != 0;
    int threads = 0, n = 0;
    int total = clinux_fuse_ring_layout(queues, is_online, &per_queue, &threads, &n, owner, qids);
    free(is_online);
    if (total < 0) {
        free(owner);
        free(qids);
        status = total;
        goto fail;
    }
    R.threads = calloc((size_t)threads, sizeof *R.threads);
    R.waiting = calloc((size_t)queues, sizeof *R.waiting);
    if (!R.threads || !R.waiting) {
        free(owner);
        free(qids);
        status = -ENOMEM;
        goto fail;
    }
    R.thread_count = threads;
    R.queues = queues;
    R.online = n;
    R.per_queue = per_queue;
    R.payload = payload;
    // The entries of queues with threads of their own come first: their
    // CPUs are where a thread runs when pinned.
    int served = total - (queues - n);
    for (int index = 0; index < threads && status == 0; index++) {
        struct ring_thread *t = &R.threads[index];
        pthread_mutex_init(&t->lock, NULL);
        CPU_ZERO(&t->cpus);
        for (int entry = 0; entry < total; entry++) t->count += owner[entry] == index;
        t->entries = calloc((size_t)t->count, sizeof *t->entries);
        if (!t->entries) {
            status = -ENOMEM;
            break;
        }
        int filled = 0;
        for (int entry = 0; entry < total && status == 0; entry++) {
            if (owner[entry] != index) continue;
            status = prepare_entry(&t->entries[filled++], t, qids[entry], payload);
            if (entry < served) CPU_SET(qids[entry], &t->cpus);
        }
        if (status < 0) break;
        // Its commands, a wake-up and the start.
        unsigned depth = (unsigned)t->count + 2;
        status = io_uring_queue_init(depth, &t->ring, IORING_SETUP_SQE128 | IORING_SETUP_COOP_TASKRUN);
        if (status == -EINVAL) status = io_uring_queue_init(depth, &t->ring, IORING_SETUP_SQE128);
        if (status < 0) break;
        t->has_ring = 1;
    }
    free(owner);
    free(qids);
    if (status < 0) goto fail;
    for (int index = 0; index < threads; index++) {
        struct ring_thread *t = &R.threads[index];
        t->running = 1;
        if ((status = -pthread_create(&t->thread, NULL, ring_main, t)) < 0) {
            t->running = 0;
            goto fail;
        }
    }
    status = threads;
    goto out;
fail:
    stop_locked();
    atomic_store(&R.stopping, 0);
    discard();
    atomic_store(&R.setup_error, status);
out:
    pthread_mutex_unlock(&R.lifecycle);
    return status;
}

void clinux_fuse_ring_start(void) {
    pthread_mutex_lock(&R.lifecycle);
    int threads = 0;
    if (R.threads && !atomic_load(&R.stopping)) {
        for (int index = 0; index < R.thread_count; index++) wake(&R.threads[index], START_TAG);
        atomic_store(&R.started, 1);
        threads = R.thread_count;
    }
    pthread_mutex_unlock(&R.lifecycle);
    // Until the kernel has answered every thread's first registrations, 2 s
    // at most (the threads wait for nothing else): what the line at mount says.
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 2;
    pthread_mutex_lock(&R.settle_lock);
    while (R.settled < threads && pthread_cond_timedwait(&R.settle_change, &R.settle_lock, &deadline) == 0) {}
    pthread_mutex_unlock(&R.settle_lock);
}

void clinux_fuse_ring_stop(void) {
    pthread_mutex_lock(&R.lifecycle);
    stop_locked();
    pthread_mutex_unlock(&R.lifecycle);
}

void clinux_fuse_ring_status(struct clinux_fuse_ring_status *status) {
    memset(status, 0, sizeof *status);
    pthread_mutex_lock(&R.lifecycle);
    status->queues = R.queues;
    status->online = R.online;
    status->per_queue = R.per_queue;
    status->threads = R.thread_count;
    status->pinned = R.pinned;
    status->started = atomic_load(&R.started) && !atomic_load(&R.stopping);
    status->setup_error = atomic_load(&R.setup_error);
    status->last_error = atomic_load(&R.last_error);
    // Serving: every queue holds at least one live entry.
    if (status->started) {
        cpu_set_t live;
        CPU_ZERO(&live);
        for (int index = 0; index < R.thread_count; index++)
            for (int entry = 0; entry < R.threads[index].count; entry++)
                if (atomic_load(&R.threads[index].entries[entry].live)) CPU_SET(R.threads[index].entries[entry].qid, &live);
        status->serving = CPU_COUNT(&live) == R.queues;
    }
    pthread_mutex_unlock(&R.lifecycle);
}

void *clinux_fuse_ring_reply_area(size_t size) {
    if (!current || atomic_load(&current->serving) == 0 || size > R.payload) return NULL;
    return current->area + PREFIX;
}

int clinux_fuse_ring_serving(void) { return current && atomic_load(&current->serving) != 0; }

int clinux_fuse_ring_may_wait(void) {
    if (!self) return 1;
    // The thread's own queue: its first entry's.
    _Atomic int *waiting = &R.waiting[self->entries[0].qid];
    if (atomic_fetch_add(waiting, 1) < R.per_queue / 2) return 1;
    atomic_fetch_sub(waiting, 1);
    return 0;
}

void clinux_fuse_ring_done_waiting(void) {
    if (self) atomic_fetch_sub(&R.waiting[self->entries[0].qid], 1);
}

ssize_t clinux_fuse_ring_reply(const struct iovec *iov, int count) {
    if (count < 1 || iov[0].iov_len < sizeof(struct fuse_out_header)) return 0;
    const struct fuse_out_header *out = iov[0].iov_base;
    uint64_t unique = out->unique;
    if (unique == 0) return 0; // a notice: never through the ring
    struct ring_entry *e = NULL;
    if (current && atomic_load(&current->serving) == unique) {
        e = current;
    } else {
        // Threads and entries are only made while INIT is answered, before any ring request.
        for (int index = 0; index < R.thread_count && !e; index++)
            for (int entry = 0; entry < R.threads[index].count && !e; entry++)
                if (atomic_load(&R.threads[index].entries[entry].serving) == unique) e = &R.threads[index].entries[entry];
    }
    if (!e) return 0;
    size_t total = 0;
    for (int index = 1; index < count; index++) total += iov[index].iov_len;
    if (total > R.payload) {
        refuse(e, unique, EIO);
        errno = EMSGSIZE;
        return -1;
    }
    memcpy(e->header->in_out, out, sizeof *out);
    char *payload = e->area + PREFIX;
    // Data read straight into the entry (clinux_fuse_ring_reply_area) is in place.
    if (!(count == 2 && iov[1].iov_base == payload)) {
        for (int index = 1; index < count; index++) {
            memmove(payload, iov[index].iov_base, iov[index].iov_len);
            payload += iov[index].iov_len;
        }
    }
    e->header->entry.payload_sz = (uint32_t)total;
    int status = commit(e, unique);
    if (status < 0) {
        errno = -status;
        return -1;
    }
    return (ssize_t)(sizeof *out + total);
}
