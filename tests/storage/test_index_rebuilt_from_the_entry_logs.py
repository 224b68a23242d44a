"""``bookie index rebuild`` gives back a lost index from the ledger directory's files, the bookie stopped.

The location index comes back byte for byte: every key and value the lost one held, over several entry logs in
two ledger directories, an entry written twice (the later copy is the one indexed), and a deleted ledger whose
bytes are still in the logs (left out, as it was). The ledgers index comes back with every ledger found in the
entry logs and journals, each fenced with an empty master key (Apache BookKeeper's rule: a lost fence is unsafe).
The bookie then starts on the rebuilt indexes and reads every entry back.

Refused, with nothing changed: while the bookie runs (RocksDB's lock), and the location index before a ledgers
index exists. An entry log damaged part-way: indexed up to the damage, which the command names, exiting 1.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bookie import cli
from bookie.storage import entrylog_format as ef
from bookie.storage.engine import StorageEngine
from bookie.storage.errors import FencedError
from bookie.storage.index import LedgerData
from bookie.storage.index_rebuild import RebuildRefusedError, rebuild

from tests.storage.conftest import engine_conf
from tests.support.raw_client import MASTER_KEY, entry
from tests.support.rocksdb_index import index_pairs

DIRS: dict[str, Any] = {"ledgerDirectories": "{base}/l0,{base}/l1", "logSizeLimit": 128 * 1024}
LEDGERS = range(10, 16)  # in both ledger directories (ledger id mod 2)
DELETED = 12


def _conf(base: Path) -> Any:
    return engine_conf(base, **{k: v.format(base=base) if isinstance(v, str) else v for k, v in DIRS.items()})


def _files(base: Path, pattern: str) -> list[Path]:
    return sorted(base.glob(pattern))


def _conf_file(base: Path) -> Path:
    """The bookie's configuration as ``bookie index rebuild --conf`` reads it."""
    path = base / "bk_server.conf"
    path.write_text("".join(f"{key}={value.format(base=base) if isinstance(value, str) else value}\n"
                            for key, value in {"journalDirectories": str(base / "journal"), **DIRS}.items()))
    return path




async def _write(base: Path, rng: random.Random) -> dict[tuple[int, int], bytes]:
    """Entries of LEDGERS over several checkpoints (so several entry logs), entry 3 of ledger 10 written twice,
    ledger DELETED deleted at the end; returns what each kept entry holds as the engine stored it."""
    engine = StorageEngine(_conf(base))
    await engine.start()
    written: dict[tuple[int, int], bytes] = {}
    try:
        for round_ in range(4):
            for ledger in LEDGERS:
                for entry_id in range(round_ * 12, round_ * 12 + 12):
                    body = entry(ledger, entry_id, rng.randbytes(rng.randrange(200, 3000)))
                    await engine.add_entry(body, MASTER_KEY)
                    written[(ledger, entry_id)] = body
            await engine.checkpoint()
        await engine.add_entry(written[(10, 3)], MASTER_KEY)  # a second copy, in a later log
        await engine.checkpoint()
        await engine.delete_ledger(DELETED)
    finally:
        await engine.close()
    return {key: body for key, body in written.items() if key[0] != DELETED}


@pytest.fixture
async def stopped_bookie(tmp_path: Path, seeded_rng: random.Random) -> tuple[Path, dict[tuple[int, int], bytes]]:
    written = await _write(tmp_path, seeded_rng)
    logs = _files(tmp_path, "l*/current/*.log")
    assert len(logs) >= 4, f"the scenario needs several entry logs per directory, got {logs}"
    return tmp_path, written


async def _read_all(base: Path, written: dict[tuple[int, int], bytes]) -> None:
    engine = StorageEngine(_conf(base))
    await engine.start()
    try:
        for (ledger, entry_id), body in written.items():
            assert bytes(await engine.read_entry(ledger, entry_id)) == body, (ledger, entry_id)
    finally:
        await engine.close()


async def test_a_lost_location_index_comes_back_byte_for_byte(
        stopped_bookie: tuple[Path, dict[tuple[int, int], bytes]], capsys: pytest.CaptureFixture[str]) -> None:
    base, written = stopped_bookie
    indexes = [base / d / "current" / "locations" for d in ("l0", "l1")]
    lost = [index_pairs(index) for index in indexes]
    assert all(lost) and not any(key[:8] == struct.pack(">q", DELETED) for pairs in lost for key in pairs)
    for index in indexes:
        shutil.rmtree(index)
    conf_file = _conf_file(base)
    assert cli.main(["index", "rebuild", "locations", "--conf", str(conf_file)]) == 0
    print(capsys.readouterr().out)
    for index, pairs in zip(indexes, lost, strict=True):
        rebuilt = index_pairs(index)
        assert rebuilt == pairs, (f"{index}: {len(set(rebuilt.items()) ^ set(pairs.items()))} key/value pairs "
                                  "differ from the lost index")
    await _read_all(base, written)


async def test_a_lost_ledgers_index_comes_back_with_every_ledger_fenced(
        stopped_bookie: tuple[Path, dict[tuple[int, int], bytes]]) -> None:
    base, written = stopped_bookie
    indexes = [base / d / "current" / "ledgers" for d in ("l0", "l1")]
    before = [index_pairs(index) for index in indexes]
    for index in indexes:
        shutil.rmtree(index)
    reports = rebuild(_conf(base), "ledgers")
    assert [r.previous for r in reports] == [None, None] and not any(r.damaged for r in reports)
    for index, pairs in zip(indexes, before, strict=True):
        rebuilt = index_pairs(index)
        # The deleted ledger's bytes are still in the logs: it is back, as in Apache BookKeeper's rebuild (GC,
        # which asks the ledger metadata, deletes it again).
        expected = {key for key in pairs} | ({struct.pack(">q", DELETED)} if DELETED % 2 == indexes.index(index)
                                             else set())
        assert set(rebuilt) == expected
        assert {LedgerData.decode(v) for v in rebuilt.values()} == {LedgerData(master_key=b"", fenced=True)}
    await _read_all(base, written)
    engine = StorageEngine(_conf(base))
    await engine.start()
    try:
        with pytest.raises(FencedError):
            await engine.add_entry(entry(10, 48, b"after the rebuild"), MASTER_KEY)
    finally:
        await engine.close()


async def test_both_lost_come_back_ledgers_first(
        stopped_bookie: tuple[Path, dict[tuple[int, int], bytes]]) -> None:
    base, written = stopped_bookie
    locations = [index_pairs(base / d / "current" / "locations") for d in ("l0", "l1")]
    for index in base.glob("l*/current/*"):
        if index.name in ("ledgers", "locations"):
            shutil.rmtree(index)
    files = sorted(base.rglob("*"))
    with pytest.raises(RebuildRefusedError, match="rebuild that one first"):
        rebuild(_conf(base), "locations")
    assert sorted(base.rglob("*")) == files, "a refused rebuild changed the directories"
    rebuild(_conf(base), "ledgers")
    rebuild(_conf(base), "locations")
    # With the deleted ledger back in the ledgers index, its entries are indexed again too: nothing else differs.
    for d, pairs in zip(("l0", "l1"), locations, strict=True):
        rebuilt = index_pairs(base / d / "current" / "locations")
        assert {k: v for k, v in rebuilt.items() if k[:8] != struct.pack(">q", DELETED)} == pairs
    await _read_all(base, written)


async def test_refused_while_the_bookie_runs(tmp_path: Path) -> None:
    engine = StorageEngine(_conf(tmp_path))
    await engine.start()
    try:
        await engine.add_entry(entry(10, 0, b"x"), MASTER_KEY)
        await engine.checkpoint()
        # Another process, as the command always is: RocksDB's lock is a POSIX lock, which a process never
        # conflicts with itself on.
        refused = await asyncio.to_thread(subprocess.run, [
            sys.executable, "-m", "bookie.cli", "index", "rebuild", "locations",
            "--conf", str(_conf_file(tmp_path))], capture_output=True, text=True, timeout=120)
        assert refused.returncode == 1 and "stop the bookie" in refused.stderr, refused
        assert "nothing changed" in refused.stderr
        # (The running RocksDB changes its own files meanwhile: what a rebuild would have made is looked for.)
        assert not [p for p in _files(tmp_path, "**/*") if ".TEMP-" in p.name or ".BACKUP-" in p.name]
    finally:
        await engine.close()


async def test_a_damaged_entry_log_is_indexed_up_to_the_damage_and_named(
        stopped_bookie: tuple[Path, dict[tuple[int, int], bytes]], capsys: pytest.CaptureFixture[str]) -> None:
    base, _ = stopped_bookie
    log = _files(base, "l0/current/*.log")[1]
    data = bytearray(log.read_bytes())
    records = [(r.offset, r.ledger_id, r.entry_id) for r in ef.iter_records(data)]
    damaged_at = records[len(records) // 2][0]
    data[damaged_at:damaged_at + 4] = struct.pack(">i", -5)  # a record's size
    log.write_bytes(bytes(data))
    shutil.rmtree(base / "l0" / "current" / "locations")
    conf_file = _conf_file(base)
    assert cli.main(["index", "rebuild", "locations", "--conf", str(conf_file)]) == 1
    said = capsys.readouterr().err
    assert f"{log}: at offset {damaged_at}: negative record size -5" in said, said
    rebuilt = index_pairs(base / "l0" / "current" / "locations")
    log_id = int(log.stem, 16)
    in_this_log = {(ledger, entry_id) for ledger, entry_id, location in (
        (*struct.unpack(">qq", key), struct.unpack(">q", value)[0]) for key, value in rebuilt.items())
        if location >> 32 == log_id}
    before = {(ledger, entry_id) for offset, ledger, entry_id in records if offset < damaged_at and ledger != DELETED}
    assert in_this_log == before, "the damaged log's records before the damage are indexed, and only those"
