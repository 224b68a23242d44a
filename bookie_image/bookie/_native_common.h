/* Helpers every C extension module of the bookie uses: byte order, clocks, growing output buffers, interned
 * attribute names and the module-init steps. Each is defined here once (scripts/native_sources.py fails CI on
 * a static function defined in two C files) and included by each module after <Python.h>:
 *     #include "_native_common.h"        (or "../_native_common.h" from a subpackage)
 * Everything is static inline: each module keeps its own copy, inlined where it is hot as before, and the
 * modules share no symbols. */

#ifndef BOOKIE_NATIVE_COMMON_H
#define BOOKIE_NATIVE_COMMON_H

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>
#include <stdint.h>
#include <time.h>

/* ---------------------------------------------------------------------------------------------- byte order */

static inline int64_t read_int64_be(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return (int64_t)v;
}

/* Returns the position after the four bytes written. */
static inline uint8_t *write_int32_be(uint8_t *out, uint32_t v) {
    out[0] = (uint8_t)(v >> 24);
    out[1] = (uint8_t)(v >> 16);
    out[2] = (uint8_t)(v >> 8);
    out[3] = (uint8_t)v;
    return out + 4;
}

static inline uint8_t *write_int64_be(uint8_t *out, uint64_t v) {
    out = write_int32_be(out, (uint32_t)(v >> 32));
    return write_int32_be(out, (uint32_t)v);
}

/* ---------------------------------------------------------------------------------------------- clocks */

/* Monotonic nanoseconds: durations and deadlines. */
static inline long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Wall-clock milliseconds since the epoch: times written to disk. */
static inline long long wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* ---------------------------------------------------------------------------------------------- output buffers */

/* Room for ``more`` bytes after the ``len`` used in ``*data`` (``*cap`` allocated, PyMem): the capacity doubles,
 * from ``first_cap``, until they fit. 0, or -1 with MemoryError set (the buffer is then unchanged). */
static inline int buffer_reserve(uint8_t **data, size_t *cap, size_t len, size_t more, size_t first_cap) {
    if (len + more <= *cap)
        return 0;
    size_t grown_cap = *cap ? *cap * 2 : first_cap;
    while (grown_cap < len + more)
        grown_cap *= 2;
    uint8_t *grown = PyMem_Realloc(*data, grown_cap);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *data = grown;
    *cap = grown_cap;
    return 0;
}

/* ---------------------------------------------------------------------------------------------- interned names */

/* An attribute name the module looks up by string, interned once at import (the lookups then compare
 * pointers). */
typedef struct {
    PyObject **slot;
    const char *name;
} InternedName;

/* 0, or -1 with an exception set. A slot already filled (the module imported again) is kept. */
static inline int intern_names(const InternedName *names, size_t count) {
    for (size_t i = 0; i < count; i++) {
        if (*names[i].slot == NULL)
            *names[i].slot = PyUnicode_InternFromString(names[i].name);
        if (*names[i].slot == NULL)
            return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------- module init */

typedef struct {
    PyTypeObject *type;
    const char *name;
} ModuleType;

/* The module of ``def`` with each type readied and added under its name; NULL with an exception set. */
static inline PyObject *module_with_types(PyModuleDef *def, const ModuleType *types, size_t count) {
    for (size_t i = 0; i < count; i++) {
        if (PyType_Ready(types[i].type) < 0)
            return NULL;
    }
    PyObject *module = PyModule_Create(def);
    if (module == NULL)
        return NULL;
    for (size_t i = 0; i < count; i++) {
        if (PyModule_AddObjectRef(module, types[i].name, (PyObject *)types[i].type) < 0) {
            Py_DECREF(module);
            return NULL;
        }
    }
    return module;
}

/* Adds a C interface capsule (``api`` under ``capsule_name``) as the module's _C_API; -1 with an exception set. */
static inline int module_add_capsule(PyObject *module, const void *api, const char *capsule_name) {
    PyObject *capsule = PyCapsule_New((void *)api, capsule_name, NULL);
    if (capsule == NULL || PyModule_AddObject(module, "_C_API", capsule) < 0) {
        Py_XDECREF(capsule);
        return -1;
    }
    return 0;
}

#define COUNT_OF(array) (sizeof(array) / sizeof((array)[0]))

#endif
