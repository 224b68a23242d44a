/* The bookie's request hot path in C: a connection's frames, and the adds among them, without a Python object
 * per request.
 *
 *   RequestStream   one per connection (bookie/listener.py). Received bytes go to its FrameReader; ``next_frame``
 *                   takes the adds that need nothing but storage straight to the storage engine's WritePath
 *                   (write cache and journal, bookie.storage._write_path) and returns the next frame that needs
 *                   Python (any other request, or an add that must be refused, throttled, or first create its
 *                   ledger). Once the journal has made an add durable the stream writes its EOK answer, the
 *                   answers of a whole journal group in one transport write. An add that finds its write cache
 *                   full is held here, in arrival order with the adds behind it (other requests go on), until a
 *                   checkpoint swaps the caches (``retry_held``), or refused as throttled once it has waited
 *                   dbStorage_maxThrottleTimeMs, as BookKeeper's add thread waits on its full write cache.
 *   InFlightCounts  requests in progress and their bytes, with the processor's limits (bookie/processor.py's
 *                   InFlight adds the waiting); the hot path counts its adds in the same counts.
 *   AddStats        the hot path's add latencies and bytes, in the buckets of bookie/stats.py's OpStat, merged
 *                   into the processor's statistics when they are read.
 *
 * It decides nothing the Python path would decide differently: an add it takes is one the listener and processor
 * would have taken with the same checks (authenticated connection, writable bookie, pending limit, valid ids,
 * not a recovery add, a protocol version the bookie speaks), and everything else is handed to them unchanged, in
 * the order it arrived.
 *
 * One file per type (_requests_internal.h lists them and holds what they share): InFlightCounts is in
 * _inflight_counts.c, AddStats in _add_stats.c; this one holds RequestStream and the module itself.
 */
#include "_requests_internal.h"

#include <stddef.h>
#include <structmember.h>

#include "_native_common.h"
#include "protocol/_native_api.h"
#include "storage/_write_path_api.h"

static const BookieProtocolApi *protocol;
static const BookieStorageApi *storage;

static PyObject *str_read_only;

/* ============================================================================================== RequestStream */

typedef struct {
    int64_t ledger_id, entry_id;
    uint64_t txn_id;
    long long started_ns;
    long long size;
    uint32_t next_free;
    uint8_t version, protocol_version;
} PendingAdd;

typedef struct {
    PyObject *frame;       /* the add's frame, as received */
    long long since_ns;    /* when it arrived: its latency and its throttle deadline count from here */
    long long size;        /* its entry's bytes, counted in the adds in progress while it waits */
} HeldAdd;

typedef struct {
    PyObject_HEAD
    PyObject *frames;        /* FrameReader */
    PyObject *write_path;    /* storage's WritePath */
    InFlightCounts *adds;    /* the processor's adds in progress */
    PyObject *state;         /* the bookie's state: ``read_only`` */
    AddStats *stats;
    PyObject *write;         /* the transport's write, or None once the connection is closing */
    PyObject *on_add_failed; /* (version, protocol_version, txn_id, ledger_id, entry_id, throttled): answer an add
                              * that failed in the journal (EIO) or waited too long for room (ETOOMANYREQUESTS) */
    char takes_adds;         /* the connection is authenticated: adds may take the hot path */
    char holding_output;     /* a TLS upgrade is under way: answers wait for ``flush`` */
    char dirty;              /* answers wait in ``out`` */
    char reading;            /* next_frame holds pointers into the reader's buffer: feeding it is refused */
    PendingAdd *pending;
    uint32_t pending_cap, free_head;
    Py_ssize_t pending_count;
    uint8_t *out;
    size_t out_len, out_cap;
    HeldAdd *held;           /* ring of adds waiting for room in the write cache, oldest at held_head */
    size_t held_head, held_len, held_cap;
    long long max_throttle_ns; /* dbStorage_maxThrottleTimeMs */
} RequestStream;

static PyTypeObject RequestStreamType;
enum { NO_SLOT = 0xFFFFFFFFu, ENTRY_HEADER = 32 };

/* An add the hot path may take: the checks of the listener and the processor that do not need storage. */
static int is_plain_add(const AddFrame *a) {
    if (a->version == 3 && a->protocol_version != 3)
        return 0; /* EBADVERSION */
    if (a->recovery || a->ledger_id < 0 || a->entry_id < 0 || a->body_len < ENTRY_HEADER)
        return 0;
    return read_int64_be(a->body) == a->ledger_id && read_int64_be(a->body + 8) == a->entry_id;
}

static int pending_take(RequestStream *s, uint32_t *slot) {
    if (s->free_head == NO_SLOT) {
        uint32_t cap = s->pending_cap ? s->pending_cap * 2 : 64;
        PendingAdd *grown = PyMem_Realloc(s->pending, (size_t)cap * sizeof(PendingAdd));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (uint32_t i = s->pending_cap; i < cap; i++)
            grown[i].next_free = i + 1 < cap ? i + 1 : NO_SLOT;
        s->free_head = s->pending_cap;
        s->pending = grown;
        s->pending_cap = cap;
    }
    *slot = s->free_head;
    s->free_head = s->pending[*slot].next_free;
    s->pending_count++;
    return 0;
}

static void pending_release(RequestStream *s, uint32_t slot) {
    s->pending[slot].next_free = s->free_head;
    s->free_head = slot;
    s->pending_count--;
}


/* Holds an add for room in the write cache: a copy of its frame, counted in the adds in progress as a taken add
 * is (the in-progress limits pause the connection the same way). */
static int held_push(RequestStream *s, const uint8_t *frame, Py_ssize_t len, long long size, long long since_ns) {
    if (s->held_len == s->held_cap) {
        size_t cap = s->held_cap ? s->held_cap * 2 : 16;
        HeldAdd *grown = PyMem_Malloc(cap * sizeof(HeldAdd));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (size_t i = 0; i < s->held_len; i++)
            grown[i] = s->held[(s->held_head + i) % s->held_cap];
        PyMem_Free(s->held);
        s->held = grown;
        s->held_cap = cap;
        s->held_head = 0;
    }
    PyObject *copy = PyBytes_FromStringAndSize((const char *)frame, len);
    if (copy == NULL)
        return -1;
    s->held[(s->held_head + s->held_len) % s->held_cap] = (HeldAdd){copy, since_ns, size};
    s->held_len++;
    s->adds->count++;
    s->adds->bytes += size;
    return 0;
}

/* The oldest held add, out of the ring: the caller owns its frame and its count in the adds in progress. */
static HeldAdd held_pop(RequestStream *s) {
    HeldAdd h = s->held[s->held_head];
    s->held_head = (s->held_head + 1) % s->held_cap;
    s->held_len--;
    return h;
}

static int sink_durable(PyObject *self, uint64_t token, int failed) {
    RequestStream *s = (RequestStream *)self;
    PendingAdd add = s->pending[token]; /* a copy: the callbacks below may grow the table */
    const PendingAdd *p = &add;
    pending_release(s, (uint32_t)token);
    double ms = (double)(now_ns() - p->started_ns) / 1e6;
    int became_dirty = 0;
    if (!failed && s->write != Py_None) {
        if (buffer_reserve(&s->out, &s->out_cap, s->out_len, ADD_ANSWER_MAX, 4096) < 0) {
            PyErr_WriteUnraisable(self);
        } else {
            s->out_len += (size_t)protocol->encode_add_ok(s->out + s->out_len, p->version, p->protocol_version,
                                                          p->txn_id, p->ledger_id, p->entry_id);
            became_dirty = !s->dirty;
            s->dirty = 1;
        }
    } else if (failed && s->write != Py_None) {
        PyObject *callback = Py_NewRef(s->on_add_failed);
        PyObject *result = PyObject_CallFunction(callback, "iiKLLi", (int)p->version, (int)p->protocol_version,
                                                 (unsigned long long)p->txn_id, (long long)p->ledger_id,
                                                 (long long)p->entry_id, 0);
        if (result == NULL)
            PyErr_WriteUnraisable(callback);
        Py_XDECREF(result);
        Py_DECREF(callback);
    }
    stats_record(s->stats, !failed, ms, p->size);
    if (inflight_leave(s->adds, p->size) < 0)
        PyErr_WriteUnraisable((PyObject *)s->adds);
    return became_dirty;
}

/* The answers gathered since the last flush, in one transport write. */
static void sink_flush(PyObject *self) {
    RequestStream *s = (RequestStream *)self;
    if (!s->dirty || s->holding_output)
        return;
    s->dirty = 0;
    if (s->write == Py_None) {
        s->out_len = 0;
        return;
    }
    PyObject *data = PyBytes_FromStringAndSize((const char *)s->out, (Py_ssize_t)s->out_len);
    s->out_len = 0;
    if (data == NULL) {
        PyErr_WriteUnraisable(self);
        return;
    }
    PyObject *write = Py_NewRef(s->write); /* the call may replace s->write (a connection lost at once) */
    PyObject *result = PyObject_CallOneArg(write, data);
    if (result == NULL)
        PyErr_WriteUnraisable(write);
    Py_XDECREF(result);
    Py_DECREF(write);
    Py_DECREF(data);
}

static const AddSinkMethods sink_methods = {.durable = sink_durable, .flush = sink_flush};

/* 1 when the bookie is read-only (the state's ``read_only``), -1 with an error. */
static int bookie_read_only(RequestStream *s) {
    PyObject *value = PyObject_GetAttr(s->state, str_read_only);
    if (value == NULL)
        return -1;
    int read_only = PyObject_IsTrue(value);
    Py_DECREF(value);
    return read_only;
}

/* Offers the add to storage: 1 taken, 2 not for want of room in the write cache (the frame is held), 0 not (the
 * frame goes to Python), -1 error. */
static int take_add(RequestStream *s, const AddFrame *a, long long started_ns) {
    uint32_t slot;
    if (pending_take(s, &slot) < 0)
        return -1;
    PendingAdd *p = &s->pending[slot];
    p->ledger_id = a->ledger_id;
    p->entry_id = a->entry_id;
    p->txn_id = a->txn_id;
    p->started_ns = started_ns;
    p->size = a->body_len;
    p->version = (uint8_t)a->version;
    p->protocol_version = (uint8_t)a->protocol_version;
    int taken = storage->try_add(s->write_path, a->body, a->body_len, a->master_key, a->master_key_len,
                                 (PyObject *)s, &sink_methods, slot);
    if (taken != 1) {
        pending_release(s, slot);
        return taken;
    }
    s->adds->count++;
    s->adds->bytes += a->body_len;
    return 1;
}

/* next_frame() -> bytes | None: see the module's docstring. None when no complete frame is left, or when the adds
 * taken reached the in-progress limit (the caller then pauses the connection). */
static PyObject *next_frame(RequestStream *s) {
    const uint8_t *frame;
    Py_ssize_t len;
    int read_only = -1;
    long long started = 0;
    while (protocol->frames_peek(s->frames, &frame, &len)) {
        AddFrame add;
        if (s->takes_adds && protocol->decode_add(frame, len, &add) && is_plain_add(&add)
            && !over_pending_limit(s->adds)) {
            if (read_only < 0 && (read_only = bookie_read_only(s)) < 0)
                return NULL;
            if (!read_only) {
                if (started == 0)
                    started = now_ns();
                /* Behind a held add, an add waits too: a connection's adds reach storage in the order sent. */
                int taken = s->held_len ? 2 : take_add(s, &add, started);
                if (taken < 0)
                    return NULL;
                if (taken == 2 && held_push(s, frame, len, add.body_len, started) < 0)
                    return NULL;
                if (taken) {
                    protocol->frames_consume(s->frames);
                    if (must_pause(s->adds))
                        Py_RETURN_NONE;
                    continue;
                }
            }
        }
        PyObject *payload = PyBytes_FromStringAndSize((const char *)frame, len);
        if (payload != NULL)
            protocol->frames_consume(s->frames);
        return payload;
    }
    Py_RETURN_NONE;
}

/* next_frame keeps ``frame`` and the decoded add's pointers into the reader's buffer across calls into Python (the
 * state's read_only, storage's checkpoint trigger, allocations): the reader's buffer must not move or change
 * meanwhile. So while it runs, whatever would write the buffer (feed, receive_buffer, received) is refused. */
static PyObject *RequestStream_next_frame(RequestStream *s, PyObject *unused) {
    if (s->reading) {
        PyErr_SetString(PyExc_RuntimeError, "RequestStream.next_frame re-entered from Python");
        return NULL;
    }
    s->reading = 1;
    PyObject *out = next_frame(s);
    s->reading = 0;
    return out;
}

/* 0, or -1 with RuntimeError while next_frame reads the buffer (re-entered from Python). */
static int buffer_writable(RequestStream *s) {
    if (!s->reading)
        return 0;
    PyErr_SetString(PyExc_RuntimeError, "RequestStream: the frame buffer cannot be written while next_frame reads "
                    "it (re-entered from Python)");
    return -1;
}

static PyObject *RequestStream_feed(RequestStream *s, PyObject *data) {
    if (buffer_writable(s) < 0)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    int rc = protocol->frames_append(s->frames, view.buf, view.len);
    PyBuffer_Release(&view);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* receive_buffer() -> memoryview: the frame reader's free space, for the connection's next read to fill. */
static PyObject *RequestStream_receive_buffer(RequestStream *s, PyObject *unused) {
    if (buffer_writable(s) < 0)
        return NULL;
    uint8_t *space;
    Py_ssize_t len;
    if (protocol->frames_receive_buffer(s->frames, &space, &len) < 0)
        return NULL;
    return PyMemoryView_FromMemory((char *)space, len, PyBUF_WRITE);
}

static PyObject *RequestStream_received(RequestStream *s, PyObject *arg) {
    if (buffer_writable(s) < 0)
        return NULL;
    Py_ssize_t len = PyLong_AsSsize_t(arg);
    if (len == -1 && PyErr_Occurred())
        return NULL;
    if (protocol->frames_received(s->frames, len) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *RequestStream_flush(RequestStream *s, PyObject *unused) {
    sink_flush((PyObject *)s);
    Py_RETURN_NONE;
}

/* A held add that waited dbStorage_maxThrottleTimeMs: answered ETOOMANYREQUESTS and counted as a failed add. */
static int refuse_throttled(RequestStream *s, const AddFrame *a, HeldAdd *h, long long now) {
    stats_record(s->stats, 0, (double)(now - h->since_ns) / 1e6, h->size);
    int rc = inflight_leave(s->adds, h->size);
    if (s->write != Py_None) {
        PyObject *callback = Py_NewRef(s->on_add_failed);
        PyObject *result = PyObject_CallFunction(callback, "iiKLLi", (int)a->version, (int)a->protocol_version,
                                                 (unsigned long long)a->txn_id, (long long)a->ledger_id,
                                                 (long long)a->entry_id, 1);
        Py_DECREF(callback);
        if (result == NULL)
            rc = -1;
        Py_XDECREF(result);
    }
    return rc;
}

/* retry_held() -> bytes | None: see the method's docstring. */
static PyObject *RequestStream_retry_held(RequestStream *s, PyObject *unused) {
    while (s->held_len) {
        HeldAdd *h = &s->held[s->held_head];
        AddFrame add;
        int plain = protocol->decode_add((const uint8_t *)PyBytes_AS_STRING(h->frame), PyBytes_GET_SIZE(h->frame),
                                         &add) && is_plain_add(&add);
        int read_only = bookie_read_only(s);
        if (read_only < 0)
            return NULL;
        int taken = 0;
        if (plain && !read_only && s->takes_adds) {
            s->adds->count--; /* its place in the adds in progress passes to the taken add */
            s->adds->bytes -= h->size;
            taken = take_add(s, &add, h->since_ns);
            if (taken != 1) {
                s->adds->count++;
                s->adds->bytes += h->size;
            }
            if (taken < 0)
                return NULL;
        }
        long long now = now_ns();
        if (taken == 2 && now - h->since_ns < s->max_throttle_ns)
            Py_RETURN_NONE; /* still no room: it and the adds behind it wait for the next swap */
        HeldAdd gone = held_pop(s);
        if (taken == 2) {
            int rc = refuse_throttled(s, &add, &gone, now);
            Py_DECREF(gone.frame);
            if (rc < 0)
                return NULL;
            continue;
        }
        if (taken == 1) {
            Py_DECREF(gone.frame);
            continue;
        }
        /* The general path decides it now (a fenced ledger, a read-only bookie...) and counts it itself. */
        if (inflight_leave(s->adds, gone.size) < 0) {
            Py_DECREF(gone.frame);
            return NULL;
        }
        return gone.frame;
    }
    Py_RETURN_NONE;
}

/* Drops the held adds (the connection is gone: nobody reads their answers) and their counts in progress. */
static int release_held(RequestStream *s) {
    int rc = 0;
    while (s->held_len) {
        HeldAdd gone = held_pop(s);
        Py_DECREF(gone.frame);
        if (s->adds != NULL && inflight_leave(s->adds, gone.size) < 0)
            rc = -1;
    }
    return rc;
}

static PyObject *RequestStream_drop_held(RequestStream *s, PyObject *unused) {
    if (release_held(s) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *RequestStream_get_held(RequestStream *s, void *closure) {
    return PyLong_FromSize_t(s->held_len);
}

static PyObject *RequestStream_get_held_wait(RequestStream *s, void *closure) {
    if (s->held_len == 0)
        return PyFloat_FromDouble(0.0);
    long long left = s->held[s->held_head].since_ns + s->max_throttle_ns - now_ns();
    return PyFloat_FromDouble(left > 0 ? (double)left / 1e9 : 0.0);
}

static int RequestStream_init(RequestStream *s, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"max_frame_size", "write_path", "adds", "state", "stats", "on_add_failed",
                               "max_throttle_ms", NULL};
    Py_ssize_t max_frame_size;
    PyObject *write_path, *adds, *state, *stats, *on_add_failed;
    long long max_throttle_ms = 10000; /* BookKeeper's dbStorage_maxThrottleTimeMs */
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "nO!O!OO!O|L:RequestStream", keywords, &max_frame_size,
                                     storage->write_path_type, &write_path, &InFlightCountsType, &adds, &state,
                                     &AddStatsType, &stats, &on_add_failed, &max_throttle_ms))
        return -1;
    if (max_throttle_ms < 0) {
        PyErr_SetString(PyExc_ValueError, "max_throttle_ms must not be negative");
        return -1;
    }
    if (s->frames != NULL) { /* pending adds hold their slots and counters: a second init would swap those */
        PyErr_SetString(PyExc_RuntimeError, "RequestStream is already initialized (one per connection)");
        return -1;
    }
    s->max_throttle_ns = max_throttle_ms * 1000000LL;
    PyObject *frames = PyObject_CallFunction((PyObject *)protocol->frame_reader_type, "n", max_frame_size);
    if (frames == NULL)
        return -1;
    Py_XSETREF(s->frames, frames);
    Py_XSETREF(s->write_path, Py_NewRef(write_path));
    Py_XSETREF(s->adds, (InFlightCounts *)Py_NewRef(adds));
    Py_XSETREF(s->state, Py_NewRef(state));
    Py_XSETREF(s->stats, (AddStats *)Py_NewRef(stats));
    Py_XSETREF(s->on_add_failed, Py_NewRef(on_add_failed));
    Py_XSETREF(s->write, Py_NewRef(Py_None));
    s->free_head = NO_SLOT;
    return 0;
}

static int RequestStream_traverse(RequestStream *s, visitproc visit, void *arg) {
    Py_VISIT(s->frames);
    Py_VISIT(s->write_path);
    Py_VISIT(s->adds);
    Py_VISIT(s->state);
    Py_VISIT(s->stats);
    Py_VISIT(s->write);
    Py_VISIT(s->on_add_failed);
    return 0;
}

static int RequestStream_clear(RequestStream *s) {
    if (release_held(s) < 0)
        PyErr_WriteUnraisable((PyObject *)s);
    Py_CLEAR(s->frames);
    Py_CLEAR(s->write_path);
    Py_CLEAR(s->adds);
    Py_CLEAR(s->state);
    Py_CLEAR(s->stats);
    Py_CLEAR(s->write);
    Py_CLEAR(s->on_add_failed);
    return 0;
}

static void RequestStream_dealloc(RequestStream *s) {
    PyObject_GC_UnTrack(s);
    RequestStream_clear(s);
    PyMem_Free(s->pending);
    PyMem_Free(s->out);
    PyMem_Free(s->held);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *RequestStream_frames_attr(RequestStream *s, void *name) { return PyObject_GetAttrString(s->frames, name); }

static PyObject *RequestStream_get_pending(RequestStream *s, void *closure) {
    return PyLong_FromSsize_t(s->pending_count);
}

static PyObject *RequestStream_get_write(RequestStream *s, void *closure) { return Py_NewRef(s->write); }

static int RequestStream_set_write(RequestStream *s, PyObject *value, void *closure) {
    if (value == NULL || (value != Py_None && !PyCallable_Check(value))) {
        PyErr_SetString(PyExc_TypeError, "write must be a callable or None");
        return -1;
    }
    Py_XSETREF(s->write, Py_NewRef(value));
    return 0;
}

static PyMethodDef RequestStream_methods[] = {
    {"feed", (PyCFunction)RequestStream_feed, METH_O,
     "feed(data)\n\nBytes received on the connection (FrameTooLarge for a bad frame length)."},
    {"receive_buffer", (PyCFunction)RequestStream_receive_buffer, METH_NOARGS,
     "receive_buffer() -> memoryview\n\nWhere the connection's next read lands (asyncio's BufferedProtocol."
     "get_buffer): valid until the next call on this stream, and only until then."},
    {"received", (PyCFunction)RequestStream_received, METH_O,
     "received(nbytes)\n\nThat many bytes were read into receive_buffer() (FrameTooLarge for a bad frame length)."},
    {"next_frame", (PyCFunction)RequestStream_next_frame, METH_NOARGS,
     "next_frame() -> bytes | None\n\nTake the adds storage can take; the next frame for Python, or None."},
    {"flush", (PyCFunction)RequestStream_flush, METH_NOARGS, "flush()\n\nWrite the answers held back."},
    {"retry_held", (PyCFunction)RequestStream_retry_held, METH_NOARGS,
     "retry_held() -> bytes | None\n\nOffer the adds held for room in the write cache to storage again, oldest "
     "first: the ones it takes are answered once durable, one held max_throttle_ms is answered ETOOMANYREQUESTS "
     "(on_add_failed), and one the general path must now decide is returned (call again after dispatching it). "
     "None when none is left or the oldest still finds no room."},
    {"drop_held", (PyCFunction)RequestStream_drop_held, METH_NOARGS,
     "drop_held()\n\nForget the held adds (the connection is closed) and free their places in progress."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef RequestStream_getset[] = {
    {"buffered", (getter)RequestStream_frames_attr, NULL, "Bytes of an incomplete frame held back.", (void *)"buffered"},
    {"has_frame", (getter)RequestStream_frames_attr, NULL, "A complete frame is waiting.", (void *)"has_frame"},
    {"pending", (getter)RequestStream_get_pending, NULL, "Adds taken and not yet durable.", NULL},
    {"held", (getter)RequestStream_get_held, NULL, "Adds held for room in the write cache.", NULL},
    {"held_wait", (getter)RequestStream_get_held_wait, NULL,
     "Seconds the oldest held add may still wait for room (0.0 when none is held).", NULL},
    {"write", (getter)RequestStream_get_write, (setter)RequestStream_set_write,
     "The transport's write (None: answers are dropped, the connection is closing).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef RequestStream_members[] = {
    {"takes_adds", T_BOOL, offsetof(RequestStream, takes_adds), 0, "Adds may take the hot path."},
    {"holding_output", T_BOOL, offsetof(RequestStream, holding_output), 0, "Answers wait for flush()."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject RequestStreamType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bookie._requests.RequestStream",
    .tp_basicsize = sizeof(RequestStream),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "RequestStream(max_frame_size, write_path, adds, state, stats, on_add_failed, max_throttle_ms=10000): "
              "a connection's requests.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)RequestStream_init,
    .tp_dealloc = (destructor)RequestStream_dealloc,
    .tp_traverse = (traverseproc)RequestStream_traverse,
    .tp_clear = (inquiry)RequestStream_clear,
    .tp_methods = RequestStream_methods,
    .tp_getset = RequestStream_getset,
    .tp_members = RequestStream_members,
};

/* ============================================================================================== module */

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "bookie._requests",
    .m_doc = "The bookie's request hot path in C: a connection's frames, and its adds taken to storage.",
    .m_size = 0,
};

PyMODINIT_FUNC PyInit__requests(void) {
    protocol = bookie_protocol_import();
    storage = bookie_storage_import();
    if (protocol == NULL || storage == NULL)
        return NULL;
    const InternedName names[] = {{&str_read_only, "read_only"}};
    if (intern_names(names, COUNT_OF(names)) < 0 || inflight_counts_intern_names() < 0 || add_stats_intern_names() < 0)
        return NULL;
    const ModuleType types[] = {
        {&InFlightCountsType, "InFlightCounts"}, {&AddStatsType, "AddStats"}, {&RequestStreamType, "RequestStream"},
    };
    return module_with_types(&module_def, types, COUNT_OF(types));
}
