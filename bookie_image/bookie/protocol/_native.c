/* The protocol's hot parts in C: splitting a connection's byte stream into frames (FrameReader), decoding an
 * add request (v3 and v2) and encoding its EOK answer in the bookie, and in the client encoding that request
 * (encode_add) and decoding its answer (decode_add_response). The bookie's request hot path (bookie/_requests.c)
 * uses the frame reader, the add decoder and the answer encoder through the C interface of _native_api.h, the
 * client's (bookie/client/_client_stream.c) the request encoder and the answer decoder.
 *
 * Every entry a client writes crosses these steps. Done with protobuf message objects they cost about 7.5 us
 * of interpreter time per add (parse, a dozen attribute reads, building the response message), a sixth of the
 * whole add; here they are one pass over the bytes.
 *
 * One file per concern (_native_internal.h lists them and holds what they share): decoding in _add_decode.c,
 * encoding in _add_encode.c, FrameReader in _frame_reader.c; this one holds the module itself: its functions,
 * its C interface and its init.
 */
#include "_native_internal.h"

#include "../_native_common.h"

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
