/* LedgerState of the bookie.storage._write_path module: BookKeeper's TransientLedgerInfo with the ledger's
 * LedgerData (_write_path_internal.h has the struct, whose fields the hot add reads). */
#include "_write_path_internal.h"

#include <structmember.h>

#include "../_native_common.h"

static PyObject *str_master_key, *str_fenced, *str_exists;

static int LedgerState_set_data(LedgerState *self, PyObject *data, void *closure) {
    if (data == NULL) {
        PyErr_SetString(PyExc_AttributeError, "a ledger state's data cannot be deleted");
        return -1;
    }
    PyObject *key = PyObject_GetAttr(data, str_master_key);
    if (key == NULL)
        return -1;
    if (!PyBytes_Check(key)) {
        PyErr_Format(PyExc_TypeError, "LedgerData.master_key must be bytes, not %s", Py_TYPE(key)->tp_name);
        Py_DECREF(key);
        return -1;
    }
    PyObject *fenced = PyObject_GetAttr(data, str_fenced), *exists = PyObject_GetAttr(data, str_exists);
    int is_fenced = fenced == NULL ? -1 : PyObject_IsTrue(fenced);
    int does_exist = exists == NULL ? -1 : PyObject_IsTrue(exists);
    Py_XDECREF(fenced);
    Py_XDECREF(exists);
    if (is_fenced < 0 || does_exist < 0) {
        Py_DECREF(key);
        return -1;
    }
    Py_XSETREF(self->master_key, key);
    Py_XSETREF(self->data, Py_NewRef(data));
    self->fenced = (char)is_fenced;
    self->exists = (char)does_exist;
    return 0;
}

static PyObject *LedgerState_get_data(LedgerState *self, void *closure) { return Py_NewRef(self->data); }

static PyObject *LedgerState_get_lac(LedgerState *self, void *closure) {
    if (!self->has_lac)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(self->lac);
}

static int LedgerState_set_lac(LedgerState *self, PyObject *value, void *closure) {
    if (value == NULL || value == Py_None) {
        self->has_lac = 0;
        return 0;
    }
    long long lac = PyLong_AsLongLong(value);
    if (lac == -1 && PyErr_Occurred())
        return -1;
    self->lac = lac;
    self->has_lac = 1;
    return 0;
}

static PyObject *LedgerState_get_watchers(LedgerState *self, void *closure) { return Py_NewRef(self->watchers); }

static int LedgerState_set_watchers(LedgerState *self, PyObject *value, void *closure) {
    if (value == NULL || !PySet_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "a ledger state's watchers must be a set");
        return -1;
    }
    Py_XSETREF(self->watchers, Py_NewRef(value));
    return 0;
}

static int LedgerState_init(LedgerState *self, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"data", "lac", "lac_updated_ms", "key_journaled", NULL};
    PyObject *data, *lac = Py_None;
    long long updated = 0;
    int journaled = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OLp:LedgerState", keywords, &data, &lac, &updated, &journaled))
        return -1;
    if (LedgerState_set_data(self, data, NULL) < 0 || LedgerState_set_lac(self, lac, NULL) < 0)
        return -1;
    PyObject *watchers = PySet_New(NULL);
    if (watchers == NULL)
        return -1;
    Py_XSETREF(self->watchers, watchers);
    self->lac_updated_ms = updated;
    self->key_journaled = (char)journaled;
    return 0;
}

static int LedgerState_traverse(LedgerState *self, visitproc visit, void *arg) {
    Py_VISIT(self->data);
    Py_VISIT(self->master_key);
    Py_VISIT(self->watchers);
    return 0;
}

static int LedgerState_clear(LedgerState *self) {
    Py_CLEAR(self->data);
    Py_CLEAR(self->master_key);
    Py_CLEAR(self->watchers);
    return 0;
}

static void LedgerState_dealloc(LedgerState *self) {
    PyObject_GC_UnTrack(self);
    LedgerState_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *LedgerState_repr(LedgerState *self) {
    PyObject *lac = LedgerState_get_lac(self, NULL);
    PyObject *out = PyUnicode_FromFormat("LedgerState(data=%R, lac=%R, key_journaled=%s)", self->data, lac,
                                         self->key_journaled ? "True" : "False");
    Py_XDECREF(lac);
    return out;
}

static PyGetSetDef LedgerState_getset[] = {
    {"data", (getter)LedgerState_get_data, (setter)LedgerState_set_data, "The ledger's LedgerData.", NULL},
    {"lac", (getter)LedgerState_get_lac, (setter)LedgerState_set_lac,
     "The last add confirmed: None until computed after a start.", NULL},
    {"watchers", (getter)LedgerState_get_watchers, (setter)LedgerState_set_watchers,
     "Futures of the long polls parked on this ledger's LAC.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef LedgerState_members[] = {
    {"lac_updated_ms", T_LONGLONG, offsetof(LedgerState, lac_updated_ms), 0, "When the LAC last moved (epoch ms)."},
    {"key_journaled", T_BOOL, offsetof(LedgerState, key_journaled), 0, "The master key record is in this run's journal."},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject LedgerStateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bookie.storage._write_path.LedgerState",
    .tp_basicsize = sizeof(LedgerState),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "LedgerState(data, lac=None, lac_updated_ms=0, key_journaled=False): a ledger in this bookie's memory.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)LedgerState_init,
    .tp_dealloc = (destructor)LedgerState_dealloc,
    .tp_traverse = (traverseproc)LedgerState_traverse,
    .tp_clear = (inquiry)LedgerState_clear,
    .tp_repr = (reprfunc)LedgerState_repr,
    .tp_getset = LedgerState_getset,
    .tp_members = LedgerState_members,
};

int ledger_state_intern_names(void) {
    const InternedName names[] = {{&str_master_key, "master_key"}, {&str_fenced, "fenced"}, {&str_exists, "exists"}};
    return intern_names(names, COUNT_OF(names));
}
