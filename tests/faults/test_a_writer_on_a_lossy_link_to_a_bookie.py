"""A writer whose link to one bookie of its ensemble loses packets and is narrow loses nothing and changes its
ensemble at most once.

The link is real (``tests/support/faults.py``, ``LossyLink``): the kernel drops a seeded share (5 to 20 %) of
the TCP packets to and from the bookie's address and port, and what goes over a seeded rate (128 KiB/s to 1 MiB/s)
either way. TCP retransmits, so the bookie's requests and responses arrive late, split and in bursts: its frame
reader must put requests together from any cut, and the client must wait for it or replace it, never fail an
append or lose one.

Each round, on 3 bookies of either implementation: a 2/2/2 ledger (every entry needs the poor link's bookie until
it is replaced), a seeded number of entries acknowledged over a sound link, the link made poor, a seeded number
more appended, all of which must be acknowledged, then every entry read back while the link is still poor (some
reads go to the bookie behind it), the link healed, a tail appended and the ledger closed. The writer may replace
the bookie when an add times out on it (5 s), but only once: the only other bookie has a sound link. At the end a
new client recovers and reads back every ledger and the history checker judges every operation.

Soak runs raise the rounds with ``BOOKIE_FLEET_FAULT_ROUNDS`` (bench/fault_soak.py).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from typing import Any

import pytest
from bookie.client import BookKeeper

from tests.support.faults import LossyLink, Partition
from tests.support.history import History, check, report
from tests.support.java_bookies import BookieCluster
from tests.support.recorder import Recorder, recover_and_read_every_ledger
from tests.support.seeds import rounds
from tests.support.victims import append_batches

CONF: dict[str, Any] = {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",  # as deployed
                        "flushInterval": 1000}
ROUNDS = {"python": 10, "java": 2}  # Apache BookKeeper's rounds are the slow ones: fewer in CI, 10 in soak runs
BEFORE = (10, 40)  # entries acknowledged over the sound link
WHILE_POOR = (60, 160)  # entries appended over the poor one; all must be acknowledged
AFTER_HEAL = 20
LOSS_PERCENT = (5, 20)
KBYTES_PER_S = (128, 1024)
IN_FLIGHT = 8
Cut = Callable[[Partition], Partition]


# ------------------------------------------------------------------ the link itself


def test_a_lossy_link_of_bad_input_says_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="0 to 99 %"):
        LossyLink("127.0.0.1", 3181, loss_percent=100, kbytes_per_s=100)
    with pytest.raises(ValueError, match="at least 1 kbyte/s, not 0"):
        LossyLink("127.0.0.1", 3181, loss_percent=5, kbytes_per_s=0)
    with pytest.raises(ValueError, match="65535, not 70000"):
        LossyLink("127.0.0.1", 70000, loss_percent=5, kbytes_per_s=100)


# ------------------------------------------------------------------ the scenario


@pytest.mark.parametrize("bookie_kind", ["python", "java"])
async def test_a_writer_on_a_lossy_link_to_a_bookie_loses_nothing(
        cluster_factory: Callable[..., BookieCluster], cut_until_the_end: Cut, bookie_kind: str,
        seeded_rng: random.Random) -> None:
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 3, **CONF)
    history = History()
    seen: list[str] = []
    async with BookKeeper(cluster.client_config()) as bk:
        for number in range(rounds(ROUNDS[bookie_kind])):
            seen.append(await _round(bk, cluster, cut_until_the_end, history, seeded_rng, f"{bookie_kind}-{number}"))
    await recover_and_read_every_ledger(cluster.client_config(), history, IN_FLIGHT)
    violations = check(history)
    assert not violations, report(violations, history)
    print(f"{len(history)} operations; " + "; ".join(seen))


async def _round(bk: BookKeeper, cluster: BookieCluster, cut_until_the_end: Cut, history: History,
                 rng: random.Random, name: str) -> str:
    """One ledger written and read across a poor link to one bookie of its ensemble; returns what was seen."""
    payloads = random.Random(rng.getrandbits(64))
    handle = await bk.create_ledger(2, 2, 2)
    victim = cluster.by_id(rng.choice(sorted(handle.metadata.ensemble_at(0))))
    writer = Recorder(history, f"writer-{name}")
    await append_batches(writer, handle, payloads, rng.randint(*BEFORE), name, IN_FLIGHT, "the links are sound")
    link = LossyLink(victim.address, victim.port, loss_percent=rng.randint(*LOSS_PERCENT),
                     kbytes_per_s=rng.randint(*KBYTES_PER_S))
    cut_until_the_end(link)
    started, first = time.monotonic(), handle.last_add_confirmed + 1
    await append_batches(writer, handle, payloads, rng.randint(*WHILE_POOR), name, IN_FLIGHT,
                         "a poor link delays the bookie's answers, it does not stop them")
    appended = handle.last_add_confirmed + 1 - first
    appended_s = time.monotonic() - started
    read = await asyncio.gather(*(writer.read(handle, entry) for entry in range(handle.last_add_confirmed + 1)))
    missing = [entry for entry, data in enumerate(read) if data is None]
    assert not missing, f"{name}: entries {missing} unread over the poor link"
    link.heal()
    await append_batches(writer, handle, payloads, AFTER_HEAL, name, IN_FLIGHT, "the links are sound again")
    ensembles = handle.metadata.ensembles
    assert len(ensembles) <= 2, f"{name}: {len(ensembles) - 1} ensemble changes for one poor link: {ensembles}"
    assert await writer.close(handle), f"{name}: the writer could not close ledger {handle.ledger_id}"
    replaced = "replaced" if len(ensembles) == 2 else "kept"
    return (f"{name}: {link.loss_percent} % lost at {link.kbytes_per_s} KiB/s, {appended} appends in "
            f"{appended_s:.1f} s, {victim.bookie_id} {replaced}")

