"""Named failpoints for fault-injection tests: this process SIGKILLs itself, or an I/O call fails, at a named step.

Off unless the environment variable ``BOOKIE_FAILPOINTS`` names some: ``name[:n][,name[:n]...]`` fires the
n-th time (default: the first) execution reaches ``name``: ``hit`` kills the process, ``io_error`` raises
``OSError(EIO)`` that one time only (as a failed fsync reports its error once and then succeeds again).
Every failpoint is listed in ``FAILPOINTS`` with where it sits; naming an unknown one is an error at the
first failpoint reached, so a misspelt test setting fails loudly instead of never firing. The fault-injection
tests set it for the bookie or ``bookie-stream`` process they start.
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import threading

log = logging.getLogger(__name__)

ENV = "BOOKIE_FAILPOINTS"

FAILPOINTS: dict[str, str] = {
    "gc.compaction.before-commit": "transactional compaction: the .compacting log is complete, not committed",
    "gc.compaction.after-commit": "transactional compaction: committed (.compacted name), index not moved",
    "gc.compaction.after-relocate": "compaction: index points at the copies, old log not retired yet",
    "gc.compaction.before-flush": "compaction into the current log: copies appended, not fsynced",
    "gc.compaction.before-relocate": "compaction into the current log: copies fsynced, index not moved",
    "stream.cleaner.after_map": "stream cleaner: key map built",
    "stream.cleaner.ledger_created": "stream cleaner: a new ledger created for the cleaned records",
    "stream.cleaner.mid_write": "stream cleaner: every 100 records written to the new ledger",
    "stream.cleaner.before_swap": "stream cleaner: new ledgers written, stream metadata not swapped",
    "stream.cleaner.after_swap": "stream cleaner: metadata swapped, old ledgers not deleted",
    "stream.cleaner.mid_delete": "stream cleaner: after each old ledger deleted",
    "journal.fsync": "journal writer: a group's fdatasync reports EIO (io_error: raises, does not kill)",
}


class FailpointError(ValueError):
    """``BOOKIE_FAILPOINTS`` names a failpoint that does not exist, or has a bad count."""


_lock = threading.Lock()
_armed: dict[str, int] | None = None


def parse(spec: str) -> dict[str, int]:
    """``name[:n],...`` -> {name: n}; raises ``FailpointError`` naming what is wrong."""
    armed: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, count = item.partition(":")
        if name not in FAILPOINTS:
            raise FailpointError(f"{ENV}: unknown failpoint {name!r}; known: {', '.join(sorted(FAILPOINTS))}")
        try:
            armed[name] = int(count or 1)
        except ValueError:
            raise FailpointError(f"{ENV}: count of {name!r} must be an integer, not {count!r}") from None
        if armed[name] < 1:
            raise FailpointError(f"{ENV}: count of {name!r} must be at least 1, not {count}")
    return armed


def _fires(name: str) -> bool:
    """Count one pass through ``name``; True the n-th time (and never again: the failpoint is disarmed)."""
    global _armed
    if name not in FAILPOINTS:
        raise FailpointError(f"failpoint {name!r} is not listed in bookie.failpoints.FAILPOINTS")
    with _lock:
        if _armed is None:
            _armed = parse(os.environ.get(ENV, ""))
        if name not in _armed:
            return False
        _armed[name] -= 1
        if _armed[name] > 0:
            return False
        del _armed[name]
    return True


def countdown(name: str) -> int:
    """For a failpoint counted outside Python (the journal writer's thread, in C): the pass at which ``name``
    fires, counted from now, or 0 when it is not armed. It is disarmed here; the caller counts."""
    global _armed
    if name not in FAILPOINTS:
        raise FailpointError(f"failpoint {name!r} is not listed in bookie.failpoints.FAILPOINTS")
    with _lock:
        if _armed is None:
            _armed = parse(os.environ.get(ENV, ""))
        return _armed.pop(name, 0)


def hit(name: str) -> None:
    """Reached failpoint ``name``: SIGKILL this process if it is armed and this is the n-th time."""
    if _fires(name):
        log.warning("failpoint %s: SIGKILL", name)
        os.kill(os.getpid(), signal.SIGKILL)


def io_error(name: str) -> None:
    """Reached failpoint ``name`` before an I/O call: raise ``OSError(EIO)`` if armed and this is the n-th time."""
    if _fires(name):
        log.warning("failpoint %s: EIO", name)
        raise OSError(errno.EIO, f"failpoint {name}: injected I/O error")
