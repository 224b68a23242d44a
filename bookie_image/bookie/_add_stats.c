/* AddStats of the bookie._requests module: the request hot path's add latencies and bytes, in the buckets of
 * bookie/stats.py's OpStat, merged into the processor's statistics when they are read (``drain_into``).
 * _requests_internal.h has the struct and the inline stats_record the hot path calls per add.
 */
#include "_requests_internal.h"

#include <math.h>
#include <string.h>

#include "_native_common.h"

static PyObject *str_ok, *str_failed, *str_count, *str_sum, *str_current, *str_current_max;

/* bookie/stats.py's OpStat.record bucket: _SUB linear steps per power of two from 2**_MIN_EXP. */
void side_record(AddStats *s, Side *side, double value) {
    side->count++;
    side->sum += value;
    int index = 0;
    if (value > 0) {
        int exp;
        double mantissa = frexp(value, &exp);
        index = (exp - s->min_exp) * s->sub + (int)((mantissa - 0.5) * (2 * s->sub));
        index = index < 0 ? 0 : (index < s->nbuckets ? index : s->nbuckets - 1);
    }
    side->buckets[index]++;
    if (!side->touched || value > side->max)
        side->max = value;
    side->touched = 1;
}

static int AddStats_init(AddStats *self, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"enabled", "sub", "min_exp", "nbuckets", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "piii:AddStats", keywords, &self->enabled, &self->sub,
                                     &self->min_exp, &self->nbuckets))
        return -1;
    if (self->ok.buckets != NULL || self->sub <= 0 || self->nbuckets <= 0) {
        PyErr_SetString(PyExc_ValueError, "AddStats: initialized twice, or sub and nbuckets not positive");
        return -1;
    }
    self->ok.buckets = PyMem_Calloc((size_t)self->nbuckets, sizeof(long long));
    self->failed.buckets = PyMem_Calloc((size_t)self->nbuckets, sizeof(long long));
    if (self->ok.buckets == NULL || self->failed.buckets == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void AddStats_dealloc(AddStats *self) {
    PyMem_Free(self->ok.buckets);
    PyMem_Free(self->failed.buckets);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int add_to_attr(PyObject *obj, PyObject *name, PyObject *amount) {
    PyObject *old = PyObject_GetAttr(obj, name);
    PyObject *sum = old == NULL ? NULL : PyNumber_Add(old, amount);
    int rc = sum == NULL ? -1 : PyObject_SetAttr(obj, name, sum);
    Py_XDECREF(old);
    Py_XDECREF(sum);
    return rc;
}

/* Adds a side's events to an OpStat side (stats._Side: count, sum, current buckets, current_max), then resets it. */
static int side_drain(AddStats *s, Side *side, PyObject *target) {
    if (!side->touched)
        return 0;
    PyObject *count = PyLong_FromLongLong(side->count), *sum = PyFloat_FromDouble(side->sum);
    int rc = count == NULL || sum == NULL || add_to_attr(target, str_count, count) < 0
             || add_to_attr(target, str_sum, sum) < 0 ? -1 : 0;
    Py_XDECREF(count);
    Py_XDECREF(sum);
    PyObject *current = rc == 0 ? PyObject_GetAttr(target, str_current) : NULL;
    if (current == NULL || !PyList_Check(current) || PyList_GET_SIZE(current) != s->nbuckets) {
        if (current != NULL)
            PyErr_SetString(PyExc_ValueError, "AddStats: the OpStat's buckets differ from these");
        Py_XDECREF(current);
        return -1;
    }
    for (int i = 0; i < s->nbuckets; i++) {
        if (side->buckets[i] == 0)
            continue;
        PyObject *n = PyLong_FromLongLong(side->buckets[i]);
        PyObject *total = n == NULL ? NULL : PyNumber_Add(PyList_GET_ITEM(current, i), n);
        Py_XDECREF(n);
        if (total == NULL || PyList_SetItem(current, i, total) < 0) {
            Py_DECREF(current);
            return -1;
        }
    }
    Py_DECREF(current);
    PyObject *max = PyObject_GetAttr(target, str_current_max);
    double was = max == NULL ? 0 : PyFloat_AsDouble(max);
    Py_XDECREF(max);
    if (PyErr_Occurred())
        return -1;
    if (side->max > was) {
        PyObject *value = PyFloat_FromDouble(side->max);
        rc = value == NULL ? -1 : PyObject_SetAttr(target, str_current_max, value);
        Py_XDECREF(value);
        if (rc < 0)
            return -1;
    }
    memset(side->buckets, 0, sizeof(long long) * (size_t)s->nbuckets);
    side->count = 0;
    side->sum = 0;
    side->touched = 0;
    return 0;
}

/* drain_into(opstat) -> int: this recorder's events added to the OpStat's current window; returns the entry bytes
 * of the successful adds since the last drain. */
static PyObject *AddStats_drain_into(AddStats *self, PyObject *opstat) {
    PyObject *ok = PyObject_GetAttr(opstat, str_ok), *failed = PyObject_GetAttr(opstat, str_failed);
    int rc = ok == NULL || failed == NULL || side_drain(self, &self->ok, ok) < 0
             || side_drain(self, &self->failed, failed) < 0 ? -1 : 0;
    Py_XDECREF(ok);
    Py_XDECREF(failed);
    if (rc < 0)
        return NULL;
    long long bytes = self->write_bytes;
    self->write_bytes = 0;
    return PyLong_FromLongLong(bytes);
}

static PyMethodDef AddStats_methods[] = {
    {"drain_into", (PyCFunction)AddStats_drain_into, METH_O,
     "drain_into(opstat) -> int\n\nAdd the recorded latencies to the OpStat; the entry bytes added meanwhile."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject AddStatsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bookie._requests.AddStats",
    .tp_basicsize = sizeof(AddStats),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "AddStats(enabled, sub, min_exp, nbuckets): the hot path's add latencies, in OpStat's buckets.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)AddStats_init,
    .tp_dealloc = (destructor)AddStats_dealloc,
    .tp_methods = AddStats_methods,
};

int add_stats_intern_names(void) {
    const InternedName names[] = {
        {&str_ok, "ok"}, {&str_failed, "failed"}, {&str_count, "count"}, {&str_sum, "sum"},
        {&str_current, "current"}, {&str_current_max, "current_max"},
    };
    return intern_names(names, COUNT_OF(names));
}
