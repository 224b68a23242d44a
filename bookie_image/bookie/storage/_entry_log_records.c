/* Entry-log records of the bookie.storage._write_path module: the EntryBatch a checkpoint (the write cache's
 * sorted entries) or a compaction hands to the entry logger, and append_records / put_locations, which pack a
 * batch into the entry log's write buffer and its locations into the index. Called once per batch or buffer, never
 * per add: nothing here is on the add's path. _write_path_internal.h has what the module's files share.
 */
#include "_write_path_internal.h"

#include <string.h>

#include "../_native_common.h"

EntryBatch *entry_batch_new(Py_ssize_t capacity) {
    EntryBatch *batch = PyObject_New(EntryBatch, &EntryBatchType);
    if (batch == NULL)
        return NULL;
    batch->count = 0;
    batch->capacity = capacity > 0 ? capacity : 1;
    batch->items = PyMem_RawMalloc(sizeof(BatchEntry) * (size_t)batch->capacity);
    if (batch->items == NULL) {
        Py_DECREF(batch);
        return (EntryBatch *)PyErr_NoMemory();
    }
    return batch;
}

/* Room for ``capacity`` entries (a cache can only have shrunk since the batch was made, but a put may have come). */
int entry_batch_grow(EntryBatch *batch, Py_ssize_t capacity) {
    BatchEntry *grown = PyMem_RawRealloc(batch->items, sizeof(BatchEntry) * (size_t)capacity);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    batch->items = grown;
    batch->capacity = capacity;
    return 0;
}

static PyObject *EntryBatch_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *entries;
    if (!PyArg_ParseTuple(args, "O:EntryBatch", &entries))
        return NULL;
    PyObject *seq = PySequence_Fast(entries, "EntryBatch takes an iterable of (ledger_id, entry_id, body)");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    EntryBatch *batch = entry_batch_new(n);
    for (Py_ssize_t i = 0; batch != NULL && i < n; i++) {
        long long ledger, entry;
        PyObject *body;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "LLO!:EntryBatch entry", &ledger, &entry,
                              &PyBytes_Type, &body)) {
            Py_CLEAR(batch);
            break;
        }
        batch->items[batch->count++] = (BatchEntry){ledger, entry, Py_NewRef(body)};
    }
    Py_DECREF(seq);
    return (PyObject *)batch;
}

/* release(): drop the references to the bodies now (the checkpoint thread, with yields), not whenever the last
 * reference to the batch goes. */
static PyObject *EntryBatch_release(EntryBatch *self, PyObject *unused) {
    for (Py_ssize_t i = self->count; i > 0; i--) {
        self->count = i - 1;
        Py_DECREF(self->items[i - 1].body);
        if (i % GIL_YIELD_EVERY == 0)
            gil_yield();
    }
    Py_RETURN_NONE;
}

static void EntryBatch_dealloc(EntryBatch *self) {
    for (Py_ssize_t i = 0; i < self->count; i++)
        Py_DECREF(self->items[i].body);
    PyMem_RawFree(self->items);
    PyObject_Free(self);
}

static Py_ssize_t EntryBatch_len(EntryBatch *self) { return self->count; }

static PyObject *EntryBatch_item(EntryBatch *self, Py_ssize_t i) {
    if (i < 0 || i >= self->count) {
        PyErr_SetString(PyExc_IndexError, "EntryBatch index out of range");
        return NULL;
    }
    BatchEntry *e = &self->items[i];
    return Py_BuildValue("(LLO)", (long long)e->ledger, (long long)e->entry, e->body);
}

static PyMethodDef EntryBatch_methods[] = {
    {"release", (PyCFunction)EntryBatch_release, METH_NOARGS,
     "release()\n\nDrop the batch's references to its entries now (it is empty after)."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods EntryBatch_sequence = {.sq_length = (lenfunc)EntryBatch_len,
                                                .sq_item = (ssizeargfunc)EntryBatch_item};

PyTypeObject EntryBatchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bookie.storage._write_path.EntryBatch",
    .tp_basicsize = sizeof(EntryBatch),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "EntryBatch(entries): (ledger_id, entry_id, body) to append to an entry log, in order.",
    .tp_new = EntryBatch_new,
    .tp_dealloc = (destructor)EntryBatch_dealloc,
    .tp_methods = EntryBatch_methods,
    .tp_as_sequence = &EntryBatch_sequence,
};

/* ============================================================================================== entry-log records
 * A checkpoint's (or compaction's) entries packed into the entry log's write buffer: ``int32 size`` (big-endian)
 * then the entry; an entry's location is ``(log id << 32) | offset of its bytes``; a log is full when the next
 * record would pass its size limit, unless it holds nothing yet (an entry larger than a log still gets a log of
 * its own). entrylog.py's EntryLogger rolls the logs and keeps each log's ledgers map between these calls.
 * Locations go out packed, 24 bytes per entry: ledger id, entry id, location, each a big-endian int64 (the
 * first 16 bytes are the location index's key, the last 8 its value). */

enum { SIZE_PREFIX = 4, LOCATION_RECORD = 24 };
enum { RUN_DONE = 0, BUFFER_FULL = 1, LOG_FULL = 2 }; /* why append_records stopped */

/* append_records(buffer, used, locations, batch, index, position, log_id, limit, first_position, flush_at)
 *     -> (index, position, stop, used)
 *
 * Appends the records of batch[index:] of the same ledger as batch[index] to ``buffer`` after its first ``used``
 * bytes, their locations to ``locations``, starting at log offset ``position``. Stops at the end of that ledger's
 * run (stop 0), once ``buffer`` holds ``flush_at`` bytes (1), or before a record that would pass ``limit`` unless
 * ``position`` is still ``first_position`` (2). ``buffer`` only grows: the caller reuses it from ``used`` 0 once
 * written out, so that its pages stay mapped (a buffer freed and allocated again per megabyte costs a page fault
 * per 4 KiB copied). The copy runs with the GIL released. */
PyObject *append_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 10) {
        PyErr_Format(PyExc_TypeError, "append_records takes 10 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *buffer = args[0];
    Py_ssize_t used = PyLong_AsSsize_t(args[1]);
    if (used == -1 && PyErr_Occurred())
        return NULL;
    args++; /* from here args[1] is ``locations``: the arguments after ``used`` keep their indexes */
    PyObject *locations = args[1];
    if (!PyByteArray_CheckExact(buffer) || !PyByteArray_CheckExact(locations)
        || !Py_IS_TYPE(args[2], &EntryBatchType)) {
        PyErr_SetString(PyExc_TypeError, "append_records: buffer and locations must be bytearrays, batch an EntryBatch");
        return NULL;
    }
    EntryBatch *batch = (EntryBatch *)args[2];
    Py_ssize_t index = PyLong_AsSsize_t(args[3]);
    long long position = PyLong_AsLongLong(args[4]);
    long long log_id = PyLong_AsLongLong(args[5]);
    long long limit = PyLong_AsLongLong(args[6]);
    long long first_position = PyLong_AsLongLong(args[7]);
    Py_ssize_t flush_at = PyLong_AsSsize_t(args[8]);
    if (PyErr_Occurred())
        return NULL;
    if (index < 0 || index > batch->count || log_id < 0 || log_id > 0x7FFFFFFF || position < 0
        || position > 0xFFFFFFFFLL) {
        PyErr_SetString(PyExc_ValueError, "append_records: index, log id or position out of range");
        return NULL;
    }
    /* What fits, decided first: the run's records, up to the buffer's and the log's limits. */
    Py_ssize_t start = index, end = index;
    if (used < 0 || used > PyByteArray_GET_SIZE(buffer)) {
        PyErr_SetString(PyExc_ValueError, "append_records: used is outside the buffer");
        return NULL;
    }
    long long at = position, nbytes = 0, buffered = used;
    int stop = RUN_DONE;
    while (end < batch->count && batch->items[end].ledger == batch->items[start].ledger) {
        if (buffered + nbytes >= flush_at) {
            stop = BUFFER_FULL;
            break;
        }
        Py_ssize_t len = PyBytes_GET_SIZE(batch->items[end].body);
        if (len > INT32_MAX) {
            PyErr_Format(PyExc_ValueError, "entry of %zd bytes: an entry log record holds at most %d", len, INT32_MAX);
            return NULL;
        }
        long long record = SIZE_PREFIX + (long long)len;
        if (at + record > limit && at > first_position) {
            stop = LOG_FULL;
            break;
        }
        if (at + SIZE_PREFIX > 0xFFFFFFFFLL) {
            PyErr_SetString(PyExc_ValueError, "entry log offset past 4 GiB: a location holds 32 bits of it");
            return NULL;
        }
        at += record;
        nbytes += record;
        end++;
    }
    Py_ssize_t buffer_at = used, locations_at = PyByteArray_GET_SIZE(locations);
    if ((buffer_at + (Py_ssize_t)nbytes > PyByteArray_GET_SIZE(buffer)
         && PyByteArray_Resize(buffer, buffer_at + (Py_ssize_t)nbytes) < 0)
        || PyByteArray_Resize(locations, locations_at + (end - start) * LOCATION_RECORD) < 0)
        return NULL;
    uint8_t *out = (uint8_t *)PyByteArray_AS_STRING(buffer) + buffer_at;
    uint8_t *where = (uint8_t *)PyByteArray_AS_STRING(locations) + locations_at;
    long long offset = position;
    Py_BEGIN_ALLOW_THREADS /* the bodies are held by the batch, the buffers are this thread's */
    for (Py_ssize_t i = start; i < end; i++) {
        BatchEntry *e = &batch->items[i];
        Py_ssize_t len = PyBytes_GET_SIZE(e->body);
        write_int32_be(out, (uint32_t)len);
        memcpy(out + SIZE_PREFIX, PyBytes_AS_STRING(e->body), (size_t)len);
        out += SIZE_PREFIX + len;
        write_int64_be(where, (uint64_t)e->ledger);
        write_int64_be(where + 8, (uint64_t)e->entry);
        write_int64_be(where + 16, ((uint64_t)log_id << 32) | (uint64_t)(offset + SIZE_PREFIX));
        where += LOCATION_RECORD;
        offset += SIZE_PREFIX + len;
    }
    Py_END_ALLOW_THREADS
    return Py_BuildValue("(nLin)", end, at, stop, buffer_at + (Py_ssize_t)nbytes);
}

/* put_locations(put, locations, start, count) -> next: ``put(key, value)`` for ``count`` packed locations from
 * record ``start`` (a RocksDB write batch's put: key ledger + entry id, value the location); returns the record
 * after the last one put. */
PyObject *put_locations(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "put_locations takes 4 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *put = args[0];
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t start = PyLong_AsSsize_t(args[2]), count = PyLong_AsSsize_t(args[3]);
    Py_ssize_t records = view.len / LOCATION_RECORD, end = start + count < records ? start + count : records;
    PyObject *result = NULL;
    if (!PyErr_Occurred() && start >= 0 && count >= 0) {
        const uint8_t *p = (const uint8_t *)view.buf;
        Py_ssize_t i = start;
        for (; i < end; i++) {
            PyObject *key = PyBytes_FromStringAndSize((const char *)p + i * LOCATION_RECORD, 16);
            PyObject *value = PyBytes_FromStringAndSize((const char *)p + i * LOCATION_RECORD + 16, 8);
            PyObject *done = key == NULL || value == NULL ? NULL : PyObject_CallFunctionObjArgs(put, key, value, NULL);
            Py_XDECREF(key);
            Py_XDECREF(value);
            if (done == NULL)
                break;
            Py_DECREF(done);
        }
        if (i == end)
            result = PyLong_FromSsize_t(end);
    } else if (!PyErr_Occurred()) {
        PyErr_SetString(PyExc_ValueError, "put_locations: start and count must not be negative");
    }
    PyBuffer_Release(&view);
    return result;
}
