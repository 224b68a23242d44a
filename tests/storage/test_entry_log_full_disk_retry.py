"""A checkpoint whose entry-log write fails on a full disk leaves no trace in the log: the log is cut back to
where it was, so freeing space lets the retry write each entry once, and the log holds exactly what was
indexed. Before this, every failed retry appended another copy after the last, eating the freed space, and
the bookie never became writable again (tests/faults/test_full_disk_mid_write.py found it)."""

from __future__ import annotations

import errno
import struct
from pathlib import Path

import pytest
from bookie.storage._write_path import EntryBatch
from bookie.storage.entrylog import EntryLogger

from tests.support.disks import tmpfs
from tests.support.faults import fill, free
from tests.support.raw_client import entry

ENTRY = 64 * 1024
ENTRIES = 32  # 2 MiB per attempt


BODIES = [entry(1, i, bytes([i]) * ENTRY) for i in range(ENTRIES)]


def _batch() -> EntryBatch:
    return EntryBatch([(1, i, body) for i, body in enumerate(BODIES)])


def test_a_failed_append_is_cut_back_and_the_retry_writes_once(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", 8) as disk:
        logger = EntryLogger(disk / "current", log_size_limit=64 << 20)
        try:
            first = logger.append_durably(EntryBatch([(1, 1000, entry(1, 1000, b"before"))]))
            [before] = struct.unpack_from(">q", first, 16)  # ledger, entry, location
            indexed = logger.path_of(logger.active_log_id).stat().st_size
            filler = fill(disk, leave=ENTRY * 4)
            for _ in range(5):  # a checkpoint retried on a full disk, as the engine's timer does
                with pytest.raises(OSError) as failed:
                    logger.append_durably(_batch())
                assert failed.value.errno == errno.ENOSPC
                assert logger.path_of(logger.active_log_id).stat().st_size == indexed
            free(filler)
            locations = logger.append_durably(_batch())
            assert len(locations) == 24 * ENTRIES
            size = logger.path_of(logger.active_log_id).stat().st_size
            assert size == indexed + sum(4 + len(b) for b in BODIES), "one copy of each entry after the retries"
            assert logger.read(1, 1000, before) == entry(1, 1000, b"before")
        finally:
            logger.close()

