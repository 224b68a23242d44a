"""A metadata snapshot: the live ledger set and each ledger's metadata, from ZooKeeper to Parquet.

Layout of a snapshot directory:
  ``ledgers.parquet``    one row per ledger (state, quorums, last entry, digest, ctime, custom metadata)
  ``fragments.parquet``  one row per ensemble segment (first/last entry id, the ensemble's bookie ids)
  ``manifest.json``      where and when it was taken, counts, ledgers that vanished while it was taken, the
                         auditor's under-replication marks (ledger -> missing replicas)

Consistency. ZooKeeper has no multi-node snapshot read: the exporter lists the ledger ids (the same ranges
BookKeeper's GC iterates), then reads each ledger's metadata. A ledger deleted between the two steps is
left out and named in the manifest (``vanished``); a ledger created after the listing is not in the
snapshot at all. The audit tolerates both: a ledger missing from the snapshot whose id is above every id the
ledger id generator had issued when the snapshot started (``issued_high_water``; the snapshot's highest id when
the generator was never used), or found in a log written after the snapshot started, is reported as
"newer than snapshot" rather than as an orphan; and a snapshot older than the newest entry log is said
("stale snapshot") in the summary and the report, with the lag.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from bookie.metadata.ledger_metadata import LedgerMetadata
from bookie.metadata.security import ZkSecurity
from bookie.metadata.store import MetadataStore, NoSuchLedger

from bookie_audit.files import AuditInputError

SNAPSHOT_FORMAT = 1
READ_CONCURRENCY = 64

LEDGERS_SCHEMA = pa.schema([
    ("ledger_id", pa.int64()), ("state", pa.string()), ("ensemble_size", pa.int32()),
    ("write_quorum", pa.int32()), ("ack_quorum", pa.int32()), ("last_entry_id", pa.int64()),
    ("length", pa.int64()), ("digest_type", pa.int32()), ("password", pa.binary()), ("ctime", pa.int64()),
    ("custom_metadata", pa.map_(pa.string(), pa.string())), ("format_version", pa.int32()),
    ("znode_version", pa.int32()),
])
FRAGMENTS_SCHEMA = pa.schema([
    ("ledger_id", pa.int64()), ("fragment", pa.int32()), ("first_entry_id", pa.int64()),
    ("last_entry_id", pa.int64()), ("ensemble", pa.list_(pa.string())), ("ensemble_size", pa.int32()),
    ("write_quorum", pa.int32()),
])


@dataclass
class Manifest:
    zk_servers: str
    ledgers_root: str
    started_ms: int
    finished_ms: int
    ledgers: int
    max_ledger_id: int
    vanished: list[int] = field(default_factory=list)
    bookies: list[str] = field(default_factory=list)
    readonly_bookies: list[str] = field(default_factory=list)
    # ledger id -> the replicas the auditor found missing (BookKeeper's under-replication marks)
    underreplicated: dict[str, list[str]] = field(default_factory=dict)
    format: int = SNAPSHOT_FORMAT
    # The highest ledger id issued when the snapshot started (the id generator's, -1: unknown): a ledger on disk
    # at or below it and absent from the snapshot was deleted, even above max_ledger_id (a topic's ledgers, the
    # newest of all, deleted with it).
    issued_high_water: int = -1

    @property
    def newest_known_id(self) -> int:
        """Ledgers above this id may have been created after the snapshot: not counted as garbage."""
        return max(self.max_ledger_id, self.issued_high_water)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @staticmethod
    def from_json(text: str) -> Manifest:
        data = json.loads(text)
        if data.get("format") != SNAPSHOT_FORMAT:
            raise AuditInputError(f"metadata snapshot format {data.get('format')} is not {SNAPSHOT_FORMAT}")
        return Manifest(**data)


def _decode_custom(value: bytes) -> str:
    return value.decode("utf-8", errors="backslashreplace")


def metadata_tables(ledgers: dict[int, tuple[LedgerMetadata, int]]) -> tuple[pa.Table, pa.Table]:
    """(ledgers, fragments) tables of ledger id -> (metadata, znode version)."""
    lrows: dict[str, list[Any]] = {name: [] for name in LEDGERS_SCHEMA.names}
    frows: dict[str, list[Any]] = {name: [] for name in FRAGMENTS_SCHEMA.names}
    for ledger_id in sorted(ledgers):
        md, version = ledgers[ledger_id]
        for key, value in (
            ("ledger_id", ledger_id), ("state", md.state.name), ("ensemble_size", md.ensemble_size),
            ("write_quorum", md.write_quorum_size), ("ack_quorum", md.ack_quorum_size),
            ("last_entry_id", md.last_entry_id), ("length", md.length),
            ("digest_type", int(md.digest_type) if md.digest_type is not None else None),
            ("password", md.password), ("ctime", md.ctime),
            ("custom_metadata", [(k, _decode_custom(v)) for k, v in sorted(md.custom_metadata.items())]),
            ("format_version", md.format_version), ("znode_version", version),
        ):
            lrows[key].append(value)
        firsts = list(md.ensembles)
        for i, first in enumerate(firsts):
            if i + 1 < len(firsts):
                last: int | None = firsts[i + 1] - 1
            else:
                last = md.last_entry_id if md.closed else None
            ensemble = md.ensembles[first]
            frow: tuple[tuple[str, Any], ...] = (
                ("ledger_id", ledger_id), ("fragment", i), ("first_entry_id", first), ("last_entry_id", last),
                ("ensemble", list(ensemble)), ("ensemble_size", len(ensemble)),
                ("write_quorum", md.write_quorum_size),
            )
            for key, value in frow:
                frows[key].append(value)
    return (pa.Table.from_pydict(lrows, schema=LEDGERS_SCHEMA),
            pa.Table.from_pydict(frows, schema=FRAGMENTS_SCHEMA))


async def export_snapshot(store: MetadataStore, out_dir: str) -> Manifest:
    """Export every ledger's metadata under the store's root to ``out_dir`` (see the module docstring)."""
    started = int(time.time() * 1000)
    issued = await store.issued_high_water()   # before the listing: every ledger listed has an id at or below it
    ids = await store.all_ledger_ids()
    found: dict[int, tuple[LedgerMetadata, int]] = {}
    vanished: list[int] = []
    gate = asyncio.Semaphore(READ_CONCURRENCY)

    async def read(ledger_id: int) -> None:
        async with gate:
            try:
                versioned = await store.read_ledger_metadata(ledger_id)
            except NoSuchLedger:
                vanished.append(ledger_id)  # deleted since the listing: not live any more
                return
            found[ledger_id] = (versioned.value, versioned.version)

    await asyncio.gather(*(read(i) for i in ids))
    writable = await store.list_bookies(readonly=False)
    readonly = await store.list_bookies(readonly=True)
    marks: dict[str, list[str]] = {}
    for ledger_id in await store.list_underreplicated():
        mark = await store.get_underreplicated(ledger_id)
        if mark is not None:  # re-replicated since the listing otherwise
            marks[str(ledger_id)] = sorted(mark.replicas)
    finished = int(time.time() * 1000)
    ledgers, fragments = metadata_tables(found)
    manifest = Manifest(store.zk_servers, store.layout.root, started, finished, len(found),
                        max(found, default=-1), sorted(vanished), sorted(writable), sorted(readonly), marks,
                        issued_high_water=issued)
    await asyncio.get_running_loop().run_in_executor(None, write_snapshot, out_dir, ledgers, fragments, manifest)
    return manifest


def write_snapshot(out_dir: str, ledgers: pa.Table, fragments: pa.Table, manifest: Manifest) -> None:
    os.makedirs(out_dir, exist_ok=True)
    pq.write_table(ledgers, os.path.join(out_dir, "ledgers.parquet"))
    pq.write_table(fragments, os.path.join(out_dir, "fragments.parquet"))
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:  # last: a manifest means a whole snapshot
        f.write(manifest.to_json())


def snapshot(zk_servers: str, ledgers_root: str, out_dir: str, *, timeout_s: float = 30.0,
             security: ZkSecurity | None = None) -> Manifest:
    """Blocking wrapper used by the CLI; ``security``: ZooKeeper TLS and identity (``bookie.metadata.security``)."""

    async def run() -> Manifest:
        store = MetadataStore(zk_servers, ledgers_root, connect_timeout_s=timeout_s, security=security)
        await store.connect()
        try:
            return await export_snapshot(store, out_dir)
        finally:
            await store.close()

    return asyncio.run(run())


def read_manifest(snapshot_dir: str) -> Manifest:
    path = os.path.join(snapshot_dir, "manifest.json")
    if not os.path.isfile(path):
        raise AuditInputError(f"{snapshot_dir} is not a metadata snapshot (no manifest.json); "
                              "take one with `bookie-audit snapshot --zk HOST:PORT --out DIR`")
    with open(path) as f:
        manifest = Manifest.from_json(f.read())
    for table in ("ledgers.parquet", "fragments.parquet"):
        if not os.path.isfile(os.path.join(snapshot_dir, table)):
            raise AuditInputError(f"metadata snapshot {snapshot_dir} has no {table}")
    return manifest
