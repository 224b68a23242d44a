/* What the files of the bookie.storage._write_path extension module share (one module, compiled from several
 * files by setup.py; not an interface for other modules: that is _write_path_api.h).
 *
 *   _write_path.c          the write cache, ledger states, the journal writer, the hot add, the module itself
 *   _entry_log_records.c   EntryBatch and the entry-log records a checkpoint or compaction appends from one
 */

#ifndef BOOKIE_STORAGE_WRITE_PATH_INTERNAL_H
#define BOOKIE_STORAGE_WRITE_PATH_INTERNAL_H

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>
#include <stdint.h>
#include <time.h>

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
