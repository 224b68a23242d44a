/* Decoding, in the bookie.protocol._native module: the protobuf wire rules read in one pass over a frame's bytes,
 * for the bookie's side (a v3 or v2 add request: decode_add, decode_v2_add, and the C interface's decode_add for
 * the request hot path) and for the client's (a v3 answer to an add: decode_add_response, and the C interface's
 * decode_add_answer). _native_internal.h has what the module's files share.
 *
 * decode_add(frame) reads a BookKeeper v3 ``Request`` (BookkeeperProtocol.proto) whose header says
 * ADD_ENTRY with the protobuf wire rules: fields in any order, repeated occurrences of a message merged and
 * the last scalar kept, unknown fields skipped, a field whose wire type does not match its declaration
 * treated as unknown, an enum value outside its enum treated as unknown (proto2 closed enums). It returns
 * a tuple when the frame is such a request with every required field, and None otherwise: another
 * operation, a missing field, or bytes that are no protobuf at all. The caller then decodes the frame as
 * any other request (codec.py), which sorts out those cases.
 */
#include "_native_internal.h"

#include <string.h>

#include "../_native_common.h"

/* ---------------------------------------------------------------------------------------------- the wire */

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2, WIRE_FIXED32 = 5 };

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

/* -------------------------------------------------------------------- the header of requests and answers */

typedef struct {
    int has_version, has_operation, has_txn_id;
    uint64_t txn_id;
    int32_t version, operation;
    uint32_t priority;
} Header;

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

/* ---------------------------------------------------------------------- add requests (the bookie's side) */

typedef struct {
    int has_ledger_id, has_entry_id, has_master_key, has_body;
    int64_t ledger_id, entry_id;
    int32_t flag, write_flags;
    Cursor master_key, body;
} Add;

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

PyObject *decode_add(PyObject *module, PyObject *frame) {
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

enum { V2_ADD_MIN_SIZE = 4 + 20 + 32 }; /* header, master key, entry header */
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

PyObject *decode_v2_add(PyObject *module, PyObject *frame) {
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

/* The C interface's ``decode_add``: a v3 add (a frame whose first byte is no v2 version byte) or a v2 add. */
int decode_add_frame(const uint8_t *frame, Py_ssize_t len, AddFrame *out) {
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

/* ----------------------------------------------------------------------- add answers (the client's side) */

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
int decode_add_answer(const uint8_t *frame, Py_ssize_t len, uint64_t *txn_id, int32_t *add_status) {
    Header h;
    AddAnswer a;
    int32_t status = 0;
    if (len <= 0 || frame[0] <= 2 || !parse_add_response(frame, len, &h, &a, &status))
        return 0;
    *txn_id = h.txn_id;
    *add_status = a.status;
    return 1;
}

PyObject *decode_add_response(PyObject *module, PyObject *frame) {
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
