/* JournalWriter, the Python type of one journal, in the bookie.storage._write_path module: its settings, start
 * and stop of its writer thread (_journal_writer.c), records appended from Python, and ``complete``, which tells
 * on the event loop the waiters of every group the thread finished (an add of the write path: its LAC moves and
 * its sender is told). */
#include "_write_path_internal.h"

#include <structmember.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../_native_common.h"

static void batch_free_waiters(Waiter *waiters, size_t count) {
    for (size_t i = 0; i < count; i++) {
        Py_XDECREF(waiters[i].waiter);
        Py_XDECREF(waiters[i].state);
        Py_XDECREF(waiters[i].sink);
    }
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

PyTypeObject JournalWriterType = {
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
