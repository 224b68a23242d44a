"""Shared builders of specs and observations for the operator's pure unit tests (no fakes of components)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from bookie_operator.decisions import GcInfo, ObservedBookie
from bookie_operator.models import BookieClusterSpec, parse_spec

NOW = dt.datetime(2026, 11, 22, 12, 0, 0, tzinfo=dt.UTC)
GIB = 1024**3


def spec(**overrides: Any) -> BookieClusterSpec:
    body: dict[str, Any] = {"metadataService": {"zkServers": "zk-0.zk:2181"}, **overrides}
    return parse_spec(body)


def bookie(ordinal: int, used: float | None = 0.5, *, read_only: bool = False, reachable: bool = True,
           ready: bool = True, gc: GcInfo | None = None, revision: str | None = "rev1",
           exists: bool = True) -> ObservedBookie:
    total = 100 * GIB
    free = None if used is None else int(total * (1 - used))
    return ObservedBookie(ordinal=ordinal, pod=f"bk-{ordinal}", bookie_id=f"bk-{ordinal}.bk-headless.ns:3181",
                          exists=exists, ready=ready, reachable=reachable, read_only=read_only if reachable else None,
                          free_bytes=free if reachable else None, total_bytes=total if reachable else None, gc=gc,
                          revision=revision)


def gc(major: int = 0, minor: int = 0, *, running: bool = False) -> GcInfo:
    return GcInfo(in_force_gc=running, compacting=running, major_count=major, minor_count=minor,
                  last_major_ms=0, last_minor_ms=0)
