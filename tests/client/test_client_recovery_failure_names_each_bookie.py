"""A recovery that cannot fence enough of a ledger's last ensemble fails saying, for each bookie it could not
fence, why: an operator reading "could not fence" needs to know whether a bookie was down, refused the fence or
answered too late, and which one."""

from __future__ import annotations

import pytest
from bookie.client import BookKeeper
from bookie.client.errors import LedgerRecoveryError
from bookie.metadata.ledger_metadata import new_ledger_metadata
from bookie.metadata.store import MetadataStore
from bookie_fleet.processes import free_port

from tests.support.java_bookies import BookieCluster

LEDGER = 987_654_321  # far above the ids the session's ledgers are given (each cluster has its own root)
PASSWORD = b"pw"


async def test_a_recovery_that_cannot_fence_names_each_unreachable_bookie_and_why(cluster: BookieCluster) -> None:
    live = cluster.bookie_ids[0]
    # Nothing listens at these (two hosts, so never one address twice): a fence sent there is refused, as to a
    # bookie that is down.
    gone = [f"{host}:{free_port(host)}" for host in ("127.0.0.1", "127.0.0.2")]
    async with MetadataStore(cluster.zk_connect, cluster.ledgers_root) as store:
        await store.create_ledger_metadata(LEDGER, new_ledger_metadata([live, *gone], 3, 2, password=PASSWORD))
    async with BookKeeper(cluster.client_config()) as bk:
        with pytest.raises(LedgerRecoveryError) as failure:
            await bk.open_ledger(LEDGER, PASSWORD, recovery=True)
    message = str(failure.value)
    assert f"ledger {LEDGER}: could not fence enough bookies" in message, message
    for bookie in gone:
        assert f"{bookie}: " in message, message
    assert f"{live}: " not in message, f"the bookie that was fenced is not among the failures: {message}"
