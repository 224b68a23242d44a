/* The protocol's C interface for the bookie's other extension modules (the request hot paths of the bookie and
 * of the client).
 *
 * bookie.protocol._native exports one ``BookieProtocolApi`` in the capsule named below; a module that uses it
 * calls ``bookie_protocol_import()`` once, in its init function. Only bytes cross this interface: frames in,
 * decoded add fields and encoded adds and answers out. Nothing here knows about storage. The client's hot path
 * (bookie/client/_client_stream.c) uses it too.
 */
#ifndef BOOKIE_PROTOCOL_NATIVE_API_H
#define BOOKIE_PROTOCOL_NATIVE_API_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define BOOKIE_PROTOCOL_CAPSULE "bookie.protocol._native._C_API"

/* An add request's fields, pointing into the frame it was decoded from. */
typedef struct {
    int version;           /* 2 or 3: the wire protocol */
    int protocol_version;  /* v2: the packet header's version byte; v3: the BKPacketHeader's version */
    uint64_t txn_id;       /* v3 only */
    int high_priority;     /* v3 priority > 0, or the v2 HIGH_PRIORITY flag */
    int recovery;          /* v3 flag RECOVERY_ADD, or the v2 RECOVERY_ADD flag */
    int32_t write_flags;   /* v3 only */
    int64_t ledger_id, entry_id;
    const uint8_t *master_key;
    Py_ssize_t master_key_len;
    const uint8_t *body;   /* the entry as the client packaged it: header, digest, payload */
    Py_ssize_t body_len;
} AddFrame;

/* The longest EOK answer to an add: a v3 one with 10-byte varints, or a v2 one (28 bytes). */
enum { ADD_ANSWER_MAX = 64 };

typedef struct {
    /* 1 when ``frame`` (its length prefix removed) is an add: a v3 Request with every field an add needs, or a
     * v2 add of full length; 0 for anything else, which the general decoder (codec.py) then sorts out. */
    int (*decode_add)(const uint8_t *frame, Py_ssize_t len, AddFrame *out);
    /* Writes the whole EOK answer frame to ``out`` (at least ADD_ANSWER_MAX bytes) and returns its length: the
     * bytes codec.encode_response writes for an AddResponse with status EOK to that request. */
    Py_ssize_t (*encode_add_ok)(uint8_t *out, int version, int protocol_version, uint64_t txn_id,
                                int64_t ledger_id, int64_t entry_id);
    /* The FrameReader type (bookie.protocol.framing.FrameReader) and its C-level use without copies:
     * ``frames_append`` takes received bytes (-1 with FrameTooLarge raised for a bad length); ``frames_peek``
     * is 1 with the next complete frame's payload when there is one (valid until the next append or consume);
     * ``frames_consume`` drops that frame. ``frames_receive_buffer`` gives the reader's free space for a read to
     * fill in place (valid until the next call on the reader), and ``frames_received`` says how much it filled
     * (-1 with FrameTooLarge as for an append). */
    PyTypeObject *frame_reader_type;
    int (*frames_append)(PyObject *reader, const uint8_t *data, Py_ssize_t len);
    int (*frames_receive_buffer)(PyObject *reader, uint8_t **space, Py_ssize_t *len);
    int (*frames_received)(PyObject *reader, Py_ssize_t len);
    int (*frames_peek)(PyObject *reader, const uint8_t **frame, Py_ssize_t *len);
    void (*frames_consume)(PyObject *reader);
    /* The client's side. ``encode_add_request`` writes the whole v3 add request frame (no priority, no flags: a
     * writer's add) to ``out`` and returns its length; with ``out`` NULL it only returns the length; -1 when it
     * would not fit a frame. ``decode_add_answer`` is 1 when ``frame`` is a v3 answer to an add, with its txn id
     * and the addResponse's status. */
    Py_ssize_t (*encode_add_request)(uint8_t *out, uint64_t txn_id, int64_t ledger_id, int64_t entry_id,
                                     const uint8_t *master_key, Py_ssize_t master_key_len, const uint8_t *body,
                                     Py_ssize_t body_len);
    int (*decode_add_answer)(const uint8_t *frame, Py_ssize_t len, uint64_t *txn_id, int32_t *add_status);
} BookieProtocolApi;

static inline const BookieProtocolApi *bookie_protocol_import(void) {
    /* PyCapsule_Import finds the capsule through the package's attributes: the module must be imported first. */
    PyObject *module = PyImport_ImportModule("bookie.protocol._native");
    if (module == NULL)
        return NULL;
    Py_DECREF(module);
    return (const BookieProtocolApi *)PyCapsule_Import(BOOKIE_PROTOCOL_CAPSULE, 0);
}

#endif
