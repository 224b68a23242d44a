/* The storage engine's C interface for the bookie's other extension modules (the request hot path,
 * bookie/_requests.c): storing an add without a Python object per entry, and being told when it is durable.
 *
 * bookie.storage._write_path exports one ``BookieStorageApi`` in the capsule named below; a module that uses it
 * calls ``bookie_storage_import()`` once, in its init function. Entries cross this interface as bytes with
 * their ledger ids; nothing here knows about frames or protocols.
 */
#ifndef BOOKIE_STORAGE_WRITE_PATH_API_H
#define BOOKIE_STORAGE_WRITE_PATH_API_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define BOOKIE_STORAGE_CAPSULE "bookie.storage._write_path._C_API"

/* Whoever sent an add (a connection) is told of it through these, on the event loop with the GIL held. */
typedef struct {
    /* The add of ``token`` is durable (``failed`` 0), or its journal write failed (``failed`` 1). Returns 1 when
     * the sink has output to write, which it does in ``flush``, called once after every add of the same journal
     * group has been told. */
    int (*durable)(PyObject *sink, uint64_t token, int failed);
    void (*flush)(PyObject *sink);
} AddSinkMethods;

typedef struct {
    PyTypeObject *write_path_type;
    /* Store one entry (its 32-byte header names ledger, entry and LAC) the way StorageEngine.add_entry does, when
     * nothing needs Python: the ledger is known here with this master key, not fenced, its master key already
     * journaled, and its directory's write cache and disk have room. Returns 1 when the entry is in the write
     * cache and queued to the journal (``sink`` is told once it is durable, with ``token``), 2 when the only thing
     * missing is room in the write cache (nothing was done: the caller offers it again once a checkpoint has
     * swapped the caches, StorageEngine.wait_for_room), 0 when it was not taken and nothing was done (the caller
     * goes through StorageEngine.add_entry, which also raises the errors), -1 with an exception set. */
    int (*try_add)(PyObject *write_path, const uint8_t *entry, Py_ssize_t len, const uint8_t *master_key,
                   Py_ssize_t master_key_len, PyObject *sink, const AddSinkMethods *methods, uint64_t token);
} BookieStorageApi;

static inline const BookieStorageApi *bookie_storage_import(void) {
    /* PyCapsule_Import finds the capsule through the package's attributes: the module must be imported first. */
    PyObject *module = PyImport_ImportModule("bookie.storage._write_path");
    if (module == NULL)
        return NULL;
    Py_DECREF(module);
    return (const BookieStorageApi *)PyCapsule_Import(BOOKIE_STORAGE_CAPSULE, 0);
}

#endif
