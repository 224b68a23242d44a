"""A writer cut off from ZooKeeper while a bookie of its ensemble fails keeps its appends pending, not failed, and
completes them once ZooKeeper is back, whether the cut was a blip or outlived its session; no acknowledged entry is
lost.

Each implementation end to end: our client on our bookies, Apache BookKeeper's client
(tests/java/ClientHarness.java) on its bookies. The writer runs in a process of its own
(``tests/support/writer_process.py``), cut off ZooKeeper alone by ``ProcessPartition`` (its process group in a
cgroup of its own, nftables dropping what it sends to ZooKeeper's port); its connections to the bookies go on.
Appends need no ZooKeeper, so they go on being acknowledged during the cut. Then a bookie of its ensemble is killed:
replacing it is an ensemble change, a write of the ledger's metadata to ZooKeeper, which cannot happen until the
partition heals. The ledger is 3/3/3, so every add needs the replacement: until the heal none may be acknowledged
(counting a bookie the metadata does not name yet could lose the entry with the writer) and none may fail. Apache
BookKeeper's client is set up for this: its ZooKeeper client retries an operation across a lost connection and an
expired session (``zkRetryBackoffMaxRetries``, 2^31 - 1 by default), and it resolves bookie ids as the host:port
they are (``JAVA_CLIENT``), not through its registration cache, which an expiry clears.

Each round, on 4 bookies: a 3/3/3 ledger, appends before and during the cut, a bookie of its ensemble killed,
appends pending through the rest of the cut, which lasts either a quarter of the writer's ZooKeeper session timeout
(the session survives) or one and a half times it (ZooKeeper expires it; the client must start a new one), each in
turn. After the heal
every pending append must be acknowledged within ``ACKNOWLEDGED_WITHIN``, the ensemble must have changed once, away
from the killed bookie, and the ledger must close. A new client reads every ledger back at the end and the history
checker judges every operation. Soak runs raise the rounds with ``BOOKIE_FLEET_FAULT_ROUNDS`` (bench/fault_soak.py).
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.faults import ProcessPartition
from tests.support.history import History, Op, check, report
from tests.support.java_bookies import BookieCluster
from tests.support.recorder import recover_and_read_every_ledger
from tests.support.seeds import rounds
from tests.support.writer_process import WriterProcess

CONF: dict[str, Any] = {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",  # as deployed
                        "flushInterval": 1000}
# The writer's ZooKeeper session. A blip must leave it alive with a margin: Apache BookKeeper's ZooKeeper client
# pings after a third of it idle and drops its connection after two thirds without a read; its reconnection's SYNs,
# dropped during the cut, are resent after 1 s, then 2 s. With a 4 s session and a 2 s blip, the connection dropped
# near the heal and the reconnection landed past the session's 4 s: once in CI the "blip" expired the session.
SESSION_TIMEOUT_MS = 8000
CUTS_S = (SESSION_TIMEOUT_MS / 4000, SESSION_TIMEOUT_MS * 1.5 / 1000)  # a blip, then a cut past the session's expiry
BATCH = 20  # entries per append command
ANSWER_WITHIN = 30.0  # s for the writer's answers outside the cut
# Bookie ids are host:port here, so Apache BookKeeper's client resolves them without its registration cache, which
# it clears when its session expires and refills only at its next read of the registrations: an ensemble change
# in between cannot resolve its new bookie and replaces it in turn, and if the killed bookie's registration expires
# meanwhile no candidate is left and the ledger is closed ("Findings" in docs/reliability.md).
JAVA_CLIENT = {"bookieAddressResolverEnabled": "false"}
ACKNOWLEDGED_WITHIN = 30.0  # s from the heal: a new ZooKeeper session, the metadata write, the adds' resends
# The fixture ``cut_until_the_end`` (tests/faults/conftest.py): cuts a partition, heals it at the test's end.
Cut = Callable[[ProcessPartition], ProcessPartition]


@pytest.mark.parametrize("implementation", ["python", "java"])
async def test_a_writer_partitioned_from_zookeeper_completes_its_appends_after_the_heal(
        cluster_factory: Callable[..., BookieCluster], cut_until_the_end: Cut, implementation: str,
        seeded_rng: random.Random, tmp_path: Path) -> None:
    cluster = await asyncio.to_thread(cluster_factory, implementation, 4, **CONF)
    client = "ours" if implementation == "python" else "java"
    history = History()
    seen = []
    for number in range(rounds(len(CUTS_S))):
        seen.append(await _round(cluster, client, cut_until_the_end, history, seeded_rng,
                                 CUTS_S[number % len(CUTS_S)], tmp_path / f"writer-{number}.log",
                                 f"{implementation}-{number}"))
    await recover_and_read_every_ledger(cluster.client_config(), history)
    violations = check(history)
    assert not violations, report(violations, history)
    print(f"{len(history)} operations; per round: " + "; ".join(seen))


async def _round(cluster: BookieCluster, client: str, cut_until_the_end: Cut, history: History,
                 rng: random.Random, cut_s: float, log_path: Path, name: str) -> str:
    host, port = cluster.zk_connect.split(",")[0].rsplit(":", 1)
    async with WriterProcess(cluster.zk_connect, cluster.ledgers_root, log_path, SESSION_TIMEOUT_MS,
                             client, JAVA_CLIENT) as writer:
        await writer.send("create", 3, 3, 3)
        ledger = int((await writer.answer(ANSWER_WITHIN))["ledger"])
        await _appended(writer, history, ledger, rng, name, "before the cut")
        partition = cut_until_the_end(ProcessPartition(writer.pid, host, int(port)))
        cut_at = time.monotonic()
        await _appended(writer, history, ledger, rng, name, "during the cut, all bookies up")
        ensemble = await _ensembles(writer)
        victim = cluster.by_id(rng.choice(ensemble[min(ensemble)]))
        await asyncio.to_thread(victim.kill)
        start = history.clock()
        await writer.send("append", BATCH, rng.getrandbits(32))
        early = [WriterProcess.parse_append(a) for a in await _answers_until(writer, cut_at + cut_s) if "append" in a]
        assert not early, (f"{name}: {len(early)} appends answered while the writer could not record its ensemble "
                           f"change (cut off ZooKeeper, {victim.bookie_id} killed), the first: "
                           f"{'acknowledged' if early[0].ok else early[0].error}\nlog:\n{writer.log_tail()}")
        partition.heal()
        healed_at = time.monotonic()
        cut_lasted_s = healed_at - cut_at  # more than planned when killing the bookie took longer
        pending = await writer.collect(history, ledger, start, ACKNOWLEDGED_WITHIN)
        back_s = time.monotonic() - healed_at
        failed = [a for a in pending if not a.ok]
        assert not failed, (f"{name}: {len(failed)} of {len(pending)} appends failed after a ZooKeeper cut of "
                            f"{cut_s:.0f} s: {failed[0].error}\nlog:\n{writer.log_tail()}")
        await _appended(writer, history, ledger, rng, name, "after the heal")
        after = await _ensembles(writer)
        assert len(after) == 2 and victim.bookie_id not in after[max(after)], \
            f"{name}: the ensemble did not change once, away from {victim.bookie_id}: {after}"
        start = history.clock()
        await writer.send("close")
        closed = (await writer.answer(ANSWER_WITHIN))["close"]
        history.add(Op("close", "writer", ledger, start, history.clock(), closed["ok"], last=closed.get("last"),
                       length=closed.get("length"), error=closed.get("error", "")))
        assert closed["ok"], f"{name}: the writer could not close ledger {ledger}: {closed['error']}"
    # What the writer's log says shows the round did what it claims: the session outlived a blip but not a cut
    # past its timeout, and after such a cut (ours says it) the ensemble change waited for ZooKeeper. A blip is
    # shorter than the client's wait for a read, so its connection, and the metadata write sent on it, survive.
    log = await asyncio.to_thread(writer.log)
    outlived_the_session = cut_s * 1000 > SESSION_TIMEOUT_MS
    if client == "ours" and outlived_the_session:
        assert "ensemble change waits for ZooKeeper" in log, \
            f"{name}: the ensemble change never waited:\n{_session_lines(log)}"
    expired = ("ZooKeeper session expired" if client == "ours" else "expired") in log
    assert expired == outlived_the_session, \
        (f"{name}: after a cut of {cut_lasted_s:.1f} s (planned {cut_s:.0f} s, session timeout "
         f"{SESSION_TIMEOUT_MS} ms) the session {'expired' if expired else 'did not expire'}; the log's lines "
         f"about it:\n{_session_lines(log)}")
    await asyncio.to_thread(victim.start)
    return (f"cut {cut_lasted_s:.1f} s{' (session expired)' if expired else ''}: {len(pending)} pending appends "
            f"acknowledged {back_s:.1f} s after the heal")


def _session_lines(log: str) -> str:
    """The writer's log lines about its ZooKeeper connection and session, with their times."""
    keep = re.compile(r"session|expired|disconnect|connection|socket", re.IGNORECASE)
    return "\n".join([line for line in log.splitlines() if keep.search(line)][-40:])


async def _appended(writer: WriterProcess, history: History, ledger: int, rng: random.Random, name: str,
                    when: str) -> None:
    start = history.clock()
    await writer.send("append", BATCH, rng.getrandbits(32))
    appends = await writer.collect(history, ledger, start, ANSWER_WITHIN)
    failed = [a for a in appends if not a.ok]
    assert not failed, f"{name}: an append {when} failed: {failed[0].error}\nlog:\n{writer.log_tail()}"


async def _answers_until(writer: WriterProcess, until: float) -> list[dict[str, Any]]:
    """Whatever the writer answers before the monotonic time ``until`` (nothing, when it waits as it should)."""
    answers = []
    while (left := until - time.monotonic()) > 0:
        try:
            answers.append(await writer.answer(left))
        except AssertionError as exc:
            if "answered nothing" not in str(exc):
                raise
    return answers


async def _ensembles(writer: WriterProcess) -> dict[int, list[str]]:
    await writer.send("ensembles")
    return {int(first): ensemble for first, ensemble in (await writer.answer(ANSWER_WITHIN))["ensembles"].items()}
