"""Bookies that cannot start: their pods' termination messages -> per-bookie status, a ``Degraded`` reason that
names them and says what to do, and the transitions that deserve a Warning Event.

Pure: pods and the previous status in, decisions out. Our bookie writes ``Reason: message`` to its termination
message file (``bookie.termination``); Apache BookKeeper's bookie writes none, and the pod's
``FallbackToLogsOnError`` policy gives the end of its log instead, which is recognised by its exception names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bookie.termination import (
    COOKIE_MISMATCH,
    DEVICE_ERROR,
    DIRECTORY_NOT_WRITABLE,
    DISK_FULL,
    INCOMPATIBLE_DISK,
    INVALID_CONFIG,
    METADATA_UNREACHABLE,
    PORT_IN_USE,
    STARTUP_FAILED,
    WRONG_IMAGE,
)

from bookie_operator import builders
from bookie_operator.models import BookieClusterSpec, BookieStatus, StartFailureStatus

Obj = dict[str, Any]
CONTAINER = "bookie"
# The Java bookie image's (hack/apache-bookkeeper/entrypoint.py): its Apache BookKeeper is not one of the lines
# the operator manages (models.BOOKKEEPER_VERSIONS_ENV); the message names the version found and those.
UNSUPPORTED_VERSION = "UnsupportedVersion"

# The reasons our bookie writes (bookie.termination), most specific first: the Degraded condition's
# reason is the first of these that any bookie has. WrongImage (also the operator's start script's, for an image
# without our bookie) comes first: whatever else that image says follows from it; then an image of a version the
# operator does not manage, for the same reason.
REASONS = (WRONG_IMAGE, UNSUPPORTED_VERSION, DEVICE_ERROR, COOKIE_MISMATCH, INCOMPATIBLE_DISK, INVALID_CONFIG,
           DIRECTORY_NOT_WRITABLE, DISK_FULL, METADATA_UNREACHABLE, PORT_IN_USE, STARTUP_FAILED)

_PREFIX = re.compile(r"^(?P<reason>[A-Z][A-Za-z]+): (?P<rest>.*)$", re.S)
# Ours: "instance id 'A' != 'B'"; Apache BookKeeper's: "instanceId A is not matching with B" (A expected).
_INSTANCE_IDS = (re.compile(r"instance id (?:'(?P<expected>[^']*)'|None) != (?:'(?P<found>[^']*)'|None)"),
                 re.compile(r"instanceId (?P<expected>[\w-]+) is not matching with (?P<found>[\w-]+)"))
# Apache BookKeeper's exceptions, as the end of its log shows them. An I/O error comes first: Apache BookKeeper
# wraps one met reading a cookie in an InvalidCookieException, which is no cookie mismatch.
_JAVA = (
    (re.compile(r"Input/output error"), DEVICE_ERROR),
    (re.compile(r"InvalidCookieException|Cookie .* is not matching"), COOKIE_MISMATCH),
    (re.compile(r"NoWritableLedgerDirException|No space left on device|DiskOutOfSpaceException"), DISK_FULL),
    (re.compile(r"ConfigurationException|IllegalArgumentException"), INVALID_CONFIG),
    (re.compile(r"KeeperException|MetadataException|ZooKeeperConnectionException"), METADATA_UNREACHABLE),
    (re.compile(r"AccessDeniedException|Read-only file system|Permission denied"), DIRECTORY_NOT_WRITABLE),
    (re.compile(r"BindException|Address already in use"), PORT_IN_USE),
)

_STACK_FRAME = re.compile(r"^(at \S+\(.*\)|\.\.\. \d+ more)")  # "at a.B.c(B.java:1) ~[...]", "... 12 more"

ADVICE = {
    COOKIE_MISMATCH: "the volumes hold another bookie's or another BookKeeper instance's data",
    INCOMPATIBLE_DISK: "the volumes hold data this implementation cannot serve as it is: a layout another "
                       "implementation wrote (set spec.implementation back to the one that wrote them), or a lost "
                       "RocksDB index (rebuild it with the command the message names, the bookie stopped)",
    INVALID_CONFIG: "fix the configuration the bookie names (spec.config)",
    DIRECTORY_NOT_WRITABLE: "give the bookie writable volumes (mount options, ownership, storage class)",
    DISK_FULL: "free space on the named volume or give the bookie larger volumes",
    DEVICE_ERROR: "the disk or volume under the named directory is failing: replace it (the bookie's ledgers are "
                  "copied again from the other bookies by autorecovery)",
    METADATA_UNREACHABLE: "check spec.metadataService and that ZooKeeper is reachable from the pods",
    PORT_IN_USE: "another process holds the bookie's port",
    STARTUP_FAILED: "see the message and the pod's log",
    WRONG_IMAGE: "set spec.image to an image of spec.implementation's bookie, or spec.implementation to the image's",
    UNSUPPORTED_VERSION: "set spec.image to an image of a version the operator supports (docs/compatibility.md)",
}


@dataclass(frozen=True)
class StartFailure:
    """One bookie whose container last exited with a start-up failure."""

    ordinal: int
    pod: str
    reason: str
    message: str
    exit_code: int | None
    restart_count: int | None
    finished_at: str | None
    terminating: bool = False

    @property
    def instance_ids(self) -> tuple[str | None, str | None] | None:
        """(metadata service's, volumes') instance ids of a cookie mismatch between BookKeeper instances."""
        return instance_ids(self.message) if self.reason == COOKIE_MISMATCH else None


def classify(message: str) -> tuple[str, str]:
    """A termination message -> (reason, what it says: without the reason prefix; of a log's end, the line
    naming a known exception, else the last line that is not a stack frame: the deepest cause)."""
    text = message.strip()
    m = _PREFIX.match(text)
    if m and m["reason"] in REASONS:
        return m["reason"], m["rest"].strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for pattern, reason in _JAVA:
        # A log's end: the line that says it (the whole end stays in the pod's status).
        line = next((line for line in lines if pattern.search(line)), None)
        if line is not None:
            return reason, line
    # Else the last line that says something: a Java log ends with the stack frames of its last cause.
    said = [line for line in lines if not _STACK_FRAME.match(line)] or lines
    return STARTUP_FAILED, said[-1] if said else ""


def instance_ids(message: str) -> tuple[str | None, str | None] | None:
    """The two instance ids of a cookie mismatch: (expected = the metadata service's, found = the volumes')."""
    for pattern in _INSTANCE_IDS:
        m = pattern.search(message)
        if m is not None:
            return (m["expected"], m["found"]) if m["expected"] != m["found"] else None
    return None


def _terminated(status: Obj) -> Obj | None:
    """The container's last failed run: the current state when it is terminated, else the last state."""
    for key in ("state", "lastState"):
        term = (status.get(key) or {}).get("terminated")
        if term:
            return term if term.get("exitCode", 0) != 0 else None
    return None


def pod_failure(pod: Obj, ordinal: int) -> StartFailure | None:
    """The start failure of a pod's bookie container; None when it runs ready or never failed with a message."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    status = next((s for s in statuses if s.get("name") == CONTAINER), None)
    if status is None or status.get("ready"):
        return None
    term = _terminated(status)
    if term is None or not (term.get("message") or "").strip():
        return None
    reason, message = classify(term["message"])
    return StartFailure(ordinal, pod["metadata"]["name"], reason, message, term.get("exitCode"),
                        status.get("restartCount"), term.get("finishedAt"),
                        terminating=bool(pod["metadata"].get("deletionTimestamp")))


def blocked_by_cookie(pod: Obj, ordinal: int) -> bool:
    """The pod's bookie, not running now, last stopped because ZooKeeper holds a cookie of its own instance that
    its volumes lack. Never while it runs: the cookie may then be the one it has just written."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    container = next((c for c in statuses if c.get("name") == CONTAINER), None)
    if container is None or "running" in (container.get("state") or {}):
        return False
    failure = pod_failure(pod, ordinal)
    return failure is not None and failure.reason == COOKIE_MISMATCH and failure.instance_ids is None


def observe(cluster: str, pods: Iterable[Obj]) -> dict[int, StartFailure]:
    """Ordinal -> start failure, for the cluster's pods whose bookie cannot start."""
    failures = {}
    for pod in pods:
        name = pod["metadata"]["name"]
        ordinal = builders.ordinal_of(name)
        if ordinal is None or name != builders.pod_name(cluster, ordinal):
            continue
        failure = pod_failure(pod, ordinal)
        if failure is not None:
            failures[ordinal] = failure
    return failures


def status_of(failure: StartFailure, previous: BookieStatus | None, now: str) -> StartFailureStatus:
    """The per-bookie status; ``since`` is kept while the reason stays the same."""
    before = previous.start_failure if previous is not None else None
    since = before.since if before is not None and before.reason == failure.reason else (failure.finished_at or now)
    return StartFailureStatus(reason=failure.reason, message=failure.message, since=since,
                              exit_code=failure.exit_code, restart_count=failure.restart_count)


def event_message(failure: StartFailure) -> str:
    """The Warning Event of a failure (Events keep 1 KiB: the instance ids of a mismatch come first)."""
    ids = failure.instance_ids
    if ids is not None:
        return (f"{failure.pod} cannot start: its volumes hold a cookie of BookKeeper instance {ids[1]!r}, the "
                f"metadata service is instance {ids[0]!r} ({failure.message})")
    return f"{failure.pod} cannot start: {failure.message}"


def transitions(failures: Mapping[int, StartFailure], previous: Iterable[BookieStatus]) -> list[StartFailure]:
    """Failures whose reason is new for their bookie (one Warning Event each, not one per tick)."""
    before = {b.ordinal: b.start_failure.reason for b in previous if b.start_failure is not None}
    return [f for o, f in sorted(failures.items()) if before.get(o) != f.reason]


def to_reclaim(failures: Mapping[int, StartFailure], spec: BookieClusterSpec) -> list[StartFailure]:
    """Bookies whose volumes the spec's explicit opt-in lets the operator delete: their cookies belong to exactly
    ``spec.storage.reclaimVolumesOfInstance``, another instance than the metadata service's (``instance_ids``
    never pairs an instance with itself). Pods already going away are left to finish."""
    allowed = spec.storage.reclaim_volumes_of_instance
    if allowed is None:
        return []
    return [f for _, f in sorted(failures.items())
            if not f.terminating and f.instance_ids is not None and f.instance_ids[1] == allowed]


@dataclass(frozen=True)
class Degraded:
    reason: str
    message: str


def degraded(failures: Mapping[int, StartFailure], cluster: str, spec: BookieClusterSpec,
             instance_id: str | None, lay: builders.Layout | None = None) -> Degraded | None:
    """The Degraded condition for bookies that cannot start: the most specific reason, every bookie named
    under its reason, and what to do. ``lay``: the cluster's names (an adopted StatefulSet keeps its claim
    templates, so the claims to delete are named after them)."""
    if not failures:
        return None
    by_reason: dict[str, list[StartFailure]] = {}
    for _, f in sorted(failures.items()):
        by_reason.setdefault(f.reason, []).append(f)
    parts = [_explain(reason, group, cluster, spec, instance_id, lay)
             for reason in REASONS for group in [by_reason.get(reason)] if group]
    first = next(r for r in REASONS if r in by_reason)
    return Degraded(first, "; ".join(parts))


def _explain(reason: str, group: list[StartFailure], cluster: str, spec: BookieClusterSpec,
             instance_id: str | None, lay: builders.Layout | None) -> str:
    pods = ", ".join(f.pod for f in group)
    if reason == COOKIE_MISMATCH:
        ids = next((f.instance_ids for f in group if f.instance_ids), None)
        if ids is not None:
            return _foreign_volumes(group, ids, cluster, spec, instance_id, lay)
    detail = group[0].message if len(group) == 1 else f"{group[0].pod}: {group[0].message}"
    if reason == UNSUPPORTED_VERSION:  # the bookie's message says what to do; the spec names the image
        return f"{pods} cannot start ({reason}): {detail} (spec.image {spec.image})"
    if reason == WRONG_IMAGE:
        return (f"{pods} cannot start ({reason}): {detail} (spec.image {spec.image} does not run "
                f"{spec.implementation}'s bookie: {ADVICE[reason]})")
    return f"{pods} cannot start ({reason}): {detail} ({ADVICE[reason]})"


def _foreign_volumes(group: list[StartFailure], ids: tuple[str | None, str | None], cluster: str,
                     spec: BookieClusterSpec, instance_id: str | None, lay: builders.Layout | None) -> str:
    expected, found = ids
    claims = [c for f in group for c in builders.volume_claim_names(cluster, spec, f.ordinal, lay)]
    where = f"{spec.metadata_service.zk_servers}{spec.metadata_service.ledgers_root}"
    return (f"{', '.join(f.pod for f in group)} cannot start (CookieMismatch): their volumes hold cookies of "
            f"BookKeeper instance {found!r} but the metadata service {where} is instance "
            f"{(expected or instance_id)!r}: the claims outlived an earlier cluster. Either delete the claims "
            f"{', '.join(claims)} and then the pods (they start again as new, empty bookies: the data on the "
            f"volumes is lost; spec.storage.reclaimVolumesOfInstance: {found!r} lets the operator do it), or "
            f"point spec.metadataService at the metadata service of instance {found!r}")


__all__ = ["REASONS", "UNSUPPORTED_VERSION", "Degraded", "StartFailure", "classify", "degraded", "event_message",
           "instance_ids", "observe", "status_of", "to_reclaim", "transitions"]
