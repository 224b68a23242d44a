"""What a reconcile observed of each bookie, and the time helpers every decision uses."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


def iso(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(dt.UTC)


@dataclass(frozen=True)
class GcInfo:
    """``GET /api/v1/bookie/gc`` + ``gc_details`` summed over the ledger directories."""

    in_force_gc: bool
    compacting: bool
    major_count: int
    minor_count: int
    last_major_ms: int
    last_minor_ms: int


# The bookie's read-only reasons (``GET /api/v1/bookie/state``) that its REST switch can not undo.
HELD_READ_ONLY_REASONS = frozenset({"journal-corrupt", "forced"})


@dataclass(frozen=True)
class ObservedBookie:
    ordinal: int
    pod: str
    bookie_id: str
    exists: bool = True                 # the pod exists
    ready: bool = False                 # pod Ready condition
    reachable: bool = False             # the admin REST API answered
    read_only: bool | None = None
    free_bytes: int | None = None
    total_bytes: int | None = None
    gc: GcInfo | None = None
    revision: str | None = None         # controller-revision-hash of the pod
    terminating: bool = False
    read_only_reason: str | None = None  # the bookie's own ``readOnlyReason`` (bookie-fleet bookies only)
    unknown_reason: str | None = None    # why its admin API gave no usable answer (unreachable, malformed)
    implementation: str | None = None    # the pod's implementation label: which bookie it runs

    @property
    def held_read_only(self) -> str | None:
        """Why the bookie keeps itself read-only whatever it is told, or None: a damaged journal, or
        ``forceReadOnlyBookie``. Only a person can clear these; asking for writable is refused every time."""
        if self.read_only and self.read_only_reason in HELD_READ_ONLY_REASONS:
            return self.read_only_reason
        return None

    @property
    def used_fraction(self) -> float | None:
        if self.free_bytes is None or not self.total_bytes:
            return None
        return 1 - self.free_bytes / self.total_bytes


def sort_by_ordinal(bookies: list[ObservedBookie]) -> list[ObservedBookie]:
    """Integer order (``-2`` before ``-10``), never the pod name's string order (datastax/kaap#251)."""
    return sorted(bookies, key=lambda b: b.ordinal)
