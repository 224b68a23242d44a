"""The RocksDB files of the ledger indexes in a form Apache BookKeeper reads too, and the disks this bookie
refuses to take over.

Apache BookKeeper 4.17 links RocksDB 7.10 (rocksdbjni 7.10.2), which reads block-based tables up to
``format_version`` 5 and refuses a database holding a newer one ("Corrupt or unsupported format_version: 6").
The RocksDB inside rocksdict writes version 6 by default, and on an existing database it reuses the options
of the database's last OPTIONS file unless the column family's options are given. So the indexes are opened
with version 5 given explicitly, and tables a newer format wrote (by an earlier release of this bookie) are
rewritten once at start, with a log line, so that the disk can go back to Apache BookKeeper.

A ledger directory with entry logs but no RocksDB index (Apache BookKeeper's InterleavedLedgerStorage or
SortedLedgerStorage, whose index is per-ledger ``.idx`` files; or an index directory that was lost) is refused:
opened, it would look like a bookie that has none of its ledgers.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Iterable
from pathlib import Path

from rocksdict import BlockBasedOptions, BottommostLevelCompaction, CompactOptions, Options, Rdict

from bookie.storage import entrylog_format as ef
from bookie.storage import index_logs
from bookie.storage.errors import StorageError

log = logging.getLogger(__name__)

# The newest block-based table format RocksDB 7.10 reads (format_version 6 came with RocksDB 8.6).
TABLE_FORMAT_VERSION = 5
INDEX_NAMES = ("ledgers", "locations")
# Apache BookKeeper's command that rebuilds each index from the entry logs (the bookie stopped); this bookie's
# ``bookie index rebuild <name>`` (storage/index_rebuild.py) gives the same index.
REBUILD_COMMANDS = {"ledgers": "bookkeeper shell rebuild-db-ledgers-index",
                    "locations": "bookkeeper shell rebuild-db-ledger-locations-index"}


def rebuild_advice(names: Iterable[str]) -> str:
    """How to rebuild these indexes, in backquotes: this bookie's command, then Apache BookKeeper's."""
    names = [name for name in INDEX_NAMES if name in set(names)]  # the ledgers index first: the other needs it
    ours = " then ".join(f"`bookie index rebuild {name} --conf <bk_server.conf>`" for name in names)
    return f"{ours} (Apache BookKeeper: {' and '.join(f'`{REBUILD_COMMANDS[name]}`' for name in names)})"


_FOOTER_VERSION = struct.Struct("<I")  # a table's footer ends with format_version (uint32) and the magic (8 bytes)


class IncompatibleDiskError(StorageError):
    """A ledger directory this bookie cannot serve as it is: opening it would lose or hide data."""


def options() -> Options:
    """The indexes' options: raw keys and values, created when missing, tables Apache BookKeeper reads."""
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    table = BlockBasedOptions()
    table.set_format_version(TABLE_FORMAT_VERSION)
    opts.set_block_based_table_factory(table)
    return opts


def open_db(path: Path) -> Rdict:
    """Open (or create) one index; tables in a newer format than Apache BookKeeper reads are rewritten."""
    try:
        index_logs.check(path)  # before RocksDB reads it: its reader can loop on a damaged record
    except index_logs.IndexDamagedError as exc:
        if path.name not in REBUILD_COMMANDS:
            raise
        raise index_logs.IndexDamagedError(
            f"{exc}. Restore the index directory, or rebuild the index with {rebuild_advice([path.name])} while "
            "the bookie is stopped") from None
    opts = options()
    # The column family's options given explicitly: otherwise those of the database's OPTIONS file are used.
    db = Rdict(str(path), opts, column_families={"default": opts})
    newer = newer_tables(db, path)
    if newer:
        _rewrite(db, path, newer)
    return db


def table_format(sst: Path) -> int:
    with open(sst, "rb") as f:
        f.seek(-12, 2)
        (version,) = _FOOTER_VERSION.unpack(f.read(4))
    return int(version)


def newer_tables(db: Rdict, path: Path) -> dict[str, int]:
    """Live table files (name -> format_version) of the index at ``path`` that Apache BookKeeper's RocksDB
    cannot read."""
    found = {}
    for live in db.live_files():
        name = str(live["name"]).lstrip("/")
        try:
            version = table_format(path / name)
        except FileNotFoundError:
            # Compacted away since the listing (RocksDB compacts in the background from the moment it opens):
            # its entries are in a new table, written in TABLE_FORMAT_VERSION.
            continue
        if version > TABLE_FORMAT_VERSION:
            found[name] = version
    return found


def _rewrite(db: Rdict, path: Path, newer: dict[str, int]) -> None:
    """A full compaction: every table is written again, in ``TABLE_FORMAT_VERSION``."""
    log.warning("RocksDB index %s: %d table file(s) in format_version %s, which Apache BookKeeper 4.17 (RocksDB "
                "7.10) cannot open: rewriting the index in format_version %d (once, a full compaction)",
                path, len(newer), "/".join(str(v) for v in sorted(set(newer.values()))), TABLE_FORMAT_VERSION)
    started = time.monotonic()
    compact = CompactOptions()
    compact.set_bottommost_level_compaction(BottommostLevelCompaction.force())
    db.compact_range(None, None, compact)
    left = newer_tables(db, path)
    if left:
        raise IncompatibleDiskError(f"RocksDB index {path}: {len(left)} table file(s) still in a format newer than "
                                    f"{TABLE_FORMAT_VERSION} after a full compaction ({', '.join(sorted(left))})")
    log.warning("RocksDB index %s: rewritten in format_version %d in %.1f s", path, TABLE_FORMAT_VERSION,
                time.monotonic() - started)


def check_takeover(ledger_dir: Path, index_dir: Path) -> None:
    """Refuse a ledger directory whose entry logs have no RocksDB index, or only one of its two, to go with
    them (before anything is created in it)."""
    current, index_current = ledger_dir / "current", index_dir / "current"
    present = [name for name in INDEX_NAMES if (index_current / name).is_dir()]
    if not current.is_dir() or len(present) == len(INDEX_NAMES):
        return
    logs = [p.name for p in current.iterdir() if ef.parse_log_file_name(p.name) is not None]
    if present and logs:  # one index lost: opened, the bookie would answer "no such entry" for what it holds
        missing = [name for name in INDEX_NAMES if name not in present]
        raise IncompatibleDiskError(
            f"ledger directory {ledger_dir} holds {len(logs)} entry log(s) and its index directory {index_dir} "
            f"has the RocksDB index {' and '.join(present)} but not {' and '.join(missing)} under current/: "
            "the entries of those logs could not be found. Restore the index directory, or rebuild the index "
            f"with {rebuild_advice(missing)} while the bookie is stopped")
    idx_files = next(current.glob("*/*/*.idx"), None)
    if idx_files is not None:
        raise IncompatibleDiskError(
            f"ledger directory {ledger_dir} was written by Apache BookKeeper's InterleavedLedgerStorage or "
            f"SortedLedgerStorage (per-ledger index files such as {idx_files.relative_to(current)}, no RocksDB "
            "index): this bookie reads DbLedgerStorage's layout only. Keep Apache BookKeeper on this disk, or "
            "convert it while the bookie is stopped (Apache BookKeeper's `bookkeeper shell convert-to-db-storage`, "
            "then ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage) before switching")
    if logs:
        raise IncompatibleDiskError(
            f"ledger directory {ledger_dir} holds {len(logs)} entry log(s) but its index directory {index_dir} "
            f"has no RocksDB index ({' and '.join(INDEX_NAMES)} under current/): the ledgers of those logs could "
            "not be found. Restore the index directory (check indexDirectories), or rebuild the indexes with "
            f"{rebuild_advice(INDEX_NAMES)} before switching")
