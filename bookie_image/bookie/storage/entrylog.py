"""Entry logs of one ledger directory: the active log that checkpoints append to, and reads by location.

Entries of many ledgers are interleaved in one log (sorted by ledger within each checkpoint). When a log
reaches ``logSizeLimit`` it is finalized: its ledgers map (bytes per ledger) is appended and located in the
header, so garbage collection can learn what the log holds without scanning it. Every method here blocks on
the disk; the engine calls them from worker threads.
"""

from __future__ import annotations

import logging
import os
import struct
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

from bookie.storage import durable
from bookie.storage import entrylog_format as ef
from bookie.storage._write_path import EntryBatch, append_records
from bookie.storage.errors import CorruptDataError

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
_IDS = struct.Struct(">qq")
_LOCATION_RECORD = struct.Struct(">qqq")  # how append_batch packs a location: ledger id, entry id, location
LOCATION_RECORD_SIZE = _LOCATION_RECORD.size
_READ_AHEAD_STEP = 64 * 1024  # the smallest read of a read-ahead
WRITE_BUFFER_BYTES = 1024 * 1024
_BUFFER_FULL, _LOG_FULL = 1, 2  # why append_records stopped before the end of a ledger's run
MAX_OPEN_READERS = 64


class EntryLogger:
    """``<ledgerDir>/current/<hex>.log`` files: appends to the active log, reads anywhere."""

    def __init__(self, current_dir: Path, log_size_limit: int) -> None:
        self.current_dir = current_dir
        self.log_size_limit = log_size_limit
        durable.make_dirs(self.current_dir)
        self._lock = threading.Lock()
        self._readers: OrderedDict[int, int] = OrderedDict()
        self._readers_lock = threading.Lock()
        self._fd = -1
        self.active_log_id = -1
        self._position = 0
        # Records waiting to be written: _buffer[:_buffered]. Reused, never shrunk, so that its pages stay mapped.
        self._buffer = bytearray()
        self._buffered = 0
        self._buffer_at = 0
        self._ledgers: dict[int, int] = {}

    # --- files
    def log_ids(self) -> list[int]:
        ids = (ef.parse_log_file_name(p.name) for p in self.current_dir.iterdir())
        return sorted(i for i in ids if i is not None)

    def path_of(self, log_id: int) -> Path:
        return self.current_dir / ef.log_file_name(log_id)

    def snapshot_ids(self) -> tuple[list[int], int]:
        """(ids of the log files, id of the active log) under the lock: a log being created never looks like a
        finished empty one."""
        with self._lock:
            return self.log_ids(), self.active_log_id

    def reserve_log_id(self) -> int:
        """A fresh log id for a compaction output, recorded in ``lastId`` so the active log never takes it."""
        with self._lock:
            log_id = max(self._last_id(), self.active_log_id) + 1
            self._record_last_id(log_id)
            return log_id

    def _record_last_id(self, log_id: int) -> None:
        # Durable before any file of that id can be: after a power cut, an id lost with ``lastId`` could be
        # handed out again while a committed compaction output of the same id waits to be linked in.
        durable.write_file(self.current_dir / "lastId", f"{log_id:x}\n".encode())

    def _last_id(self) -> int:
        known = self.log_ids()
        try:
            recorded = int((self.current_dir / "lastId").read_text().strip(), 16)
        except (FileNotFoundError, ValueError):
            recorded = -1
        return max([recorded, *known])

    # --- writing (checkpoint thread)
    def _open_new_log(self) -> None:
        log_id = self._last_id() + 1
        path = self.path_of(log_id)
        self._record_last_id(log_id)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            _pwrite_all(fd, ef.LogHeader().encode(), 0)
        except OSError:  # a full disk: no half-made log left behind for every retry to add another
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
        # The log's name durable now: the checkpoint that indexes its entries and moves the journal mark past
        # them fsyncs only the file's bytes.
        durable.fsync_dir(self.current_dir)
        self._fd, self.active_log_id = fd, log_id
        self._position = self._buffer_at = ef.HEADER_SIZE
        self._ledgers = {}

    def append(self, ledger_id: int, entry_id: int, body: bytes) -> int:
        """Append one entry to the active log; returns its location. Durable only after ``flush``."""
        return _LOCATION_RECORD.unpack(self.append_batch(EntryBatch([(ledger_id, entry_id, body)])))[2]

    def append_batch(self, batch: EntryBatch) -> bytearray:
        """A batch's entries appended in its order (a checkpoint's come sorted by ledger); returns their
        locations packed, 24 bytes each: ledger id, entry id, location (big-endian int64s, the location index's
        key and value). Durable only after ``flush``.

        The records are packed by ``_write_path.append_records`` (C, the GIL released while it copies): this
        runs on a worker thread for every entry the bookie stores, and the event loop needs the GIL meanwhile.
        Between its calls, one per ledger's run, this method keeps the log's ledgers map, rolls the log when it
        is full and writes the buffer out every ``WRITE_BUFFER_BYTES``."""
        locations = bytearray()
        with self._lock:
            if self._fd < 0:
                self._open_new_log()
            index = 0
            while index < len(batch):
                ledger_id, start = batch[index][0], self._position
                index, self._position, stop, self._buffered = append_records(
                    self._buffer, self._buffered, locations, batch, index, start, self.active_log_id,
                    self.log_size_limit, ef.HEADER_SIZE, WRITE_BUFFER_BYTES)
                if self._position > start:
                    self._ledgers[ledger_id] = self._ledgers.get(ledger_id, 0) + self._position - start
                if stop == _BUFFER_FULL:
                    self._write_buffer()
                elif stop == _LOG_FULL:
                    self._finalize_active()
                    self._open_new_log()
        return locations

    def _write_buffer(self) -> None:
        if self._buffered:
            with memoryview(self._buffer) as view:
                _pwrite_all(self._fd, view[:self._buffered], self._buffer_at)
            self._buffer_at += self._buffered
            self._buffered = 0

    def append_durably(self, batch: EntryBatch) -> bytearray:
        """``append_batch`` then ``flush``, all or nothing: when either fails (a full disk), the active log is
        cut back to where it was, so the space the failed attempt took is free again and the retry (the next
        checkpoint writes the same entries) appends them once, not after a copy of each earlier attempt."""
        with self._lock:
            self._write_buffer()  # what earlier appends left buffered stays out of the undo
            before = (self.active_log_id, self._position, dict(self._ledgers))
        try:
            locations = self.append_batch(batch)
            self.flush()
        except OSError:
            self._undo(*before)
            raise
        return locations

    def _undo(self, log_id: int, position: int, ledgers: dict[int, int]) -> None:
        with self._lock:
            if self._fd < 0:
                return
            if self.active_log_id != log_id:  # rolled meanwhile: the new log holds only the failed records
                position, ledgers = ef.HEADER_SIZE, {}
            os.ftruncate(self._fd, position)
            self._position = self._buffer_at = position
            self._buffered = 0
            self._ledgers = ledgers

    def flush(self) -> None:
        """Write buffered entries and fsync the active log."""
        with self._lock:
            if self._fd >= 0:
                self._write_buffer()
                os.fdatasync(self._fd)

    def _finalize_active(self) -> None:
        """Append the ledgers map, point the header at it, fsync, close."""
        self._write_buffer()
        map_offset = self._position
        data = ef.encode_ledgers_map(self._ledgers)
        _pwrite_all(self._fd, data, map_offset)
        _pwrite_all(self._fd, ef.encode_map_location(map_offset, len(self._ledgers)), ef.MAP_LOCATION_OFFSET)
        os.fsync(self._fd)
        os.close(self._fd)
        log.info("entry log %x finalized: %d ledgers, %d bytes", self.active_log_id, len(self._ledgers),
                 map_offset)
        self._fd, self.active_log_id = -1, -1

    def roll(self) -> None:
        """Finalize the active log now (shutdown, or compaction wants a fresh log)."""
        with self._lock:
            if self._fd >= 0:
                if self._position > ef.HEADER_SIZE:
                    self._finalize_active()
                else:
                    os.close(self._fd)
                    self.path_of(self.active_log_id).unlink(missing_ok=True)
                    self._fd, self.active_log_id = -1, -1

    def active_ledgers(self) -> dict[int, int]:
        with self._lock:
            return dict(self._ledgers)

    # --- reading (reader threads)
    def _reader(self, log_id: int) -> int:
        with self._readers_lock:
            fd = self._readers.get(log_id)
            if fd is not None:
                self._readers.move_to_end(log_id)
                return fd
            try:
                fd = os.open(self.path_of(log_id), os.O_RDONLY)
            except FileNotFoundError:
                raise CorruptDataError(f"entry log {log_id:x}.log is missing") from None
            self._readers[log_id] = fd
            while len(self._readers) > MAX_OPEN_READERS:
                _, old = self._readers.popitem(last=False)
                os.close(old)
            return fd

    def forget_reader(self, log_id: int) -> None:
        with self._readers_lock:
            fd = self._readers.pop(log_id, None)
            if fd is not None:
                os.close(fd)

    def read(self, ledger_id: int, entry_id: int, location: int) -> bytes:
        log_id, pos = ef.split_location(location)
        fd = self._reader(log_id)
        prefix = os.pread(fd, 4, pos - ef.RECORD_SIZE_PREFIX)
        if len(prefix) < 4:
            raise CorruptDataError(f"entry log {log_id:x}.log ends before offset {pos}")
        (size,) = _SIZE.unpack(prefix)
        body = os.pread(fd, size, pos) if size > 0 else b""
        if size < _IDS.size or len(body) != size or _IDS.unpack_from(body) != (ledger_id, entry_id):
            raise CorruptDataError(
                f"entry log {log_id:x}.log at {pos}: expected ledger {ledger_id} entry {entry_id}")
        return body

    def read_ahead(self, ledger_id: int, location: int, max_entries: int,
                   max_bytes: int) -> Iterator[tuple[int, int, bytes]]:
        """(entry id, location, body) of the records of ``ledger_id`` stored right after ``location`` in the same
        log (sequential reads), at most ``max_entries`` of them within ``max_bytes``. Not necessarily the
        indexed copies: the caller checks."""
        log_id, pos = ef.split_location(location)
        fd = self._reader(log_id)
        (size,) = _SIZE.unpack(os.pread(fd, 4, pos - 4))
        at = pos + size  # the next record's size prefix
        # Read what the batch takes if its entries are about this one's size, not the whole budget at once:
        # a batch of small entries is a small part of it. A short guess costs one more read.
        window = _ReadWindow(fd, at + max(0, max_bytes), step=max(_READ_AHEAD_STEP, (size + 4) * max_entries))
        for _ in range(max_entries):
            head = window.get(at, 4 + _IDS.size)
            if head is None:
                return
            (size,) = _SIZE.unpack_from(head)
            lid, eid = _IDS.unpack_from(head, 4)
            if size < _IDS.size or lid != ledger_id:
                return
            body = window.get(at + 4, size)
            if body is None:
                return
            yield eid, (log_id << 32) | (at + 4), body
            at += 4 + size

    def close(self) -> None:
        self.roll()
        with self._readers_lock:
            for fd in self._readers.values():
                os.close(fd)
            self._readers.clear()


class _ReadWindow:
    """Sequential reads of one file up to ``limit``, ``step`` bytes (or more) per pread."""

    def __init__(self, fd: int, limit: int, step: int) -> None:
        self.fd, self.limit, self.step = fd, limit, step
        self.buf, self.buf_at = b"", 0

    def get(self, offset: int, n: int) -> bytes | None:
        """The file's bytes ``offset .. offset + n``, or None past the limit or the end of the file."""
        if offset + n > self.limit:
            return None
        start = offset - self.buf_at
        if start < 0 or start + n > len(self.buf):
            size = min(max(self.step, n), self.limit - offset)
            self.buf, self.buf_at, start = os.pread(self.fd, size, offset), offset, 0
        if start + n > len(self.buf):
            return None
        return self.buf[start:start + n]


def _pwrite_all(fd: int, data: bytes | memoryview, offset: int) -> None:
    """``pwrite`` until every byte is written: a write that fills the disk returns short, and only the next one
    raises ENOSPC (taking a short write for a whole one would index entries that are not in the file)."""
    with memoryview(data) as view:
        while view.nbytes:
            written = os.pwrite(fd, view, offset)
            view, offset = view[written:], offset + written
