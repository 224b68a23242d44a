/* InFlightCounts of the bookie._requests module: requests in progress and their bytes, with the processor's limits
 * (bookie/processor.py's InFlight adds the waiting); the request hot path counts its adds in the same counts.
 * _requests_internal.h has the struct, its inline limit checks, and what the module's files share.
 */
#include "_requests_internal.h"

#include <stddef.h>
#include <structmember.h>

#include "_native_common.h"

static PyObject *str_wake;

int inflight_leave(InFlightCounts *c, long long size) {
    c->count--;
    c->bytes -= size;
    if (c->waiting <= 0)
        return 0;
    PyObject *result = PyObject_CallMethodNoArgs((PyObject *)c, str_wake);
    Py_XDECREF(result);
    return result == NULL ? -1 : 0;
}

static int InFlightCounts_init(InFlightCounts *self, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"pending_limit", "in_progress_limit", "bytes_limit", NULL};
    self->bytes_limit = 0;
    return PyArg_ParseTupleAndKeywords(args, kwds, "LL|L:InFlightCounts", keywords, &self->pending_limit,
                                       &self->in_progress_limit, &self->bytes_limit)
               ? 0
               : -1;
}

static int parse_size(PyObject *const *args, Py_ssize_t nargs, long long *size) {
    *size = 0;
    if (nargs > 1) {
        PyErr_Format(PyExc_TypeError, "takes at most one size (%zd given)", nargs);
        return -1;
    }
    if (nargs == 1) {
        *size = PyLong_AsLongLong(args[0]);
        if (*size == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

static PyObject *InFlightCounts_enter(InFlightCounts *self, PyObject *const *args, Py_ssize_t nargs) {
    long long size;
    if (parse_size(args, nargs, &size) < 0)
        return NULL;
    self->count++;
    self->bytes += size;
    Py_RETURN_NONE;
}

static PyObject *InFlightCounts_leave(InFlightCounts *self, PyObject *const *args, Py_ssize_t nargs) {
    long long size;
    if (parse_size(args, nargs, &size) < 0 || inflight_leave(self, size) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *InFlightCounts_over_pending_limit(InFlightCounts *self, PyObject *unused) {
    return PyBool_FromLong(over_pending_limit(self));
}

static PyObject *InFlightCounts_must_pause(InFlightCounts *self, PyObject *unused) {
    return PyBool_FromLong(must_pause(self));
}

static PyMethodDef InFlightCounts_methods[] = {
    {"enter", (PyCFunction)(void (*)(void))InFlightCounts_enter, METH_FASTCALL, "enter(size=0)\n\nOne more in progress."},
    {"leave", (PyCFunction)(void (*)(void))InFlightCounts_leave, METH_FASTCALL,
     "leave(size=0)\n\nOne fewer in progress; waiting connections are woken (self._wake())."},
    {"over_pending_limit", (PyCFunction)InFlightCounts_over_pending_limit, METH_NOARGS,
     "over_pending_limit() -> bool\n\nA new request must be refused."},
    {"must_pause", (PyCFunction)InFlightCounts_must_pause, METH_NOARGS,
     "must_pause() -> bool\n\nConnections must stop reading until a slot frees."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef InFlightCounts_members[] = {
    {"count", T_LONGLONG, offsetof(InFlightCounts, count), READONLY, "Requests in progress."},
    {"bytes", T_LONGLONG, offsetof(InFlightCounts, bytes), READONLY, "Their bytes (an add's entry)."},
    {"pending_limit", T_LONGLONG, offsetof(InFlightCounts, pending_limit), 0, "Refuse beyond this (0: none)."},
    {"in_progress_limit", T_LONGLONG, offsetof(InFlightCounts, in_progress_limit), 0, "Pause at this (0: none)."},
    {"bytes_limit", T_LONGLONG, offsetof(InFlightCounts, bytes_limit), 0, "Pause at these bytes (0: none)."},
    {"waiting", T_INT, offsetof(InFlightCounts, waiting), 0, "Connections waiting for a slot."},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject InFlightCountsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bookie._requests.InFlightCounts",
    .tp_basicsize = sizeof(InFlightCounts),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "InFlightCounts(pending_limit, in_progress_limit, bytes_limit=0): requests of one kind in progress.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)InFlightCounts_init,
    .tp_methods = InFlightCounts_methods,
    .tp_members = InFlightCounts_members,
};

int inflight_counts_intern_names(void) {
    const InternedName names[] = {{&str_wake, "_wake"}};
    return intern_names(names, COUNT_OF(names));
}
