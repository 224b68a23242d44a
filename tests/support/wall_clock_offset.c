/* A process's wall clock set off from the true time, for the clock fault scenarios (tests/support/faults.py,
 * ``WallClock``): preloaded into a bookie (LD_PRELOAD), it adds to every reading of the wall clock
 * (clock_gettime of CLOCK_REALTIME and CLOCK_REALTIME_COARSE, gettimeofday, time) the whole number of seconds,
 * positive or negative, that the file WALL_CLOCK_OFFSET_FILE holds. The file is read again at most once per second
 * of the monotonic clock, so a test steps the clock of a running process by rewriting it. The monotonic clocks,
 * sleeps and timed waits are untouched: what a machine sees when its time of day is stepped (an NTP step, a
 * virtual machine restored from a snapshot).
 *
 * Debian's libfaketime does this and more, and fails here: under it every sleep of Python 3.11 fails with EINVAL,
 * whatever the offset (Python sleeps with clock_nanosleep, which libfaketime wraps). The file is read with open/read
 * (no stdio, no allocation), and one thread at a time: the wall clock is read from any thread, a signal handler
 * or an allocator's own code included. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static clock_gettime_fn real_clock_gettime;
static const char *offset_file;
static _Atomic long long offset_s;
static _Atomic long long read_at_ns = LLONG_MIN / 2;  /* monotonic time of the last read of the file */
static atomic_flag reading = ATOMIC_FLAG_INIT;

static clock_gettime_fn real(void) {
    if (real_clock_gettime == NULL) {
        real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
    }
    return real_clock_gettime;
}

__attribute__((constructor)) static void init(void) {
    offset_file = getenv("WALL_CLOCK_OFFSET_FILE");
    real();
}

static long long monotonic_ns(void) {
    struct timespec ts;
    real()(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* "wall_clock_offset: -3600 s" on stderr (the bookie's log) when the offset in use changes: a step the test made
 * shows in the process's own log once the process took it. */
static void say_offset(long long value) {
    char line[64] = "wall_clock_offset: ";
    char digits[24];
    size_t at = strlen(line), n = 0;
    unsigned long long magnitude = value < 0 ? -(unsigned long long)value : (unsigned long long)value;
    do { digits[n++] = (char)('0' + magnitude % 10); magnitude /= 10; } while (magnitude > 0);
    line[at++] = value < 0 ? '-' : '+';
    while (n > 0) line[at++] = digits[--n];
    memcpy(line + at, " s\n", 3);
    ssize_t ignored = write(STDERR_FILENO, line, at + 3);
    (void)ignored;
}

/* The offset in the file, read again once it is a second old; a file missing or unreadable keeps the last one. */
static long long current_offset(void) {
    long long now = monotonic_ns();
    if (offset_file != NULL && now - atomic_load(&read_at_ns) >= 1000000000LL && !atomic_flag_test_and_set(&reading)) {
        char text[32];
        int fd = open(offset_file, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t n = read(fd, text, sizeof text - 1);
            close(fd);
            if (n > 0) {
                text[n] = '\0';
                char *end;
                long long value = strtoll(text, &end, 10);
                if (end != text && atomic_exchange(&offset_s, value) != value) say_offset(value);
            }
        }
        atomic_store(&read_at_ns, now);
        atomic_flag_clear(&reading);
    }
    return atomic_load(&offset_s);
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
    int rc = real()(clock, ts);
    if (rc == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) {
        ts->tv_sec += current_offset();
    }
    return rc;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    (void)tz;  /* obsolete: glibc fills it with zeros or ignores it */
    struct timespec ts;
    int rc = clock_gettime(CLOCK_REALTIME, &ts);
    if (rc == 0) {  /* tv is never null: glibc declares it so */
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return rc;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out != NULL) *out = ts.tv_sec;
    return ts.tv_sec;
}
