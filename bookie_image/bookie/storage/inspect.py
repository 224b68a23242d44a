"""Read-only views of a bookie's files for humans: ``bookie journal dump``, ``entrylog dump``, ``check``.

They open files and RocksDB read-only, so they can run next to a live bookie.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rocksdict import AccessType, Options, Rdict

from bookie.config import BookieConfig
from bookie.storage import entrylog_format as ef
from bookie.storage import journal_format as jf
from bookie.storage.index import LedgerData

_LOC_KEY = struct.Struct(">qq")
_LOC = struct.Struct(">q")


def dump_journal(path: Path) -> Iterator[dict[str, Any]]:
    data = path.read_bytes()
    version = jf.decode_header(data)
    yield {"file": str(path), "format_version": version, "size": len(data)}
    damaged: list[jf.CorruptJournal] = []  # damaged groups: shown where they are, the records after them too
    shown = 0
    try:
        for record in jf.iter_journal(data, damaged=damaged):
            for exc in damaged[shown:]:
                yield {"offset": exc.offset, "kind": "corrupt", "error": str(exc)}
            shown = len(damaged)
            yield {"offset": record.offset, "kind": record.kind.value, "ledger": record.ledger_id,
                   "entry": record.entry_id, "bytes": len(record.data)}
    except jf.CorruptJournal as exc:
        yield {"offset": exc.offset, "kind": "corrupt", "error": str(exc)}
    for rest in damaged[shown:]:
        yield {"offset": rest.offset, "kind": "corrupt", "error": str(rest)}


def dump_entry_log(path: Path, *, include_records: bool = True, limit: int | None = None) -> dict[str, Any]:
    data = path.read_bytes()
    out: dict[str, Any] = {"file": str(path), "size": len(data)}
    try:
        header = ef.LogHeader.decode(data)
    except ef.CorruptRecord as exc:
        out["error"] = str(exc)
        return out
    out["header"] = {"version": header.version, "ledgers_map_offset": header.ledgers_map_offset,
                     "ledgers_count": header.ledgers_count}
    if header.has_ledgers_map:
        try:
            out["ledgers_map"] = {str(k): v for k, v in ef.decode_ledgers_map(data, header).items()}
        except ef.CorruptRecord as exc:
            out["ledgers_map_error"] = str(exc)
    else:
        ledgers, corrupt_at = _scan_ledgers(data)
        out["scanned_ledgers"] = {str(k): v for k, v in ledgers.items()}
        if corrupt_at is not None:
            out["corrupt_at"] = corrupt_at
    if include_records:
        records: list[dict[str, Any]] = []
        try:
            for record in ef.iter_records(data):
                if limit is not None and len(records) >= limit:
                    break
                records.append({"offset": record.offset, "ledger": record.ledger_id, "entry": record.entry_id,
                                "size": record.size})
        except ef.CorruptRecord as exc:
            records.append({"offset": exc.offset, "error": exc.reason})
        out["records"] = records
    return out


def _scan_ledgers(data: bytes) -> tuple[dict[int, int], int | None]:
    """Bytes per ledger of a log without a ledgers map, and the offset of the first bad record if any: every
    record shown, where GC's reader (``storage.logmeta``) stops quietly at a torn tail."""
    ledgers: dict[int, int] = {}
    try:
        for record in ef.iter_records(data):
            ledgers[record.ledger_id] = ledgers.get(record.ledger_id, 0) + record.size + ef.RECORD_SIZE_PREFIX
    except ef.CorruptRecord as exc:
        return ledgers, exc.offset
    return ledgers, None


def _read_only(path: Path) -> Rdict:
    if not path.exists():
        raise FileNotFoundError(f"no RocksDB at {path}")
    return Rdict(str(path), Options(raw_mode=True), access_type=AccessType.read_only())


def ledger_locations(conf: BookieConfig, ledger_id: int) -> dict[str, Any]:
    dirs = conf.ledger_directories
    index_dirs = conf.effective_index_directories
    raw = None
    # Usually in directory ledgerId mod #dirs, but a ledger stays where it was when directories are added.
    preferred = ledger_id % len(dirs)
    for i in [preferred, *(j for j in range(len(dirs)) if j != preferred)]:
        index_dir = index_dirs[i] / "current"
        if not (index_dir / "ledgers").exists():
            continue
        ledgers = _read_only(index_dir / "ledgers")
        try:
            raw = ledgers.get(struct.pack(">q", ledger_id))
            if raw is None:  # the 16-byte key of Apache BookKeeper's rebuild-db-ledgers-index
                raw = ledgers.get(struct.pack(">q", ledger_id) + bytes(8))
        finally:
            ledgers.close()
        if raw is not None:
            break
    info: dict[str, Any] = {"ledger": ledger_id, "directory": str(dirs[i] if raw is not None else dirs[preferred])}
    if raw is None:
        info["stored"] = False
        return info
    data = LedgerData.decode(raw)
    info.update(stored=True, fenced=data.fenced, has_explicit_lac=data.explicit_lac is not None)
    locations = _read_only(index_dir / "locations")
    entries = []
    try:
        it = locations.iter()
        it.seek(_LOC_KEY.pack(ledger_id, 0))
        while it.valid():
            lid, eid = _LOC_KEY.unpack(it.key())
            if lid != ledger_id:
                break
            log_id, pos = ef.split_location(_LOC.unpack(it.value())[0])
            entries.append({"entry": eid, "entry_log": f"{log_id:x}.log", "offset": pos})
            it.next()
    finally:
        locations.close()
    info["entries"] = entries
    return info


def check_directories(conf: BookieConfig) -> dict[str, Any]:
    """Every entry log readable, with a ledgers map or scannable; journals parse; report problems."""
    problems: list[str] = []
    logs: list[dict[str, Any]] = []
    for d in conf.ledger_directories:
        current = d / "current"
        if not current.is_dir():
            problems.append(f"{current} does not exist")
            continue
        for path in sorted(current.glob("*.log")):
            if ef.parse_log_file_name(path.name) is None:
                continue
            dump = dump_entry_log(path, include_records=False)
            entry = {"file": str(path), "size": dump["size"],
                     "finalized": "ledgers_map" in dump}
            for key in ("error", "ledgers_map_error", "corrupt_at"):
                if key in dump:
                    problems.append(f"{path}: {key} {dump[key]}")
                    entry[key] = dump[key]
            logs.append(entry)
    journals: list[dict[str, Any]] = []
    for d in conf.journal_directories:
        for path in sorted((d / "current").glob("*.txn")):
            try:
                records = list(dump_journal(path))[1:]
                corrupt = [r for r in records if r.get("kind") == "corrupt"]
                problems += [f"{path}: {r['error']}" for r in corrupt]
                journals.append({"file": str(path), "records": len(records) - len(corrupt),
                                 "size": os.path.getsize(path)})
            except jf.CorruptJournal as exc:
                problems.append(f"{path}: {exc}")
    return {"entry_logs": logs, "journals": journals, "problems": problems}
