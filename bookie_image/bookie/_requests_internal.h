/* What the files of the bookie._requests extension module share (one module, compiled from several files by
 * setup.py, one file per concern; not an interface for other modules).
 *
 *   _inflight_counts.c   InFlightCounts: requests in progress and their bytes, with the processor's limits
 *   _add_stats.c         AddStats: the hot path's add latencies and bytes, in OpStat's buckets
 *   _requests.c          RequestStream: a connection's frames, its adds taken to storage and answered once durable;
 *                        and the module itself
 *
 * The structs are here because RequestStream reads and writes both counters directly. What it calls per frame or
 * per add is either static inline below (over_pending_limit, must_pause, stats_record) or one direct call into its
 * owner's file (inflight_leave, side_record), as each was before the module was split (the compiler inlined the
 * first three and called the other two).
 */
#ifndef BOOKIE_REQUESTS_INTERNAL_H
#define BOOKIE_REQUESTS_INTERNAL_H

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>

/* What the module's files declare for one another stays inside the module's shared object: not exported, and so not
 * interposable, a call to it is a direct call (no PLT), as when it was static. */
#pragma GCC visibility push(hidden)

/* ---------------------------------------------------------------------------------------------- InFlightCounts */

typedef struct {
    PyObject_HEAD
    long long count, bytes;
    long long pending_limit;      /* maxPending*RequestsPerThread: refuse beyond it (0: no limit) */
    long long in_progress_limit;  /* max*InProgressLimit: stop reading the connection at it (0: no limit) */
    long long bytes_limit;        /* maxAddsInProgressBytes (0: no limit) */
    int waiting;                  /* connections waiting for a slot (InFlight.wait_below_limit) */
} InFlightCounts;

extern PyTypeObject InFlightCountsType;

static inline int over_pending_limit(InFlightCounts *c) { return 0 < c->pending_limit && c->pending_limit <= c->count; }

static inline int must_pause(InFlightCounts *c) {
    return (0 < c->in_progress_limit && c->in_progress_limit <= c->count)
           || (0 < c->bytes_limit && c->bytes_limit <= c->bytes);
}

/* One request done: its slot and bytes freed, and the connections waiting for a slot woken. 0, or -1 with an
 * exception set. */
int inflight_leave(InFlightCounts *c, long long size);

/* Interns the attribute names _inflight_counts.c looks up: 0, or -1 with an exception set (module init). */
int inflight_counts_intern_names(void);

/* ---------------------------------------------------------------------------------------------- AddStats */

typedef struct {
    long long count;
    double sum, max;
    long long *buckets;
    int touched;
} Side;

typedef struct {
    PyObject_HEAD
    int enabled, sub, min_exp, nbuckets;
    Side ok, failed;
    long long write_bytes;
} AddStats;

extern PyTypeObject AddStatsType;

/* One value recorded in a side's count, sum, bucket and maximum. */
void side_record(AddStats *s, Side *side, double value);

/* An add answered: its latency (only with enableStatistics), and its bytes (bookie_WRITE_BYTES counts always). */
static inline void stats_record(AddStats *s, int ok, double ms, long long size) {
    if (ok)
        s->write_bytes += size;
    if (s->enabled)
        side_record(s, ok ? &s->ok : &s->failed, ms);
}

/* Interns the attribute names _add_stats.c looks up: 0, or -1 with an exception set (module init). */
int add_stats_intern_names(void);

#pragma GCC visibility pop

#endif
