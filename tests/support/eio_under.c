/* A device failing or stalling under one directory only, for the fault scenarios (tests/support/faults.py,
 * ``DeviceFault``): preloaded into a bookie (LD_PRELOAD), it acts on the calls named in EIO_CALLS (a comma-separated
 * list of read, pread, write, pwrite, writev, fsync, fdatasync; pread covers pread64, pwrite pwrite64) on files
 * under EIO_UNDER while the switch file EIO_SWITCH exists, once the number of such calls written in that file has
 * passed. EIO_MODE says how: ``fail`` (the default) fails each with EIO without reaching the kernel; ``stall``
 * blocks each (polling the switch every few milliseconds) until the switch is removed, then makes the call: a
 * device that stops answering for a while and recovers, nothing lost; ``slow`` delays each by EIO_DELAY_MS
 * milliseconds, then makes it: a device that still answers, slowly (a worn disk, a congested network volume). Every other call (sockets, logs, the JVM's
 * own runtime image, which it reads with pread too) reaches libc untouched. Each failed call is said on stderr
 * ("eio_under: pread <file>: EIO"), each stalled one when it stalls and when it goes on ("eio_under: fdatasync
 * <file>: stalled", "... resumed after 2500 ms"), each slowed one once made ("... slowed by 200 ms"). An unknown EIO_MODE stops the process at its start, saying so.
 *
 * libfiu's wrappers cannot do this: they fail a call for the whole process, cannot delay one, and a JVM whose
 * every pread fails crashes in its class loading before any entry log is read. The switch is looked up at each
 * call (one access(2)), so turning the fault on or off takes effect at the process's next call. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum { READ = 1, PREAD = 2, WRITE = 4, PWRITE = 8, WRITEV = 16, FSYNC = 32, FDATASYNC = 64 };

static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_pread)(int, void *, size_t, off_t);
static ssize_t (*real_pread64)(int, void *, size_t, off_t);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static const char *under;
static size_t under_len;
static const char *switch_path;
static int calls;          /* the EIO_CALLS bits */
static int stall;          /* EIO_MODE is stall: block the calls rather than fail them */
static long delay_ms;      /* EIO_MODE is slow: delay the calls by this much rather than fail them */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int on;             /* the switch existed at the last look */
static long pass_left;     /* matching calls still let through since it was turned on */

static int parse_calls(const char *list) {
    static const struct { const char *name; int bit; } names[] = {
        {"read", READ}, {"pread", PREAD}, {"write", WRITE}, {"pwrite", PWRITE}, {"writev", WRITEV},
        {"fsync", FSYNC}, {"fdatasync", FDATASYNC}};
    int bits = 0;
    char copy[256];
    snprintf(copy, sizeof copy, "%s", list ? list : "");
    for (char *save = NULL, *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save))
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strcmp(name, names[i].name) == 0)
                bits |= names[i].bit;
    return bits;
}

/* A scenario must not run without the fault it asked for: the process does not start, and says why. */
static void refuse(const char *why, const char *given) {
    char line[256];
    int len = snprintf(line, sizeof line, "eio_under: %s %.100s\n", why, given);
    if (len > 0)
        real_write(2, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
    _exit(2);
}

__attribute__((constructor)) static void init(void) {
    real_read = dlsym(RTLD_NEXT, "read");
    real_pread = dlsym(RTLD_NEXT, "pread");
    real_pread64 = dlsym(RTLD_NEXT, "pread64");
    real_write = dlsym(RTLD_NEXT, "write");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite");
    real_pwrite64 = dlsym(RTLD_NEXT, "pwrite64");
    real_writev = dlsym(RTLD_NEXT, "writev");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    under = getenv("EIO_UNDER");
    switch_path = getenv("EIO_SWITCH");
    under_len = under ? strlen(under) : 0;
    calls = parse_calls(getenv("EIO_CALLS"));
    const char *mode = getenv("EIO_MODE");
    if (mode != NULL && strcmp(mode, "stall") != 0 && strcmp(mode, "fail") != 0 && strcmp(mode, "slow") != 0)
        refuse("EIO_MODE must be fail, stall or slow, not", mode);
    stall = mode != NULL && strcmp(mode, "stall") == 0;
    if (mode != NULL && strcmp(mode, "slow") == 0) {
        const char *delay = getenv("EIO_DELAY_MS");
        char *end = NULL;
        delay_ms = delay != NULL ? strtol(delay, &end, 10) : 0;
        if (delay == NULL || end == delay || *end != '\0' || delay_ms <= 0)
            refuse("EIO_MODE slow needs EIO_DELAY_MS, a positive number of milliseconds, not", delay ? delay : "none");
    }
}

/* The count the switch file holds (calls to let through first); 0 when unreadable. */
static long count_in_switch(void) {
    char buf[32] = {0};
    int fd = open(switch_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = real_read(fd, buf, sizeof buf - 1);
    close(fd);
    return n > 0 ? strtol(buf, NULL, 10) : 0;
}

/* Said on stderr (the bookie's log), for the scenario's report: which file the device failed or stalled. */
static void say(const char *name, const char *target, const char *what) {
    char line[PATH_MAX + 96];
    int len = snprintf(line, sizeof line, "eio_under: %s %s: %s\n", name, target, what);
    if (len > 0)
        real_write(2, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
}

/* Whether this call on ``fd`` is the fault's now: it is one of EIO_CALLS, the switch is on, the fd is a file under
 * the directory, and the calls to let through are used up. ``target`` gets the file's path. */
static int hit(int call, int fd, char target[PATH_MAX]) {
    if (!(calls & call) || under_len == 0 || switch_path == NULL)
        return 0;
    int now = access(switch_path, F_OK) == 0;
    pthread_mutex_lock(&lock);
    if (now && !on)
        pass_left = count_in_switch();
    on = now;
    pthread_mutex_unlock(&lock);
    if (!now)
        return 0;
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, PATH_MAX - 1);
    if (n < (ssize_t)under_len || strncmp(target, under, under_len) != 0
            || (n > (ssize_t)under_len && target[under_len] != '/'))
        return 0;
    target[n] = '\0';
    pthread_mutex_lock(&lock);
    int taken = pass_left <= 0;
    if (!taken)
        pass_left--;
    pthread_mutex_unlock(&lock);
    return taken;
}

/* Until the switch is removed: the calling thread blocks as on a device that stopped answering. Polled rather
 * than woken (inotify) so the library needs no thread of its own; 5 ms is far below any timeout in play. */
static void wait_for_lift(const char *name, const char *target) {
    struct timespec began, ended, pause = {0, 5 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &began);
    say(name, target, "stalled");
    while (access(switch_path, F_OK) == 0)
        nanosleep(&pause, NULL);
    clock_gettime(CLOCK_MONOTONIC, &ended);
    long ms = (ended.tv_sec - began.tv_sec) * 1000L + (ended.tv_nsec - began.tv_nsec) / 1000000L;
    char what[64];
    snprintf(what, sizeof what, "resumed after %ld ms", ms);
    say(name, target, what);
}

/* Whether this call must fail now (errno set to EIO); a stalled call returns 0 once the stall is over, to be made. */
static int fails(int call, const char *name, int fd) {
    char target[PATH_MAX];
    if (!hit(call, fd, target))
        return 0;
    if (stall) {
        wait_for_lift(name, target);
        return 0;
    }
    if (delay_ms > 0) {
        struct timespec pause = {delay_ms / 1000, (delay_ms % 1000) * 1000 * 1000};
        while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
        }
        char what[64];
        snprintf(what, sizeof what, "slowed by %ld ms", delay_ms);
        say(name, target, what);
        return 0;
    }
    say(name, target, "EIO");
    errno = EIO;
    return 1;
}

ssize_t read(int fd, void *buf, size_t count) {
    return fails(READ, "read", fd) ? -1 : real_read(fd, buf, count);
}

ssize_t pread(int fd, void *buf, size_t count, off_t offset) {
    return fails(PREAD, "pread", fd) ? -1 : real_pread(fd, buf, count, offset);
}

ssize_t pread64(int fd, void *buf, size_t count, off_t offset) {
    return fails(PREAD, "pread64", fd) ? -1 : real_pread64(fd, buf, count, offset);
}

ssize_t write(int fd, const void *buf, size_t count) {
    return fails(WRITE, "write", fd) ? -1 : real_write(fd, buf, count);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    return fails(PWRITE, "pwrite", fd) ? -1 : real_pwrite(fd, buf, count, offset);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
    return fails(PWRITE, "pwrite64", fd) ? -1 : real_pwrite64(fd, buf, count, offset);
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
    return fails(WRITEV, "writev", fd) ? -1 : real_writev(fd, iov, iovcnt);
}

int fsync(int fd) {
    return fails(FSYNC, "fsync", fd) ? -1 : real_fsync(fd);
}

int fdatasync(int fd) {
    return fails(FDATASYNC, "fdatasync", fd) ? -1 : real_fdatasync(fd);
}
