/* Encoding, in the bookie.protocol._native module: the exact bytes protobuf writes, fields in number order, for
 * the bookie's side (an add's EOK answer, v3 or v2: encode_add_ok, and the C interface's encode_add_ok for the
 * request hot path) and for the client's (a v3 add request: encode_add, and the C interface's encode_add_request).
 * _native_internal.h has what the module's files share.
 */
#include "_native_internal.h"

#include <string.h>

#include "../_native_common.h"

/* ---------------------------------------------------------------------------------------------- the wire */

static uint8_t *write_varint(uint8_t *out, uint64_t value) {
    while (value >= 0x80) {
        *out++ = (uint8_t)(value | 0x80);
        value >>= 7;
    }
    *out++ = (uint8_t)value;
    return out;
}

static size_t varint_size(uint64_t value) {
    size_t n = 1;
    while (value >= 0x80) {
        value >>= 7;
        n++;
    }
    return n;
}

/* ----------------------------------------------------------------------- add answers (the bookie's side) */

/* The whole frame, length prefix included, of Response{header{VERSION_THREE, ADD_ENTRY, txnId}, status EOK,
 * addResponse{EOK, ledgerId, entryId}}: the bytes protobuf writes for it, fields in number order. At most
 * ADD_ANSWER_MAX bytes. */
static Py_ssize_t write_v3_add_ok(uint8_t *frame, uint64_t txn_id, int64_t ledger_id, int64_t entry_id) {
    size_t header_size = 5 + varint_size(txn_id);
    size_t add_size = 4 + varint_size((uint64_t)ledger_id) + varint_size((uint64_t)entry_id);
    size_t payload = 1 + varint_size(header_size) + header_size + 2 + 2 + varint_size(add_size) + add_size;
    uint8_t *out = write_int32_be(frame, (uint32_t)payload);
    *out++ = 0x0a; /* header */
    out = write_varint(out, header_size);
    *out++ = 0x08; /* version */
    *out++ = VERSION_THREE;
    *out++ = 0x10; /* operation */
    *out++ = OP_ADD_ENTRY;
    *out++ = 0x18; /* txnId */
    out = write_varint(out, txn_id);
    *out++ = 0x10; /* status EOK */
    *out++ = 0x00;
    *out++ = 0xaa; /* addResponse, field 101 */
    *out++ = 0x06;
    out = write_varint(out, add_size);
    *out++ = 0x08; /* status EOK */
    *out++ = 0x00;
    *out++ = 0x10; /* ledgerId */
    out = write_varint(out, (uint64_t)ledger_id);
    *out++ = 0x18; /* entryId */
    out = write_varint(out, (uint64_t)entry_id);
    return (Py_ssize_t)(out - frame);
}

enum { V2_ANSWER_PAYLOAD = 24 }; /* packet header, rc, ledgerId, entryId */

/* BookKeeper's PacketHeader.toInt: a version-0 header is the opcode alone. */
static uint32_t v2_header(int version, unsigned opcode) {
    return version == 0 ? opcode : ((uint32_t)(version & 0xFF) << 24) | ((opcode & 0xFF) << 16);
}

/* An add's EOK answer in the protocol of its request (C interface: ``encode_add_ok``). */
Py_ssize_t write_add_ok(uint8_t *out, int version, int protocol_version, uint64_t txn_id, int64_t ledger_id,
                        int64_t entry_id) {
    if (version == 3)
        return write_v3_add_ok(out, txn_id, ledger_id, entry_id);
    uint8_t *p = write_int32_be(out, V2_ANSWER_PAYLOAD);
    p = write_int32_be(p, v2_header(protocol_version, V2_OP_ADD_ENTRY));
    p = write_int32_be(p, 0); /* rc EOK */
    p = write_int64_be(p, (uint64_t)ledger_id);
    p = write_int64_be(p, (uint64_t)entry_id);
    return (Py_ssize_t)(p - out);
}

/* encode_add_ok(version, protocol_version, txn_id, ledger_id, entry_id): what the request hot path writes. */
PyObject *encode_add_ok(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError,
                     "encode_add_ok takes version, protocol_version, txn_id, ledger_id, entry_id (%zd given)", nargs);
        return NULL;
    }
    long version = PyLong_AsLong(args[0]);
    long protocol_version = PyLong_AsLong(args[1]);
    if (PyErr_Occurred())
        return NULL;
    uint64_t txn_id = PyLong_AsUnsignedLongLong(args[2]);
    if (txn_id == (uint64_t)-1 && PyErr_Occurred())
        return NULL;
    long long ledger_id = PyLong_AsLongLong(args[3]);
    if (ledger_id == -1 && PyErr_Occurred())
        return NULL;
    long long entry_id = PyLong_AsLongLong(args[4]);
    if (entry_id == -1 && PyErr_Occurred())
        return NULL;
    if ((version != 2 && version != 3) || protocol_version < 0 || protocol_version > 255) {
        PyErr_Format(PyExc_ValueError, "encode_add_ok: version %ld, protocol version %ld", version, protocol_version);
        return NULL;
    }
    uint8_t frame[ADD_ANSWER_MAX];
    Py_ssize_t n = write_add_ok(frame, (int)version, (int)protocol_version, txn_id, ledger_id, entry_id);
    return PyBytes_FromStringAndSize((const char *)frame, n);
}

/* ---------------------------------------------------------------------- add requests (the client's side) */

/* The whole frame, length prefix included, of Request{header{VERSION_THREE, ADD_ENTRY, txnId[, priority]},
 * addRequest{ledgerId, entryId, masterKey, body[, writeFlags][, flag RECOVERY_ADD]}}: the bytes protobuf writes
 * for it, fields in number order. A priority or writeFlags of 0 is left out, as the client never sets it. */
typedef struct {
    uint64_t txn_id;
    uint32_t priority;
    int64_t ledger_id, entry_id;
    const uint8_t *key;
    Py_ssize_t key_len;
    const uint8_t *body;
    Py_ssize_t body_len;
    int recovery;
    int32_t write_flags;
} AddRequestFields;

static size_t add_request_payload(const AddRequestFields *r) {
    uint64_t flags64 = (uint64_t)(int64_t)r->write_flags; /* int32 fields are sign-extended on the wire */
    size_t header_size = 5 + varint_size(r->txn_id) + (r->priority ? 1 + varint_size(r->priority) : 0);
    size_t add_size = 2 + varint_size((uint64_t)r->ledger_id) + varint_size((uint64_t)r->entry_id)
                      + 1 + varint_size((uint64_t)r->key_len) + (size_t)r->key_len
                      + 1 + varint_size((uint64_t)r->body_len) + (size_t)r->body_len
                      + (r->write_flags ? 1 + varint_size(flags64) : 0) + (r->recovery ? 3 : 0);
    return 1 + varint_size(header_size) + header_size + 2 + varint_size(add_size) + add_size;
}

/* Writes the frame to ``frame`` (4 + add_request_payload bytes). */
static void write_add_request(uint8_t *frame, const AddRequestFields *r) {
    uint64_t flags64 = (uint64_t)(int64_t)r->write_flags;
    size_t header_size = 5 + varint_size(r->txn_id) + (r->priority ? 1 + varint_size(r->priority) : 0);
    size_t add_size = 2 + varint_size((uint64_t)r->ledger_id) + varint_size((uint64_t)r->entry_id)
                      + 1 + varint_size((uint64_t)r->key_len) + (size_t)r->key_len
                      + 1 + varint_size((uint64_t)r->body_len) + (size_t)r->body_len
                      + (r->write_flags ? 1 + varint_size(flags64) : 0) + (r->recovery ? 3 : 0);
    uint8_t *out = write_int32_be(frame, (uint32_t)add_request_payload(r));
    *out++ = 0x0a; /* header */
    out = write_varint(out, header_size);
    *out++ = 0x08; /* version */
    *out++ = VERSION_THREE;
    *out++ = 0x10; /* operation */
    *out++ = OP_ADD_ENTRY;
    *out++ = 0x18; /* txnId */
    out = write_varint(out, r->txn_id);
    if (r->priority) {
        *out++ = 0x20; /* priority */
        out = write_varint(out, r->priority);
    }
    *out++ = 0xaa; /* addRequest, field 101 */
    *out++ = 0x06;
    out = write_varint(out, add_size);
    *out++ = 0x08; /* ledgerId */
    out = write_varint(out, (uint64_t)r->ledger_id);
    *out++ = 0x10; /* entryId */
    out = write_varint(out, (uint64_t)r->entry_id);
    *out++ = 0x1a; /* masterKey */
    out = write_varint(out, (uint64_t)r->key_len);
    memcpy(out, r->key, (size_t)r->key_len);
    out += r->key_len;
    *out++ = 0x22; /* body */
    out = write_varint(out, (uint64_t)r->body_len);
    memcpy(out, r->body, (size_t)r->body_len);
    out += r->body_len;
    if (r->write_flags) {
        *out++ = 0x28; /* writeFlags */
        out = write_varint(out, flags64);
    }
    if (r->recovery) {
        *out++ = 0xa0; /* flag, field 100: RECOVERY_ADD */
        *out++ = 0x06;
        *out++ = FLAG_RECOVERY_ADD;
    }
}

/* The C interface's add request: its size first (``out`` NULL), then written. -1 for an add beyond a frame. */
Py_ssize_t encode_add_request(uint8_t *out, uint64_t txn_id, int64_t ledger_id, int64_t entry_id,
                              const uint8_t *key, Py_ssize_t key_len, const uint8_t *body, Py_ssize_t body_len) {
    AddRequestFields r = {txn_id, 0, ledger_id, entry_id, key, key_len, body, body_len, 0, 0};
    size_t payload = add_request_payload(&r);
    if (payload > 0x7FFFFFFFu)
        return -1;
    if (out != NULL)
        write_add_request(out, &r);
    return (Py_ssize_t)(4 + payload);
}

PyObject *encode_add(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8) {
        PyErr_Format(PyExc_TypeError, "encode_add takes txn_id, priority, ledger_id, entry_id, master_key, body, "
                     "recovery, write_flags (%zd given)", nargs);
        return NULL;
    }
    AddRequestFields r;
    r.txn_id = PyLong_AsUnsignedLongLong(args[0]);
    if (r.txn_id == (uint64_t)-1 && PyErr_Occurred())
        return NULL;
    unsigned long priority = PyLong_AsUnsignedLong(args[1]);
    if (priority == (unsigned long)-1 && PyErr_Occurred())
        return NULL;
    long long ledger_id = PyLong_AsLongLong(args[2]);
    if (ledger_id == -1 && PyErr_Occurred())
        return NULL;
    long long entry_id = PyLong_AsLongLong(args[3]);
    if (entry_id == -1 && PyErr_Occurred())
        return NULL;
    r.recovery = PyObject_IsTrue(args[6]);
    if (r.recovery < 0)
        return NULL;
    long write_flags = PyLong_AsLong(args[7]);
    if (write_flags == -1 && PyErr_Occurred())
        return NULL;
    if (priority > 0xFFFFFFFFul || write_flags < INT32_MIN || write_flags > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "priority or write_flags outside 32 bits");
        return NULL;
    }
    r.priority = (uint32_t)priority;
    r.ledger_id = ledger_id;
    r.entry_id = entry_id;
    r.write_flags = (int32_t)write_flags;
    Py_buffer key, body;
    if (PyObject_GetBuffer(args[4], &key, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[5], &body, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&key);
        return NULL;
    }
    r.key = key.buf;
    r.key_len = key.len;
    r.body = body.buf;
    r.body_len = body.len;
    size_t payload = add_request_payload(&r);
    PyObject *frame = NULL;
    if (payload > 0x7FFFFFFFu) {
        PyErr_SetString(PyExc_OverflowError, "add request larger than a frame");
    } else {
        frame = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(4 + payload));
        if (frame != NULL)
            write_add_request((uint8_t *)PyBytes_AS_STRING(frame), &r);
    }
    PyBuffer_Release(&key);
    PyBuffer_Release(&body);
    return frame;
}
