"""The entry log's write buffer is reused from one megabyte to the next, not freed and allocated again: a
checkpoint copies every entry into it, and a buffer whose pages go back to the kernel each time it is written out
costs a page fault per 4 KiB copied (at 16 KiB entries that was most of the checkpoint's CPU). Counted in the
minor page faults of the thread that appends."""

from __future__ import annotations

import os
import resource
from pathlib import Path

from bookie.storage._write_path import EntryBatch
from bookie.storage.entrylog import WRITE_BUFFER_BYTES, EntryLogger

ENTRY_BYTES = 16 * 1024
TOTAL_BYTES = 64 * 1024 * 1024
PAGE = os.sysconf("SC_PAGE_SIZE")


def _minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt


def test_appending_many_buffers_faults_in_the_buffer_once(tmp_path: Path) -> None:
    logger = EntryLogger(tmp_path, 1 << 30)
    body = os.urandom(ENTRY_BYTES)
    count = TOTAL_BYTES // ENTRY_BYTES
    batch = EntryBatch([(7, i, body) for i in range(count)])
    logger.append_batch(EntryBatch([(7, -1, body)]))  # the log file opened, its first pages touched
    before = _minor_faults()
    locations = logger.append_batch(batch)
    faults = _minor_faults() - before
    logger.flush()
    assert len(locations) == 24 * count
    buffer_pages = (WRITE_BUFFER_BYTES + ENTRY_BYTES) // PAGE
    location_pages = 24 * count // PAGE
    # Without reuse: one fault per page of every buffer written out, TOTAL_BYTES / PAGE (16,384 here).
    assert faults <= 2 * (buffer_pages + location_pages), f"{faults} minor faults for {TOTAL_BYTES >> 20} MiB"
    logger.roll()
