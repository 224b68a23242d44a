"""Reads: every entry's digest is verified, a slow replica is overtaken by a speculative read, a dead one is
failed over, reads stick to one bookie when ensemble == write quorum, and a wrong password is refused."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest
from bookie.client import BookKeeper
from bookie.client.errors import DigestMismatchError, ReadError, UnauthorizedAccess
from bookie.protocol.codes import StatusCode
from bookie.protocol.entry import package_entry

from tests.support.java_bookies import BookieCluster


async def test_a_corrupted_entry_fails_digest_verification(cluster: BookieCluster) -> None:
    async with BookKeeper(cluster.client_config()) as bk:
        lh = await bk.create_ledger(2, 2, 2, password=b"pw")
        await lh.add(b"good")
        # Entry 1 written straight to the bookies, its payload changed after the digest was computed.
        body = bytearray(package_entry(lh.digest, lh.ledger_id, 1, 0, 8, b"evil"))
        body[-4:] = b"EVIL"
        for bookie in lh.ensemble:
            r = await bk.client.add_entry(bookie, lh.ledger_id, 1, lh.master_key, bytes(body))
            assert r.status is StatusCode.EOK
        with pytest.raises(DigestMismatchError):
            await lh.read_unconfirmed(1, 1)
        assert (await lh.read(0))[0].payload == b"good"


async def test_wrong_password_is_refused(cluster: BookieCluster) -> None:
    async with BookKeeper(cluster.client_config()) as bk:
        lh = await bk.create_ledger(2, 2, 2, password=b"right")
        await lh.add(b"x")
        await lh.close()
        with pytest.raises(UnauthorizedAccess):
            await bk.open_ledger(lh.ledger_id, b"wrong")


async def test_reads_beyond_the_lac_are_refused(cluster: BookieCluster) -> None:
    async with BookKeeper(cluster.client_config()) as bk:
        lh = await bk.create_ledger(2, 2, 2)
        await lh.add(b"x")
        with pytest.raises(ReadError):
            await lh.read(0, 1)


async def test_sticky_reads_use_one_bookie(cluster: BookieCluster) -> None:
    async with BookKeeper(cluster.client_config(sticky_reads=True)) as bk:
        lh = await bk.create_ledger(3, 3, 2)
        await asyncio.gather(*(lh.append(b"s") for _ in range(30)))
        await lh.read(0, 29)
        assert lh._sticky is not None
        sticky = lh.ensemble[lh._sticky]
        counting = dict.fromkeys(lh.ensemble, 0)
        original = bk.client.read_entry

        def spy(bookie: str, *args: Any, **kwargs: Any) -> Any:
            counting[bookie] += 1
            return original(bookie, *args, **kwargs)

        setattr(bk.client, "read_entry", spy)  # noqa: B010 - count which bookie each read goes to
        await lh.read(0, 29)
        assert counting[sticky] == 30 and sum(counting.values()) == 30, counting


async def test_slow_replica_is_overtaken_by_a_speculative_read_and_dead_one_failed_over(
        cluster_factory: Callable[..., BookieCluster], bookie_kind: str) -> None:
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 3)
    config = cluster.client_config(speculative_read_timeout_s=0.2, read_timeout_s=30.0, sticky_reads=False)
    async with BookKeeper(config) as bk:
        lh = await bk.create_ledger(3, 3, 2)
        await asyncio.gather(*(lh.append(b"r%d" % i) for i in range(30)))
        await lh.close()
        slow = cluster.by_id(lh.ensemble[0])
        os.killpg(slow.proc.pid, signal.SIGSTOP)  # hung, connection open
        try:
            started = time.monotonic()
            entries = await lh.read(0, 29)
            assert [e.payload for e in entries] == [b"r%d" % i for i in range(30)]
            assert time.monotonic() - started < 10  # well below the 30 s read timeout
        finally:
            os.killpg(slow.proc.pid, signal.SIGCONT)
        await asyncio.to_thread(slow.kill)  # dead, connection refused: immediate failover
        entries = await lh.read(0, 29)
        assert len(entries) == 30
