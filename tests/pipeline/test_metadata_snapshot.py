"""The metadata snapshot: ledgers and fragments from ZooKeeper to Parquet; ledgers deleted meanwhile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from bookie.metadata.ledger_metadata import new_ledger_metadata
from bookie.metadata.store import MetadataStore
from bookie_audit.files import AuditInputError
from bookie_audit.snapshot import export_snapshot, read_manifest


def test_snapshot_holds_every_ledger_of_the_metadata(fleet: Any) -> None:
    ledgers = {r["ledger_id"]: r for r in pq.read_table(f"{fleet.snapshot_dir}/ledgers.parquet").to_pylist()}
    plan = {lid: led for lid, led in fleet.fleet.ledgers.items() if led.in_metadata}
    assert set(ledgers) == set(plan)
    for lid, led in plan.items():
        row = ledgers[lid]
        assert row["state"] == ("CLOSED" if led.closed else "OPEN")
        assert row["last_entry_id"] == (led.entries - 1 if led.closed else -1)
        assert row["write_quorum"] == led.write_quorum and row["digest_type"] == 3
        expected = {"pulsar/managed-ledger": led.managed_ledger} if led.managed_ledger else {}
        assert dict(row["custom_metadata"]) == expected
    manifest = read_manifest(fleet.snapshot_dir)
    assert manifest.ledgers == len(plan) and manifest.max_ledger_id == max(plan)
    assert manifest.started_ms <= manifest.finished_ms and manifest.vanished == []


def test_fragments_carry_ensembles_and_entry_ranges(fleet: Any) -> None:
    frags = pq.read_table(f"{fleet.snapshot_dir}/fragments.parquet").to_pylist()
    nine = [(f["first_entry_id"], f["last_entry_id"], tuple(f["ensemble"])) for f in frags if f["ledger_id"] == 9]
    led = fleet.fleet.ledgers[9]
    assert nine == [(0, 9, led.ensembles[0]), (10, 23, led.ensembles[10])]
    (open_frag,) = [f for f in frags if f["ledger_id"] == 11]
    assert open_frag["last_entry_id"] is None


class _DeletingStore(MetadataStore):
    """Deletes one ledger right after the listing: the race with a concurrent delete."""

    victim = -1

    async def all_ledger_ids(self) -> list[int]:
        ids = await super().all_ledger_ids()
        await self.delete_ledger_metadata(self.victim)
        return ids


async def test_a_ledger_deleted_during_the_snapshot_is_left_out_and_named(
        zookeeper: Any, ledgers_root: str, tmp_path: Path) -> None:
    store = _DeletingStore(zookeeper.connect_string, ledgers_root, session_timeout_ms=4000)
    await store.connect()
    try:
        await store.init_cluster()
        for lid in (1, 2, 3):
            await store.create_ledger_metadata(lid, new_ledger_metadata(["a:1", "b:1"], 2, 2))
        store.victim = 2
        manifest = await export_snapshot(store, str(tmp_path))
    finally:
        await store.close()
    assert manifest.vanished == [2] and manifest.ledgers == 2
    assert pq.read_table(tmp_path / "ledgers.parquet").column("ledger_id").to_pylist() == [1, 3]
    assert json.loads((tmp_path / "manifest.json").read_text())["vanished"] == [2]


def test_a_directory_without_manifest_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(AuditInputError, match="not a metadata snapshot"):
        read_manifest(str(tmp_path))


def test_the_snapshot_command_exports_the_same_tables(fleet: Any, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from bookie_audit.cli import main

    assert main(["snapshot", "--zk", fleet.zk, "--root", fleet.root, "--out", str(tmp_path)]) == 0
    assert f"snapshot of {fleet.manifest.ledgers} ledgers" in capsys.readouterr().out
    for table in ("ledgers", "fragments"):
        ours = pq.read_table(tmp_path / f"{table}.parquet").to_pylist()
        assert ours == pq.read_table(f"{fleet.snapshot_dir}/{table}.parquet").to_pylist()
