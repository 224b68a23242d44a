/* The ledger client's hot path in C: one connection's frames, its adds written and their answers matched.
 *
 *   ClientStream   one per connection to a bookie (bookie/client/connection.py). Outgoing requests gather in its
 *                  buffer until the connection writes them; a ledger's v3 adds are encoded straight into it
 *                  (``send_add``) and remembered by txn id with the callback their answer goes to. Received bytes
 *                  go to its FrameReader (``feed``): an answer to such an add is matched and handed to its
 *                  callback as a status code, without a Python object for the request or the answer; every other
 *                  frame is returned to the connection, which decodes it as before.
 *
 * Why C: each copy of an append cost the client about eight microseconds of interpreter time for objects it
 * never needed (request and answer messages, their wire descriptions, a pending record and a callback
 * wrapper), in a client that runs on one core. Timeouts, failures and every other request stay in Python; the
 * adds this stream holds are handed back to it by ``expire`` and ``fail_all``.
 */
#include "../protocol/_native_api.h"

#include <math.h>
#include <string.h>

static const BookieProtocolApi *protocol;

typedef struct {
    uint64_t txn;       /* 0: a free slot */
    PyObject *callback; /* (function, argument, ...): called with the arguments and the outcome */
    double deadline;    /* loop time at which the add fails with a timeout */
} HotAdd;

typedef struct {
    PyObject_HEAD
    PyObject *frames; /* FrameReader */
    uint64_t next_txn;
    HotAdd *adds;
    size_t mask; /* slots - 1 */
    Py_ssize_t count;
    uint8_t *out;
    size_t out_len, out_cap;
    char feeding; /* inside feed: a callback may not feed again */
    char closed;  /* fail_all was called: answers still in a feed are dropped */
} ClientStream;

enum { FIRST_SLOTS = 256, MAX_CALLBACK_ARGS = 8 };

static size_t txn_slot(const ClientStream *s, uint64_t txn) {
    uint64_t h = txn * 0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ (h >> 31)) & s->mask;
}

static HotAdd *find_add(ClientStream *s, uint64_t txn) {
    for (size_t i = txn_slot(s, txn);; i = (i + 1) & s->mask) {
        if (s->adds[i].txn == txn)
            return &s->adds[i];
        if (s->adds[i].txn == 0)
            return NULL;
    }
}

/* Removes the add in slot ``i`` (linear probing with backward-shift deletion: no tombstones); its callback
 * reference is the caller's now. */
static void remove_add(ClientStream *s, size_t i) {
    s->adds[i].txn = 0;
    s->adds[i].callback = NULL;
    s->count--;
    for (size_t j = (i + 1) & s->mask; s->adds[j].txn != 0; j = (j + 1) & s->mask) {
        size_t home = txn_slot(s, s->adds[j].txn);
        /* j's entry may move to the hole at i when i lies on its probe path from home to j */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            s->adds[i] = s->adds[j];
            s->adds[j].txn = 0;
            s->adds[j].callback = NULL;
            i = j;
        }
    }
}

static int insert_add(ClientStream *s, HotAdd add) {
    if ((size_t)(s->count + 1) > (s->mask + 1) / 2) {
        size_t slots = (s->mask + 1) * 2;
        HotAdd *old = s->adds;
        size_t old_slots = s->mask + 1;
        HotAdd *grown = PyMem_Calloc(slots, sizeof(HotAdd));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        s->adds = grown;
        s->mask = slots - 1;
        for (size_t i = 0; i < old_slots; i++) {
            if (old[i].txn == 0)
                continue;
            size_t j = txn_slot(s, old[i].txn);
            while (s->adds[j].txn != 0)
                j = (j + 1) & s->mask;
            s->adds[j] = old[i];
        }
        PyMem_Free(old);
    }
    size_t j = txn_slot(s, add.txn);
    while (s->adds[j].txn != 0)
        j = (j + 1) & s->mask;
    s->adds[j] = add;
    s->count++;
    return 0;
}

static int out_reserve(ClientStream *s, size_t more) {
    if (s->out_len + more <= s->out_cap)
        return 0;
    size_t cap = s->out_cap ? s->out_cap * 2 : 64 * 1024;
    while (cap < s->out_len + more)
        cap *= 2;
    uint8_t *grown = PyMem_Realloc(s->out, cap);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    s->out = grown;
    s->out_cap = cap;
    return 0;
}

/* callback[0](*callback[1:], outcome); a failure is reported, not raised: the other answers go on. */
static void call_back(PyObject *callback, PyObject *outcome) {
    PyObject *args[MAX_CALLBACK_ARGS + 1];
    Py_ssize_t n = PyTuple_GET_SIZE(callback) - 1;
    for (Py_ssize_t i = 0; i < n; i++)
        args[i] = PyTuple_GET_ITEM(callback, i + 1);
    args[n] = outcome;
    PyObject *result = PyObject_Vectorcall(PyTuple_GET_ITEM(callback, 0), args, (size_t)n + 1, NULL);
    if (result == NULL)
        PyErr_WriteUnraisable(PyTuple_GET_ITEM(callback, 0));
    Py_XDECREF(result);
}

static int ClientStream_init(ClientStream *s, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"max_frame_size", NULL};
    Py_ssize_t max_frame_size;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n:ClientStream", keywords, &max_frame_size))
        return -1;
    if (s->adds != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ClientStream is already initialized");
        return -1;
    }
    PyObject *frames = PyObject_CallFunction((PyObject *)protocol->frame_reader_type, "n", max_frame_size);
    s->adds = PyMem_Calloc(FIRST_SLOTS, sizeof(HotAdd));
    if (frames == NULL || s->adds == NULL) {
        Py_XDECREF(frames);
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return -1;
    }
    s->frames = frames;
    s->mask = FIRST_SLOTS - 1;
    s->next_txn = 1;
    return 0;
}

static int ClientStream_traverse(ClientStream *s, visitproc visit, void *arg) {
    Py_VISIT(s->frames);
    for (size_t i = 0; s->adds != NULL && i <= s->mask; i++)
        Py_VISIT(s->adds[i].callback);
    return 0;
}

static int ClientStream_clear(ClientStream *s) {
    Py_CLEAR(s->frames);
    for (size_t i = 0; s->adds != NULL && i <= s->mask; i++)
        Py_CLEAR(s->adds[i].callback);
    return 0;
}

static void ClientStream_dealloc(ClientStream *s) {
    PyObject_GC_UnTrack(s);
    ClientStream_clear(s);
    PyMem_Free(s->adds);
    PyMem_Free(s->out);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

/* txn() -> int: the next transaction id (for the requests the connection encodes itself). */
static PyObject *ClientStream_txn(ClientStream *s, PyObject *unused) { return PyLong_FromUnsignedLongLong(s->next_txn++); }

/* send_add(ledger_id, entry_id, master_key, body, callback, deadline) -> int: a v3 add written to the output,
 * its answer to go to callback[0](*callback[1:], status). Returns the bytes waiting to be written. */
static PyObject *ClientStream_send_add(ClientStream *s, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "send_add takes ledger_id, entry_id, master_key, body, callback, deadline "
                     "(%zd given)", nargs);
        return NULL;
    }
    long long ledger_id = PyLong_AsLongLong(args[0]);
    long long entry_id = PyLong_AsLongLong(args[1]);
    double deadline = PyFloat_AsDouble(args[5]);
    if (PyErr_Occurred())
        return NULL;
    PyObject *callback = args[4];
    if (!PyTuple_CheckExact(callback) || PyTuple_GET_SIZE(callback) < 1
        || PyTuple_GET_SIZE(callback) > MAX_CALLBACK_ARGS + 1) {
        PyErr_SetString(PyExc_TypeError, "send_add: callback must be a tuple (function, argument, ...)");
        return NULL;
    }
    Py_buffer key, body;
    if (PyObject_GetBuffer(args[2], &key, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[3], &body, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&key);
        return NULL;
    }
    uint64_t txn = s->next_txn++;
    Py_ssize_t size = protocol->encode_add_request(NULL, txn, ledger_id, entry_id, key.buf, key.len, body.buf, body.len);
    int failed = size < 0;
    if (failed)
        PyErr_SetString(PyExc_OverflowError, "add request larger than a frame");
    else if (!(failed = out_reserve(s, (size_t)size) < 0))
        failed = insert_add(s, (HotAdd){txn, Py_NewRef(callback), deadline}) < 0;
    if (!failed) {
        protocol->encode_add_request(s->out + s->out_len, txn, ledger_id, entry_id, key.buf, key.len, body.buf,
                                     body.len);
        s->out_len += (size_t)size;
    }
    PyBuffer_Release(&key);
    PyBuffer_Release(&body);
    if (failed)
        return NULL;
    return PyLong_FromSize_t(s->out_len);
}

/* write(frame): a request the connection encoded, after those already waiting. */
static PyObject *ClientStream_write(ClientStream *s, PyObject *frame) {
    Py_buffer view;
    if (PyObject_GetBuffer(frame, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    int failed = out_reserve(s, (size_t)view.len) < 0;
    if (!failed) {
        memcpy(s->out + s->out_len, view.buf, (size_t)view.len);
        s->out_len += (size_t)view.len;
    }
    PyBuffer_Release(&view);
    if (failed)
        return NULL;
    return PyLong_FromSize_t(s->out_len);
}

/* take_output() -> bytes | None: what waits to be written, handed over. */
static PyObject *ClientStream_take_output(ClientStream *s, PyObject *unused) {
    if (s->out_len == 0)
        Py_RETURN_NONE;
    PyObject *data = PyBytes_FromStringAndSize((const char *)s->out, (Py_ssize_t)s->out_len);
    if (data != NULL)
        s->out_len = 0;
    return data;
}

/* feed(data) -> list[bytes]: the frames ``data`` completes that are not answers to the adds this stream holds
 * (those go to their callbacks, with their status, as they are read). */
static PyObject *ClientStream_feed(ClientStream *s, PyObject *data) {
    if (s->feeding) {
        PyErr_SetString(PyExc_RuntimeError, "ClientStream.feed called from an answer's callback");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    int failed = protocol->frames_append(s->frames, view.buf, view.len) < 0;
    PyBuffer_Release(&view);
    if (failed)
        return NULL;
    PyObject *others = PyList_New(0);
    if (others == NULL)
        return NULL;
    s->feeding = 1;
    const uint8_t *frame;
    Py_ssize_t len;
    while (protocol->frames_peek(s->frames, &frame, &len)) {
        uint64_t txn;
        int32_t status;
        HotAdd *add = protocol->decode_add_answer(frame, len, &txn, &status) ? find_add(s, txn) : NULL;
        if (add == NULL) {
            PyObject *payload = PyBytes_FromStringAndSize((const char *)frame, len);
            if (payload == NULL || PyList_Append(others, payload) < 0) {
                Py_XDECREF(payload);
                Py_CLEAR(others);
                break;
            }
            Py_DECREF(payload);
            protocol->frames_consume(s->frames);
            continue;
        }
        PyObject *callback = add->callback;
        remove_add(s, (size_t)(add - s->adds));
        protocol->frames_consume(s->frames);
        PyObject *outcome = PyLong_FromLong(status);
        if (outcome == NULL) {
            Py_DECREF(callback);
            Py_CLEAR(others);
            break;
        }
        call_back(callback, outcome);
        Py_DECREF(outcome);
        Py_DECREF(callback);
        if (s->closed)
            break;
    }
    s->feeding = 0;
    return others;
}

/* The callbacks of the adds ``keep`` rejects, removed from the table; NULL on error. */
static PyObject *take_adds(ClientStream *s, double expired_before, int all) {
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i <= s->mask;) {
        HotAdd *add = &s->adds[i];
        if (add->txn == 0 || (!all && add->deadline > expired_before)) {
            i++;
            continue;
        }
        PyObject *callback = add->callback;
        remove_add(s, i); /* an entry may move into slot i: look at it again */
        int appended = PyList_Append(out, callback);
        Py_DECREF(callback);
        if (appended < 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

/* expire(now) -> list of callbacks: the adds whose deadline has passed, taken out. */
static PyObject *ClientStream_expire(ClientStream *s, PyObject *arg) {
    double now = PyFloat_AsDouble(arg);
    if (now == -1.0 && PyErr_Occurred())
        return NULL;
    return take_adds(s, now, 0);
}

/* fail_all() -> list of callbacks: every add still waiting, taken out; the stream is closed. */
static PyObject *ClientStream_fail_all(ClientStream *s, PyObject *unused) {
    s->closed = 1;
    s->out_len = 0;
    return take_adds(s, 0, 1);
}

/* earliest_deadline() -> float | None */
static PyObject *ClientStream_earliest_deadline(ClientStream *s, PyObject *unused) {
    double earliest = INFINITY;
    for (size_t i = 0; i <= s->mask; i++) {
        if (s->adds[i].txn != 0 && s->adds[i].deadline < earliest)
            earliest = s->adds[i].deadline;
    }
    if (isinf(earliest))
        Py_RETURN_NONE;
    return PyFloat_FromDouble(earliest);
}

static PyObject *frames_attr(ClientStream *s, void *name) { return PyObject_GetAttrString(s->frames, name); }

static PyObject *ClientStream_get_pending(ClientStream *s, void *closure) { return PyLong_FromSsize_t(s->count); }

static PyObject *ClientStream_get_buffered_output(ClientStream *s, void *closure) {
    return PyLong_FromSize_t(s->out_len);
}

static PyMethodDef ClientStream_methods[] = {
    {"txn", (PyCFunction)ClientStream_txn, METH_NOARGS, "txn() -> int\n\nThe next transaction id."},
    {"send_add", (PyCFunction)(void (*)(void))ClientStream_send_add, METH_FASTCALL,
     "send_add(ledger_id, entry_id, master_key, body, callback, deadline) -> int\n\n"
     "A v3 add written to the output; its answer goes to callback[0](*callback[1:], status)."},
    {"write", (PyCFunction)ClientStream_write, METH_O, "write(frame) -> int\n\nA request frame to the output."},
    {"take_output", (PyCFunction)ClientStream_take_output, METH_NOARGS,
     "take_output() -> bytes | None\n\nWhat waits to be written."},
    {"feed", (PyCFunction)ClientStream_feed, METH_O,
     "feed(data) -> list[bytes]\n\nThe frames completed, but the answers to held adds (given to their callbacks)."},
    {"expire", (PyCFunction)ClientStream_expire, METH_O,
     "expire(now) -> list\n\nThe callbacks of the adds past their deadline, taken out."},
    {"fail_all", (PyCFunction)ClientStream_fail_all, METH_NOARGS,
     "fail_all() -> list\n\nThe callbacks of every add held, taken out; the output is dropped."},
    {"earliest_deadline", (PyCFunction)ClientStream_earliest_deadline, METH_NOARGS,
     "earliest_deadline() -> float | None"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef ClientStream_getset[] = {
    {"buffered", (getter)frames_attr, NULL, "Bytes of an incomplete frame held back.", (void *)"buffered"},
    {"pending", (getter)ClientStream_get_pending, NULL, "Adds sent and not answered.", NULL},
    {"buffered_output", (getter)ClientStream_get_buffered_output, NULL, "Bytes waiting to be written.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ClientStreamType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bookie.client._native.ClientStream",
    .tp_basicsize = sizeof(ClientStream),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "ClientStream(max_frame_size): a connection's frames, its adds written and their answers matched.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)ClientStream_init,
    .tp_dealloc = (destructor)ClientStream_dealloc,
    .tp_traverse = (traverseproc)ClientStream_traverse,
    .tp_clear = (inquiry)ClientStream_clear,
    .tp_methods = ClientStream_methods,
    .tp_getset = ClientStream_getset,
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "bookie.client._native",
    .m_doc = "The ledger client's hot path in C: a connection's adds written and their answers matched.",
    .m_size = 0,
};

PyMODINIT_FUNC PyInit__native(void) {
    protocol = bookie_protocol_import();
    if (protocol == NULL || PyType_Ready(&ClientStreamType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    if (PyModule_AddObjectRef(module, "ClientStream", (PyObject *)&ClientStreamType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
