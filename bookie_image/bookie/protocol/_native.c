/* The protocol's hot parts in C: splitting a connection's byte stream into frames (FrameReader), decoding an
 * add request (v3 and v2) and encoding its EOK answer in the bookie, and in the client encoding that request
 * (encode_add) and decoding its answer (decode_add_response). The bookie's request hot path (bookie/_requests.c)
 * uses the frame reader, the add decoder and the answer encoder through the C interface of _native_api.h.
 *
 * Every entry a client writes crosses these steps. Done with protobuf message objects they cost about 7.5 us
 * of interpreter time per add (parse, a dozen attribute reads, building the response message), a sixth of the
 * whole add; here they are one pass over the bytes.
 *
 * decode_add(frame) reads a BookKeeper v3 ``Request`` (BookkeeperProtocol.proto) whose header says
 * ADD_ENTRY with the protobuf wire rules: fields in any order, repeated occurrences of a message merged and
 * the last scalar kept, unknown fields skipped, a field whose wire type does not match its declaration
 * treated as unknown, an enum value outside its enum treated as unknown (proto2 closed enums). It returns
 * a tuple when the frame is such a request with every required field, and None otherwise: another
 * operation, a missing field, or bytes that are no protobuf at all. The caller then decodes the frame as
 * any other request (codec.py), which sorts out those cases.
 */
#include "_native_api.h"
#include "../_native_common.h"
#include <stddef.h>
#include <string.h>
#include <structmember.h>

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2, WIRE_FIXED32 = 5 };
enum { OP_ADD_ENTRY = 2, OP_LAST = 12, VERSION_THREE = 3, FLAG_RECOVERY_ADD = 1 };

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} Cursor;

/* A base-128 varint of at most 10 bytes; bits above 64 are dropped, as protobuf does. 0 on truncation. */
static int read_varint(Cursor *c, uint64_t *out) {
    uint64_t value = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (c->p >= c->end)
            return 0;
        uint8_t byte = *c->p++;
        if (shift < 64)
            value |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) {
            *out = value;
            return 1;
        }
    }
    return 0;
}

/* The payload of a length-delimited field. */
static int read_len(Cursor *c, Cursor *out) {
    uint64_t n;
    if (!read_varint(c, &n) || n > (uint64_t)(c->end - c->p))
        return 0;
    out->p = c->p;
    out->end = c->p + n;
    c->p += n;
    return 1;
}

static int read_tag(Cursor *c, uint64_t *field, int *wire_type);

enum { WIRE_START_GROUP = 3, WIRE_END_GROUP = 4, MAX_DEPTH = 100 };

/* Skips a field's value; a group (wire types 3 and 4, deprecated but valid) up to its matching end. */
static int skip_value(Cursor *c, int wire_type, uint64_t field, int depth) {
    uint64_t ignored;
    Cursor inner;
    switch (wire_type) {
    case WIRE_VARINT:
        return read_varint(c, &ignored);
    case WIRE_FIXED64:
        if (c->end - c->p < 8)
            return 0;
        c->p += 8;
        return 1;
    case WIRE_LEN:
        return read_len(c, &inner);
    case WIRE_FIXED32:
        if (c->end - c->p < 4)
            return 0;
        c->p += 4;
        return 1;
    case WIRE_START_GROUP:
        if (depth >= MAX_DEPTH)
            return 0;
        for (;;) {
            uint64_t inner_field;
            int inner_type;
            if (!read_tag(c, &inner_field, &inner_type))
                return 0;
            if (inner_type == WIRE_END_GROUP)
                return inner_field == field;
            if (!skip_value(c, inner_type, inner_field, depth + 1))
                return 0;
        }
    default: /* an end of group without its start, or wire types 6 and 7 */
        return 0;
    }
}

static int read_tag(Cursor *c, uint64_t *field, int *wire_type) {
    uint64_t tag;
    if (!read_varint(c, &tag) || (tag >> 3) == 0 || tag > 0xFFFFFFFFu)
        return 0;
    *field = tag >> 3;
    *wire_type = (int)(tag & 7);
    return 1;
}

typedef struct {
    int has_version, has_operation, has_txn_id;
    uint64_t txn_id;
    int32_t version, operation;
    uint32_t priority;
} Header;

typedef struct {
    int has_ledger_id, has_entry_id, has_master_key, has_body;
    int64_t ledger_id, entry_id;
    int32_t flag, write_flags;
    Cursor master_key, body;
} Add;

static int parse_header(Cursor c, Header *h) {
    while (c.p < c.end) {
        uint64_t field, v;
        int wt;
        if (!read_tag(&c, &field, &wt))
            return 0;
        if (wt != WIRE_VARINT || field < 1 || field > 4) {
            if (!skip_value(&c, wt, field, 0))
                return 0;
            continue;
        }
        if (!read_varint(&c, &v))
            return 0;
        int32_t as_enum = (int32_t)(uint32_t)v;
        switch (field) {
        case 1:
            if (as_enum >= 1 && as_enum <= 3) {
                h->version = as_enum;
                h->has_version = 1;
            }
            break;
        case 2:
            if (as_enum >= 1 && as_enum <= OP_LAST) {
                h->operation = as_enum;
                h->has_operation = 1;
            }
            break;
        case 3:
            h->txn_id = v;
            h->has_txn_id = 1;
            break;
        case 4:
            h->priority = (uint32_t)v;
            break;
        }
    }
    return 1;
}

static int parse_add(Cursor c, Add *a) {
    while (c.p < c.end) {
        uint64_t field, v;
        int wt;
        if (!read_tag(&c, &field, &wt))
            return 0;
        int is_bytes = field == 3 || field == 4;
        int is_varint = field == 1 || field == 2 || field == 5 || field == 100;
        if ((is_bytes && wt == WIRE_LEN) || (is_varint && wt == WIRE_VARINT)) {
            if (is_bytes) {
                Cursor value;
                if (!read_len(&c, &value))
                    return 0;
                if (field == 3) {
                    a->master_key = value;
                    a->has_master_key = 1;
                } else {
                    a->body = value;
                    a->has_body = 1;
                }
                continue;
            }
            if (!read_varint(&c, &v))
                return 0;
            switch (field) {
            case 1:
                a->ledger_id = (int64_t)v;
                a->has_ledger_id = 1;
                break;
            case 2:
                a->entry_id = (int64_t)v;
                a->has_entry_id = 1;
                break;
            case 5:
                a->write_flags = (int32_t)(uint32_t)v;
                break;
            case 100:
                if ((int32_t)(uint32_t)v == FLAG_RECOVERY_ADD)
                    a->flag = FLAG_RECOVERY_ADD;
                break;
            }
            continue;
        }
        if (!skip_value(&c, wt, field, 0))
            return 0;
    }
    return 1;
}

/* Request fields that carry another operation's body (readRequest = 100 .. getListOfEntriesOfLedger = 108)
 * or the request context (200), all messages: an add frame holding one is left to the general decoder. */
static int is_other_request_field(uint64_t field, int wire_type) {
    return wire_type == WIRE_LEN && ((field >= 100 && field <= 108 && field != 101) || field == 200);
}

/* One pass over a v3 frame: 1 when it is an add request with every field an add needs. */
static int parse_v3_add(const uint8_t *start, Py_ssize_t len, Header *h, Add *a) {
    Cursor c = {start, start + len};
    memset(h, 0, sizeof *h);
    memset(a, 0, sizeof *a);
    int has_header = 0, has_add = 0, ok = 1;
    while (ok && c.p < c.end) {
        uint64_t field;
        int wt;
        Cursor inner;
        if (!read_tag(&c, &field, &wt) || is_other_request_field(field, wt)) {
            ok = 0;
        } else if (field == 1 && wt == WIRE_LEN) {
            ok = read_len(&c, &inner) && parse_header(inner, h);
            has_header = 1;
        } else if (field == 101 && wt == WIRE_LEN) {
            ok = read_len(&c, &inner) && parse_add(inner, a);
            has_add = 1;
        } else {
            ok = skip_value(&c, wt, field, 0);
        }
    }
    return ok && has_header && h->has_version && h->has_operation && h->has_txn_id
           && h->operation == OP_ADD_ENTRY && has_add && a->has_ledger_id && a->has_entry_id && a->has_master_key
           && a->has_body;
}

static PyObject *decode_add(PyObject *module, PyObject *frame) {
    Py_buffer view;
    if (PyObject_GetBuffer(frame, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const uint8_t *start = (const uint8_t *)view.buf;
    Header h;
    Add a;
    PyObject *result = NULL;
    if (parse_v3_add(start, view.len, &h, &a)) {
        result = Py_BuildValue(
            "(KiILLy#nnOi)", (unsigned long long)h.txn_id, (int)h.version, (unsigned int)h.priority,
            (long long)a.ledger_id, (long long)a.entry_id, (const char *)a.master_key.p,
            (Py_ssize_t)(a.master_key.end - a.master_key.p), (Py_ssize_t)(a.body.p - start),
            (Py_ssize_t)(a.body.end - start), a.flag == FLAG_RECOVERY_ADD ? Py_True : Py_False,
            (int)a.write_flags);
    } else {
        result = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&view);
    return result;
}

enum { V2_OP_ADD_ENTRY = 1, V2_ADD_MIN_SIZE = 4 + 20 + 32 }; /* header, master key, entry header */
enum { V2_FLAG_RECOVERY_ADD = 0x0002, V2_FLAG_HIGH_PRIORITY = 0x0004 };

/* A v2 add: int32 packet header (version byte, opcode, flags; a version-0 header is the opcode alone), the
 * 20-byte master key, then the entry, which starts with its ledger and entry ids. 1 when ``p`` is one. */
static int parse_v2_add(const uint8_t *p, Py_ssize_t len, unsigned *version, unsigned *flags) {
    if (len < V2_ADD_MIN_SIZE)
        return 0;
    uint32_t header = ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
    *version = header >> 24;
    unsigned opcode = *version == 0 ? header & 0xFF : (header >> 16) & 0xFF;
    *flags = *version == 0 ? 0 : header & 0xFFFF;
    return opcode == V2_OP_ADD_ENTRY;
}

static PyObject *decode_v2_add(PyObject *module, PyObject *frame) {
    Py_buffer view;
    if (PyObject_GetBuffer(frame, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const uint8_t *p = (const uint8_t *)view.buf;
    unsigned version, flags;
    PyObject *result = NULL;
    if (parse_v2_add(p, view.len, &version, &flags))
        result = Py_BuildValue("(IILLy#)", version, flags, (long long)read_int64_be(p + 24),
                               (long long)read_int64_be(p + 32), (const char *)(p + 4), (Py_ssize_t)20);
    else
        result = Py_NewRef(Py_None);
    PyBuffer_Release(&view);
    return result;
}

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
static Py_ssize_t write_add_ok(uint8_t *out, int version, int protocol_version, uint64_t txn_id, int64_t ledger_id,
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
static PyObject *encode_add_ok(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
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

/* proto2's StatusCode: a value outside it is an unknown field, not a status. */
static int is_status(int32_t v) { return v == 0 || (v >= 402 && v <= 404) || (v >= 501 && v <= 507); }

typedef struct {
    int has_status, has_ledger_id, has_entry_id;
    int32_t status;
    int64_t ledger_id, entry_id;
} AddAnswer;

static int parse_add_answer(Cursor c, AddAnswer *a) {
    while (c.p < c.end) {
        uint64_t field, v;
        int wt;
        if (!read_tag(&c, &field, &wt))
            return 0;
        if (wt != WIRE_VARINT || field < 1 || field > 3) {
            if (!skip_value(&c, wt, field, 0))
                return 0;
            continue;
        }
        if (!read_varint(&c, &v))
            return 0;
        if (field == 1 && is_status((int32_t)(uint32_t)v)) {
            a->status = (int32_t)(uint32_t)v;
            a->has_status = 1;
        } else if (field == 2) {
            a->ledger_id = (int64_t)v;
            a->has_ledger_id = 1;
        } else if (field == 3) {
            a->entry_id = (int64_t)v;
            a->has_entry_id = 1;
        }
    }
    return 1;
}

/* Response fields that carry another operation's answer (readResponse = 100, 102 .. 108). */
static int is_other_response_field(uint64_t field, int wire_type) {
    return wire_type == WIRE_LEN && field >= 100 && field <= 108 && field != 101;
}

/* The client's side of an add: a v3 ``Response`` carrying an addResponse and no other operation's answer,
 * with the same wire rules as decode_add; 1 when ``p`` is one. */
static int parse_add_response(const uint8_t *p, Py_ssize_t len, Header *h, AddAnswer *a, int32_t *status) {
    Cursor c = {p, p + len};
    memset(h, 0, sizeof *h);
    memset(a, 0, sizeof *a);
    int has_header = 0, has_status = 0, has_add = 0, ok = 1;
    while (ok && c.p < c.end) {
        uint64_t field, v;
        int wt;
        Cursor inner;
        if (!read_tag(&c, &field, &wt) || is_other_response_field(field, wt)) {
            ok = 0;
        } else if (field == 1 && wt == WIRE_LEN) {
            ok = read_len(&c, &inner) && parse_header(inner, h);
            has_header = 1;
        } else if (field == 2 && wt == WIRE_VARINT) {
            ok = read_varint(&c, &v);
            if (ok && is_status((int32_t)(uint32_t)v)) {
                *status = (int32_t)(uint32_t)v;
                has_status = 1;
            }
        } else if (field == 101 && wt == WIRE_LEN) {
            ok = read_len(&c, &inner) && parse_add_answer(inner, a);
            has_add = 1;
        } else {
            ok = skip_value(&c, wt, field, 0);
        }
    }
    return ok && has_header && h->has_version && h->has_operation && h->has_txn_id && has_status && has_add
           && a->has_status && a->has_ledger_id && a->has_entry_id;
}

/* The C interface's ``decode_add_answer``: the answer's txn id and its addResponse's status. */
static int decode_add_answer(const uint8_t *frame, Py_ssize_t len, uint64_t *txn_id, int32_t *add_status) {
    Header h;
    AddAnswer a;
    int32_t status = 0;
    if (len <= 0 || frame[0] <= 2 || !parse_add_response(frame, len, &h, &a, &status))
        return 0;
    *txn_id = h.txn_id;
    *add_status = a.status;
    return 1;
}

static PyObject *decode_add_response(PyObject *module, PyObject *frame) {
    Py_buffer view;
    if (PyObject_GetBuffer(frame, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Header h;
    AddAnswer a;
    int32_t status = 0;
    PyObject *result = parse_add_response(view.buf, view.len, &h, &a, &status)
                           ? Py_BuildValue("(KiIiiLL)", (unsigned long long)h.txn_id, (int)h.version,
                                           (unsigned int)h.priority, (int)status, (int)a.status,
                                           (long long)a.ledger_id, (long long)a.entry_id)
                           : Py_NewRef(Py_None);
    PyBuffer_Release(&view);
    return result;
}

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
static Py_ssize_t encode_add_request(uint8_t *out, uint64_t txn_id, int64_t ledger_id, int64_t entry_id,
                                     const uint8_t *key, Py_ssize_t key_len, const uint8_t *body, Py_ssize_t body_len) {
    AddRequestFields r = {txn_id, 0, ledger_id, entry_id, key, key_len, body, body_len, 0, 0};
    size_t payload = add_request_payload(&r);
    if (payload > 0x7FFFFFFFu)
        return -1;
    if (out != NULL)
        write_add_request(out, &r);
    return (Py_ssize_t)(4 + payload);
}

static PyObject *encode_add(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
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

/* ------------------------------------------------------------------------------------------ the add, for C */

/* The C interface's ``decode_add``: a v3 add (a frame whose first byte is no v2 version byte) or a v2 add. */
static int decode_add_frame(const uint8_t *frame, Py_ssize_t len, AddFrame *out) {
    if (len <= 0)
        return 0;
    if (frame[0] > 2) {
        Header h;
        Add a;
        if (!parse_v3_add(frame, len, &h, &a))
            return 0;
        out->version = 3;
        out->protocol_version = h.version;
        out->txn_id = h.txn_id;
        out->high_priority = h.priority > 0;
        out->recovery = a.flag == FLAG_RECOVERY_ADD;
        out->write_flags = a.write_flags;
        out->ledger_id = a.ledger_id;
        out->entry_id = a.entry_id;
        out->master_key = a.master_key.p;
        out->master_key_len = a.master_key.end - a.master_key.p;
        out->body = a.body.p;
        out->body_len = a.body.end - a.body.p;
        return 1;
    }
    unsigned version, flags;
    if (!parse_v2_add(frame, len, &version, &flags))
        return 0;
    out->version = 2;
    out->protocol_version = (int)version;
    out->txn_id = 0;
    out->high_priority = (flags & V2_FLAG_HIGH_PRIORITY) != 0;
    out->recovery = (flags & V2_FLAG_RECOVERY_ADD) != 0;
    out->write_flags = 0;
    out->ledger_id = read_int64_be(frame + 24);
    out->entry_id = read_int64_be(frame + 32);
    out->master_key = frame + 4;
    out->master_key_len = 20;
    out->body = frame + 24;
    out->body_len = len - 24;
    return 1;
}

/* ------------------------------------------------------------------------------------------ frames */

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

static PyObject *FrameTooLarge;

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
static int frames_receive_buffer(PyObject *self, uint8_t **space, Py_ssize_t *len) {
    FrameReader *r = (FrameReader *)self;
    if (frames_make_room(r, FRAME_BUFFER_START) < 0)
        return -1;
    *space = r->buf + r->end;
    *len = r->cap - r->end;
    return 0;
}

/* ``len`` bytes were read into the space ``frames_receive_buffer`` gave: the frame lengths they complete are
 * checked (-1 with FrameTooLarge raised for a bad one). */
static int frames_received(PyObject *self, Py_ssize_t len) {
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

static int frames_append(PyObject *self, const uint8_t *data, Py_ssize_t len) {
    FrameReader *r = (FrameReader *)self;
    if (frames_make_room(r, len) < 0)
        return -1;
    memcpy(r->buf + r->end, data, (size_t)len);
    return frames_received(self, len);
}

static int frames_peek(PyObject *self, const uint8_t **frame, Py_ssize_t *len) {
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

static void frames_consume(PyObject *self) {
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

static PyTypeObject FrameReaderType = {
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

static const BookieProtocolApi api = {
    .decode_add = decode_add_frame,
    .encode_add_ok = write_add_ok,
    .frame_reader_type = &FrameReaderType,
    .frames_append = frames_append,
    .frames_receive_buffer = frames_receive_buffer,
    .frames_received = frames_received,
    .frames_peek = frames_peek,
    .frames_consume = frames_consume,
    .encode_add_request = encode_add_request,
    .decode_add_answer = decode_add_answer,
};

static PyMethodDef methods[] = {
    {"decode_add", (PyCFunction)decode_add, METH_O,
     "decode_add(frame) -> (txn_id, version, priority, ledger_id, entry_id, master_key, body_start, body_end,"
     " recovery, write_flags) | None\n\nA v3 add request's fields, or None when the frame is not one."},
    {"decode_v2_add", (PyCFunction)decode_v2_add, METH_O,
     "decode_v2_add(frame) -> (version, flags, ledger_id, entry_id, master_key) | None\n\n"
     "A v2 add's fields (its entry starts at byte 24), or None when the frame is not one of full length."},
    {"decode_add_response", (PyCFunction)decode_add_response, METH_O,
     "decode_add_response(frame) -> (txn_id, version, priority, status, add_status, ledger_id, entry_id) | None"
     "\n\nA v3 add response's fields, or None when the frame is not one."},
    {"encode_add", (PyCFunction)(void (*)(void))encode_add, METH_FASTCALL,
     "encode_add(txn_id, priority, ledger_id, entry_id, master_key, body, recovery, write_flags) -> bytes\n\n"
     "The framed v3 add request (a priority or write_flags of 0 left out)."},
    {"encode_add_ok", (PyCFunction)(void (*)(void))encode_add_ok, METH_FASTCALL,
     "encode_add_ok(version, protocol_version, txn_id, ledger_id, entry_id) -> bytes\n\n"
     "The framed EOK answer to an add (v3, or v2 with that header version)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "bookie.protocol._native",
    .m_doc = "The add path's decoding and encoding, in C.",
    .m_size = 0,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (FrameTooLarge == NULL) {
        FrameTooLarge = PyErr_NewExceptionWithDoc(
            "bookie.protocol._native.FrameTooLarge",
            "The announced frame length is above the maximum (or negative): the connection must be closed.",
            NULL, NULL);
        if (FrameTooLarge == NULL)
            return NULL;
    }
    const ModuleType types[] = {{&FrameReaderType, "FrameReader"}};
    PyObject *module = module_with_types(&module_def, types, COUNT_OF(types));
    if (module != NULL
        && (PyModule_AddObjectRef(module, "FrameTooLarge", FrameTooLarge) < 0
            || module_add_capsule(module, &api, BOOKIE_PROTOCOL_CAPSULE) < 0))
        Py_CLEAR(module);
    return module;
}
