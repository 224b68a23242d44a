"""Placement: ensembles only from writable bookies (never available/readonly/), rack-aware spreading of
every write quorum, replacement avoiding the ensemble, quarantined bookies avoided while others exist."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from bookie.client import BookKeeper
from bookie.client.connection import BookieHealth
from bookie.client.errors import NotEnoughBookies
from bookie.client.placement import RackAwarePlacement, RandomPlacement
from bookie_fleet.java_bookies import plan_java_bookies

from tests.support.java_bookies import BookieCluster


async def test_read_only_bookies_are_never_chosen(cluster_factory: Callable[..., BookieCluster],
                                                  tmp_path: Path) -> None:
    cluster = await asyncio.to_thread(cluster_factory, "java", 3)
    (readonly,) = plan_java_bookies(1, tmp_path / "ro", cluster.zk_connect, cluster.ledgers_root,
                                    first_host=99, forceReadOnlyBookie=True)
    cluster.bookies.append(readonly)  # stopped with the cluster
    await asyncio.to_thread(readonly.start, False)
    async with BookKeeper(cluster.client_config()) as bk:
        for _ in range(100):
            if readonly.bookie_id in await bk.readonly_bookies():
                break
            await asyncio.sleep(0.2)
        assert readonly.bookie_id in await bk.readonly_bookies()
        assert readonly.bookie_id not in await bk.writable_bookies()
        for _ in range(10):
            lh = await bk.create_ledger(3, 3, 2)
            assert readonly.bookie_id not in lh.ensemble
        with pytest.raises(NotEnoughBookies):
            await bk.create_ledger(4, 3, 2)


def test_rack_aware_ensembles_spread_each_write_quorum_over_racks() -> None:
    racks = {f"10.0.{r}.{i}": f"/dc/rack{r}" for r in range(3) for i in range(4)}
    bookies = [f"{host}:3181" for host in racks]
    policy = RackAwarePlacement(racks, rng=random.Random(7))
    for _ in range(200):
        ensemble = policy.new_ensemble(6, 3, bookies)
        assert len(set(ensemble)) == 6
        for start in range(6):
            quorum = [ensemble[(start + i) % 6] for i in range(3)]
            assert len({policy.rack_of(b) for b in quorum}) == 3, ensemble
    ensemble = policy.new_ensemble(3, 3, bookies)
    for _ in range(50):
        new = policy.replace_bookie(ensemble, 1, 3, bookies)
        assert new not in ensemble and policy.rack_of(new) == policy.rack_of(ensemble[1])


def test_rack_aware_falls_back_when_racks_are_too_few() -> None:
    policy = RackAwarePlacement({}, rng=random.Random(1))
    bookies = [f"127.0.0.{i}:3181" for i in range(1, 5)]
    assert len(set(policy.new_ensemble(4, 3, bookies))) == 4


def test_quarantined_bookies_are_avoided_while_others_exist() -> None:
    health = BookieHealth(threshold=3, window_s=60, quarantine_s=60)
    for _ in range(3):
        health.record_error("b1:1")
    assert health.quarantined() == {"b1:1"}
    policy = RandomPlacement(random.Random(3))
    bookies = ["b1:1", "b2:1", "b3:1", "b4:1"]
    for _ in range(50):
        assert "b1:1" not in policy.new_ensemble(3, 3, bookies, health.quarantined())
    assert "b1:1" in policy.new_ensemble(4, 3, bookies, health.quarantined())  # needed: used anyway
    with pytest.raises(NotEnoughBookies):
        policy.new_ensemble(5, 3, bookies)
