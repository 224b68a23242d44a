"""Entry-log metadata: which ledgers each log holds and how many of its bytes each one takes.

The one reader of a log's ledgers map: read from the end of a finalized log; a log without a trustworthy
map (crashed bookie, BookKeeper PR #4607) is scanned record by record, paced by the caller's throttle
(BookKeeper's ``extractEntryLogMetadataFromIndex`` / ``extractEntryLogMetadataByScanning``). GC keeps what
it reads here per ledger directory (``bookie.gc.metacache``).
"""

from __future__ import annotations

import logging
import os
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bookie.storage import entrylog_format as ef

log = logging.getLogger(__name__)

SCAN_CHUNK = 4 * 1024 * 1024
_INT32 = struct.Struct(">i")
_IDS = struct.Struct(">qq")


class Throttle(Protocol):
    """Paces a scan: ``acquire(n)`` blocks the calling thread until ``n`` more bytes may be read."""

    def acquire(self, amount: float) -> None: ...


class CorruptLog(Exception):
    """An entry log GC cannot trust: it is quarantined (kept, never compacted or deleted) and reported."""

    def __init__(self, log_id: int, reason: str) -> None:
        super().__init__(f"entry log {log_id:x}.log: {reason}")
        self.log_id = log_id
        self.reason = reason


@dataclass
class LogMeta:
    """One entry log as GC sees it. ``ledgers`` holds only ledgers still live (BookKeeper's ledgersMap)."""

    log_id: int
    total_bytes: int                 # bytes of all entries when the log was read (sum of the map)
    ledgers: dict[int, int]          # live ledger -> bytes (entries + size prefixes)
    file_size: int
    mtime: float
    from_scan: bool = False
    quarantined: str | None = None   # why GC leaves this log alone
    pending_delete: bool = False     # compacted away or dead, waiting for readers (refs)
    first_ledgers: int = field(default=0)  # how many ledgers the log held when read (explain endpoint)
    read_at: float = field(default_factory=time.time)  # when the file was read (epoch s)

    @property
    def remaining_bytes(self) -> int:
        return sum(self.ledgers.values())

    def remove_dead(self, alive: Callable[[int], bool]) -> int:
        """Drop ledgers that no longer exist locally (``removeLedgerIf``); returns the bytes they held."""
        dead = [lid for lid in self.ledgers if not alive(lid)]
        return sum(self.ledgers.pop(lid) for lid in dead)

    def to_json(self) -> dict[str, object]:
        return {"total": self.total_bytes, "size": self.file_size, "mtime": self.mtime, "scan": self.from_scan,
                "quarantined": self.quarantined, "pending": self.pending_delete, "first": self.first_ledgers,
                "read": self.read_at, "ledgers": sorted(self.ledgers.items())}

    @staticmethod
    def from_json(log_id: int, d: dict[str, object]) -> LogMeta:
        pairs = d["ledgers"]
        assert isinstance(pairs, list)
        ledgers = {int(lid): int(size) for lid, size in pairs}
        return LogMeta(log_id, int(d["total"]), ledgers, int(d["size"]),  # type: ignore[call-overload]
                       float(d["mtime"]), bool(d["scan"]),  # type: ignore[arg-type]
                       d.get("quarantined") or None, bool(d.get("pending")),  # type: ignore[arg-type]
                       int(d.get("first", len(ledgers))),  # type: ignore[call-overload]
                       float(d.get("read", d["mtime"])))  # type: ignore[arg-type]


def iter_log_records(fd: int, file_size: int, throttle: Throttle | None = None,
                     chunk: int = SCAN_CHUNK, start: int = ef.HEADER_SIZE) -> Iterator[tuple[int, ef.Record]]:
    """(absolute offset, record) of every entry of an open log from ``start`` (the first record, or the end of
    a record an earlier scan stopped after), reading ``chunk``-sized windows.

    Records are parsed by ``entrylog_format.iter_records``; this only slides the window. A record running
    past the end of the file is a torn tail (a crash while appending; never indexed) and ends the scan;
    any other inconsistency raises ``ef.CorruptRecord`` with the absolute offset.
    """
    pos = start
    want = chunk
    while pos + ef.RECORD_SIZE_PREFIX <= file_size:
        buf = os.pread(fd, min(want, file_size - pos), pos)
        if throttle is not None:
            throttle.acquire(len(buf))
        want = chunk
        end = 0
        try:
            for rec in ef.iter_records(buf, start=0):
                yield pos + rec.offset, rec
                end = rec.offset + ef.RECORD_SIZE_PREFIX + rec.size
        except ef.CorruptRecord as exc:
            (size,) = _INT32.unpack_from(buf, exc.offset)
            record_end = exc.offset + ef.RECORD_SIZE_PREFIX + size
            if size <= 0 or record_end <= len(buf):
                raise ef.CorruptRecord(pos + exc.offset, exc.reason) from None
            if pos + record_end > file_size:
                log.info("entry log scan: torn tail at offset %d (record of %d bytes past the end)",
                         pos + exc.offset, size)
                return
            pos += exc.offset           # the record straddles the window: read again from its start
            want = max(chunk, record_end - exc.offset)
            continue
        if _map_starts(buf, end) or pos + len(buf) >= file_size:
            return
        # The window ended in padding zeros or a partial size prefix: continue from the last record's end,
        # or skip the zeros (keeping 3 bytes that may begin the next size prefix).
        pos += end if end > 0 else max(1, len(buf) - 3)


def _map_starts(buf: bytes, at: int) -> bool:
    if at + ef.RECORD_SIZE_PREFIX + _IDS.size > len(buf):
        return False
    return _IDS.unpack_from(buf, at + ef.RECORD_SIZE_PREFIX) == (ef.INVALID_LEDGER_ID, ef.LEDGERS_MAP_ENTRY_ID)


def read_meta(path: Path, log_id: int, throttle: Throttle | None = None) -> LogMeta:
    """The metadata of one log file: its ledgers map, else a throttled scan. Raises ``CorruptLog``."""
    fd = os.open(path, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        if st.st_size <= ef.HEADER_SIZE:
            # Created but never written (a crash right after creation): no entry can be in it.
            return LogMeta(log_id, 0, {}, st.st_size, st.st_mtime)
        try:
            header = ef.LogHeader.decode(os.pread(fd, ef.HEADER_SIZE, 0))
        except ef.CorruptRecord as exc:
            raise CorruptLog(log_id, f"bad header: {exc.reason}") from None
        mapping = _read_map(fd, st.st_size, header, log_id)
        if mapping is not None:
            return LogMeta(log_id, sum(mapping.values()), mapping, st.st_size, st.st_mtime,
                           first_ledgers=len(mapping))
        ledgers: dict[int, int] = {}
        try:
            for _, rec in iter_log_records(fd, st.st_size, throttle):
                ledgers[rec.ledger_id] = ledgers.get(rec.ledger_id, 0) + rec.size + ef.RECORD_SIZE_PREFIX
        except ef.CorruptRecord as exc:
            raise CorruptLog(log_id, f"scan stopped {exc}") from None
        return LogMeta(log_id, sum(ledgers.values()), ledgers, st.st_size, st.st_mtime, from_scan=True,
                       first_ledgers=len(ledgers))
    finally:
        os.close(fd)


def _read_map(fd: int, size: int, header: ef.LogHeader, log_id: int) -> dict[int, int] | None:
    """The ledgers map, or None when the log must be scanned (no map, or a map that does not add up)."""
    if not header.has_ledgers_map or header.ledgers_map_offset >= size:
        return None
    tail = os.pread(fd, size - header.ledgers_map_offset, header.ledgers_map_offset)
    # decode_ledgers_map wants the map at header.ledgers_map_offset of its buffer; we read only the tail, so
    # hand it a one-byte prefix and offset 1 (offset 0 would mean "no map").
    shifted = ef.LogHeader(header.version, 1, header.ledgers_count)
    try:
        return ef.decode_ledgers_map(b"\0" + tail, shifted)
    except ef.CorruptRecord as exc:
        log.warning("entry log %x: ledgers map unusable (%s); scanning the log", log_id, exc.reason)
        return None
