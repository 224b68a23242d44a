/* WriteCache of the bookie.storage._write_path module (_write_path_internal.h has the struct and what the
 * module's files share). */
#include "_write_path_internal.h"

#include <structmember.h>

#include <stdlib.h>
#include <string.h>

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

int cache_put(WriteCache *c, int64_t ledger, int64_t entry, PyObject *body) {
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
            /* The cache may have grown while the GIL was yielded: the version check below starts the walk over
             * then, but the write into the batch checks its room itself, so that it stays in bounds even if that
             * check changed. */
            if (i >= (long long)batch->capacity && entry_batch_grow(batch, (Py_ssize_t)self->count) < 0) {
                Py_DECREF(batch);
                return NULL;
            }
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

PyTypeObject WriteCacheType = {
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
