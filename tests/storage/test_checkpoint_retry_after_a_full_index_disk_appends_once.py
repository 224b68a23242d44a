"""A checkpoint whose entries reached the entry log but whose index could not be written (the index's disk full)
is retried from the index: the entries are not appended again. Before this, each retry appended another copy of
the whole write cache and failed at the index again; retried by every add waiting for room, the copies filled the
space freed on the ledger disk again (tests/faults/test_full_disk_mid_write.py, seed 1562551843, found it: a 116 MB
entry log on its 112 MiB disk)."""

from __future__ import annotations

import contextlib
import errno
from pathlib import Path

import pytest
from bookie.config import BookieConfig
from bookie.storage.ledger_dir import LedgerDirStorage, WriteCache

from tests.support.disks import tmpfs
from tests.support.faults import fill, free
from tests.support.raw_client import entry

LEDGER = 7
ENTRIES = 64
BODIES = [entry(LEDGER, i, bytes([i]) * 16_384) for i in range(ENTRIES)]
RETRIES = 5


def test_a_retry_after_the_index_failed_indexes_without_appending_again(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "index-disk", 8) as index_disk:
        conf = BookieConfig.from_mapping({"journalDirectories": str(tmp_path / "journal"),
                                          "ledgerDirectories": str(tmp_path / "ledgers"),
                                          "indexDirectories": str(index_disk)})
        d = LedgerDirStorage(tmp_path / "ledgers", index_disk, conf, 1)
        try:
            cache = WriteCache(4 << 20)
            for i, body in enumerate(BODIES):
                cache.put(LEDGER, i, body)
            one_copy = sum(4 + len(b) for b in BODIES)  # each entry with its length prefix
            filler = fill(index_disk, leave=0)
            log_sizes = []
            for _ in range(RETRIES):  # the checkpoint retried while the index's disk stays full
                with pytest.raises(OSError) as failed:
                    d.flush_cache(cache)
                assert failed.value.errno == errno.ENOSPC, failed.value
                log_sizes.append(d.entry_logger.path_of(d.entry_logger.active_log_id).stat().st_size)
            assert len(set(log_sizes)) == 1, f"the entry log grew at each retry: {log_sizes} bytes"
            assert one_copy <= log_sizes[0] < 2 * one_copy, f"{log_sizes[0]} bytes: one copy of each entry"
            free(filler)
        finally:
            d.entry_logger.close()
            d.ledger_index.close()
            with contextlib.suppress(Exception):  # closed, but saying the write error it kept since
                d.locations.close()
