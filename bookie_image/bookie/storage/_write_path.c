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
 * One file per type (_write_path_internal.h lists them and holds what they share); this one holds WritePath and
 * the module itself.
 */
#include "_write_path_internal.h"

#include <structmember.h>

#include <string.h>

#include "../_native_common.h"
#include "_write_path_api.h"

/* ============================================================================================== WritePath */

typedef struct {
    PyObject_HEAD
    PyObject *dirs;       /* tuple of LedgerDirStorage */
    PyObject *home_dirs;  /* dict: ledger id -> index in dirs, for ledgers found at start */
    PyObject *ledgers;    /* dict: ledger id -> LedgerState */
    PyObject *journals;   /* tuple of JournalWriter */
    PyObject *trigger_checkpoint;
    double disk_usage_threshold;
    long long min_usable_size;               /* minUsableSizeForEntryLogCreation */
    long long min_usable_size_high_priority; /* minUsableSizeForHighPriorityWrites */
    char closed;
} WritePath;

static PyTypeObject WritePathType;

static PyObject *str_write_cache, *str_flushing, *str_free_bytes, *str_total_bytes;

/* The disk-room rule of every add, of this path and of StorageEngine._check_room (through
 * WritePath.reserve_breached): an entry is admitted when the directory's disk keeps its reserve once the entry
 * and every entry still in its write caches are checkpointed. The reserve of a normal add is the part of the
 * disk above diskUsageThreshold, at least minUsableSizeForEntryLogCreation (the room compaction needs to rewrite
 * the live part of a log); a recovery (high-priority) add may go down to minUsableSizeForHighPriorityWrites. */
static long long disk_reserve(const WritePath *wp, long long total, int high_priority) {
    if (high_priority)
        return wp->min_usable_size_high_priority;
    long long reserve = (long long)((double)total * (1.0 - wp->disk_usage_threshold));
    return reserve < wp->min_usable_size ? wp->min_usable_size : reserve;
}

static int entry_keeps_reserve(const WritePath *wp, long long free_bytes, long long total, long long pending,
                               long long len, int high_priority) {
    return free_bytes - pending - len >= disk_reserve(wp, total, high_priority);
}

/* 1 when the directory's disk has room for the entry (a normal add), 0 when not, -1 with an error. */
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
    return entry_keeps_reserve(wp, free_bytes, total, pending, len, 0);
}

static PyObject *WritePath_reserve_breached(WritePath *self, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"free_bytes", "total_bytes", "pending_bytes", "size", "high_priority", NULL};
    long long free_bytes, total, pending, len;
    int high_priority;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "LLLLp:reserve_breached", keywords, &free_bytes, &total, &pending,
                                     &len, &high_priority))
        return NULL;
    if (entry_keeps_reserve(self, free_bytes, total, pending, len, high_priority))
        Py_RETURN_NONE;
    return PyLong_FromLongLong(disk_reserve(self, total, high_priority));
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
                               "disk_usage_threshold", "min_usable_size", "min_usable_size_high_priority", NULL};
    PyObject *dirs, *home_dirs, *ledgers, *journals, *trigger;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!O!O!OdLL:WritePath", keywords, &PyTuple_Type, &dirs,
                                     &PyDict_Type, &home_dirs, &PyDict_Type, &ledgers, &PyTuple_Type, &journals,
                                     &trigger, &self->disk_usage_threshold, &self->min_usable_size,
                                     &self->min_usable_size_high_priority))
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

static PyMethodDef WritePath_methods[] = {
    {"reserve_breached", (PyCFunction)(void (*)(void))WritePath_reserve_breached, METH_VARARGS | METH_KEYWORDS,
     "reserve_breached(free_bytes, total_bytes, pending_bytes, size, high_priority) -> int | None\n\nNone when an "
     "entry of size bytes keeps the disk's reserve once it and the pending bytes are checkpointed, else the "
     "reserve it would breach: the one disk-room rule of both add paths."},
    {NULL, NULL, 0, NULL},
};

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
              "min_usable_size, min_usable_size_high_priority): the storage engine's add for the request hot path "
              "(C interface) and the disk-room rule both add paths apply (reserve_breached).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)WritePath_init,
    .tp_dealloc = (destructor)WritePath_dealloc,
    .tp_traverse = (traverseproc)WritePath_traverse,
    .tp_clear = (inquiry)WritePath_clear,
    .tp_members = WritePath_members,
    .tp_methods = WritePath_methods,
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
    journal_crc32c_init();
    const InternedName names[] = {
        {&str_write_cache, "write_cache"}, {&str_flushing, "flushing"}, {&str_free_bytes, "free_bytes"},
        {&str_total_bytes, "total_bytes"},
    };
    if (intern_names(names, COUNT_OF(names)) < 0 || ledger_state_intern_names() < 0)
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
