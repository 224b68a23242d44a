"""A writer cut off from its whole ensemble while another client recovers its ledger (fencing under a partition)
never gets an entry acknowledged past the end the recovery fixed, loses no entry it had acknowledged, and cannot
append to the ledger once the partition heals.

Each implementation end to end: our client on our bookies, Apache BookKeeper's client
(tests/java/ClientHarness.java) on its bookies. The writer runs in a process of its own
(``tests/support/writer_process.py``), cut off its three bookies by ``ProcessPartition`` (its process group in a
cgroup of its own, nftables dropping what it sends to each bookie and what each sends back on its connections);
its ZooKeeper session goes on, and so does everyone else's access to the bookies.

Each round, on 3 bookies: a 3/3/2 ledger, a batch of appends acknowledged, then the writer cut off all three
bookies or a seeded two of them (the third then stores the appends that follow, which the ack quorum of 2 never
acknowledges), another batch sent into the cut, and a seeded 0 to 500 ms later a new client recovers the ledger
(it fences it on the bookies and closes it at the last entry it finds: one that reached a single bookie may be in
it, unacknowledged, as BookKeeper allows); then the partition heals and the writer's pending appends are
collected as they end, acknowledged or failed. The writer then appends again, which must fail (its ledger is
fenced and closed), and closes. A new client reads every ledger back at the end and the history checker judges
every operation: an entry acknowledged beyond the recovered end, or a second writer's, breaks ``fenced``; an
acknowledged entry missing breaks ``acknowledged-durable``; the writer's close claiming another end than the
recovery's breaks ``closed-length``.
Soak runs raise the rounds with ``BOOKIE_FLEET_FAULT_ROUNDS`` (bench/fault_soak.py).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bookie.client import BookKeeper

from tests.support.faults import ProcessPartition
from tests.support.history import History, Op, check, report
from tests.support.java_bookies import BookieCluster
from tests.support.recorder import Recorder, recover_and_read_every_ledger
from tests.support.seeds import rounds
from tests.support.writer_process import Append, WriterProcess

CONF: dict[str, Any] = {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",  # as deployed
                        "flushInterval": 1000}
ROUNDS = 4
BATCH = 20  # entries per append command
SENT_BEFORE_RECOVERY_S = (0.0, 0.5)  # from sending the batch into the cut to the recovery's start
SESSION_TIMEOUT_MS = 8000
ANSWER_WITHIN = 60.0  # s for the writer's answers: pending appends end by the bookies' refusals or their timeouts
# The fixture ``cut_until_the_end`` (tests/faults/conftest.py): cuts a partition, heals it at the test's end.
Cut = Callable[[ProcessPartition], ProcessPartition]


@pytest.mark.parametrize("implementation", ["python", "java"])
async def test_a_writer_partitioned_from_its_ensemble_while_its_ledger_is_recovered_is_fenced(
        cluster_factory: Callable[..., BookieCluster], cut_until_the_end: Cut, implementation: str,
        seeded_rng: random.Random, tmp_path: Path) -> None:
    cluster = await asyncio.to_thread(cluster_factory, implementation, 3, **CONF)
    client = "ours" if implementation == "python" else "java"
    history = History()
    seen = [await _round(cluster, client, cut_until_the_end, history, seeded_rng, tmp_path / f"writer-{n}.log",
                         f"{implementation}-{n}")
            for n in range(rounds(ROUNDS))]
    await recover_and_read_every_ledger(cluster.client_config(), history)
    violations = check(history)
    assert not violations, report(violations, history)
    print(f"{len(history)} operations; per round: " + "; ".join(seen))


async def _round(cluster: BookieCluster, client: str, cut_until_the_end: Cut, history: History,
                 rng: random.Random, log_path: Path, name: str) -> str:
    async with WriterProcess(cluster.zk_connect, cluster.ledgers_root, log_path, SESSION_TIMEOUT_MS,
                             client) as writer:
        await writer.send("create", 3, 3, 2)
        ledger = int((await writer.answer(ANSWER_WITHIN))["ledger"])
        before = await _appends(writer, history, ledger, rng)
        assert all(a.ok for a in before), f"{name}: an append before the cut failed: {before}"
        reached = rng.choice([[], [rng.choice(cluster.bookies)]])  # the bookie the writer still reaches, if any
        first, *others = [bookie for bookie in cluster.bookies if bookie not in reached]
        partition = cut_until_the_end(ProcessPartition(
            writer.pid, first.address, first.port, peer="its ensemble",
            also=[(bookie.address, bookie.port) for bookie in others]))
        start = history.clock()
        await writer.send("append", BATCH, rng.getrandbits(32))
        await asyncio.sleep(rng.uniform(*SENT_BEFORE_RECOVERY_S))
        async with BookKeeper(cluster.client_config()) as bk:
            recovered = await Recorder(history, f"recovering-reader-{name}").recover(bk, ledger)
        assert recovered is not None, f"{name}: the ledger could not be recovered while its writer was cut off"
        recovered_last = recovered.metadata.last_entry_id
        partition.heal()
        healed_at = time.monotonic()
        pending = await writer.collect(history, ledger, start, ANSWER_WITHIN)
        ended_s = time.monotonic() - healed_at
        after = await _appends(writer, history, ledger, rng, count=5)
        assert not any(a.ok for a in after), f"{name}: the cut-off writer appended to its recovered ledger: {after}"
        start = history.clock()
        await writer.send("close")
        closed = (await writer.answer(ANSWER_WITHIN))["close"]
        history.add(Op("close", "writer", ledger, start, history.clock(), closed["ok"], last=closed.get("last"),
                       length=closed.get("length"), error=closed.get("error", "")))
    acknowledged = sum(1 for a in pending if a.ok)
    errors = sorted({a.error.split(":")[0] for a in [*pending, *after] if not a.ok})
    cut_off = "all three bookies" if not reached else f"two bookies (reaching {reached[0].bookie_id})"
    return (f"cut off {cut_off}: {acknowledged} of {BATCH} appends acknowledged, the recovery ended the ledger "
            f"at entry {recovered_last} ({len(before) - 1 + acknowledged} acknowledged), the rest ended "
            f"{ended_s:.1f} s after the heal ({', '.join(errors)}); the writer's close "
            f"{'succeeded' if closed['ok'] else 'failed'}")


async def _appends(writer: WriterProcess, history: History, ledger: int, rng: random.Random,
                   count: int = BATCH) -> list[Append]:
    start = history.clock()
    await writer.send("append", count, rng.getrandbits(32))
    return await writer.collect(history, ledger, start, ANSWER_WITHIN)
