/* The storage engine's write path in C: the write cache, each ledger's in-memory state, the journal's writer
 * thread, and the add that takes neither a Python object nor an interpreter step per entry.
 *
 * Why C: the add is the bookie's hottest path. In Python every entry cost tens of microseconds of interpreter
 * time on the event loop (request objects, cache and ledger bookkeeping, a callback per entry when durable), and
 * the journal's writer thread needed the GIL for every group commit, which it then waited for behind the event
 * loop. Here:
 *
 *   WriteCache     entries added since the last checkpoint, by (ledger, entry), in one open-addressing table;
 *   LedgerState    what the bookie keeps in memory about a ledger (its LedgerData, LAC, parked long polls);
 *   JournalWriter  one journal's queue and writer thread: group commit, pwrite, fdatasync, file roll, never
 *                  holding the GIL; a finished group is handed to the event loop through an eventfd, and the
 *                  loop completes it in one step (``complete``);
 *   WritePath      StorageEngine's add for the request hot path (C interface in _write_path_api.h): checks,
 *                  write cache, journal, and the LAC advanced once durable.
 *
 * The journal's file format is journal_format.py's: records ``int32 length | payload``, each group closed by a
 * padding record carrying the group's CRC32C. Everything else the engine does (checkpoints, replay, reads, the
 * slow add path with throttling, fences, explicit LACs) stays in Python and uses these types.
 *
 * The module's other file, _entry_log_records.c, holds EntryBatch and the packing of a checkpoint's entries into
 * entry-log records; _write_path_internal.h is what the two share.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "../_crc32c.h"
#include "../_native_common.h"
#include "_write_path_api.h"
#include "_write_path_internal.h"

/* ============================================================================================== CRC32C
 * The journal's group checksum (../_crc32c.h): the writer thread computes it without the GIL. */

static uint32_t crc32c(const uint8_t *p, size_t n) { return crc32c_update(0, p, n); }

static PyObject *py_crc32c(PyObject *module, PyObject *data) {
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t crc = crc32c(view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

/* ============================================================================================== WriteCache
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

static PyTypeObject WriteCacheType;

enum { CACHE_FIRST_SLOTS = 1024, CACHE_FIRST_LEDGERS = 64 };

static size_t entry_hash(int64_t ledger, int64_t entry) {
    uint64_t h = (uint64_t)ledger * 0x9E3779B97F4A7C15ull ^ (uint64_t)entry * 0xC2B2AE3D27D4EB4Full;
    return (size_t)(h ^ (h >> 29));
}

static size_t ledger_hash(int64_t ledger) {
    uint64_t h = (uint64_t)ledger * 0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ (h >> 32));
}

/* The slot of (ledger, entry): the one holding its position, or the free slot where it would go. */
static uint32_t *cache_slot(WriteCache *c, int64_t ledger, int64_t entry) {
    for (size_t i = entry_hash(ledger, entry) & c->mask;; i = (i + 1) & c->mask) {
        uint32_t *slot = &c->slots[i];
        if (*slot == 0)
            return slot;
        if (*slot > c->count) /* an entry a clear() under way released; its slot goes with the cache */
            continue;
        CacheEntry *e = &c->entries[*slot - 1];
        if (e->ledger == ledger && e->entry == entry)
            return slot;
    }
}

static CacheLedger *cache_ledger(WriteCache *c, int64_t ledger) {
    for (size_t i = ledger_hash(ledger) & c->ledger_mask;; i = (i + 1) & c->ledger_mask) {
        CacheLedger *l = &c->ledgers[i];
        if (l->entries == 0 || l->ledger == ledger)
            return l;
    }
}

/* The position and ledger tables rebuilt from the entries, at the given sizes (powers of two). */
static int cache_index(WriteCache *c, size_t slots, size_t ledgers) {
    uint32_t *s = PyMem_Calloc(slots, sizeof(uint32_t));
    CacheLedger *l = PyMem_Calloc(ledgers, sizeof(CacheLedger));
    if (s == NULL || l == NULL) {
        PyMem_Free(s);
        PyMem_Free(l);
        PyErr_NoMemory();
        return -1;
    }
    PyMem_Free(c->slots);
    PyMem_Free(c->ledgers);
    c->slots = s;
    c->mask = slots - 1;
    c->ledgers = l;
    c->ledger_mask = ledgers - 1;
    c->ledger_count = 0;
    for (long long i = 0; i < c->count; i++) {
        CacheEntry *e = &c->entries[i];
        *cache_slot(c, e->ledger, e->entry) = (uint32_t)(i + 1);
        CacheLedger *led = cache_ledger(c, e->ledger);
        if (led->entries++ == 0) {
            led->ledger = e->ledger;
            led->last = e->entry;
            c->ledger_count++;
        } else if (e->entry > led->last) {
            led->last = e->entry;
        }
    }
    return 0;
}

/* Stores ``body`` (a bytes object: a new reference is taken) as entry ``entry`` of ``ledger``. */
static int cache_put(WriteCache *c, int64_t ledger, int64_t entry, PyObject *body) {
    if ((size_t)c->count + 1 > (c->mask + 1) / 2 || c->ledger_count + 1 > (c->ledger_mask + 1) / 2) {
        size_t slots = (size_t)c->count + 1 > (c->mask + 1) / 2 ? (c->mask + 1) * 2 : c->mask + 1;
        size_t ledgers = c->ledger_count + 1 > (c->ledger_mask + 1) / 2 ? (c->ledger_mask + 1) * 2 : c->ledger_mask + 1;
        if (slots > UINT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "a write cache holds fewer than 2**31 entries");
            return -1;
        }
        if (cache_index(c, slots, ledgers) < 0)
            return -1;
    }
    uint32_t *slot = cache_slot(c, ledger, entry);
    if (*slot != 0) { /* the same entry again (a client's retry): the newer bytes stay */
        CacheEntry *e = &c->entries[*slot - 1];
        c->size += PyBytes_GET_SIZE(body) - PyBytes_GET_SIZE(e->body);
        Py_SETREF(e->body, Py_NewRef(body));
        return 0;
    }
    if ((size_t)c->count == c->entries_cap) {
        size_t cap = c->entries_cap ? c->entries_cap * 2 : CACHE_FIRST_SLOTS / 2;
        CacheEntry *grown = PyMem_Realloc(c->entries, cap * sizeof(CacheEntry));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        c->entries = grown;
        c->entries_cap = cap;
    }
    c->version++;
    c->entries[c->count] = (CacheEntry){ledger, entry, Py_NewRef(body)};
    *slot = (uint32_t)(++c->count);
    c->size += PyBytes_GET_SIZE(body);
    CacheLedger *l = cache_ledger(c, ledger);
    if (l->entries++ == 0) {
        l->ledger = ledger;
        l->last = entry;
        c->ledger_count++;
    } else if (entry > l->last) {
        l->last = entry;
    }
    return 0;
}

static CacheEntry *cache_get(WriteCache *c, int64_t ledger, int64_t entry) {
    uint32_t slot = *cache_slot(c, ledger, entry);
    return slot == 0 ? NULL : &c->entries[slot - 1];
}

/* A checkpoint should swap this cache now: it is seven eighths full. Swapping before it is full lets the adds that
 * come while the checkpoint starts (its task runs on the next loop iteration) still find room. */
static int cache_wants_flush(WriteCache *c) { return c->size >= c->max_bytes - c->max_bytes / 8; }

static int cache_has_room(WriteCache *c, long long nbytes) {
    /* An empty cache always takes one entry, so an entry larger than the cache is never refused forever. */
    return c->size + nbytes <= c->max_bytes || c->count == 0;
}

static int WriteCache_init(WriteCache *self, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"max_bytes", NULL};
    long long max_bytes;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "L:WriteCache", keywords, &max_bytes))
        return -1;
    if (self->slots != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "WriteCache is already initialized");
        return -1;
    }
    self->max_bytes = max_bytes;
    return cache_index(self, CACHE_FIRST_SLOTS, CACHE_FIRST_LEDGERS);
}

static void WriteCache_dealloc(WriteCache *self) {
    for (long long i = 0; i < self->count; i++)
        Py_DECREF(self->entries[i].body);
    PyMem_Free(self->entries);
    PyMem_Free(self->slots);
    PyMem_Free(self->ledgers);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int parse_ids(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, const char *name, int64_t *ledger,
                     int64_t *entry) {
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd arguments (%zd given)", name, want, nargs);
        return -1;
    }
    *ledger = PyLong_AsLongLong(args[0]);
    if (*ledger == -1 && PyErr_Occurred())
        return -1;
    if (entry != NULL) {
        *entry = PyLong_AsLongLong(args[1]);
        if (*entry == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

static PyObject *WriteCache_put(WriteCache *self, PyObject *const *args, Py_ssize_t nargs) {
    int64_t ledger, entry;
    if (parse_ids(args, nargs, 3, "put", &ledger, &entry) < 0)
        return NULL;
    if (!PyBytes_CheckExact(args[2])) {
        PyErr_Format(PyExc_TypeError, "put: the entry must be bytes, not %s", Py_TYPE(args[2])->tp_name);
        return NULL;
    }
    if (cache_put(self, ledger, entry, args[2]) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *WriteCache_get(WriteCache *self, PyObject *const *args, Py_ssize_t nargs) {
    int64_t ledger, entry;
    if (parse_ids(args, nargs, 2, "get", &ledger, &entry) < 0)
        return NULL;
    CacheEntry *e = cache_get(self, ledger, entry);
    return Py_NewRef(e != NULL ? e->body : Py_None);
}

static PyObject *WriteCache_has_room(WriteCache *self, PyObject *arg) {
    long long nbytes = PyLong_AsLongLong(arg);
    if (nbytes == -1 && PyErr_Occurred())
        return NULL;
    return PyBool_FromLong(cache_has_room(self, nbytes));
}

static PyObject *WriteCache_last_entry(WriteCache *self, PyObject *arg) {
    int64_t ledger = PyLong_AsLongLong(arg);
    if (ledger == -1 && PyErr_Occurred())
        return NULL;
    CacheLedger *l = cache_ledger(self, ledger);
    if (l->entries == 0)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(l->last);
}

static int compare_ids(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static PyObject *WriteCache_entry_ids(WriteCache *self, PyObject *arg) {
    int64_t ledger = PyLong_AsLongLong(arg);
    if (ledger == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t n = cache_ledger(self, ledger)->entries;
    int64_t *ids = PyMem_Malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (ids == NULL)
        return PyErr_NoMemory();
    Py_ssize_t found = 0;
    for (long long i = 0; i < self->count && found < n; i++) {
        if (self->entries[i].ledger == ledger)
            ids[found++] = self->entries[i].entry;
    }
    qsort(ids, (size_t)found, sizeof(int64_t), compare_ids);
    PyObject *out = PyList_New(found);
    for (Py_ssize_t i = 0; out != NULL && i < found; i++) {
        PyObject *id = PyLong_FromLongLong(ids[i]);
        if (id == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, id);
    }
    PyMem_Free(ids);
    return out;
}

/* delete_ledger(ledger_id): the ledger's entries go, the others close up. */
static PyObject *WriteCache_delete_ledger(WriteCache *self, PyObject *arg) {
    int64_t ledger = PyLong_AsLongLong(arg);
    if (ledger == -1 && PyErr_Occurred())
        return NULL;
    if (cache_ledger(self, ledger)->entries == 0)
        Py_RETURN_NONE;
    long long kept = 0;
    for (long long i = 0; i < self->count; i++) {
        CacheEntry e = self->entries[i];
        if (e.ledger != ledger) {
            self->entries[kept++] = e;
            continue;
        }
        self->size -= PyBytes_GET_SIZE(e.body);
        Py_DECREF(e.body); /* a bytes object: releasing it runs no Python code that could see the cache */
    }
    self->count = kept;
    self->version++;
    if (cache_index(self, self->mask + 1, self->ledger_mask + 1) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static Py_ssize_t WriteCache_len(WriteCache *self) { return (Py_ssize_t)self->count; }

static PyObject *WriteCache_get_wants_flush(WriteCache *self, void *closure) {
    return PyBool_FromLong(cache_wants_flush(self));
}

static int compare_entries(const void *a, const void *b) {
    const BatchEntry *x = a, *y = b;
    if (x->ledger != y->ledger)
        return (x->ledger > y->ledger) - (x->ledger < y->ledger);
    return (x->entry > y->entry) - (x->entry < y->entry);
}

/* sorted_entries() -> EntryBatch: every entry, by ledger then entry id, as a checkpoint writes them (entry logs
 * keep a ledger's entries together). The GIL is yielded while the entries are taken (a ledger deleted or an entry
 * put meanwhile makes the walk start over, without yields, so that the second walk always completes) and released
 * for the sort. */
static PyObject *WriteCache_sorted_entries(WriteCache *self, PyObject *unused) {
    EntryBatch *batch = entry_batch_new((Py_ssize_t)self->count);
    if (batch == NULL)
        return NULL;
    for (int yielding = 1;; yielding = 0) {
        unsigned long long version = self->version; /* of this walk: a walk is checked against its own start */
        long long i = 0;
        for (; i < self->count; i++) {
            CacheEntry *e = &self->entries[i];
            batch->items[i] = (BatchEntry){e->ledger, e->entry, Py_NewRef(e->body)};
            batch->count = (Py_ssize_t)i + 1;
            if (yielding && (i + 1) % GIL_YIELD_EVERY == 0) {
                gil_yield();
                if (self->version != version)
                    break;
            }
        }
        if (i == self->count && self->version == version)
            break;
        for (Py_ssize_t k = 0; k < batch->count; k++) /* entries moved: take them again, in one go */
            Py_DECREF(batch->items[k].body);
        batch->count = 0;
        if (self->count > (long long)batch->capacity && entry_batch_grow(batch, (Py_ssize_t)self->count) < 0) {
            Py_DECREF(batch);
            return NULL;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    qsort(batch->items, (size_t)batch->count, sizeof(BatchEntry), compare_entries);
    Py_END_ALLOW_THREADS
    return (PyObject *)batch;
}

/* clear(): forget every entry. A flushed cache is cleared by the checkpoint thread, with yields, so that the event
 * loop does not pay for releasing its entries when the engine drops it. The index goes first: whatever looks at the
 * cache while the GIL is yielded finds nothing (the entries are in the entry logs by then). */
static PyObject *WriteCache_clear(WriteCache *self, PyObject *unused) {
    memset(self->slots, 0, sizeof(uint32_t) * (self->mask + 1));
    memset(self->ledgers, 0, sizeof(CacheLedger) * (self->ledger_mask + 1));
    self->ledger_count = 0;
    while (self->count > 0) {
        CacheEntry e = self->entries[--self->count];
        self->size -= PyBytes_GET_SIZE(e.body);
        Py_DECREF(e.body);
        if (self->count % GIL_YIELD_EVERY == 0 && self->count > 0)
            gil_yield();
    }
    self->size = 0;
    Py_RETURN_NONE;
}

static PyMethodDef WriteCache_methods[] = {
    {"put", (PyCFunction)(void (*)(void))WriteCache_put, METH_FASTCALL,
     "put(ledger_id, entry_id, body: bytes)\n\nStore an entry (a second put of the same entry replaces it)."},
    {"get", (PyCFunction)(void (*)(void))WriteCache_get, METH_FASTCALL,
     "get(ledger_id, entry_id) -> bytes | None"},
    {"has_room", (PyCFunction)WriteCache_has_room, METH_O,
     "has_room(nbytes) -> bool\n\nAn entry of nbytes fits (an empty cache always takes one)."},
    {"last_entry", (PyCFunction)WriteCache_last_entry, METH_O,
     "last_entry(ledger_id) -> int | None\n\nThe highest entry id of the ledger here."},
    {"entry_ids", (PyCFunction)WriteCache_entry_ids, METH_O, "entry_ids(ledger_id) -> list[int], sorted"},
    {"delete_ledger", (PyCFunction)WriteCache_delete_ledger, METH_O,
     "delete_ledger(ledger_id)\n\nForget every entry of the ledger."},
    {"sorted_entries", (PyCFunction)WriteCache_sorted_entries, METH_NOARGS,
     "sorted_entries() -> EntryBatch\n\nEvery entry, by ledger then entry id: what a checkpoint writes."},
    {"clear", (PyCFunction)WriteCache_clear, METH_NOARGS, "clear()\n\nForget every entry."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef WriteCache_members[] = {
    {"max_bytes", T_LONGLONG, offsetof(WriteCache, max_bytes), READONLY, "Capacity in entry bytes."},
    {"size", T_LONGLONG, offsetof(WriteCache, size), READONLY, "Entry bytes held."},
    {"count", T_LONGLONG, offsetof(WriteCache, count), READONLY, "Entries held."},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef WriteCache_getset[] = {
    {"wants_flush", (getter)WriteCache_get_wants_flush, NULL,
     "A checkpoint should swap the cache now (seven eighths full).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods WriteCache_sequence = {.sq_length = (lenfunc)WriteCache_len};

static PyTypeObject WriteCacheType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bookie.storage._write_path.WriteCache",
    .tp_basicsize = sizeof(WriteCache),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "WriteCache(max_bytes): entries added since the last checkpoint, by ledger and entry id.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)WriteCache_init,
    .tp_dealloc = (destructor)WriteCache_dealloc,
    .tp_methods = WriteCache_methods,
    .tp_members = WriteCache_members,
    .tp_getset = WriteCache_getset,
    .tp_as_sequence = &WriteCache_sequence,
};


/* ============================================================================================== LedgerState
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

static PyTypeObject LedgerStateType;

static PyObject *str_master_key, *str_fenced, *str_exists;

static int LedgerState_set_data(LedgerState *self, PyObject *data, void *closure) {
    if (data == NULL) {
        PyErr_SetString(PyExc_AttributeError, "a ledger state's data cannot be deleted");
        return -1;
    }
    PyObject *key = PyObject_GetAttr(data, str_master_key);
    if (key == NULL)
        return -1;
    if (!PyBytes_Check(key)) {
        PyErr_Format(PyExc_TypeError, "LedgerData.master_key must be bytes, not %s", Py_TYPE(key)->tp_name);
        Py_DECREF(key);
        return -1;
    }
    PyObject *fenced = PyObject_GetAttr(data, str_fenced), *exists = PyObject_GetAttr(data, str_exists);
    int is_fenced = fenced == NULL ? -1 : PyObject_IsTrue(fenced);
    int does_exist = exists == NULL ? -1 : PyObject_IsTrue(exists);
    Py_XDECREF(fenced);
    Py_XDECREF(exists);
    if (is_fenced < 0 || does_exist < 0) {
        Py_DECREF(key);
        return -1;
    }
    Py_XSETREF(self->master_key, key);
    Py_XSETREF(self->data, Py_NewRef(data));
    self->fenced = (char)is_fenced;
    self->exists = (char)does_exist;
    return 0;
}

static PyObject *LedgerState_get_data(LedgerState *self, void *closure) { return Py_NewRef(self->data); }

static PyObject *LedgerState_get_lac(LedgerState *self, void *closure) {
    if (!self->has_lac)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(self->lac);
}

static int LedgerState_set_lac(LedgerState *self, PyObject *value, void *closure) {
    if (value == NULL || value == Py_None) {
        self->has_lac = 0;
        return 0;
    }
    long long lac = PyLong_AsLongLong(value);
    if (lac == -1 && PyErr_Occurred())
        return -1;
    self->lac = lac;
    self->has_lac = 1;
    return 0;
}

static PyObject *LedgerState_get_watchers(LedgerState *self, void *closure) { return Py_NewRef(self->watchers); }

static int LedgerState_set_watchers(LedgerState *self, PyObject *value, void *closure) {
    if (value == NULL || !PySet_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "a ledger state's watchers must be a set");
        return -1;
    }
    Py_XSETREF(self->watchers, Py_NewRef(value));
    return 0;
}

static int LedgerState_init(LedgerState *self, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"data", "lac", "lac_updated_ms", "key_journaled", NULL};
    PyObject *data, *lac = Py_None;
    long long updated = 0;
    int journaled = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OLp:LedgerState", keywords, &data, &lac, &updated, &journaled))
        return -1;
    if (LedgerState_set_data(self, data, NULL) < 0 || LedgerState_set_lac(self, lac, NULL) < 0)
        return -1;
    PyObject *watchers = PySet_New(NULL);
    if (watchers == NULL)
        return -1;
    Py_XSETREF(self->watchers, watchers);
    self->lac_updated_ms = updated;
    self->key_journaled = (char)journaled;
    return 0;
}

static int LedgerState_traverse(LedgerState *self, visitproc visit, void *arg) {
    Py_VISIT(self->data);
    Py_VISIT(self->master_key);
    Py_VISIT(self->watchers);
    return 0;
}

static int LedgerState_clear(LedgerState *self) {
    Py_CLEAR(self->data);
    Py_CLEAR(self->master_key);
    Py_CLEAR(self->watchers);
    return 0;
}

static void LedgerState_dealloc(LedgerState *self) {
    PyObject_GC_UnTrack(self);
    LedgerState_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *LedgerState_repr(LedgerState *self) {
    PyObject *lac = LedgerState_get_lac(self, NULL);
    PyObject *out = PyUnicode_FromFormat("LedgerState(data=%R, lac=%R, key_journaled=%s)", self->data, lac,
                                         self->key_journaled ? "True" : "False");
    Py_XDECREF(lac);
    return out;
}

static PyGetSetDef LedgerState_getset[] = {
    {"data", (getter)LedgerState_get_data, (setter)LedgerState_set_data, "The ledger's LedgerData.", NULL},
    {"lac", (getter)LedgerState_get_lac, (setter)LedgerState_set_lac,
     "The last add confirmed: None until computed after a start.", NULL},
    {"watchers", (getter)LedgerState_get_watchers, (setter)LedgerState_set_watchers,
     "Futures of the long polls parked on this ledger's LAC.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef LedgerState_members[] = {
    {"lac_updated_ms", T_LONGLONG, offsetof(LedgerState, lac_updated_ms), 0, "When the LAC last moved (epoch ms)."},
    {"key_journaled", T_BOOL, offsetof(LedgerState, key_journaled), 0, "The master key record is in this run's journal."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject LedgerStateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bookie.storage._write_path.LedgerState",
    .tp_basicsize = sizeof(LedgerState),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "LedgerState(data, lac=None, lac_updated_ms=0, key_journaled=False): a ledger in this bookie's memory.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)LedgerState_init,
    .tp_dealloc = (destructor)LedgerState_dealloc,
    .tp_traverse = (traverseproc)LedgerState_traverse,
    .tp_clear = (inquiry)LedgerState_clear,
    .tp_repr = (reprfunc)LedgerState_repr,
    .tp_getset = LedgerState_getset,
    .tp_members = LedgerState_members,
};

/* ============================================================================================== JournalWriter
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

static PyTypeObject JournalWriterType;

static void batch_free_waiters(Waiter *waiters, size_t count) {
    for (size_t i = 0; i < count; i++) {
        Py_XDECREF(waiters[i].waiter);
        Py_XDECREF(waiters[i].state);
        Py_XDECREF(waiters[i].sink);
    }
}

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
static int journal_queue(JournalWriter *j, const uint8_t *payload, size_t len, Waiter waiter) {
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
static int journal_open_file(JournalWriter *j, long long log_id, const char **what) {
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

static void *journal_writer_main(void *arg) {
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

static void call_unraisable(PyObject *callable, PyObject *args, const char *what) {
    if (callable == NULL || callable == Py_None || args == NULL) {
        if (args == NULL)
            PyErr_WriteUnraisable(NULL);
        return;
    }
    PyObject *result = PyObject_CallObject(callable, args);
    if (result == NULL) {
        /* One broken callback must not leave the rest of the group unanswered. */
        PyObject *context = PyUnicode_FromString(what);
        PyErr_WriteUnraisable(context);
        Py_XDECREF(context);
    }
    Py_XDECREF(result);
}

typedef struct {
    PyObject *sink;
    const AddSinkMethods *methods;
} SinkToFlush;

typedef struct {
    SinkToFlush *items;
    size_t count, cap;
} Sinks;

/* An add of the write path is durable (or failed): its LAC moves, its sender is told. */
static void add_durable(JournalWriter *j, Waiter *w, int failed, long long now_ms, Sinks *sinks) {
    LedgerState *s = (LedgerState *)w->state;
    if (!failed && (!s->has_lac || w->lac > s->lac)) {
        s->lac = w->lac;
        s->has_lac = 1;
        s->lac_updated_ms = now_ms;
        if (s->watchers != NULL && PySet_GET_SIZE(s->watchers) > 0) {
            PyObject *args = PyTuple_Pack(1, (PyObject *)s);
            call_unraisable(j->on_lac_watchers, args, "waking the long polls of a ledger");
            Py_XDECREF(args);
        }
    }
    if (w->sink_methods->durable(w->sink, w->token, failed)) {
        if (sinks->count == sinks->cap) {
            size_t cap = sinks->cap ? sinks->cap * 2 : 16;
            SinkToFlush *grown = PyMem_Realloc(sinks->items, cap * sizeof(SinkToFlush));
            if (grown == NULL) {
                PyErr_NoMemory();
                PyErr_WriteUnraisable(NULL);
                return;
            }
            sinks->items = grown;
            sinks->cap = cap;
        }
        sinks->items[sinks->count++] = (SinkToFlush){Py_NewRef(w->sink), w->sink_methods};
    }
}

static PyObject *journal_error(const Done *d) {
    return PyObject_CallFunction(PyExc_OSError, "is", d->error_number, d->error);
}

/* A finished group, on the event loop: its waiters told, its stats recorded. */
static void complete_group(JournalWriter *j, Done *d, long long now_ms, Sinks *sinks) {
    int failed = d->error_number != 0;
    PyObject *error = failed ? journal_error(d) : Py_NewRef(Py_None);
    if (error == NULL) {
        PyErr_WriteUnraisable(NULL);
        error = Py_NewRef(Py_None);
    }
    if (failed && !j->failure_reported) {
        j->failure_reported = 1;
        PyObject *args = PyTuple_Pack(1, error);
        call_unraisable(j->on_failure, args, "reporting a journal failure");
        Py_XDECREF(args);
    }
    PyObject *python_waiters = NULL;
    for (size_t i = 0; i < d->count; i++) {
        Waiter *w = &d->waiters[i];
        if (w->waiter != NULL) {
            if (python_waiters == NULL)
                python_waiters = PyList_New(0);
            if (python_waiters == NULL || PyList_Append(python_waiters, w->waiter) < 0)
                PyErr_WriteUnraisable(NULL);
        } else {
            add_durable(j, w, failed, now_ms, sinks);
        }
    }
    batch_free_waiters(d->waiters, d->count);
    free(d->waiters);
    if (python_waiters != NULL) {
        PyObject *args = PyTuple_Pack(2, python_waiters, error);
        call_unraisable(j->on_python_records, args, "completing journal records");
        Py_XDECREF(args);
        Py_DECREF(python_waiters);
    }
    PyObject *stats = Py_BuildValue("(nndNO)", (Py_ssize_t)d->count, (Py_ssize_t)d->nbytes, d->write_ms,
                                    d->synced ? PyFloat_FromDouble(d->sync_ms) : Py_NewRef(Py_None),
                                    failed ? Py_False : Py_True);
    call_unraisable(j->on_group, stats, "recording a journal group");
    Py_XDECREF(stats);
    Py_DECREF(error);
}

/* complete(): every group the writer finished since the last call, told on the event loop (add_reader). */
static PyObject *JournalWriter_complete(JournalWriter *j, PyObject *unused) {
    uint64_t value;
    if (j->wake_fd >= 0)
        while (read(j->wake_fd, &value, sizeof value) < 0 && errno == EINTR) {
        }
    pthread_mutex_lock(&j->lock);
    Done *d = j->done_head;
    j->done_head = j->done_tail = NULL;
    pthread_mutex_unlock(&j->lock);
    long long now_ms = wall_ms();
    Sinks sinks = {NULL, 0, 0};
    while (d != NULL) {
        Done *next = d->next;
        complete_group(j, d, now_ms, &sinks);
        free(d);
        d = next;
    }
    for (size_t i = 0; i < sinks.count; i++) {
        sinks.items[i].methods->flush(sinks.items[i].sink);
        if (PyErr_Occurred())
            PyErr_WriteUnraisable(sinks.items[i].sink);
        Py_DECREF(sinks.items[i].sink);
    }
    PyMem_Free(sinks.items);
    Py_RETURN_NONE;
}

static int JournalWriter_init(JournalWriter *self, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"directory", "header", "max_group_wait_s", "buffered_writes_threshold",
                               "buffered_entries_threshold", "flush_when_queue_empty", "sync_data",
                               "max_size_bytes", "prealloc_bytes", "alignment", "fail_fsync_at",
                               "remove_from_page_cache", NULL};
    const char *directory;
    Py_buffer header;
    double wait_s;
    if (self->directory != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "JournalWriter is already initialized");
        return -1;
    }
    self->remove_from_page_cache = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "sy*dLLppLLiL|p:JournalWriter", keywords, &directory, &header,
                                     &wait_s, &self->buffered_writes_threshold, &self->buffered_entries_threshold,
                                     &self->flush_when_queue_empty, &self->sync_data, &self->max_size_bytes,
                                     &self->prealloc_bytes, &self->alignment, &self->fail_fsync_at,
                                     &self->remove_from_page_cache))
        return -1;
    if (self->prealloc_bytes <= 0 || self->alignment < 0) {
        PyBuffer_Release(&header);
        PyErr_SetString(PyExc_ValueError, "prealloc_bytes must be positive and alignment not negative");
        return -1;
    }
    self->max_group_wait_ns = (long long)(wait_s * 1e9);
    self->directory = strdup(directory);
    self->header = malloc((size_t)header.len);
    if (self->directory == NULL || self->header == NULL) {
        PyBuffer_Release(&header);
        PyErr_NoMemory();
        return -1;
    }
    memcpy(self->header, header.buf, (size_t)header.len);
    self->header_len = (size_t)header.len;
    PyBuffer_Release(&header);
    return 0;
}

static PyObject *JournalWriter_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    JournalWriter *self = (JournalWriter *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    pthread_mutex_init(&self->lock, NULL);
    pthread_cond_init(&self->wake, NULL);
    self->fd = self->wake_fd = -1;
    return (PyObject *)self;
}

/* start(log_id): open the journal file of that id and start the writer thread. */
static PyObject *JournalWriter_start(JournalWriter *j, PyObject *arg) {
    long long log_id = PyLong_AsLongLong(arg);
    if (log_id == -1 && PyErr_Occurred())
        return NULL;
    if (j->directory == NULL || j->running || j->stopping) {
        PyErr_SetString(PyExc_RuntimeError, "the journal writer is not initialized, or started already");
        return NULL;
    }
    const char *what;
    if (journal_open_file(j, log_id, &what) < 0)
        return PyErr_SetFromErrnoWithFilename(PyExc_OSError, j->directory);
    j->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (j->wake_fd < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    int rc = pthread_create(&j->thread, NULL, journal_writer_main, j);
    if (rc != 0) {
        errno = rc;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    j->running = 1;
    Py_RETURN_NONE;
}

/* stop(): write what is queued, stop the writer thread and close the file; the last groups still wait for
 * ``complete``. */
static PyObject *JournalWriter_stop(JournalWriter *j, PyObject *unused) {
    if (!j->running)
        Py_RETURN_NONE;
    pthread_mutex_lock(&j->lock);
    j->stopping = 1;
    pthread_cond_signal(&j->wake);
    pthread_mutex_unlock(&j->lock);
    Py_BEGIN_ALLOW_THREADS
    pthread_join(j->thread, NULL);
    Py_END_ALLOW_THREADS
    j->running = 0;
    if (j->fd >= 0) {
        close(j->fd);
        j->fd = -1;
    }
    Py_RETURN_NONE;
}

/* close_wake_fd(): after the last ``complete``, once the loop no longer watches it. */
static PyObject *JournalWriter_close_wake_fd(JournalWriter *j, PyObject *unused) {
    if (j->wake_fd >= 0) {
        close(j->wake_fd);
        j->wake_fd = -1;
    }
    Py_RETURN_NONE;
}

static int check_open(JournalWriter *j) {
    if (!j->running || j->stopping) {
        PyErr_SetString(PyExc_RuntimeError, "the journal writer is not running");
        return -1;
    }
    return 0;
}

/* append(payload, waiter): queue a record; the waiter (a future or a callable) goes to on_python_records with
 * the rest of its group's once the record is durable. */
static PyObject *JournalWriter_append(JournalWriter *j, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "append takes a payload and a waiter (%zd given)", nargs);
        return NULL;
    }
    if (check_open(j) < 0)
        return NULL;
    Py_buffer payload;
    if (PyObject_GetBuffer(args[0], &payload, PyBUF_SIMPLE) < 0)
        return NULL;
    Waiter w = {Py_NewRef(args[1]), NULL, NULL, NULL, 0, 0};
    int rc = journal_queue(j, payload.buf, (size_t)payload.len, w);
    PyBuffer_Release(&payload);
    if (rc < 0) {
        Py_DECREF(w.waiter);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* barrier(waiter): told once everything queued before it is durable (fsynced even without syncData). */
static PyObject *JournalWriter_barrier(JournalWriter *j, PyObject *waiter) {
    if (check_open(j) < 0)
        return NULL;
    Waiter w = {Py_NewRef(waiter), NULL, NULL, NULL, 0, 0};
    if (journal_queue(j, NULL, 0, w) < 0) {
        Py_DECREF(w.waiter);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *JournalWriter_written_mark(JournalWriter *j, PyObject *unused) {
    pthread_mutex_lock(&j->lock);
    long long log_id = j->mark_log_id, offset = j->mark_offset;
    pthread_mutex_unlock(&j->lock);
    return Py_BuildValue("(LL)", log_id, offset);
}

static PyObject *JournalWriter_queue_size(JournalWriter *j, PyObject *unused) {
    pthread_mutex_lock(&j->lock);
    size_t n = j->queued.count;
    pthread_mutex_unlock(&j->lock);
    return PyLong_FromSize_t(n);
}

static PyObject *JournalWriter_get_counter(JournalWriter *j, void *which) {
    switch ((intptr_t)which) {
    case 0:
        return PyLong_FromLongLong(atomic_load(&j->syncs));
    case 1:
        return PyLong_FromLongLong(atomic_load(&j->bytes_written));
    case 2:
        return PyLong_FromLongLong(atomic_load(&j->wakeups));
    default:
        return PyLong_FromLongLong(atomic_load(&j->syncing));
    }
}

static PyObject *JournalWriter_get_failure(JournalWriter *j, void *closure) {
    if (!atomic_load(&j->failed))
        Py_RETURN_NONE;
    return PyUnicode_FromString(j->failure);
}

static PyObject *JournalWriter_get_wake_fd(JournalWriter *j, void *closure) { return PyLong_FromLong(j->wake_fd); }

static int JournalWriter_traverse(JournalWriter *j, visitproc visit, void *arg) {
    Py_VISIT(j->on_python_records);
    Py_VISIT(j->on_group);
    Py_VISIT(j->on_failure);
    Py_VISIT(j->on_lac_watchers);
    return 0;
}

static int JournalWriter_clear(JournalWriter *j) {
    Py_CLEAR(j->on_python_records);
    Py_CLEAR(j->on_group);
    Py_CLEAR(j->on_failure);
    Py_CLEAR(j->on_lac_watchers);
    return 0;
}

static void JournalWriter_dealloc(JournalWriter *j) {
    PyObject_GC_UnTrack(j);
    PyObject *stopped = JournalWriter_stop(j, NULL);
    Py_XDECREF(stopped);
    if (j->wake_fd >= 0)
        close(j->wake_fd);
    batch_free_waiters(j->queued.waiters, j->queued.count);
    batch_free_waiters(j->writing.waiters, j->writing.count);
    free(j->queued.waiters);
    free(j->queued.data);
    free(j->writing.waiters);
    free(j->writing.data);
    for (Done *d = j->done_head; d != NULL;) {
        Done *next = d->next;
        batch_free_waiters(d->waiters, d->count);
        free(d->waiters);
        free(d);
        d = next;
    }
    free(j->directory);
    free(j->header);
    pthread_mutex_destroy(&j->lock);
    pthread_cond_destroy(&j->wake);
    JournalWriter_clear(j);
    Py_TYPE(j)->tp_free((PyObject *)j);
}

static PyMethodDef JournalWriter_methods[] = {
    {"start", (PyCFunction)JournalWriter_start, METH_O, "start(log_id)\n\nOpen that journal file; start writing."},
    {"stop", (PyCFunction)JournalWriter_stop, METH_NOARGS,
     "stop()\n\nWrite what is queued, stop the writer thread, close the file (the GIL is released meanwhile)."},
    {"append", (PyCFunction)(void (*)(void))JournalWriter_append, METH_FASTCALL,
     "append(payload, waiter)\n\nQueue a record; waiter goes to on_python_records once it is durable."},
    {"barrier", (PyCFunction)JournalWriter_barrier, METH_O,
     "barrier(waiter)\n\nwaiter is told once everything queued before it is durable."},
    {"complete", (PyCFunction)JournalWriter_complete, METH_NOARGS,
     "complete()\n\nTell the waiters of every group written since the last call (on the event loop)."},
    {"close_wake_fd", (PyCFunction)JournalWriter_close_wake_fd, METH_NOARGS,
     "close_wake_fd()\n\nClose the eventfd once the loop no longer watches it."},
    {"written_mark", (PyCFunction)JournalWriter_written_mark, METH_NOARGS,
     "written_mark() -> (log_id, offset)\n\nEverything before it is on disk."},
    {"queue_size", (PyCFunction)JournalWriter_queue_size, METH_NOARGS,
     "queue_size() -> int\n\nRecords queued and not yet taken by the writer."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef JournalWriter_getset[] = {
    {"syncs", (getter)JournalWriter_get_counter, NULL, "fdatasync calls made.", (void *)0},
    {"bytes_written", (getter)JournalWriter_get_counter, NULL, "Bytes written to journal files.", (void *)1},
    {"wakeups", (getter)JournalWriter_get_counter, NULL,
     "Times the writer thread woke: once per idle wait, and once per sleep of an open group.", (void *)2},
    {"syncing", (getter)JournalWriter_get_counter, NULL, "Records of the group being fsynced now.", (void *)3},
    {"failure", (getter)JournalWriter_get_failure, NULL, "Why the journal failed, or None.", NULL},
    {"wake_fd", (getter)JournalWriter_get_wake_fd, NULL, "The eventfd the event loop watches (-1: none).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef JournalWriter_members[] = {
    {"on_python_records", T_OBJECT, offsetof(JournalWriter, on_python_records), 0,
     "(waiters, error | None): records appended from Python are durable, or failed."},
    {"on_group", T_OBJECT, offsetof(JournalWriter, on_group), 0,
     "(records, nbytes, write_ms, sync_ms | None, ok): a group was written."},
    {"on_failure", T_OBJECT, offsetof(JournalWriter, on_failure), 0, "(error): the journal failed; told once."},
    {"on_lac_watchers", T_OBJECT, offsetof(JournalWriter, on_lac_watchers), 0,
     "(state): an add moved the LAC of a ledger with parked long polls."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject JournalWriterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bookie.storage._write_path.JournalWriter",
    .tp_basicsize = sizeof(JournalWriter),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "JournalWriter(directory, header, max_group_wait_s, buffered_writes_threshold, "
              "buffered_entries_threshold, flush_when_queue_empty, sync_data, max_size_bytes, prealloc_bytes, "
              "alignment, fail_fsync_at, remove_from_page_cache=True): one journal's group commit on its own "
              "thread.",
    .tp_new = JournalWriter_new,
    .tp_init = (initproc)JournalWriter_init,
    .tp_dealloc = (destructor)JournalWriter_dealloc,
    .tp_traverse = (traverseproc)JournalWriter_traverse,
    .tp_clear = (inquiry)JournalWriter_clear,
    .tp_methods = JournalWriter_methods,
    .tp_getset = JournalWriter_getset,
    .tp_members = JournalWriter_members,
};

/* ============================================================================================== WritePath */

typedef struct {
    PyObject_HEAD
    PyObject *dirs;       /* tuple of LedgerDirStorage */
    PyObject *home_dirs;  /* dict: ledger id -> index in dirs, for ledgers found at start */
    PyObject *ledgers;    /* dict: ledger id -> LedgerState */
    PyObject *journals;   /* tuple of JournalWriter */
    PyObject *trigger_checkpoint;
    double disk_usage_threshold;
    long long min_usable_size;
    char closed;
} WritePath;

static PyTypeObject WritePathType;

static PyObject *str_write_cache, *str_flushing, *str_free_bytes, *str_total_bytes;

/* The directory's disk would keep its reserve once the entry is checkpointed (StorageEngine._check_room). */
static int dir_has_disk_room(WritePath *wp, PyObject *dir, WriteCache *cache, Py_ssize_t len) {
    PyObject *free_obj = PyObject_GetAttr(dir, str_free_bytes);
    if (free_obj == NULL)
        return -1;
    if (free_obj == Py_None) { /* not measured yet */
        Py_DECREF(free_obj);
        return 1;
    }
    long long free_bytes = PyLong_AsLongLong(free_obj);
    Py_DECREF(free_obj);
    PyObject *total_obj = PyObject_GetAttr(dir, str_total_bytes);
    PyObject *flushing = PyObject_GetAttr(dir, str_flushing);
    long long total = total_obj == NULL ? -1 : PyLong_AsLongLong(total_obj);
    long long pending = cache->size;
    if (flushing != NULL && Py_IS_TYPE(flushing, &WriteCacheType))
        pending += ((WriteCache *)flushing)->size;
    Py_XDECREF(total_obj);
    Py_XDECREF(flushing);
    if (PyErr_Occurred())
        return -1;
    long long reserve = (long long)((double)total * (1.0 - wp->disk_usage_threshold));
    if (reserve < wp->min_usable_size)
        reserve = wp->min_usable_size;
    return free_bytes - pending - len >= reserve;
}

static int write_path_try_add(PyObject *self, const uint8_t *entry, Py_ssize_t len, const uint8_t *master_key,
                              Py_ssize_t master_key_len, PyObject *sink, const AddSinkMethods *methods,
                              uint64_t token) {
    WritePath *wp = (WritePath *)self;
    if (wp->closed || len < 24)
        return 0;
    int64_t ledger = read_int64_be(entry), entry_id = read_int64_be(entry + 8), lac = read_int64_be(entry + 16);
    Py_ssize_t ndirs = PyTuple_GET_SIZE(wp->dirs), njournals = PyTuple_GET_SIZE(wp->journals);
    if (ledger < 0 || entry_id < 0 || ndirs == 0 || njournals == 0)
        return 0;
    JournalWriter *journal = (JournalWriter *)PyTuple_GET_ITEM(wp->journals, ledger % njournals);
    if (!journal->running || journal->stopping || atomic_load(&journal->failed))
        return 0;
    PyObject *key = PyLong_FromLongLong(ledger);
    if (key == NULL)
        return -1;
    int taken = 0;
    WriteCache *cache = NULL;
    /* A strong reference: the allocations below may run arbitrary code that could drop the dict's. */
    PyObject *state_obj = Py_XNewRef(PyDict_GetItemWithError(wp->ledgers, key));
    if (state_obj == NULL || !Py_IS_TYPE(state_obj, &LedgerStateType))
        goto out;
    LedgerState *state = (LedgerState *)state_obj;
    if (!state->exists || state->fenced || !state->key_journaled
        || PyBytes_GET_SIZE(state->master_key) != master_key_len
        || memcmp(PyBytes_AS_STRING(state->master_key), master_key, (size_t)master_key_len) != 0)
        goto out;
    PyObject *home = PyDict_GetItemWithError(wp->home_dirs, key);
    if (home == NULL && PyErr_Occurred())
        goto out;
    Py_ssize_t index = home != NULL ? PyLong_AsSsize_t(home) : (Py_ssize_t)(ledger % ndirs);
    if (index < 0 || index >= ndirs)
        goto out;
    PyObject *dir = PyTuple_GET_ITEM(wp->dirs, index);
    cache = (WriteCache *)PyObject_GetAttr(dir, str_write_cache);
    if (cache == NULL || !Py_IS_TYPE(cache, &WriteCacheType))
        goto out;
    int room = dir_has_disk_room(wp, dir, cache, len);
    if (room <= 0)
        goto out;
    if (!cache_has_room(cache, len)) {
        taken = 2; /* the caller holds it until the caches swap */
        goto out;
    }
    PyObject *body = PyBytes_FromStringAndSize((const char *)entry, len);
    if (body == NULL)
        goto out;
    int cached = cache_put(cache, ledger, entry_id, body);
    Py_DECREF(body);
    if (cached < 0)
        goto out;
    Waiter w = {NULL, Py_NewRef(state_obj), Py_NewRef(sink), methods, lac, token};
    if (journal_queue(journal, entry, (size_t)len, w) < 0) {
        Py_DECREF(w.state);
        Py_DECREF(w.sink);
        goto out;
    }
    taken = 1;
    if (cache_wants_flush(cache)) {
        PyObject *result = PyObject_CallNoArgs(wp->trigger_checkpoint);
        if (result == NULL)
            PyErr_WriteUnraisable(wp->trigger_checkpoint);
        Py_XDECREF(result);
    }
out:
    Py_DECREF(key);
    Py_XDECREF(state_obj);
    Py_XDECREF(cache);
    if (PyErr_Occurred())
        return taken == 1 ? 1 : -1;
    return taken;
}

static int WritePath_init(WritePath *self, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"dirs", "home_dirs", "ledgers", "journals", "trigger_checkpoint",
                               "disk_usage_threshold", "min_usable_size", NULL};
    PyObject *dirs, *home_dirs, *ledgers, *journals, *trigger;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!O!O!OdL:WritePath", keywords, &PyTuple_Type, &dirs,
                                     &PyDict_Type, &home_dirs, &PyDict_Type, &ledgers, &PyTuple_Type, &journals,
                                     &trigger, &self->disk_usage_threshold, &self->min_usable_size))
        return -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(journals); i++) {
        if (!Py_IS_TYPE(PyTuple_GET_ITEM(journals, i), &JournalWriterType)) {
            PyErr_SetString(PyExc_TypeError, "WritePath: journals must be JournalWriter objects");
            return -1;
        }
    }
    Py_XSETREF(self->dirs, Py_NewRef(dirs));
    Py_XSETREF(self->home_dirs, Py_NewRef(home_dirs));
    Py_XSETREF(self->ledgers, Py_NewRef(ledgers));
    Py_XSETREF(self->journals, Py_NewRef(journals));
    Py_XSETREF(self->trigger_checkpoint, Py_NewRef(trigger));
    return 0;
}

static int WritePath_traverse(WritePath *self, visitproc visit, void *arg) {
    Py_VISIT(self->dirs);
    Py_VISIT(self->home_dirs);
    Py_VISIT(self->ledgers);
    Py_VISIT(self->journals);
    Py_VISIT(self->trigger_checkpoint);
    return 0;
}

static int WritePath_clear(WritePath *self) {
    Py_CLEAR(self->dirs);
    Py_CLEAR(self->home_dirs);
    Py_CLEAR(self->ledgers);
    Py_CLEAR(self->journals);
    Py_CLEAR(self->trigger_checkpoint);
    return 0;
}

static void WritePath_dealloc(WritePath *self) {
    PyObject_GC_UnTrack(self);
    WritePath_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef WritePath_members[] = {
    {"closed", T_BOOL, offsetof(WritePath, closed), 0, "The engine is closing: every add takes the Python path."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject WritePathType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bookie.storage._write_path.WritePath",
    .tp_basicsize = sizeof(WritePath),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "WritePath(dirs, home_dirs, ledgers, journals, trigger_checkpoint, disk_usage_threshold, "
              "min_usable_size): the storage engine's add for the request hot path (C interface only).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)WritePath_init,
    .tp_dealloc = (destructor)WritePath_dealloc,
    .tp_traverse = (traverseproc)WritePath_traverse,
    .tp_clear = (inquiry)WritePath_clear,
    .tp_members = WritePath_members,
};

/* ============================================================================================== module */

static const BookieStorageApi api = {
    .write_path_type = &WritePathType,
    .try_add = write_path_try_add,
};

static PyObject *py_yield_gil(PyObject *module, PyObject *unused) {
    gil_yield();
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"yield_gil", (PyCFunction)py_yield_gil, METH_NOARGS,
     "yield_gil()\n\nLet a thread waiting for the GIL (the event loop) take it: for worker threads between long C "
     "calls, whose bare release would win the GIL straight back."},
    {"crc32c", (PyCFunction)py_crc32c, METH_O, "crc32c(data) -> int\n\nThe CRC32C the journal's group trailers carry."},
    {"append_records", (PyCFunction)(void (*)(void))append_records, METH_FASTCALL,
     "append_records(buffer, used, locations, batch, index, position, log_id, limit, first_position, flush_at)"
     " -> (index, position, stop, used)\n\nEntry-log records of one ledger's run of batch[index:] after buffer[:used],"
     " up to flush_at buffered bytes or the log's limit; stop 0: the run is done, 1: the buffer is full, 2: the log"
     " is full. The buffer only grows: reuse it from used 0."},
    {"put_locations", (PyCFunction)(void (*)(void))put_locations, METH_FASTCALL,
     "put_locations(put, locations, start, count) -> next\n\nput(key, value) for packed locations."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "bookie.storage._write_path",
    .m_doc = "The storage engine's write path in C: write cache, ledger states, journal writer, the hot add.",
    .m_size = 0,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__write_path(void) {
    crc32c_init();
    const InternedName names[] = {
        {&str_master_key, "master_key"}, {&str_fenced, "fenced"}, {&str_exists, "exists"},
        {&str_write_cache, "write_cache"}, {&str_flushing, "flushing"}, {&str_free_bytes, "free_bytes"},
        {&str_total_bytes, "total_bytes"},
    };
    if (intern_names(names, COUNT_OF(names)) < 0)
        return NULL;
    const ModuleType types[] = {
        {&WriteCacheType, "WriteCache"}, {&LedgerStateType, "LedgerState"}, {&JournalWriterType, "JournalWriter"},
        {&WritePathType, "WritePath"}, {&EntryBatchType, "EntryBatch"},
    };
    PyObject *module = module_with_types(&module_def, types, COUNT_OF(types));
    if (module != NULL && module_add_capsule(module, &api, BOOKIE_STORAGE_CAPSULE) < 0)
        Py_CLEAR(module);
    return module;
}
