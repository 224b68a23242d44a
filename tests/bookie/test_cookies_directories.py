"""Cookies: a bookie restarts on its own directories, and refuses at start (exit code 1, reason in its log)
a wiped directory, another bookie's directory, and a new directory unless storage expansion is allowed."""

from __future__ import annotations

import random
import shutil

from bookie.metadata.cookie import Cookie, decode_dirs
from bookie.metadata.store import MetadataStore
from bookie.protocol.codes import StatusCode

from tests.support.bookies import BookieFactory, LocalBookie
from tests.support.raw_client import RawConnection, entry


def refused(bookie: LocalBookie) -> str:
    """Start a bookie that must refuse to: its exit code is 1; returns its log."""
    bookie.start(wait=False)
    assert bookie.proc is not None
    assert bookie.proc.wait(60) == 1
    bookie.proc = None
    return bookie.log_path.read_text()


async def test_restart_on_the_same_directories_keeps_the_data(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(1)
    bookie = cluster[0]
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(bookie.bookie_id) as conn:
        assert (await conn.add(ledger, 0, b"kept")).status == StatusCode.EOK
    bookie.restart()
    async with await RawConnection.open(bookie.bookie_id) as conn:
        assert bytes((await conn.read(ledger, 0)).body) == entry(ledger, 0, b"kept")
    async with MetadataStore(cluster.zk_connect, cluster.ledgers_root) as store:
        remote = await store.read_cookie(bookie.bookie_id)
    assert remote is not None
    for directory in (bookie.journal_dir, bookie.ledger_dir):
        assert Cookie.parse((directory / "current" / "VERSION").read_bytes()) == remote.value


async def test_wiped_ledger_directory_is_refused(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1)[0]
    bookie.stop()
    shutil.rmtree(bookie.ledger_dir / "current")
    log = refused(bookie)
    assert f"cookie for {bookie.bookie_id} exists in ZooKeeper but not locally in {bookie.ledger_dir}" in log
    assert not (bookie.ledger_dir / "current").exists(), "a refused start leaves the directory alone"


async def test_another_bookies_directory_is_refused_naming_the_mismatch(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(2)
    mine, theirs = cluster[0], cluster[1]
    mine.stop()
    theirs.stop()
    mine.overrides["ledgerDirectories"] = str(theirs.ledger_dir)
    log = refused(mine)
    assert "cookie mismatch" in log
    assert f"bookie id {mine.bookie_id!r} != {theirs.bookie_id!r}" in log
    assert str(theirs.ledger_dir / "current" / "VERSION") in log


async def test_new_empty_ledger_directory_needs_allow_storage_expansion(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(1)
    bookie = cluster[0]
    bookie.stop()
    extra = bookie.data_dir / "ledgers-2"
    bookie.overrides["ledgerDirectories"] = f"{bookie.ledger_dir},{extra}"
    log = refused(bookie)
    assert "allowStorageExpansion=true" in log
    assert not (extra / "current" / "VERSION").exists()

    bookie.overrides["allowStorageExpansion"] = True
    bookie.start()
    async with MetadataStore(cluster.zk_connect, cluster.ledgers_root) as store:
        remote = await store.read_cookie(bookie.bookie_id)
    assert remote is not None
    assert decode_dirs(remote.value.ledger_dirs) == [str(bookie.ledger_dir), str(extra)]
    for directory in (bookie.journal_dir, bookie.ledger_dir, extra):
        assert Cookie.parse((directory / "current" / "VERSION").read_bytes()) == remote.value


async def test_new_ledger_directory_holding_data_is_refused_even_with_expansion(
        bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1)[0]
    bookie.stop()
    extra = bookie.data_dir / "ledgers-2"
    (extra / "current").mkdir(parents=True)
    (extra / "current" / "0.log").write_bytes(b"someone's data")
    bookie.overrides.update(ledgerDirectories=f"{bookie.ledger_dir},{extra}", allowStorageExpansion=True)
    log = refused(bookie)
    assert f"directories {extra} hold data but no cookie" in log
