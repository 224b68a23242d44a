/* The entry log's record packing in C: a checkpoint's entries appended to the write buffer.
 *
 * Every entry the bookie stores passes through this loop once, on the checkpoint thread; in Python it cost
 * a few microseconds of interpreter time per entry (a size prefix, two buffer appends, a location tuple),
 * all of it holding the GIL the event loop needs. The loop's rules stay in entrylog.py's words: records are
 * ``int32 size`` (big-endian) then the entry; an entry's location is ``(log id << 32) | offset of its
 * bytes``; a log is full when the next record would pass its size limit, unless it holds nothing yet (an
 * entry larger than a log still gets a log of its own).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { SIZE_PREFIX = 4 };

/* append_records(buffer, locations, ledger_id, entry_ids, bodies, index, position, log_id, limit,
 *                first_position, flush_at) -> (index, position)
 *
 * Appends the records of bodies[index:] to ``buffer`` and their (ledger_id, entry_id, location) to
 * ``locations``, starting at log offset ``position``; stops before a record that would pass ``limit``
 * (unless ``position`` is still ``first_position``) and once ``buffer`` holds ``flush_at`` bytes. Returns
 * the index of the first entry not appended and the log offset after the last one. */
static PyObject *append_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 11) {
        PyErr_Format(PyExc_TypeError, "append_records takes 11 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *buffer = args[0], *locations = args[1], *ledger_id = args[2], *ids = args[3], *bodies = args[4];
    if (!PyByteArray_CheckExact(buffer) || !PyList_CheckExact(locations) || !PyList_CheckExact(ids)
        || !PyList_CheckExact(bodies)) {
        PyErr_SetString(PyExc_TypeError, "append_records: buffer must be a bytearray, the rest lists");
        return NULL;
    }
    if (PyList_GET_SIZE(ids) != PyList_GET_SIZE(bodies)) {
        PyErr_SetString(PyExc_ValueError, "append_records: entry_ids and bodies differ in length");
        return NULL;
    }
    Py_ssize_t index = PyLong_AsSsize_t(args[5]);
    long long position = PyLong_AsLongLong(args[6]);
    long long log_id = PyLong_AsLongLong(args[7]);
    long long limit = PyLong_AsLongLong(args[8]);
    long long first_position = PyLong_AsLongLong(args[9]);
    Py_ssize_t flush_at = PyLong_AsSsize_t(args[10]);
    if (PyErr_Occurred())
        return NULL;
    if (index < 0 || log_id < 0 || log_id > 0x7FFFFFFF || position < 0 || position > 0xFFFFFFFFLL) {
        PyErr_SetString(PyExc_ValueError, "append_records: index, log id or position out of range");
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(bodies);
    for (; index < count; index++) {
        if (PyByteArray_GET_SIZE(buffer) >= flush_at)
            break;
        Py_buffer body;
        if (PyObject_GetBuffer(PyList_GET_ITEM(bodies, index), &body, PyBUF_SIMPLE) < 0)
            return NULL;
        if (body.len > INT32_MAX) {
            PyBuffer_Release(&body);
            PyErr_Format(PyExc_ValueError, "entry of %zd bytes: an entry log record holds at most %d", body.len,
                         INT32_MAX);
            return NULL;
        }
        long long record = SIZE_PREFIX + (long long)body.len;
        if (position + record > limit && position > first_position) {
            PyBuffer_Release(&body);
            break;
        }
        if (position + SIZE_PREFIX > 0xFFFFFFFFLL) {
            PyBuffer_Release(&body);
            PyErr_SetString(PyExc_ValueError, "entry log offset past 4 GiB: a location holds 32 bits of it");
            return NULL;
        }
        long long location = (log_id << 32) | (position + SIZE_PREFIX);
        PyObject *entry = Py_BuildValue("(OOL)", ledger_id, PyList_GET_ITEM(ids, index), location);
        int failed = entry == NULL || PyList_Append(locations, entry) < 0;
        Py_XDECREF(entry);
        Py_ssize_t at = PyByteArray_GET_SIZE(buffer);
        if (failed || PyByteArray_Resize(buffer, at + (Py_ssize_t)record) < 0) {
            PyBuffer_Release(&body);
            return NULL;
        }
        uint8_t *out = (uint8_t *)PyByteArray_AS_STRING(buffer) + at;
        uint32_t size = (uint32_t)body.len;
        out[0] = (uint8_t)(size >> 24);
        out[1] = (uint8_t)(size >> 16);
        out[2] = (uint8_t)(size >> 8);
        out[3] = (uint8_t)size;
        memcpy(out + SIZE_PREFIX, body.buf, (size_t)body.len);
        PyBuffer_Release(&body);
        position += record;
    }
    return Py_BuildValue("(nL)", index, position);
}

static PyMethodDef methods[] = {
    {"append_records", (PyCFunction)(void (*)(void))append_records, METH_FASTCALL,
     "append_records(buffer, locations, ledger_id, entry_ids, bodies, index, position, log_id, limit,"
     " first_position, flush_at) -> (index, position)\n\n"
     "Entry-log records of bodies[index:] appended to buffer, up to the log's limit or flush_at bytes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "bookie.storage._native",
    .m_doc = "The entry log's record packing, in C.",
    .m_size = 0,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module_def); }
