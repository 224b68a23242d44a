"""The records a running bookie's entry logs hold, read from outside the bookie while it writes.

A log being created can be shorter than its header, and the log a bookie is appending to can end in a record
whose write is half done (Apache BookKeeper's entry logger writes its buffer out whenever it fills, so the file can
end part-way through a record until the next flush). Both are normal on a live disk, so they are read as
"nothing yet" and "up to the last whole record". Damage in a finished log (one with its ledgers map) is still
raised.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from bookie.storage import entrylog_format as ef


def records_on_a_live_disk(ledger_dir: Path) -> Iterator[ef.Record]:
    """Every whole record in the entry logs of ``ledger_dir``'s ``current`` directory, in no particular order."""
    for path in (ledger_dir / "current").glob("*.log"):
        data = path.read_bytes()
        if len(data) < ef.HEADER_SIZE:
            continue
        header = ef.LogHeader.decode(data)
        end = header.ledgers_map_offset if header.has_ledgers_map else len(data)
        try:
            yield from ef.iter_records(data, ef.HEADER_SIZE, end)
        except ef.CorruptRecord:
            if header.has_ledgers_map:
                raise


def unfinished_logs(ledger_dir: Path) -> list[str]:
    """The entry logs of ``ledger_dir`` that do not end on a whole record, each named with why: a copy taken
    while any is listed would hold a write the bookie has not finished. An empty file is not one: Apache
    BookKeeper creates its next log ahead of time and leaves it empty until it first flushes to it."""
    unfinished = []
    for path in sorted((ledger_dir / "current").glob("*.log")):
        data = path.read_bytes()
        if not data:
            continue
        try:
            header = ef.LogHeader.decode(data)
            end = header.ledgers_map_offset if header.has_ledgers_map else len(data)
            for _ in ef.iter_records(data, ef.HEADER_SIZE, end):
                pass
        except ef.CorruptRecord as exc:
            unfinished.append(f"{path}: {exc}")
    return unfinished
