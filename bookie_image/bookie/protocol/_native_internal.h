/* What the files of the bookie.protocol._native extension module share (one module, compiled from several files by
 * setup.py, one file per concern; not an interface for other modules: that is _native_api.h).
 *
 *   _add_decode.c     the protobuf wire rules read: v3 and v2 add requests (the bookie's side), v3 add answers
 *                     (the client's side)
 *   _add_encode.c     the bytes protobuf writes: an add's EOK answer (v3 or v2), a v3 add request
 *   _frame_reader.c   FrameReader: a connection's byte stream cut into frames in one buffer
 *   _native.c         the module: its functions, its C interface (the table of _native_api.h), its init
 *
 * No file calls into another per frame: each decoder and encoder is whole in its file (the varint readers and
 * writers inlined there as before), and other modules reach them through the function pointers of the C interface,
 * as they did when the module was one file. Declared here is what _native.c puts in its tables.
 */
#ifndef BOOKIE_PROTOCOL_NATIVE_INTERNAL_H
#define BOOKIE_PROTOCOL_NATIVE_INTERNAL_H

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>
#include <stdint.h>

#include "_native_api.h"

/* What the module's files declare for one another stays inside the module's shared object: not exported, and so not
 * interposable, a call to it from its own file is a direct call the compiler may inline, as when it was static. */
#pragma GCC visibility push(hidden)

/* Values of BookkeeperProtocol.proto (v3) and of the v2 packet header that the decoders check and the encoders
 * write. */
enum { OP_ADD_ENTRY = 2, OP_LAST = 12, VERSION_THREE = 3, FLAG_RECOVERY_ADD = 1 };
enum { V2_OP_ADD_ENTRY = 1 };

/* ---------------------------------------------------------------------------------------------- _add_decode.c */

/* The C interface's ``decode_add`` and ``decode_add_answer`` (_native_api.h). */
int decode_add_frame(const uint8_t *frame, Py_ssize_t len, AddFrame *out);
int decode_add_answer(const uint8_t *frame, Py_ssize_t len, uint64_t *txn_id, int32_t *add_status);

/* The module functions decode_add, decode_v2_add and decode_add_response (their docstrings are _native.c's). */
PyObject *decode_add(PyObject *module, PyObject *frame);
PyObject *decode_v2_add(PyObject *module, PyObject *frame);
PyObject *decode_add_response(PyObject *module, PyObject *frame);

/* ---------------------------------------------------------------------------------------------- _add_encode.c */

/* The C interface's ``encode_add_ok`` and ``encode_add_request`` (_native_api.h). */
Py_ssize_t write_add_ok(uint8_t *out, int version, int protocol_version, uint64_t txn_id, int64_t ledger_id,
                        int64_t entry_id);
Py_ssize_t encode_add_request(uint8_t *out, uint64_t txn_id, int64_t ledger_id, int64_t entry_id,
                              const uint8_t *key, Py_ssize_t key_len, const uint8_t *body, Py_ssize_t body_len);

/* The module functions encode_add_ok and encode_add. */
PyObject *encode_add_ok(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *encode_add(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* ---------------------------------------------------------------------------------------------- _frame_reader.c */

extern PyTypeObject FrameReaderType;

/* Raised for a negative frame length or one above the reader's maximum; created by the module's init. */
extern PyObject *FrameTooLarge;

/* The C interface's frames_* functions (_native_api.h), on a FrameReader. */
int frames_append(PyObject *self, const uint8_t *data, Py_ssize_t len);
int frames_receive_buffer(PyObject *self, uint8_t **space, Py_ssize_t *len);
int frames_received(PyObject *self, Py_ssize_t len);
int frames_peek(PyObject *self, const uint8_t **frame, Py_ssize_t *len);
void frames_consume(PyObject *self);

#pragma GCC visibility pop

#endif
