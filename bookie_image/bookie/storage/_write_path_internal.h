/* What the files of the bookie.storage._write_path extension module share (one module, compiled from several
 * files by setup.py, one file per concern; not an interface for other modules: that is _write_path_api.h).
 *
 *   _write_cache.c         WriteCache: the entries added since the last checkpoint, by (ledger, entry)
 *   _ledger_state.c        LedgerState: what the bookie keeps in memory about a ledger (LedgerData, LAC, long polls)
 *   _journal_writer.c      the journal's writer thread: queue, group commit, pwrite, fdatasync, file roll (no GIL)
 *   _journal.c             JournalWriter, the Python type: start, stop, append, and each finished group told on the
 *                          event loop (adds of the write path: their LAC moved, their sender told)
 *   _write_path.c          WritePath: the hot add (C interface in _write_path_api.h), and the module itself
 *   _entry_log_records.c   EntryBatch and the entry-log records a checkpoint or compaction appends from one
 *
 * The structs are here because the hot add (_write_path.c) reads and writes every one of them directly. What it
 * calls per add is either static inline below (cache_has_room, cache_wants_flush) or one plain function call into
 * its owner's file (cache_put, journal_queue): a call costs nanoseconds against the microseconds of an add, and
 * keeps each table's and queue's code in one place (bench/add_cpu.py measured no change from the split).
 */

#ifndef BOOKIE_STORAGE_WRITE_PATH_INTERNAL_H
#define BOOKIE_STORAGE_WRITE_PATH_INTERNAL_H

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "_write_path_api.h"

/* Long C loops on worker threads let the event loop have the GIL now and then: a thread running C code never sees
 * the interpreter's switch request, and a bare release and retake of the GIL wins the race against the waiting
 * thread (which then never even asks). So the GIL is released for a moment long enough for a waiter to take it. */
enum { GIL_YIELD_EVERY = 4096, GIL_YIELD_NS = 30000 };

static inline void gil_yield(void) {
    Py_BEGIN_ALLOW_THREADS
    struct timespec ts = {0, GIL_YIELD_NS};
    nanosleep(&ts, NULL);
    Py_END_ALLOW_THREADS
}

/* ---------------------------------------------------------------------------------------------- WriteCache
 * Entries in one dense array, in the order they were added, found by (ledger, entry) through an open-addressing
 * table of their positions (linear probing, kept at most half full); a second, small table keeps each ledger's
 * entry count and highest entry id. Bodies are bytes objects: a read of a cached entry returns the object the
 * add stored, and a checkpoint hands them to the entry logger as they are. The dense array makes a checkpoint's
 * walk over the entries, and their release, sequential. */

typedef struct {
    int64_t ledger, entry;
    PyObject *body;
} CacheEntry;

typedef struct {
    int64_t ledger, last;
    Py_ssize_t entries; /* 0: a free slot */
} CacheLedger;

typedef struct {
    PyObject_HEAD
    long long max_bytes, size, count;
    CacheEntry *entries;   /* count of them used */
    size_t entries_cap;
    uint32_t *slots;       /* position in entries + 1; 0: a free slot */
    size_t mask;           /* slots - 1: a power of two less one */
    CacheLedger *ledgers;
    size_t ledger_mask;
    size_t ledger_count;
    unsigned long long version; /* changes whenever entries move: a walk that yielded the GIL checks it */
} WriteCache;

extern PyTypeObject WriteCacheType;

/* Stores ``body`` (a bytes object: a new reference is taken) as entry ``entry`` of ``ledger``: 0, or -1 with an
 * exception set. */
int cache_put(WriteCache *c, int64_t ledger, int64_t entry, PyObject *body);

/* A checkpoint should swap this cache now: it is seven eighths full. Swapping before it is full lets the adds that
 * come while the checkpoint starts (its task runs on the next loop iteration) still find room. */
static inline int cache_wants_flush(WriteCache *c) { return c->size >= c->max_bytes - c->max_bytes / 8; }

static inline int cache_has_room(WriteCache *c, long long nbytes) {
    /* An empty cache always takes one entry, so an entry larger than the cache is never refused forever. */
    return c->size + nbytes <= c->max_bytes || c->count == 0;
}

/* ---------------------------------------------------------------------------------------------- LedgerState
 * BookKeeper's TransientLedgerInfo with the ledger's LedgerData: the fields the add path reads are C fields,
 * the LedgerData's master key, fenced and exists flags copied out whenever ``data`` is set. */

typedef struct {
    PyObject_HEAD
    PyObject *data;       /* LedgerData */
    PyObject *master_key; /* data.master_key */
    char fenced, exists;
    char key_journaled;   /* master key record written in this run */
    char has_lac;         /* 0: the LAC is not computed yet since the start (None) */
    long long lac;
    long long lac_updated_ms;
    PyObject *watchers;   /* set of futures: parked long polls */
} LedgerState;

extern PyTypeObject LedgerStateType;

/* Interns the LedgerData attribute names _ledger_state.c reads: 0, or -1 with an exception set (module init). */
int ledger_state_intern_names(void);

/* ---------------------------------------------------------------------------------------------- JournalWriter
 * The event loop appends framed records to ``queued`` under the lock; the writer thread takes the whole batch
 * once its group is complete (journalMaxGroupWaitMSec, journalBufferedWritesThreshold,
 * journalBufferedEntriesThreshold, journalFlushWhenQueueEmpty), writes it with its trailer, fdatasyncs, and
 * hands the group's waiters back through ``done`` and the eventfd the loop watches. While a group is open the
 * writer sleeps rather than waiting on the queue: a wait would wake it for every record. */

typedef struct {
    PyObject *waiter;  /* a record appended from Python: its future or callable; NULL for an add of the write path */
    PyObject *state;   /* such an add: its LedgerState, whose LAC moves once it is durable */
    PyObject *sink;    /* and who sent it */
    const AddSinkMethods *sink_methods;
    long long lac;
    uint64_t token;
} Waiter;

typedef struct {
    uint8_t *data;
    size_t len, cap;
    Waiter *waiters;
    size_t count, waiters_cap;
    int barrier; /* a barrier was queued: fsync even without journalSyncData */
} Batch;

typedef struct Done {
    struct Done *next;
    Waiter *waiters;
    size_t count;
    size_t nbytes;
    double write_ms, sync_ms;
    int synced;
    int error_number; /* 0: durable */
    char error[160];
} Done;

typedef struct {
    PyObject_HEAD
    pthread_mutex_t lock;
    pthread_cond_t wake;
    Batch queued;   /* the event loop's side */
    Batch writing;  /* the writer thread's */
    Done *done_head, *done_tail;
    int writer_idle, stopping, running;
    pthread_t thread;
    int wake_fd;    /* eventfd: a group is done */
    /* settings */
    char *directory;
    uint8_t *header;
    size_t header_len;
    long long max_group_wait_ns, buffered_writes_threshold, buffered_entries_threshold;
    int flush_when_queue_empty, sync_data;
    long long max_size_bytes, prealloc_bytes;
    int alignment;
    long long fail_fsync_at;   /* the journal.fsync failpoint: that fdatasync reports EIO (0: none) */
    long long fsyncs_reached;
    int remove_from_page_cache; /* journalRemoveFromPageCache */
    /* the file, the writer thread's */
    int fd;
    long long log_id, position, allocated;
    long long dropped_to; /* the file's pages before this offset were dropped from the page cache */
    long long mark_log_id, mark_offset; /* under the lock: everything before is durable */
    /* failure: set once by the writer thread, read anywhere */
    atomic_int failed;
    int failure_number;
    char failure[160];
    int failure_reported;
    atomic_llong syncs, bytes_written, wakeups, syncing;
    /* told on the event loop */
    PyObject *on_python_records; /* (waiters, error | None): records appended from Python */
    PyObject *on_group;          /* (records, nbytes, write_ms, sync_ms | None, ok): the journal's stats */
    PyObject *on_failure;        /* (error): once, when a write or fsync fails */
    PyObject *on_lac_watchers;   /* (state): an add moved the LAC of a ledger with parked long polls */
} JournalWriter;

extern PyTypeObject JournalWriterType;

/* _journal_writer.c, the writer thread's side (documented there). */
int journal_queue(JournalWriter *j, const uint8_t *payload, size_t len, Waiter waiter);
int journal_open_file(JournalWriter *j, long long log_id, const char **what);
void *journal_writer_main(void *arg);
void journal_crc32c_init(void);
PyObject *py_crc32c(PyObject *module, PyObject *data);

/* ---------------------------------------------------------------------------------------------- EntryBatch
 * Entries to append to an entry log, in order, each body held by a reference: a checkpoint's (the write cache's
 * entries sorted by ledger, then entry) or a compaction's. The checkpoint thread packs them with the GIL released
 * for everything but object references, so a checkpoint never keeps the event loop from the GIL for long. */

typedef struct {
    int64_t ledger, entry;
    PyObject *body; /* bytes */
} BatchEntry;

typedef struct {
    PyObject_HEAD
    BatchEntry *items;
    Py_ssize_t count, capacity;
} EntryBatch;

extern PyTypeObject EntryBatchType;

/* An empty batch with room for ``capacity`` entries (at least one); NULL with MemoryError set. */
EntryBatch *entry_batch_new(Py_ssize_t capacity);

/* Room for ``capacity`` entries: 0, or -1 with MemoryError set. */
int entry_batch_grow(EntryBatch *batch, Py_ssize_t capacity);

/* ---------------------------------------------------------------------------------------------- entry-log records
 * The module functions of _entry_log_records.c (documented there). */

PyObject *append_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *put_locations(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#endif
