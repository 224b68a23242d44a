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
        records, header, problem = _read_log(path)
        if problem is not None and header is not None and header.has_ledgers_map:
            raise problem
        yield from records


def unfinished_logs(ledger_dir: Path) -> list[str]:
    """The entry logs of ``ledger_dir`` that do not end on a whole record, each named with why: a copy taken
    while any is listed would hold a write the bookie has not finished. An empty file is not one: Apache
    BookKeeper creates its next log ahead of time and leaves it empty until it first flushes to it."""
    unfinished = []
    for path in sorted((ledger_dir / "current").glob("*.log")):
        if path.stat().st_size == 0:
            continue
        _, _, problem = _read_log(path)
        if problem is not None:
            unfinished.append(f"{path}: {problem}")
    return unfinished


def _read_log(path: Path) -> tuple[list[ef.Record], ef.LogHeader | None, ef.CorruptRecord | None]:
    """One log's whole records up to its ledgers map, its header (None if not written yet), and what stopped the
    reading short (damage, or a write not finished), if anything did."""
    data = path.read_bytes()
    try:
        header = ef.LogHeader.decode(data)
    except ef.CorruptRecord as exc:
        return [], None, exc
    end = header.ledgers_map_offset if header.has_ledgers_map else len(data)
    records: list[ef.Record] = []
    try:
        records.extend(ef.iter_records(data, ef.HEADER_SIZE, end))
    except ef.CorruptRecord as exc:
        return records, header, exc
    return records, header, None
