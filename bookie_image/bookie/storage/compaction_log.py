"""Compaction output logs and their file names (BookKeeper's ``CompactionEntryLog``), owned by storage.

A transactional compaction writes the live entries of an old log into a new one, in steps that a crash at
any point leaves recoverable (BookKeeper's ``TransactionalEntryLogCompactor`` and its names):

1. ``<new>.log.compacting``: written and finalized with its ledgers map, fsynced (``append``, ``finish``);
2. ``<new>.log.<old>.compacted``: hard link, the commit point, and the ``.compacting`` name removed
   (``mark_compacted``);
3. ``<new>.log``: hard link, readable by the engine (``make_available``); the caller points the index at it;
4. the ``.compacted`` name removed once the old log is retired (``finalize_and_cleanup``).

At start and before each GC cycle ``incomplete`` drops uncommitted ``.compacting`` files (the index never
saw them) and returns the committed ones, for GC to redo steps 3 and 4 (idempotent).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from bookie.storage import entrylog_format as ef
from bookie.storage.logmeta import iter_log_records

COMPACTING = ".compacting"
COMPACTED = ".compacted"
WRITE_CHUNK = 1024 * 1024


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class CompactionLog:
    """One compaction's output log, from ``.compacting`` to ``<new>.log`` (see the module docstring)."""

    def __init__(self, current: Path, new_id: int, old_id: int) -> None:
        self.current = current
        self.new_id = new_id
        self.old_id = old_id
        self.compacting = current / f"{ef.log_file_name(new_id)}{COMPACTING}"
        self.marker = current / f"{ef.log_file_name(new_id)}.{old_id:x}{COMPACTED}"
        self.path = current / ef.log_file_name(new_id)
        self.ledgers: dict[int, int] = {}
        self._fd = -1
        self._position = self._flushed = ef.HEADER_SIZE
        self._buffer = bytearray()

    @classmethod
    def create(cls, current: Path, new_id: int, old_id: int) -> CompactionLog:
        """A new, empty ``.compacting`` file (its id comes from the engine, never reused)."""
        out = cls(current, new_id, old_id)
        out._fd = os.open(out.compacting, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        os.pwrite(out._fd, ef.LogHeader().encode(), 0)
        return out

    # --- writing the .compacting file
    def append(self, rec: ef.Record) -> int:
        """Append a copy of an entry record; returns its location in the new log."""
        location = ef.make_location(self.new_id, self._position + ef.RECORD_SIZE_PREFIX)
        self._buffer += rec.size.to_bytes(4, "big")
        self._buffer += rec.data
        record_size = ef.RECORD_SIZE_PREFIX + rec.size
        self._position += record_size
        self.ledgers[rec.ledger_id] = self.ledgers.get(rec.ledger_id, 0) + record_size
        if len(self._buffer) >= WRITE_CHUNK:
            self._write()
        return location

    def _write(self) -> None:
        os.pwrite(self._fd, self._buffer, self._flushed)
        self._flushed += len(self._buffer)
        self._buffer.clear()

    def finish(self) -> int:
        """Append the ledgers map, point the header at it, fsync, close; returns the file size."""
        self._write()
        data = ef.encode_ledgers_map(self.ledgers)
        os.pwrite(self._fd, data, self._position)
        os.pwrite(self._fd, ef.encode_map_location(self._position, len(self.ledgers)), ef.MAP_LOCATION_OFFSET)
        os.fsync(self._fd)
        self._close()
        return self._position + len(data)

    def abort(self) -> None:
        """Nothing committed: close and remove the ``.compacting`` file."""
        self._close()
        self.compacting.unlink(missing_ok=True)

    def _close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    # --- commit steps
    def mark_compacted(self) -> None:
        """Step 2, the commit point: the copy is complete under its ``.compacted`` name."""
        os.link(self.compacting, self.marker)
        self.compacting.unlink()
        fsync_dir(self.current)

    def make_available(self) -> None:
        """Step 3: the new log readable as ``<new>.log`` (already there after a crash: nothing to do)."""
        if not self.path.exists():
            os.link(self.marker, self.path)
            fsync_dir(self.current)

    def finalize_and_cleanup(self) -> None:
        """Step 4: the ``.compacted`` name goes once the old log is retired."""
        self.marker.unlink(missing_ok=True)
        fsync_dir(self.current)

    def records(self) -> Iterator[tuple[int, ef.Record]]:
        """(location, record) of every entry of the committed log (recovery re-points the index)."""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            for offset, rec in iter_log_records(fd, os.fstat(fd).st_size):
                yield ef.make_location(self.new_id, offset + ef.RECORD_SIZE_PREFIX), rec
        finally:
            os.close(fd)


def incomplete(current: Path) -> tuple[list[CompactionLog], list[str]]:
    """Committed compactions to finish, and the names of uncommitted ``.compacting`` files just removed."""
    committed = []
    for marker in sorted(current.glob(f"*{COMPACTED}")):
        parsed = parse_compacted(marker.name)
        if parsed is not None:
            committed.append(CompactionLog(current, *parsed))
    removed = []
    for leftover in sorted(current.glob(f"*{COMPACTING}")):
        leftover.unlink()
        removed.append(leftover.name)
    if removed:
        fsync_dir(current)
    return committed, removed


def parse_compacted(name: str) -> tuple[int, int] | None:
    """``<new>.log.<old>.compacted`` -> (new, old)."""
    parts = name.split(".")
    if len(parts) != 4 or parts[1] != "log" or parts[3] != COMPACTED[1:]:
        return None
    try:
        return int(parts[0], 16), int(parts[2], 16)
    except ValueError:
        return None
