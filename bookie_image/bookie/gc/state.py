"""GC's state of one ledger directory, shared by the controller, the metadata extractor and the explain view."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from bookie.gc.compactor import Compactor
from bookie.gc.metacache import MetaCache
from bookie.gc.refs import LogRefs


@dataclass
class ForceRequest:
    major: bool
    minor: bool


@dataclass
class DirState:
    """One ledger directory's GC state (what ``gc_details`` reports per directory)."""

    index: int
    ledger_dir: Path
    cache: MetaCache
    refs: LogRefs
    compactor: Compactor
    major_compacting: bool = False
    minor_compacting: bool = False
    force_compacting: bool = False
    # When each compaction last ran, twice: epoch ms for the REST report, and on the monotonic clock (``*_at``,
    # seconds) for its interval. A step of the wall clock (NTP, a VM restored from a snapshot) then neither stalls
    # the schedule (an hour back: no compaction for an hour, as in Apache BookKeeper) nor hurries it.
    last_major_ms: int = 0
    last_minor_ms: int = 0
    last_major_at: float = 0.0
    last_minor_at: float = 0.0
    major_count: int = 0
    minor_count: int = 0
    active_log_id: int = -1
    retired_kind: dict[int, int] = field(default_factory=dict)  # log id -> bytes of its replacement, -1: dead
    locations_path: str = ""
    location_compact_requested: bool = False
    location_compacting: bool = False
    last_location_compaction_ms: int = 0
    last_location_compaction_at: float = 0.0
    location_compaction_count: int = 0
    last_cycle_at: float = 0.0  # when a GC cycle last brought every log's live ledgers up to date (epoch s)
    extract_lock: threading.Lock = field(default_factory=threading.Lock)  # one metadata reader at a time
