/* The ledger client's hot path in C: a ledger's appends, and one connection's frames.
 *
 *   ClientStream   one per connection to a bookie (bookie/client/connection.py). Outgoing requests gather in its
 *                  buffer until the connection writes them (it is told when there is output to schedule, or
 *                  enough to write at once); a ledger's v3 adds are encoded straight into it (``send_add``) and
 *                  remembered by txn id with the callback their answer goes to. Received bytes go to its
 *                  FrameReader (``feed``): an answer to such an add is matched and handed to its callback as a
 *                  status code, without a Python object for the request or the answer; every other frame is
 *                  returned to the connection, which decodes it as before.
 *   PendingAdd     an append in flight: its entry, future, and which bookies have it.
 *   Appender       one per writable ledger (bookie/client/ledger.py): ``append`` packages the entry (digest
 *                  included), queues it and sends it to its write set through their ClientStreams; ``answered``
 *                  counts a bookie's EOK and completes the appends that reached the ack quorum, in entry order.
 *                  It owns the appends' state (the pending queue, last_add_pushed, length); what it reads of
 *                  the LedgerHandle by name is the AppenderHandle protocol of _native.pyi. Anything but a plain
 *                  append (an error, a closed or closing ledger, an ensemble change, a recovery, a position
 *                  down) and any answer but EOK go to the handle's Python methods.
 *
 * Why C: an append cost the client about twenty microseconds of interpreter time per copy on two bookies, for
 * objects it never needed (request and answer messages, their wire descriptions, pending records and callback
 * wrappers) and bookkeeping, in a client that runs on one core. Timeouts, failures, ensemble changes and every
 * other request stay in Python; the adds a stream holds are handed back to it by ``expire`` and ``fail_all``.
 *
 * ClientStream is in _client_stream.c; _native_internal.h is what the two files share.
 */
#include "_native_internal.h"

#include <structmember.h>

#include <string.h>

#include "../_crc32c.h"
#include "../_native_common.h"

/* ============================================================================================== PendingAdd */

typedef struct {
    PyObject_HEAD
    long long entry_id;
    PyObject *body;    /* the entry as sent: header, digest, payload */
    long long length;  /* the ledger's length with this entry */
    PyObject *future;  /* told the entry id once acknowledged */
    PyObject *acked;   /* set: ensemble positions that answered EOK */
    PyObject *sent_to; /* dict: ensemble position -> the bookie it was sent to */
    char sent, completed;
    int retries;
} PendingAdd;

static PyTypeObject PendingAddType;

static int PendingAdd_init(PendingAdd *self, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"entry_id", "body", "length", "future", NULL};
    long long entry_id, length;
    PyObject *body, *future;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "LO!LO:PendingAdd", keywords, &entry_id, &PyBytes_Type, &body,
                                     &length, &future))
        return -1;
    PyObject *acked = PySet_New(NULL), *sent_to = PyDict_New();
    if (acked == NULL || sent_to == NULL) {
        Py_XDECREF(acked);
        Py_XDECREF(sent_to);
        return -1;
    }
    self->entry_id = entry_id;
    self->length = length;
    Py_XSETREF(self->body, Py_NewRef(body));
    Py_XSETREF(self->future, Py_NewRef(future));
    Py_XSETREF(self->acked, acked);
    Py_XSETREF(self->sent_to, sent_to);
    self->sent = self->completed = 0;
    self->retries = 0;
    return 0;
}

static int PendingAdd_traverse(PendingAdd *self, visitproc visit, void *arg) {
    Py_VISIT(self->body);
    Py_VISIT(self->future);
    Py_VISIT(self->acked);
    Py_VISIT(self->sent_to);
    return 0;
}

static int PendingAdd_clear(PendingAdd *self) {
    Py_CLEAR(self->body);
    Py_CLEAR(self->future);
    Py_CLEAR(self->acked);
    Py_CLEAR(self->sent_to);
    return 0;
}

static void PendingAdd_dealloc(PendingAdd *self) {
    PyObject_GC_UnTrack(self);
    PendingAdd_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef PendingAdd_members[] = {
    {"entry_id", T_LONGLONG, offsetof(PendingAdd, entry_id), READONLY, "The entry's id."},
    {"body", T_OBJECT, offsetof(PendingAdd, body), READONLY, "The entry as sent: header, digest, payload."},
    {"length", T_LONGLONG, offsetof(PendingAdd, length), READONLY, "The ledger's length with this entry."},
    {"future", T_OBJECT, offsetof(PendingAdd, future), READONLY, "Told the entry id once acknowledged."},
    {"acked", T_OBJECT, offsetof(PendingAdd, acked), READONLY, "Ensemble positions that answered EOK."},
    {"sent_to", T_OBJECT, offsetof(PendingAdd, sent_to), READONLY, "Ensemble position -> bookie sent to."},
    {"sent", T_BOOL, offsetof(PendingAdd, sent), 0, "Sent at least once."},
    {"completed", T_BOOL, offsetof(PendingAdd, completed), 0, "The ack quorum answered EOK."},
    {"retries", T_INT, offsetof(PendingAdd, retries), 0, "Resends after ETOOMANYREQUESTS."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject PendingAddType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bookie.client._native.PendingAdd",
    .tp_basicsize = sizeof(PendingAdd),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "PendingAdd(entry_id, body, length, future): an append in flight.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)PendingAdd_init,
    .tp_dealloc = (destructor)PendingAdd_dealloc,
    .tp_traverse = (traverseproc)PendingAdd_traverse,
    .tp_clear = (inquiry)PendingAdd_clear,
    .tp_members = PendingAdd_members,
};

/* ============================================================================================== Appender */

enum { DIGEST_OTHER = 0, DIGEST_CRC32 = 1, DIGEST_CRC32C = 2, DIGEST_DUMMY = 3 }; /* protocol.entry.DigestType */
enum { ENTRY_HEADER = 32 };

typedef struct {
    PyObject_HEAD
    PyObject *handle;      /* the LedgerHandle whose appends these are */
    PyObject *loop;
    long long ledger_id;
    PyObject *master_key;  /* bytes */
    PyObject *write_sets;  /* tuple of tuples of ensemble positions, by entry id modulo the ensemble size */
    PyObject *answered;    /* this object's ``answered``, the callback of every copy sent */
    PyObject *package;     /* (entry_id, lac, length, payload) -> body: the digests C does not compute */
    int digest;
    Py_ssize_t ack_quorum, max_outstanding;
    double timeout;
    /* The appends' own state, read and written here only (the handle's properties of the same names are views):
     * the appends sent and not yet acknowledged, in entry order, the last entry id given out, and the ledger's
     * length up to it. */
    PyObject *pending;     /* collections.deque of PendingAdd */
    long long last_add_pushed, length;
} Appender;

static PyTypeObject AppenderType;

/* The handle's attributes and methods the appender uses (the AppenderHandle protocol of _native.pyi, which mypy
 * checks LedgerHandle against), then the names of other objects' methods. */
static PyObject *str_error, *str_writable, *str_closed, *str_closing, *str_changing, *str_recovering, *str_down,
    *str_last_add_confirmed, *str_length_at_lac, *str_ensemble, *str_position_conns, *str_connection,
    *str_append_general, *str_add_failed, *str_space, *str_space_waiters;
static PyObject *str_stream, *str_create_future, *str_time, *str_done, *str_set_result, *str_set, *str_append,
    *str_popleft;
static PyObject **const handle_names[] = {
    &str_error, &str_writable, &str_closed, &str_closing, &str_changing, &str_recovering, &str_down,
    &str_last_add_confirmed, &str_length_at_lac, &str_ensemble, &str_position_conns, &str_connection,
    &str_append_general, &str_add_failed, &str_space, &str_space_waiters,
};
static PyObject *zlib_crc32, *deque_type;

static void put_int64_be(uint8_t *out, uint64_t v) {
    for (int i = 7; i >= 0; i--, v >>= 8)
        out[i] = (uint8_t)v;
}

/* The handle's attribute as a truth value: 1, 0, or -1 with an error. */
static int handle_flag(Appender *a, PyObject *name) {
    PyObject *value = PyObject_GetAttr(a->handle, name);
    if (value == NULL)
        return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

/* A plain append: no error, open for adds, no ensemble change, not recovering, no position down. */
static int plain_append(Appender *a) {
    PyObject *error = PyObject_GetAttr(a->handle, str_error);
    if (error == NULL)
        return -1;
    int plain = error == Py_None;
    Py_DECREF(error);
    if (!plain)
        return 0;
    int f;
    if ((f = handle_flag(a, str_writable)) != 1)
        return f;
    PyObject *off[] = {str_closed, str_closing, str_changing, str_recovering, str_down};
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
        if ((f = handle_flag(a, off[i])) != 0)
            return f < 0 ? -1 : 0;
    }
    return 1;
}

static int handle_int(Appender *a, PyObject *name, long long *out) {
    PyObject *value = PyObject_GetAttr(a->handle, name);
    if (value == NULL)
        return -1;
    *out = PyLong_AsLongLong(value);
    Py_DECREF(value);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static int set_handle_int(Appender *a, PyObject *name, long long value) {
    PyObject *v = PyLong_FromLongLong(value);
    int rc = v == NULL ? -1 : PyObject_SetAttr(a->handle, name, v);
    Py_XDECREF(v);
    return rc;
}

/* The entry a client sends: header (ledger, entry, LAC, length), digest of header and payload, payload. */
static PyObject *package_entry(Appender *a, long long entry_id, long long lac, long long length,
                               const Py_buffer *payload) {
    uint8_t header[ENTRY_HEADER];
    put_int64_be(header, (uint64_t)a->ledger_id);
    put_int64_be(header + 8, (uint64_t)entry_id);
    put_int64_be(header + 16, (uint64_t)lac);
    put_int64_be(header + 24, (uint64_t)length);
    uint8_t digest[8];
    Py_ssize_t digest_len = 0;
    if (a->digest == DIGEST_CRC32C) {
        uint32_t crc = crc32c_update(crc32c_update(0, header, ENTRY_HEADER), payload->buf, (size_t)payload->len);
        digest[0] = (uint8_t)(crc >> 24);
        digest[1] = (uint8_t)(crc >> 16);
        digest[2] = (uint8_t)(crc >> 8);
        digest[3] = (uint8_t)crc;
        digest_len = 4;
    } else if (a->digest == DIGEST_CRC32) { /* java.util.zip.CRC32 through zlib's, as an int64 */
        PyObject *head = PyBytes_FromStringAndSize((const char *)header, ENTRY_HEADER);
        PyObject *mem = PyMemoryView_FromMemory(payload->buf, payload->len, PyBUF_READ);
        PyObject *first = head == NULL ? NULL : PyObject_CallOneArg(zlib_crc32, head);
        PyObject *crc = first == NULL || mem == NULL ? NULL : PyObject_CallFunctionObjArgs(zlib_crc32, mem, first, NULL);
        unsigned long value = crc == NULL ? 0 : PyLong_AsUnsignedLong(crc);
        Py_XDECREF(head);
        Py_XDECREF(mem);
        Py_XDECREF(first);
        Py_XDECREF(crc);
        if (PyErr_Occurred())
            return NULL;
        put_int64_be(digest, value);
        digest_len = 8;
    }
    PyObject *body = PyBytes_FromStringAndSize(NULL, ENTRY_HEADER + digest_len + payload->len);
    if (body == NULL)
        return NULL;
    uint8_t *out = (uint8_t *)PyBytes_AS_STRING(body);
    memcpy(out, header, ENTRY_HEADER);
    memcpy(out + ENTRY_HEADER, digest, (size_t)digest_len);
    memcpy(out + ENTRY_HEADER + digest_len, payload->buf, (size_t)payload->len);
    return body;
}

/* The stream of the connection at ensemble position ``index``, or NULL (not an error) when the copy must be sent
 * by the handle's Python (no connection yet, closed, or a v2 one). */
static PyObject *position_stream(Appender *a, Py_ssize_t index) {
    PyObject *conns = PyObject_GetAttr(a->handle, str_position_conns);
    PyObject *conn = conns != NULL && PyList_Check(conns) && index >= 0 && index < PyList_GET_SIZE(conns)
                         ? PyList_GET_ITEM(conns, index) : NULL;
    PyObject *stream = conn == NULL || conn == Py_None ? NULL : PyObject_GetAttr(conn, str_stream);
    Py_XDECREF(conns);
    if (stream != NULL && (!Py_IS_TYPE(stream, &ClientStreamType) || ((ClientStream *)stream)->closed
                           || !((ClientStream *)stream)->takes_adds))
        Py_CLEAR(stream);
    PyErr_Clear(); /* whatever is missing, the handle's Python sends that copy (and raises what it must) */
    return stream;
}

/* Sends ``op`` to ensemble position ``index``; 0, or -1 with an error. */
static int send_copy(Appender *a, PendingAdd *op, PyObject *index, PyObject *bookie, double deadline) {
    PyObject *callback = PyTuple_Pack(4, a->answered, (PyObject *)op, index, bookie);
    if (callback == NULL || PyDict_SetItem(op->sent_to, index, bookie) < 0) {
        Py_XDECREF(callback);
        return -1;
    }
    int rc;
    ClientStream *stream = (ClientStream *)position_stream(a, PyLong_AsSsize_t(index));
    if (stream != NULL) {
        rc = stream_send_add(stream, a->ledger_id, op->entry_id, (const uint8_t *)PyBytes_AS_STRING(a->master_key),
                             PyBytes_GET_SIZE(a->master_key), (const uint8_t *)PyBytes_AS_STRING(op->body),
                             PyBytes_GET_SIZE(op->body), callback, deadline);
        Py_DECREF(stream);
    } else { /* the handle looks the connection up (and opens it) and sends through it */
        PyObject *conn = PyObject_CallMethodOneArg(a->handle, str_connection, index);
        PyObject *timeout = PyFloat_FromDouble(a->timeout), *ledger = PyLong_FromLongLong(a->ledger_id);
        PyObject *entry = PyLong_FromLongLong(op->entry_id);
        PyObject *done = conn == NULL || timeout == NULL || ledger == NULL || entry == NULL ? NULL
            : PyObject_CallMethod(conn, "send_add", "OOOOOO", ledger, entry, a->master_key, op->body, callback,
                                  timeout);
        rc = done == NULL ? -1 : 0;
        Py_XDECREF(done);
        Py_XDECREF(conn);
        Py_XDECREF(timeout);
        Py_XDECREF(ledger);
        Py_XDECREF(entry);
    }
    Py_DECREF(callback);
    return rc;
}

/* 0, or -1 with RuntimeError for an appender whose __init__ never ran (its state would be NULL). */
static int appender_ready(Appender *a) {
    if (a->pending != NULL)
        return 0;
    PyErr_SetString(PyExc_RuntimeError, "Appender is not initialized");
    return -1;
}

/* append(data) -> future: a plain append packaged, queued and sent here; any other goes to the handle's
 * ``_append_general``. */
static PyObject *Appender_append(Appender *a, PyObject *data) {
    int plain = appender_ready(a) < 0 ? -1 : plain_append(a);
    if (plain < 0)
        return NULL;
    if (!plain)
        return PyObject_CallMethodOneArg(a->handle, str_append_general, data);
    Py_buffer payload;
    if (PyObject_GetBuffer(data, &payload, PyBUF_SIMPLE) < 0)
        return NULL;
    long long lac;
    PyObject *future = NULL, *body = NULL, *ensemble = NULL;
    PendingAdd *op = NULL;
    if (handle_int(a, str_last_add_confirmed, &lac) < 0)
        goto failed;
    long long entry_id = a->last_add_pushed + 1, length = a->length + payload.len;
    if (a->digest == DIGEST_OTHER) {
        PyObject *view = PyMemoryView_FromBuffer(&payload);
        body = view == NULL ? NULL : PyObject_CallFunction(a->package, "LLLO", entry_id, lac, length, view);
        Py_XDECREF(view);
    } else {
        body = package_entry(a, entry_id, lac, length, &payload);
    }
    future = body == NULL ? NULL : PyObject_CallMethodNoArgs(a->loop, str_create_future);
    if (future == NULL)
        goto failed;
    a->length = length;
    a->last_add_pushed = entry_id;
    op = (PendingAdd *)PyObject_CallFunction((PyObject *)&PendingAddType, "LOLO", entry_id, body, length, future);
    PyObject *queued = op == NULL ? NULL : PyObject_CallMethodOneArg(a->pending, str_append, (PyObject *)op);
    if (queued == NULL)
        goto failed;
    Py_DECREF(queued);
    ensemble = PyObject_GetAttr(a->handle, str_ensemble);
    PyObject *now = ensemble == NULL ? NULL : PyObject_CallMethodNoArgs(a->loop, str_time);
    double deadline = now == NULL ? 0 : PyFloat_AsDouble(now) + a->timeout;
    Py_XDECREF(now);
    if (PyErr_Occurred())
        goto failed;
    Py_ssize_t sets = PyTuple_GET_SIZE(a->write_sets);
    PyObject *positions = PyTuple_GET_ITEM(a->write_sets, (Py_ssize_t)(entry_id % sets));
    op->sent = 1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(positions); i++) {
        PyObject *index = PyTuple_GET_ITEM(positions, i);
        PyObject *bookie = PySequence_GetItem(ensemble, PyLong_AsSsize_t(index));
        int rc = bookie == NULL ? -1 : send_copy(a, op, index, bookie, deadline);
        Py_XDECREF(bookie);
        if (rc < 0)
            goto failed;
    }
    PyBuffer_Release(&payload);
    Py_DECREF(body);
    Py_DECREF(op);
    Py_DECREF(ensemble);
    return future;
failed:
    PyBuffer_Release(&payload);
    Py_XDECREF(body);
    Py_XDECREF(op);
    Py_XDECREF(ensemble);
    Py_XDECREF(future);
    return NULL;
}

/* complete_adds(): the appends at the head of the queue that reached their ack quorum are acknowledged, in entry
 * order (not while the ensemble changes: an answer may count a failed bookie). */
static PyObject *Appender_complete_adds(Appender *a, PyObject *unused) {
    int changing = appender_ready(a) < 0 ? -1 : handle_flag(a, str_changing);
    if (changing != 0)
        return changing < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *pending = Py_NewRef(a->pending); /* a callback below may drop the appender */
    long long lac = -2, length = 0;
    int failed = 0;
    while (!failed && PyObject_Length(pending) > 0) {
        PyObject *head = PySequence_GetItem(pending, 0);
        if (head == NULL || !Py_IS_TYPE(head, &PendingAddType) || !((PendingAdd *)head)->completed) {
            failed = head == NULL;
            Py_XDECREF(head);
            break;
        }
        PendingAdd *op = (PendingAdd *)head;
        PyObject *popped = PyObject_CallMethodNoArgs(pending, str_popleft);
        Py_XDECREF(popped);
        lac = op->entry_id;
        length = op->length;
        PyObject *done = popped == NULL ? NULL : PyObject_CallMethodNoArgs(op->future, str_done);
        int is_done = done == NULL ? -1 : PyObject_IsTrue(done);
        Py_XDECREF(done);
        if (is_done == 0) {
            PyObject *id = PyLong_FromLongLong(op->entry_id);
            PyObject *set = id == NULL ? NULL : PyObject_CallMethodOneArg(op->future, str_set_result, id);
            Py_XDECREF(id);
            failed = set == NULL;
            Py_XDECREF(set);
        } else {
            failed = is_done < 0;
        }
        Py_DECREF(head);
    }
    if (!failed && lac != -2)
        failed = set_handle_int(a, str_last_add_confirmed, lac) < 0 || set_handle_int(a, str_length_at_lac, length) < 0;
    long long waiters = 0;
    if (!failed && PyObject_Length(pending) < a->max_outstanding
        && !(failed = handle_int(a, str_space_waiters, &waiters) < 0) && waiters > 0) {
        PyObject *space = PyObject_GetAttr(a->handle, str_space);
        PyObject *set = space == NULL ? NULL : PyObject_CallMethodNoArgs(space, str_set);
        failed = set == NULL;
        Py_XDECREF(space);
        Py_XDECREF(set);
    }
    Py_DECREF(pending);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
}

/* answered(op, index, bookie, outcome): one bookie's answer to a copy of ``op``: its status code, or the error
 * that failed it. EOK is counted here; anything else goes to the handle's ``_add_failed``. */
static PyObject *Appender_answered(Appender *a, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !Py_IS_TYPE(args[0], &PendingAddType)) {
        PyErr_SetString(PyExc_TypeError, "answered takes a PendingAdd, a position, a bookie and an outcome");
        return NULL;
    }
    PendingAdd *op = (PendingAdd *)args[0];
    PyObject *index = args[1], *bookie = args[2], *outcome = args[3];
    if (!PyLong_CheckExact(outcome) || PyLong_AsLong(outcome) != 0) {
        PyErr_Clear();
        PyObject *call[] = {a->handle, args[0], index, bookie, outcome};
        return PyObject_VectorcallMethod(str_add_failed, call, 5, NULL);
    }
    if (op->completed)
        Py_RETURN_NONE; /* its quorum answered already */
    PyObject *sent = PyDict_GetItemWithError(op->sent_to, index);
    if (sent == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE; /* a position taken back by an ensemble change */
    }
    int same = sent == bookie ? 1 : PyObject_RichCompareBool(sent, bookie, Py_EQ);
    if (same <= 0)
        return same < 0 ? NULL : Py_NewRef(Py_None); /* the position was given to another bookie since */
    if (PySet_Add(op->acked, index) < 0)
        return NULL;
    if (PySet_GET_SIZE(op->acked) < a->ack_quorum)
        Py_RETURN_NONE;
    op->completed = 1;
    return Appender_complete_adds(a, NULL);
}

/* The handle has every attribute the appender reads or calls by name: a handle class that renamed one fails here,
 * when its first ledger is made, naming the attribute (mypy finds it earlier, through AppenderHandle). */
static int check_handle(PyObject *handle) {
    for (size_t i = 0; i < COUNT_OF(handle_names); i++) {
        PyObject *value = PyObject_GetAttr(handle, *handle_names[i]);
        if (value == NULL) {
            if (PyErr_ExceptionMatches(PyExc_AttributeError))
                PyErr_Format(PyExc_TypeError, "Appender: the handle (%s) has no attribute %R, which the C appender "
                             "uses (see AppenderHandle in bookie/client/_native.pyi)", Py_TYPE(handle)->tp_name,
                             *handle_names[i]);
            return -1;
        }
        Py_DECREF(value);
    }
    return 0;
}

static int Appender_init(Appender *a, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"handle", "loop", "ledger_id", "master_key", "write_sets", "ack_quorum",
                               "max_outstanding", "timeout", "digest", "package", "last_add_pushed", "length", NULL};
    PyObject *handle, *loop, *master_key, *write_sets, *package;
    long long ledger_id, last_add_pushed, length;
    Py_ssize_t ack_quorum, max_outstanding;
    double timeout;
    int digest;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOLO!O!nndiOLL:Appender", keywords, &handle, &loop, &ledger_id,
                                     &PyBytes_Type, &master_key, &PyTuple_Type, &write_sets, &ack_quorum,
                                     &max_outstanding, &timeout, &digest, &package, &last_add_pushed, &length))
        return -1;
    if (PyTuple_GET_SIZE(write_sets) == 0) {
        PyErr_SetString(PyExc_ValueError, "Appender: no write sets");
        return -1;
    }
    if (a->pending != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Appender is already initialized: its pending adds are its own");
        return -1;
    }
    if (check_handle(handle) < 0)
        return -1;
    PyObject *answered = PyObject_GetAttrString((PyObject *)a, "answered");
    PyObject *pending = answered == NULL ? NULL : PyObject_CallNoArgs(deque_type);
    if (pending == NULL) {
        Py_XDECREF(answered);
        return -1;
    }
    a->pending = pending;
    a->last_add_pushed = last_add_pushed;
    a->length = length;
    Py_XSETREF(a->handle, Py_NewRef(handle));
    Py_XSETREF(a->loop, Py_NewRef(loop));
    Py_XSETREF(a->master_key, Py_NewRef(master_key));
    Py_XSETREF(a->write_sets, Py_NewRef(write_sets));
    Py_XSETREF(a->package, Py_NewRef(package));
    Py_XSETREF(a->answered, answered);
    a->ledger_id = ledger_id;
    a->ack_quorum = ack_quorum;
    a->max_outstanding = max_outstanding;
    a->timeout = timeout;
    a->digest = digest;
    return 0;
}

static int Appender_traverse(Appender *a, visitproc visit, void *arg) {
    Py_VISIT(a->handle);
    Py_VISIT(a->loop);
    Py_VISIT(a->master_key);
    Py_VISIT(a->write_sets);
    Py_VISIT(a->answered);
    Py_VISIT(a->package);
    Py_VISIT(a->pending);
    return 0;
}

static int Appender_clear(Appender *a) {
    Py_CLEAR(a->handle);
    Py_CLEAR(a->loop);
    Py_CLEAR(a->master_key);
    Py_CLEAR(a->write_sets);
    Py_CLEAR(a->answered);
    Py_CLEAR(a->package);
    Py_CLEAR(a->pending);
    return 0;
}

static void Appender_dealloc(Appender *a) {
    PyObject_GC_UnTrack(a);
    Appender_clear(a);
    Py_TYPE(a)->tp_free((PyObject *)a);
}

static PyMethodDef Appender_methods[] = {
    {"append", (PyCFunction)Appender_append, METH_O,
     "append(data) -> future\n\nA plain append here; any other through the handle's _append_general."},
    {"answered", (PyCFunction)(void (*)(void))Appender_answered, METH_FASTCALL,
     "answered(op, index, bookie, outcome)\n\nA bookie's answer to a copy: EOK counted, the rest to _add_failed."},
    {"complete_adds", (PyCFunction)Appender_complete_adds, METH_NOARGS,
     "complete_adds()\n\nAcknowledge, in entry order, the appends at the head that reached their ack quorum."},
    {NULL, NULL, 0, NULL},
};

static PyObject *Appender_get_pending(Appender *a, void *closure) {
    return appender_ready(a) < 0 ? NULL : Py_NewRef(a->pending);
}

static PyObject *Appender_get_int(Appender *a, void *which) {
    return PyLong_FromLongLong(which == NULL ? a->last_add_pushed : a->length);
}

static int Appender_set_int(Appender *a, PyObject *value, void *which) {
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "an appender's last_add_pushed and length cannot be deleted");
        return -1;
    }
    long long v = PyLong_AsLongLong(value);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *(which == NULL ? &a->last_add_pushed : &a->length) = v;
    return 0;
}

static PyGetSetDef Appender_getset[] = {
    {"pending", (getter)Appender_get_pending, NULL,
     "The appends sent and not yet acknowledged, in entry order (a collections.deque of PendingAdd).", NULL},
    {"last_add_pushed", (getter)Appender_get_int, (setter)Appender_set_int, "The last entry id given out.", NULL},
    {"length", (getter)Appender_get_int, (setter)Appender_set_int, "The ledger's length up to last_add_pushed.",
     (void *)1},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject AppenderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bookie.client._native.Appender",
    .tp_basicsize = sizeof(Appender),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Appender(handle, loop, ledger_id, master_key, write_sets, ack_quorum, max_outstanding, timeout, "
              "digest, package, last_add_pushed, length): a ledger's appends, and their state.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Appender_init,
    .tp_dealloc = (destructor)Appender_dealloc,
    .tp_traverse = (traverseproc)Appender_traverse,
    .tp_clear = (inquiry)Appender_clear,
    .tp_methods = Appender_methods,
    .tp_getset = Appender_getset,
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "bookie.client._native",
    .m_doc = "The ledger client's hot path in C: a ledger's appends, a connection's adds and their answers.",
    .m_size = 0,
};

PyMODINIT_FUNC PyInit__native(void) {
    crc32c_init();
    if (client_stream_import_protocol() < 0)
        return NULL;
    const InternedName names[] = {
        {&str_error, "_error"}, {&str_writable, "writable"}, {&str_closed, "_closed"}, {&str_closing, "_closing"},
        {&str_changing, "_changing"}, {&str_recovering, "recovering"}, {&str_down, "_down"},
        {&str_last_add_confirmed, "last_add_confirmed"}, {&str_length_at_lac, "_length_at_lac"},
        {&str_ensemble, "ensemble"}, {&str_position_conns, "_position_conns"}, {&str_connection, "_connection"},
        {&str_append_general, "_append_general"}, {&str_add_failed, "_add_failed"}, {&str_space, "_space"},
        {&str_space_waiters, "_space_waiters"},
        {&str_stream, "stream"}, {&str_create_future, "create_future"}, {&str_time, "time"}, {&str_done, "done"},
        {&str_set_result, "set_result"}, {&str_set, "set"}, {&str_append, "append"}, {&str_popleft, "popleft"},
    };
    if (intern_names(names, COUNT_OF(names)) < 0)
        return NULL;
    if (deque_type == NULL) {
        PyObject *collections = PyImport_ImportModule("collections");
        deque_type = collections == NULL ? NULL : PyObject_GetAttrString(collections, "deque");
        Py_XDECREF(collections);
        if (deque_type == NULL)
            return NULL;
    }
    if (zlib_crc32 == NULL) {
        PyObject *zlib = PyImport_ImportModule("zlib");
        zlib_crc32 = zlib == NULL ? NULL : PyObject_GetAttrString(zlib, "crc32");
        Py_XDECREF(zlib);
        if (zlib_crc32 == NULL)
            return NULL;
    }
    const ModuleType types[] = {
        {&ClientStreamType, "ClientStream"}, {&PendingAddType, "PendingAdd"}, {&AppenderType, "Appender"},
    };
    return module_with_types(&module_def, types, COUNT_OF(types));
}
