/* ClientStream of the bookie.client._native module: one connection to a bookie (bookie/client/connection.py).
 * Outgoing requests gather in its buffer until the connection writes them; a ledger's v3 adds are encoded straight
 * into it (``send_add``, or stream_send_add from an Appender) and remembered by txn id with the callback their answer
 * goes to; received bytes go to its FrameReader (``feed``), and an answer to such an add is matched and handed to
 * its callback as a status code. _native_internal.h has the struct and what the module's files share. */
#include "_native_internal.h"

#include <structmember.h>

#include <math.h>
#include <string.h>

#include "../_native_common.h"
#include "../protocol/_native_api.h"

static const BookieProtocolApi *protocol;

int client_stream_import_protocol(void) {
    protocol = bookie_protocol_import();
    return protocol == NULL ? -1 : 0;
}

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

/* The output buffer starts at 64 KiB: a client batches many adds per write. */
#define OUT_FIRST_CAP (64 * 1024)

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
    s->write_early = 64 * 1024;
    s->armed_deadline = INFINITY;
    return 0;
}

static int ClientStream_traverse(ClientStream *s, visitproc visit, void *arg) {
    Py_VISIT(s->frames);
    Py_VISIT(s->on_output);
    Py_VISIT(s->on_output_full);
    Py_VISIT(s->on_deadline);
    for (size_t i = 0; s->adds != NULL && i <= s->mask; i++)
        Py_VISIT(s->adds[i].callback);
    return 0;
}

static int ClientStream_clear(ClientStream *s) {
    Py_CLEAR(s->frames);
    Py_CLEAR(s->on_output);
    Py_CLEAR(s->on_output_full);
    Py_CLEAR(s->on_deadline);
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

/* Tell the connection what the new output needs: a write now, or a flush scheduled. -1 on a callback's error. */
static int output_added(ClientStream *s) {
    PyObject *callback = NULL;
    if ((Py_ssize_t)s->out_len >= s->write_early) {
        callback = s->on_output_full;
    } else if (!s->flush_requested) {
        s->flush_requested = 1;
        callback = s->on_output;
    }
    if (callback == NULL || callback == Py_None)
        return 0;
    Py_INCREF(callback); /* the call may replace the stream's reference */
    PyObject *result = PyObject_CallNoArgs(callback);
    Py_DECREF(callback);
    Py_XDECREF(result);
    return result == NULL ? -1 : 0;
}

/* A v3 add written to the output, its answer to go to callback[0](*callback[1:], status). 0, or -1 with an
 * exception (nothing is sent then). */
int stream_send_add(ClientStream *s, int64_t ledger_id, int64_t entry_id, const uint8_t *key,
                           Py_ssize_t key_len, const uint8_t *body, Py_ssize_t body_len, PyObject *callback,
                           double deadline) {
    if (s->closed || !s->takes_adds) {
        PyErr_SetString(PyExc_RuntimeError, "send_add on a closed ClientStream, or one of a v2 connection");
        return -1;
    }
    uint64_t txn = s->next_txn++;
    Py_ssize_t size = protocol->encode_add_request(NULL, txn, ledger_id, entry_id, key, key_len, body, body_len);
    if (size < 0) {
        PyErr_SetString(PyExc_OverflowError, "add request larger than a frame");
        return -1;
    }
    if (buffer_reserve(&s->out, &s->out_cap, s->out_len, (size_t)size, OUT_FIRST_CAP) < 0 || insert_add(s, (HotAdd){txn, Py_NewRef(callback), deadline}) < 0) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return -1;
    }
    protocol->encode_add_request(s->out + s->out_len, txn, ledger_id, entry_id, key, key_len, body, body_len);
    s->out_len += (size_t)size;
    if (deadline < s->armed_deadline && s->on_deadline != NULL && s->on_deadline != Py_None) {
        s->armed_deadline = deadline;
        PyObject *at = PyFloat_FromDouble(deadline);
        PyObject *result = at == NULL ? NULL : PyObject_CallOneArg(s->on_deadline, at);
        Py_XDECREF(at);
        if (result == NULL)
            return -1;
        Py_DECREF(result);
    }
    return output_added(s);
}

/* send_add(ledger_id, entry_id, master_key, body, callback, deadline): a v3 add written to the output, its answer
 * to go to callback[0](*callback[1:], status). */
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
    int rc = stream_send_add(s, ledger_id, entry_id, key.buf, key.len, body.buf, body.len, callback, deadline);
    PyBuffer_Release(&key);
    PyBuffer_Release(&body);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* write(frame): a request the connection encoded, after those already waiting; the connection is told, as for
 * an add. */
static PyObject *ClientStream_write(ClientStream *s, PyObject *frame) {
    Py_buffer view;
    if (PyObject_GetBuffer(frame, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    int failed = buffer_reserve(&s->out, &s->out_cap, s->out_len, (size_t)view.len, OUT_FIRST_CAP) < 0;
    if (!failed) {
        memcpy(s->out + s->out_len, view.buf, (size_t)view.len);
        s->out_len += (size_t)view.len;
    }
    PyBuffer_Release(&view);
    if (failed || output_added(s) < 0)
        return NULL;
    Py_RETURN_NONE;
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

/* take(txn) -> callback | None: the add of that txn taken out, for an answer the connection decoded itself (a
 * refusal with the header and a status only, as a bookie sends an unauthenticated client). */
static PyObject *ClientStream_take(ClientStream *s, PyObject *arg) {
    uint64_t txn = PyLong_AsUnsignedLongLong(arg);
    if (txn == (uint64_t)-1 && PyErr_Occurred())
        return NULL;
    HotAdd *add = txn == 0 ? NULL : find_add(s, txn);
    if (add == NULL)
        Py_RETURN_NONE;
    PyObject *callback = add->callback;
    remove_add(s, (size_t)(add - s->adds));
    return callback;
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

static PyObject *ClientStream_frames_attr(ClientStream *s, void *name) { return PyObject_GetAttrString(s->frames, name); }

static PyObject *ClientStream_get_pending(ClientStream *s, void *closure) { return PyLong_FromSsize_t(s->count); }

static PyObject *ClientStream_get_buffered_output(ClientStream *s, void *closure) {
    return PyLong_FromSize_t(s->out_len);
}

static PyMethodDef ClientStream_methods[] = {
    {"txn", (PyCFunction)ClientStream_txn, METH_NOARGS, "txn() -> int\n\nThe next transaction id."},
    {"send_add", (PyCFunction)(void (*)(void))ClientStream_send_add, METH_FASTCALL,
     "send_add(ledger_id, entry_id, master_key, body, callback, deadline)\n\n"
     "A v3 add written to the output; its answer goes to callback[0](*callback[1:], status)."},
    {"write", (PyCFunction)ClientStream_write, METH_O, "write(frame)\n\nA request frame to the output."},
    {"take_output", (PyCFunction)ClientStream_take_output, METH_NOARGS,
     "take_output() -> bytes | None\n\nWhat waits to be written."},
    {"feed", (PyCFunction)ClientStream_feed, METH_O,
     "feed(data) -> list[bytes]\n\nThe frames completed, but the answers to held adds (given to their callbacks)."},
    {"take", (PyCFunction)ClientStream_take, METH_O,
     "take(txn) -> callback | None\n\nThe add of that txn taken out (its answer was decoded by the connection)."},
    {"expire", (PyCFunction)ClientStream_expire, METH_O,
     "expire(now) -> list\n\nThe callbacks of the adds past their deadline, taken out."},
    {"fail_all", (PyCFunction)ClientStream_fail_all, METH_NOARGS,
     "fail_all() -> list\n\nThe callbacks of every add held, taken out; the output is dropped."},
    {"earliest_deadline", (PyCFunction)ClientStream_earliest_deadline, METH_NOARGS,
     "earliest_deadline() -> float | None"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef ClientStream_getset[] = {
    {"buffered", (getter)ClientStream_frames_attr, NULL, "Bytes of an incomplete frame held back.", (void *)"buffered"},
    {"pending", (getter)ClientStream_get_pending, NULL, "Adds sent and not answered.", NULL},
    {"buffered_output", (getter)ClientStream_get_buffered_output, NULL, "Bytes waiting to be written.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef ClientStream_members[] = {
    {"write_early", T_PYSSIZET, offsetof(ClientStream, write_early), 0, "Output bytes worth writing at once."},
    {"flush_requested", T_BOOL, offsetof(ClientStream, flush_requested), 0, "A flush is scheduled."},
    {"takes_adds", T_BOOL, offsetof(ClientStream, takes_adds), 0, "A v3 connection's: send_add may encode adds."},
    {"closed", T_BOOL, offsetof(ClientStream, closed), READONLY, "fail_all was called."},
    {"armed_deadline", T_DOUBLE, offsetof(ClientStream, armed_deadline), 0,
     "When the connection's timeout timer fires (inf: none)."},
    {"on_output", T_OBJECT, offsetof(ClientStream, on_output), 0, "(): output waits, no flush scheduled."},
    {"on_output_full", T_OBJECT, offsetof(ClientStream, on_output_full), 0, "(): write_early bytes wait."},
    {"on_deadline", T_OBJECT, offsetof(ClientStream, on_deadline), 0, "(deadline): arm the timer earlier."},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject ClientStreamType = {
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
    .tp_members = ClientStream_members,
};
