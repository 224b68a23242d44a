"""GC's entry-log metadata of one ledger directory, persisted in ``current/gc-entrylog-meta.json``.

A restart does not read every log again (BookKeeper keeps an in-heap map and rescans everything after each
restart; its ``metadata-cache`` RocksDB is the same idea). Written by the GC thread and by the metadata
extractor (logs GC has not read yet, for the explain endpoint and start-up), read by both and by the gauges:
``logs`` is only ever iterated through a copy (``snapshot``), additions and saves hold the lock.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from bookie.storage.logmeta import LogMeta

log = logging.getLogger(__name__)

CACHE_FILE = "gc-entrylog-meta.json"
CACHE_VERSION = 1


class MetaCache:
    """The entry-log metadata of one ledger directory, persisted next to the logs."""

    def __init__(self, current_dir: Path) -> None:
        self.path = current_dir / CACHE_FILE
        self.logs: dict[int, LogMeta] = {}
        self.dirty = False
        self._lock = threading.Lock()
        self._save_lock = threading.Lock()  # one writer of the file at a time

    def load(self, path_of: Callable[[int], Path]) -> int:
        """Read the persisted map, keeping only logs whose file is still there with the same size."""
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return 0
        except (OSError, ValueError) as exc:
            log.warning("%s unreadable (%s): entry logs will be read again", self.path, exc)
            return 0
        if data.get("version") != CACHE_VERSION:
            return 0
        for key, value in data.get("logs", {}).items():
            try:
                meta = LogMeta.from_json(int(key, 16), value)
                if path_of(meta.log_id).stat().st_size == meta.file_size:
                    self.put(meta)
            except (OSError, ValueError, KeyError, TypeError, AssertionError):
                continue
        self.dirty = False
        return len(self.logs)

    def save(self) -> None:
        """Atomically replace the file (write, fsync, rename): a crash leaves the old or the new map."""
        with self._save_lock:
            with self._lock:
                if not self.dirty:
                    return
                payload = {"version": CACHE_VERSION,
                           "logs": {f"{m.log_id:x}": m.to_json() for m in list(self.logs.values())}}
                self.dirty = False
            tmp = self.path.with_suffix(".tmp")
            with open(tmp, "w") as f:
                json.dump(payload, f, separators=(",", ":"))
                f.flush()
                os.fsync(f.fileno())
            tmp.replace(self.path)

    def snapshot(self) -> list[LogMeta]:
        return list(self.logs.values())  # one C-level copy: atomic with respect to the other threads

    def put(self, meta: LogMeta) -> None:
        with self._lock:
            self.logs[meta.log_id] = meta
            self.dirty = True

    def put_if_absent(self, meta: LogMeta) -> bool:
        """Add what the extractor read unless GC has its own view of the log by now (retired, quarantined)."""
        with self._lock:
            if meta.log_id in self.logs:
                return False
            self.logs[meta.log_id] = meta
            self.dirty = True
            return True

    def drop(self, log_id: int) -> None:
        with self._lock:
            if self.logs.pop(log_id, None) is not None:
                self.dirty = True
