/* FrameReader of the bookie.protocol._native module: a connection's byte stream cut into frames in one buffer, for
 * Python (``feed``) and, through the C interface's frames_* functions, for the bookie's request hot path, which
 * receives into the buffer and reads its frames in place. _native_internal.h has what the module's files share.
 */
#include "_native_internal.h"

#include <stddef.h>
#include <string.h>
#include <structmember.h>

/* Splits a byte stream into frames, ``int32 length`` (big-endian, excluding itself) then the payload: BookKeeper's
 * LengthFieldBasedFrameDecoder(maxFrameSize, 0, 4, 0, 4). A negative length, or one above the maximum, raises
 * FrameTooLarge as soon as its 4 bytes arrive: the connection must be closed.
 *
 * Received bytes land in one buffer, whatever the size of the reads they arrive in: the bookie's connections
 * receive straight into its free space (``frames_receive_buffer`` then ``frames_received``: asyncio's buffered
 * protocol, no copy), ``feed`` copies them in. Complete frames are taken from its front (``feed`` copies each into
 * a bytes object; the request hot path reads them in place), and the buffer is compacted only when it must grow. */
typedef struct {
    PyObject_HEAD
    uint8_t *buf;
    Py_ssize_t start;      /* the next frame not taken */
    Py_ssize_t end;        /* the end of the received bytes */
    Py_ssize_t cap;
    Py_ssize_t frame_at;   /* the last frame whose length was checked */
    Py_ssize_t checked;    /* the end of that frame: where the next length to check starts */
    Py_ssize_t max_frame_size;
} FrameReader;

PyObject *FrameTooLarge;

enum { FRAME_BUFFER_START = 64 * 1024, FRAME_BUFFER_KEEP = 1024 * 1024 };

static uint32_t read_uint32_be(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static int frames_reserve(FrameReader *r, Py_ssize_t more) {
    if (r->end + more <= r->cap)
        return 0;
    if (r->start > 0) { /* compact: what was taken goes */
        memmove(r->buf, r->buf + r->start, (size_t)(r->end - r->start));
        r->end -= r->start;
        r->frame_at -= r->start;
        r->checked -= r->start;
        r->start = 0;
        if (r->end + more <= r->cap)
            return 0;
    }
    Py_ssize_t cap = r->cap ? r->cap : FRAME_BUFFER_START;
    while (cap < r->end + more)
        cap *= 2;
    uint8_t *grown = PyMem_Realloc(r->buf, (size_t)cap);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    r->buf = grown;
    r->cap = cap;
    return 0;
}

/* Room for at least ``len`` more received bytes. */
static int frames_make_room(FrameReader *r, Py_ssize_t len) {
    if (r->start == r->end && r->checked <= r->end) { /* nothing held: start over at the front */
        r->start = r->end = r->frame_at = r->checked = 0;
        if (r->cap > FRAME_BUFFER_KEEP) { /* a large frame passed: give its memory back */
            PyMem_Free(r->buf);
            r->buf = NULL;
            r->cap = 0;
        }
    }
    return frames_reserve(r, len);
}

/* The buffer's free space, at least FRAME_BUFFER_START bytes, for a read to fill; valid until the next call on
 * this reader. */
int frames_receive_buffer(PyObject *self, uint8_t **space, Py_ssize_t *len) {
    FrameReader *r = (FrameReader *)self;
    if (frames_make_room(r, FRAME_BUFFER_START) < 0)
        return -1;
    *space = r->buf + r->end;
    *len = r->cap - r->end;
    return 0;
}

/* ``len`` bytes were read into the space ``frames_receive_buffer`` gave: the frame lengths they complete are
 * checked (-1 with FrameTooLarge raised for a bad one). */
int frames_received(PyObject *self, Py_ssize_t len) {
    FrameReader *r = (FrameReader *)self;
    if (len < 0 || len > r->cap - r->end) {
        PyErr_Format(PyExc_ValueError, "%zd bytes received into a buffer with %zd free", len, r->cap - r->end);
        return -1;
    }
    r->end += len;
    while (r->checked + 4 <= r->end) {
        int32_t length = (int32_t)read_uint32_be(r->buf + r->checked);
        if (length < 0) {
            PyErr_Format(FrameTooLarge, "negative frame length %d", length);
            return -1;
        }
        if (length > r->max_frame_size) {
            PyErr_Format(FrameTooLarge, "frame of %d bytes exceeds the maximum of %zd", length, r->max_frame_size);
            return -1;
        }
        r->frame_at = r->checked;
        r->checked += 4 + (Py_ssize_t)length;
    }
    return 0;
}

int frames_append(PyObject *self, const uint8_t *data, Py_ssize_t len) {
    FrameReader *r = (FrameReader *)self;
    if (frames_make_room(r, len) < 0)
        return -1;
    memcpy(r->buf + r->end, data, (size_t)len);
    return frames_received(self, len);
}

int frames_peek(PyObject *self, const uint8_t **frame, Py_ssize_t *len) {
    FrameReader *r = (FrameReader *)self;
    if (r->end - r->start < 4)
        return 0;
    Py_ssize_t length = (Py_ssize_t)read_uint32_be(r->buf + r->start);
    if (r->end - r->start - 4 < length)
        return 0;
    *frame = r->buf + r->start + 4;
    *len = length;
    return 1;
}

void frames_consume(PyObject *self) {
    FrameReader *r = (FrameReader *)self;
    r->start += 4 + (Py_ssize_t)read_uint32_be(r->buf + r->start);
}

static int FrameReader_init(FrameReader *self, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"max_frame_size", NULL};
    Py_ssize_t max_frame_size;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n:FrameReader", keywords, &max_frame_size))
        return -1;
    if (max_frame_size < 0) {
        PyErr_SetString(PyExc_ValueError, "max_frame_size must not be negative");
        return -1;
    }
    self->max_frame_size = max_frame_size;
    return 0;
}

static void FrameReader_dealloc(FrameReader *self) {
    PyMem_Free(self->buf);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* feed(data) -> list[bytes]: the payloads of the frames ``data`` completes, in order. */
static PyObject *FrameReader_feed(FrameReader *self, PyObject *data) {
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    int failed = frames_append((PyObject *)self, view.buf, view.len);
    PyBuffer_Release(&view);
    if (failed)
        return NULL;
    PyObject *out = PyList_New(0);
    const uint8_t *frame;
    Py_ssize_t len;
    while (out != NULL && frames_peek((PyObject *)self, &frame, &len)) {
        PyObject *payload = PyBytes_FromStringAndSize((const char *)frame, len);
        if (payload == NULL || PyList_Append(out, payload) < 0)
            Py_CLEAR(out);
        Py_XDECREF(payload);
        frames_consume((PyObject *)self);
    }
    return out;
}

/* Bytes of an incomplete frame held back: what follows the last complete frame. */
static PyObject *FrameReader_buffered(FrameReader *self, void *closure) {
    Py_ssize_t tail = self->checked > self->end ? self->frame_at : self->checked;
    if (tail < self->start)
        tail = self->start;
    return PyLong_FromSsize_t(self->end - tail);
}

/* A complete frame is waiting to be taken. */
static PyObject *FrameReader_has_frame(FrameReader *self, void *closure) {
    const uint8_t *frame;
    Py_ssize_t len;
    return PyBool_FromLong(frames_peek((PyObject *)self, &frame, &len));
}

static PyMethodDef FrameReader_methods[] = {
    {"feed", (PyCFunction)FrameReader_feed, METH_O,
     "feed(data) -> list[bytes]\n\nThe payloads of the frames that data completes (FrameTooLarge for a bad length)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef FrameReader_getset[] = {
    {"buffered", (getter)FrameReader_buffered, NULL, "Bytes of an incomplete frame held back.", NULL},
    {"has_frame", (getter)FrameReader_has_frame, NULL, "A complete frame is waiting to be taken.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef FrameReader_members[] = {
    {"max_frame_size", T_PYSSIZET, offsetof(FrameReader, max_frame_size), READONLY, "The longest payload accepted."},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject FrameReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bookie.protocol._native.FrameReader",
    .tp_basicsize = sizeof(FrameReader),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "FrameReader(max_frame_size): splits a byte stream into frames (int32 length, then the payload).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)FrameReader_init,
    .tp_dealloc = (destructor)FrameReader_dealloc,
    .tp_methods = FrameReader_methods,
    .tp_getset = FrameReader_getset,
    .tp_members = FrameReader_members,
};
