"""What the audit can still say about bookies whose entry logs it cannot read: Apache BookKeeper's (their admin API
serves no entry-log reads) or any bookie given as ``--rest-bookie [ID=]http(s)://host:port``.

From the bookie's admin REST API (BookKeeper's paths, which both implementations serve): disk total and free
(``/api/v1/bookie/info``), the entry-log files (``list_disk_file``), read-only state (``state``) and the GC's
compaction counters and times (``gc_details``). From the metadata snapshot (ZooKeeper): the ledgers whose
ensembles hold the bookie, the entries the write sets place on it (exact: entry ``e`` of a fragment with
ensemble size ``E`` and write quorum ``W`` is on the bookie at ensemble index ``i`` iff ``(i - e) mod E < W``),
their bytes (estimated: a closed ledger's ``length`` spread evenly over its entries, plus each stored entry's
header, digest and size prefix; open ledgers' bytes are unknown), and the ledgers the auditor marked
under-replicated with this bookie among their missing replicas.

What it cannot say, without the ledgers maps: garbage and reclaimable bytes per entry log, which ledgers pin
which logs, the compaction what-if, orphans, and the entry-by-entry replication check. ``unexplained_bytes``
(disk used minus the live bytes metadata places there) bounds the garbage from above: the same disk may hold
the journal, the index and other files.
"""

from __future__ import annotations

import json
import os
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from bookie.protocol import entry as bke
from bookie.storage.entrylog_format import RECORD_SIZE_PREFIX

from bookie_audit import bookie_http
from bookie_audit.files import AuditInputError

TIMEOUT_S = 30.0
ENTRY_OVERHEAD = bke.METADATA_LENGTH + RECORD_SIZE_PREFIX  # a stored entry's header and its record's size prefix

_DIGEST_LENGTH = {int(t): bke.digest_manager(t).digest_length for t in bke.DigestType}

SCHEMA = pa.schema([
    ("bookie", pa.string()), ("url", pa.string()), ("read_only", pa.bool_()), ("entry_logs", pa.int64()),
    ("disk_total_bytes", pa.int64()), ("disk_free_bytes", pa.int64()), ("disk_used_bytes", pa.int64()),
    ("ledgers", pa.int64()), ("open_ledgers", pa.int64()), ("expected_entries", pa.int64()),
    ("expected_bytes", pa.int64()), ("unexplained_bytes", pa.int64()), ("underreplicated_ledgers", pa.int64()),
    ("major_compactions", pa.int64()), ("minor_compactions", pa.int64()),
    ("last_major_compaction_ms", pa.int64()), ("last_minor_compaction_ms", pa.int64()), ("error", pa.string()),
])


@dataclass(frozen=True)
class RestBookie:
    """One ``--rest-bookie`` argument."""

    url: str
    bookie: str | None = None

    @staticmethod
    def parse(text: str) -> RestBookie:
        head, sep, tail = text.partition("=")
        url, bookie = (tail, head) if sep and "://" not in head else (text, None)
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.port is None:
            raise AuditInputError(f"--rest-bookie must be [BOOKIE_ID=]http(s)://host:port (the bookie's "
                                  f"httpServerPort), got {text!r}")
        return RestBookie(url.rstrip("/"), bookie)


def _get(url: str) -> Any:
    headers = {}
    path = bookie_http.token_file()
    if path:
        headers["Authorization"] = f"Bearer {bookie_http.read_token(path)}"
    context = ssl.create_default_context(cafile=bookie_http.ca_file()) if url.startswith("https:") else None
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=TIMEOUT_S,
                                context=context) as response:
        return json.loads(response.read())


def entries_on(index: int, first: int, last: int, ensemble_size: int, write_quorum: int) -> int:
    """How many entries of ``[first, last]`` the write sets place on the bookie at ``index`` of the ensemble."""
    if last < first:
        return 0
    count = last - first + 1
    cycles, rest = divmod(count, ensemble_size)
    extra = sum(1 for e in range(first, first + rest) if (index - e) % ensemble_size < write_quorum)
    return cycles * write_quorum + extra


@dataclass
class _Expected:
    ledgers: set[int]
    open_ledgers: set[int]
    entries: int = 0
    bytes: float = 0.0


def expected_by_bookie(snapshot_dir: str) -> dict[str, _Expected]:
    """Per bookie: the ledgers, entries and (estimated) bytes the metadata snapshot places on it."""
    ledgers = pq.read_table(os.path.join(snapshot_dir, "ledgers.parquet"),
                            columns=["ledger_id", "state", "last_entry_id", "length", "digest_type"]).to_pylist()
    by_id = {r["ledger_id"]: r for r in ledgers}
    fragments = pq.read_table(os.path.join(snapshot_dir, "fragments.parquet")).to_pylist()
    out: dict[str, _Expected] = {}
    for f in fragments:
        led = by_id.get(f["ledger_id"])
        closed = led is not None and led["state"] == "CLOSED"
        last = f["last_entry_id"]
        per_entry = None
        if closed and led is not None and led["last_entry_id"] >= 0:
            digest = _DIGEST_LENGTH.get(led["digest_type"], 0)
            per_entry = led["length"] / (led["last_entry_id"] + 1) + ENTRY_OVERHEAD + digest
        for index, bookie in enumerate(f["ensemble"]):
            exp = out.setdefault(bookie, _Expected(set(), set()))
            exp.ledgers.add(f["ledger_id"])
            if not closed:
                exp.open_ledgers.add(f["ledger_id"])
            if last is None:  # the open tail of an open ledger: how far it got is not in metadata
                continue
            n = entries_on(index, f["first_entry_id"], last, f["ensemble_size"], f["write_quorum"])
            exp.entries += n
            if per_entry is not None:
                exp.bytes += n * per_entry
    return out


def _bookie_id(target: RestBookie, registered: Sequence[str]) -> str:
    if target.bookie:
        return target.bookie
    host = urllib.parse.urlsplit(target.url).hostname
    matches = [b for b in registered if b.rsplit(":", 1)[0] == host]
    if len(matches) != 1:
        raise AuditInputError(f"--rest-bookie {target.url}: cannot tell which bookie it is ({len(matches)} bookies "
                              f"registered on host {host}); give it as BOOKIE_ID={target.url}")
    return matches[0]


def rest_table(targets: Sequence[RestBookie], snapshot_dir: str, registered: Sequence[str],
               underreplicated: dict[str, list[str]]) -> pa.Table:
    """One row per bookie (see ``SCHEMA`` and the module docstring). A bookie that does not answer gets a row
    with its ``error``, never a failed audit."""
    expected = expected_by_bookie(snapshot_dir)
    rows: list[dict[str, Any]] = []
    for target in targets:
        bookie = _bookie_id(target, registered)
        exp = expected.get(bookie, _Expected(set(), set()))
        row: dict[str, Any] = {name: None for name in SCHEMA.names}
        row.update(bookie=bookie, url=target.url, ledgers=len(exp.ledgers), open_ledgers=len(exp.open_ledgers),
                   expected_entries=exp.entries, expected_bytes=round(exp.bytes),
                   underreplicated_ledgers=sum(1 for missing in underreplicated.values() if bookie in missing))
        try:
            info = _get(f"{target.url}/api/v1/bookie/info")
            files = _get(f"{target.url}/api/v1/bookie/list_disk_file?file_type=entrylog")
            state = _get(f"{target.url}/api/v1/bookie/state")
            gc = _get(f"{target.url}/api/v1/bookie/gc_details")
        except (OSError, urllib.error.URLError, ValueError) as exc:
            row["error"] = f"{target.url}: {exc}"
            rows.append(row)
            continue
        total, free = int(info["totalSpace"]), int(info["freeSpace"])
        names = [n for n in str(files.get("entrylog files", "")).split("\t") if n]
        row.update(read_only=bool(state.get("readOnly")), entry_logs=len(names), disk_total_bytes=total,
                   disk_free_bytes=free, disk_used_bytes=total - free,
                   unexplained_bytes=max(0, total - free - round(exp.bytes)),
                   major_compactions=sum(int(d.get("majorCompactionCounter", 0)) for d in gc),
                   minor_compactions=sum(int(d.get("minorCompactionCounter", 0)) for d in gc),
                   last_major_compaction_ms=max((int(d.get("lastMajorCompactionTime", 0)) for d in gc), default=None),
                   last_minor_compaction_ms=max((int(d.get("lastMinorCompactionTime", 0)) for d in gc), default=None))
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=SCHEMA)
