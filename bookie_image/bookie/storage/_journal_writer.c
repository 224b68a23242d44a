/* The journal's writer thread, of the bookie.storage._write_path module: the event loop appends framed records to
 * a JournalWriter's ``queued`` batch under its lock (journal_queue); the thread takes the whole batch once its
 * group is complete, writes it with its trailer, fdatasyncs, rolls the file when it is full, and hands the group's
 * waiters back through the ``done`` list and the eventfd the loop watches (_journal.c completes them). Nothing
 * here takes the GIL but journal_queue's caller, who holds it. */
#include "_write_path_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../_crc32c.h"
#include "../_native_common.h"

/* ============================================================================================== CRC32C
 * The journal's group checksum (../_crc32c.h): the writer thread computes it without the GIL. */

static uint32_t crc32c(const uint8_t *p, size_t n) { return crc32c_update(0, p, n); }

PyObject *py_crc32c(PyObject *module, PyObject *data) {
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t crc = crc32c(view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

/* ../_crc32c.h's tables are this file's own: the module's init builds them once. */
void journal_crc32c_init(void) { crc32c_init(); }


/* Room for ``more`` bytes and one waiter; called with the lock held. No Python allocator: the writer thread
 * frees these buffers without the GIL. */
static int batch_reserve(Batch *b, size_t more) {
    if (b->len + more > b->cap) {
        size_t cap = b->cap ? b->cap : 64 * 1024;
        while (cap < b->len + more)
            cap *= 2;
        uint8_t *grown = realloc(b->data, cap);
        if (grown == NULL)
            return -1;
        b->data = grown;
        b->cap = cap;
    }
    if (b->count + 1 > b->waiters_cap) {
        size_t cap = b->waiters_cap ? b->waiters_cap * 2 : 256;
        Waiter *grown = realloc(b->waiters, cap * sizeof(Waiter));
        if (grown == NULL)
            return -1;
        b->waiters = grown;
        b->waiters_cap = cap;
    }
    return 0;
}

/* Queues one record (``payload`` NULL: a barrier); the waiter's references are the batch's now. Called with
 * the GIL held; -1 with MemoryError set. */
int journal_queue(JournalWriter *j, const uint8_t *payload, size_t len, Waiter waiter) {
    pthread_mutex_lock(&j->lock);
    Batch *b = &j->queued;
    if (batch_reserve(b, payload != NULL ? len + 4 : 0) < 0) {
        pthread_mutex_unlock(&j->lock);
        PyErr_NoMemory();
        return -1;
    }
    if (payload != NULL) {
        write_int32_be(b->data + b->len, (uint32_t)len);
        memcpy(b->data + b->len + 4, payload, len);
        b->len += len + 4;
    } else {
        b->barrier = 1;
    }
    b->waiters[b->count++] = waiter;
    if (j->writer_idle)
        pthread_cond_signal(&j->wake);
    pthread_mutex_unlock(&j->lock);
    return 0;
}

static void journal_set_failure(JournalWriter *j, int number, const char *what) {
    if (atomic_load(&j->failed))
        return;
    j->failure_number = number;
    snprintf(j->failure, sizeof j->failure, "%s in %s: %s", what, j->directory, strerror(number));
    atomic_store(&j->failed, 1);
}

static int fsync_path(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

static int pwrite_all(int fd, const uint8_t *data, size_t len, long long offset) {
    while (len > 0) {
        ssize_t n = pwrite(fd, data, len, offset);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0) {
            errno = EIO;
            return -1;
        }
        data += n;
        len -= (size_t)n;
        offset += n;
    }
    return 0;
}

enum { PAGE_CACHE_DROP_STEP = 8 * 1024 * 1024 };

/* journalRemoveFromPageCache (on by default, as in Apache BookKeeper): the synced part of the file leaves the page
 * cache in whole 8 MiB steps, fewer calls than one per group. The journal is read only on replay, and its pages
 * would otherwise push the entry logs' pages (which reads do use) out of memory. Best effort: a failed drop
 * changes nothing but memory use. Writer thread, after an fsync. */
static void journal_drop_synced(JournalWriter *j) {
    long long steps = (j->position - j->dropped_to) / PAGE_CACHE_DROP_STEP;
    if (!j->remove_from_page_cache || steps == 0)
        return;
    long long upto = j->dropped_to + steps * PAGE_CACHE_DROP_STEP;
    (void)posix_fadvise(j->fd, j->dropped_to, upto - j->dropped_to, POSIX_FADV_DONTNEED);
    j->dropped_to = upto;
}

/* A new journal file ``<directory>/<log id in hex>.txn``: its header written and fsynced, the directory fsynced. */
int journal_open_file(JournalWriter *j, long long log_id, const char **what) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%llx.txn", j->directory, log_id);
    *what = "creating a journal file";
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    *what = "writing a journal header";
    if (pwrite_all(fd, j->header, j->header_len, 0) < 0 || fsync(fd) < 0 || fsync_path(j->directory) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    if (j->fd >= 0) {
        if (j->remove_from_page_cache) /* the rolled file was fsynced before the roll */
            (void)posix_fadvise(j->fd, 0, 0, POSIX_FADV_DONTNEED);
        close(j->fd);
    }
    j->fd = fd;
    j->log_id = log_id;
    j->position = j->allocated = (long long)j->header_len;
    j->dropped_to = 0;
    pthread_mutex_lock(&j->lock);
    j->mark_log_id = log_id;
    j->mark_offset = j->position;
    pthread_mutex_unlock(&j->lock);
    return 0;
}

enum { PADDING_MASK = 0xFFFFFF00u, TRAILER_BODY = 12 }; /* magic, crc32c, group length */

/* The padding record closing a group (journal_format.group_trailer): aligned like a padding record, carrying the
 * group's CRC32C and length. Appended to the batch's buffer. */
static int append_trailer(Batch *b, long long trailer_at, int alignment) {
    size_t group_len = b->len;
    uint32_t crc = crc32c(b->data, group_len);
    long long gap = 8 + TRAILER_BODY;
    if (alignment > 0)
        gap += (alignment - (trailer_at + gap) % alignment) % alignment;
    if (b->len + (size_t)gap > b->cap) {
        uint8_t *grown = realloc(b->data, b->len + (size_t)gap);
        if (grown == NULL)
            return -1;
        b->data = grown;
        b->cap = b->len + (size_t)gap;
    }
    uint8_t *out = b->data + b->len;
    memset(out, 0, (size_t)gap);
    write_int32_be(out, PADDING_MASK);
    write_int32_be(out + 4, (uint32_t)(gap - 8));
    memcpy(out + 8, "BFCK", 4);
    write_int32_be(out + 12, crc);
    write_int32_be(out + 16, (uint32_t)group_len);
    b->len += (size_t)gap;
    return 0;
}

/* Writes and syncs the taken batch; returns its waiters as a finished group. Writer thread, no GIL. */
static Done *journal_write_group(JournalWriter *j, long long taken_at) {
    Batch *b = &j->writing;
    Done *d = calloc(1, sizeof(Done));
    if (d == NULL)
        abort(); /* a lost group would leave its adds unanswered forever */
    d->waiters = b->waiters;
    d->count = b->count;
    d->nbytes = b->len;
    b->waiters = NULL;
    b->count = b->waiters_cap = 0;
    const char *what = "writing the journal";
    long long written_at = taken_at;
    if (atomic_load(&j->failed)) {
        /* Never write or acknowledge after a failure: a later fsync may succeed although the pages of the failed
         * one were dropped (Linux reports a writeback error once), so "durable" could be a lie. */
        d->error_number = j->failure_number;
        snprintf(d->error, sizeof d->error, "%s", j->failure);
        goto finished;
    }
    if (b->len > 0) {
        if (append_trailer(b, j->position + (long long)b->len, j->alignment) < 0) {
            errno = ENOMEM;
            goto failed;
        }
        what = "preallocating the journal";
        while (j->position + (long long)b->len > j->allocated) {
            int rc = posix_fallocate(j->fd, j->allocated, j->prealloc_bytes);
            if (rc != 0) {
                errno = rc;
                goto failed;
            }
            j->allocated += j->prealloc_bytes;
        }
        what = "writing the journal";
        if (pwrite_all(j->fd, b->data, b->len, j->position) < 0)
            goto failed;
        j->position += (long long)b->len;
        atomic_fetch_add(&j->bytes_written, (long long)b->len);
    }
    written_at = now_ns();
    if (j->sync_data || b->barrier) {
        atomic_store(&j->syncing, (long long)d->count);
        what = "syncing the journal";
        if (fdatasync(j->fd) < 0)
            goto failed;
        if (j->fail_fsync_at > 0 && ++j->fsyncs_reached == j->fail_fsync_at) {
            what = "failpoint journal.fsync: injected I/O error";
            errno = EIO;
            goto failed;
        }
        atomic_fetch_add(&j->syncs, 1);
        d->synced = 1;
        journal_drop_synced(j);
    }
    pthread_mutex_lock(&j->lock);
    j->mark_log_id = j->log_id;
    j->mark_offset = j->position;
    pthread_mutex_unlock(&j->lock);
    if (j->position > j->max_size_bytes) { /* roll: the next group goes to a new file */
        what = "syncing the journal";
        if (fsync(j->fd) < 0 || journal_open_file(j, j->log_id + 1, &what) < 0)
            goto failed;
    }
    goto finished;
failed:
    journal_set_failure(j, errno, what);
    d->error_number = j->failure_number;
    snprintf(d->error, sizeof d->error, "%s", j->failure);
finished:
    atomic_store(&j->syncing, 0);
    long long done_at = now_ns();
    d->write_ms = (double)(written_at - taken_at) / 1e6;
    d->sync_ms = (double)(done_at - written_at) / 1e6;
    b->len = 0;
    b->barrier = 0;
    return d;
}

static int group_done(JournalWriter *j, long long first_at) {
    return j->flush_when_queue_empty || j->stopping || now_ns() - first_at >= j->max_group_wait_ns
           || (long long)j->queued.len >= j->buffered_writes_threshold
           || (j->buffered_entries_threshold > 0 && (long long)j->queued.count >= j->buffered_entries_threshold);
}

enum { GROUP_POLL_NS = 250000 };

/* How long to sleep before looking at the queue again: the rest of the group's time, or, when records come fast
 * enough to reach a size threshold first, about until then (one poll slice at least). */
static long long group_pause(JournalWriter *j, long long first_at) {
    long long elapsed = now_ns() - first_at, remaining = j->max_group_wait_ns - elapsed;
    if (remaining <= 0)
        return 0;
    double size = (double)j->queued.len, records = (double)j->queued.count;
    if (elapsed <= 0 || size <= 0)
        return remaining < GROUP_POLL_NS ? remaining : GROUP_POLL_NS;
    double until = ((double)j->buffered_writes_threshold - size) * (double)elapsed / size;
    if (j->buffered_entries_threshold > 0 && records > 0) {
        double by_entries = ((double)j->buffered_entries_threshold - records) * (double)elapsed / records;
        if (by_entries < until)
            until = by_entries;
    }
    if (until < GROUP_POLL_NS)
        until = GROUP_POLL_NS;
    return until < (double)remaining ? (long long)until : remaining;
}

void *journal_writer_main(void *arg) {
    JournalWriter *j = arg;
    for (;;) {
        pthread_mutex_lock(&j->lock);
        while (!j->stopping && j->queued.count == 0) {
            j->writer_idle = 1;
            pthread_cond_wait(&j->wake, &j->lock);
            j->writer_idle = 0;
            atomic_fetch_add(&j->wakeups, 1);
        }
        if (j->queued.count == 0) { /* stopping, and everything written */
            pthread_mutex_unlock(&j->lock);
            break;
        }
        long long first_at = now_ns();
        while (!group_done(j, first_at)) {
            long long pause = group_pause(j, first_at);
            pthread_mutex_unlock(&j->lock);
            if (pause > 0) {
                struct timespec ts = {pause / 1000000000LL, pause % 1000000000LL};
                nanosleep(&ts, NULL);
            }
            atomic_fetch_add(&j->wakeups, 1);
            pthread_mutex_lock(&j->lock);
        }
        Batch taken = j->queued; /* the loop goes on filling the other buffer */
        j->queued = j->writing;
        j->writing = taken;
        pthread_mutex_unlock(&j->lock);
        Done *d = journal_write_group(j, first_at);
        pthread_mutex_lock(&j->lock);
        if (j->done_tail != NULL)
            j->done_tail->next = d;
        else
            j->done_head = d;
        j->done_tail = d;
        pthread_mutex_unlock(&j->lock);
        uint64_t one = 1;
        while (write(j->wake_fd, &one, sizeof one) < 0 && errno == EINTR) {
        }
    }
    return NULL;
}
