/* What the files of the bookie.client._native extension module share (one module, compiled from two files by
 * setup.py; not an interface for other modules).
 *
 *   _client_stream.c   ClientStream: one connection's output buffer, its v3 adds encoded and their answers matched
 *   _native.c          PendingAdd and Appender (a ledger's plain appends, and their state), and the module itself
 *
 * An append sends each copy through stream_send_add: one plain call per copy into the stream's file.
 */
#ifndef BOOKIE_CLIENT_NATIVE_INTERNAL_H
#define BOOKIE_CLIENT_NATIVE_INTERNAL_H

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>
#include <stdint.h>

typedef struct {
    uint64_t txn;       /* 0: a free slot */
    PyObject *callback; /* (function, argument, ...): called with the arguments and the outcome */
    double deadline;    /* loop time at which the add fails with a timeout */
} HotAdd;

typedef struct {
    PyObject_HEAD
    PyObject *frames; /* FrameReader */
    uint64_t next_txn;
    HotAdd *adds;
    size_t mask; /* slots - 1 */
    Py_ssize_t count;
    uint8_t *out;
    size_t out_len, out_cap;
    Py_ssize_t write_early;  /* output worth writing at once (bytes) */
    char flush_requested;    /* the connection has a flush scheduled */
    char takes_adds;         /* a v3 connection: send_add may encode adds */
    char feeding;            /* inside feed: a callback may not feed again */
    char closed;             /* fail_all was called: answers still in a feed are dropped */
    double armed_deadline;   /* the connection's timeout timer fires then (infinity: none) */
    PyObject *on_output;     /* (): output waits and no flush is scheduled (flush_requested is set first) */
    PyObject *on_output_full;/* (): write_early bytes wait: write them now */
    PyObject *on_deadline;   /* (deadline): an add's deadline comes before armed_deadline */
} ClientStream;

extern PyTypeObject ClientStreamType;

/* Encodes a v3 add into the stream's output and remembers ``callback`` (a new reference is taken) for its answer,
 * due by ``deadline`` (loop time): 0, or -1 with an exception set (a closed stream, or one that takes no adds). */
int stream_send_add(ClientStream *s, int64_t ledger_id, int64_t entry_id, const uint8_t *key, Py_ssize_t key_len,
                    const uint8_t *body, Py_ssize_t body_len, PyObject *callback, double deadline);

/* Imports protocol._native's C interface for the stream's file (module init): 0, or -1 with an exception set. */
int client_stream_import_protocol(void);

#endif
