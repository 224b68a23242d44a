"""A bookie cut off from ZooKeeper only, long enough for ZooKeeper to expire its session, keeps serving its clients,
loses its registration, and registers again as writable once the partition heals; no acknowledged entry is lost.

The partition is real and touches only the bookie's ZooKeeper traffic (``tests/support/faults.py``,
``ProcessPartition``: its processes in a cgroup of their own, nftables dropping what that cgroup sends to
ZooKeeper's port, and its ZooKeeper connections made before by their own ports); its clients' connections go on.
The bookie's ZooKeeper client hears nothing, so it cannot learn that its session expired until the partition heals:
ZooKeeper expires it on its side after the session timeout and deletes the bookie's registration, which an observer
connection sees.

Each round, on 4 bookies of either implementation, a writer appends to a 3/3/2 ledger whose ensemble holds the cut
bookie, from before the cut until a seeded number of entries after ZooKeeper dropped the registration; the partition
heals, the bookie must be registered again as writable, by a new session, within ``REGISTERED_WITHIN``; a tail is
appended and the ledger closed. No append may fail (the writer may replace the cut bookie, once); a new client
reads every ledger back at the end and the history checker judges every operation. The output says, per
implementation, whether the cut bookie went on taking the writer's adds (no ensemble change), what its readiness
said while it was unregistered (ours must say not ready, 503) and how long it stayed unregistered after the heal.

Soak runs raise the rounds with ``BOOKIE_FLEET_FAULT_ROUNDS`` (bench/fault_soak.py).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from typing import Any

import pytest
from bookie.client import BookKeeper, LedgerHandle

from tests.support.faults import ProcessPartition, SessionExpiry
from tests.support.history import History, check, report
from tests.support.java_bookies import BookieCluster
from tests.support.recorder import Recorder, recover_and_read_every_ledger
from tests.support.rest import get
from tests.support.seeds import rounds

# zkTimeout 4 s (as in test_zookeeper_session_expiry.py): ZooKeeper expires the cut bookie's session within seconds,
# and Apache BookKeeper's bookie retries its registration after zkTimeout.
CONF: dict[str, Any] = {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",  # as deployed
                        "flushInterval": 1000, "zkTimeout": 4000}
JAVA = {"http": True}  # Apache BookKeeper's bookies with their admin REST API, for their readiness
ROUNDS = {"python": 2, "java": 2}
AFTER_EXPIRY = (0, 80)  # entries acknowledged after ZooKeeper dropped the registration, before the heal
AFTER_HEAL = 30
IN_FLIGHT = 8
RATE = 250  # entries per second at most while waiting for the expiry: a steady load, a history read back in seconds
EXPIRED_WITHIN = 30.0  # s from the cut: the session timeout (4 s), ZooKeeper's expiry tick, a loaded machine
REGISTERED_WITHIN = 30.0  # s from the heal
# The fixture ``cut_until_the_end`` (tests/faults/conftest.py): cuts a partition, heals it at the test's end.
Cut = Callable[[ProcessPartition], ProcessPartition]


@pytest.mark.parametrize("bookie_kind", ["python", "java"])
async def test_a_bookie_partitioned_from_zookeeper_registers_again(
        cluster_factory: Callable[..., BookieCluster], cut_until_the_end: Cut,
        bookie_kind: str, seeded_rng: random.Random) -> None:
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 4, **CONF,
                                    **(JAVA if bookie_kind == "java" else {}))
    history = History()
    seen: list[str] = []
    with SessionExpiry(cluster.zk_connect, cluster.ledgers_root) as observer:
        async with BookKeeper(cluster.client_config()) as bk:
            for number in range(rounds(ROUNDS[bookie_kind])):
                seen.append(await _round(bk, cluster, observer, cut_until_the_end, history, seeded_rng,
                                         f"{bookie_kind}-{number}"))
    await recover_and_read_every_ledger(cluster.client_config(), history, IN_FLIGHT)
    violations = check(history)
    assert not violations, report(violations, history)
    print(f"{len(history)} operations; per round: " + "; ".join(seen))


async def _round(bk: BookKeeper, cluster: BookieCluster, observer: SessionExpiry,
                 cut_until_the_end: Cut, history: History, rng: random.Random,
                 name: str) -> str:
    payloads = random.Random(rng.getrandbits(64))
    handle = await bk.create_ledger(3, 3, 2)
    victim = cluster.by_id(rng.choice(sorted(handle.metadata.ensemble_at(0))))
    registered = await asyncio.to_thread(observer.registration, victim.bookie_id)
    assert registered is not None and "/readonly/" not in registered[0], \
        f"{name}: {victim.bookie_id} not registered as writable before the cut: {registered}"
    writer = Recorder(history, f"writer-{name}")
    await _append(writer, handle, payloads, IN_FLIGHT, name)
    host, port = cluster.zk_connect.split(",")[0].rsplit(":", 1)
    partition = cut_until_the_end(ProcessPartition(victim.proc.pid, host, int(port)))
    cut_at = time.monotonic()
    while await asyncio.to_thread(observer.registration, victim.bookie_id) is not None:
        assert time.monotonic() - cut_at < EXPIRED_WITHIN, \
            f"{name}: {victim.bookie_id} still registered {EXPIRED_WITHIN} s after it was cut off ZooKeeper"
        await _append(writer, handle, payloads, IN_FLIGHT, name)
        await asyncio.sleep(IN_FLIGHT / RATE)
    expired_s = time.monotonic() - cut_at
    await _append(writer, handle, payloads, rng.randint(*AFTER_EXPIRY), name)
    assert victim.running, f"{name}: {victim.bookie_id} exited while cut off ZooKeeper:\n{victim.tail_log()}"
    took_adds = len(handle.metadata.ensembles) == 1
    # Its readiness (the pod's readiness probe): ours says it is not ready while it is unregistered, which shows
    # the partition; Apache BookKeeper's says ready (its ZooKeeper client has not learnt of the expiry).
    ready = (await get(f"{victim.http_url}/api/v1/bookie/is_ready")).status
    if cluster.kind == "python":
        assert ready == 503, f"{name}: {victim.bookie_id} says ready ({ready}) while unregistered, cut off ZooKeeper"
    partition.heal()
    healed_at = time.monotonic()
    try:
        path, _ = await asyncio.to_thread(observer.wait_registered, victim.bookie_id, registered[1],
                                          REGISTERED_WITHIN)
    except TimeoutError as exc:
        raise AssertionError(f"{name}: {exc}; log:\n{victim.tail_log()}") from None
    back_s = time.monotonic() - healed_at
    assert "/readonly/" not in path, f"{name}: {victim.bookie_id} came back read-only ({path})"
    await _append(writer, handle, payloads, AFTER_HEAL, name)
    assert await writer.close(handle), f"{name}: the writer could not close ledger {handle.ledger_id}"
    changes = len(handle.metadata.ensembles) - 1
    assert changes <= 1, f"{name}: {changes} ensemble changes for one partition: {handle.metadata.ensembles}"
    return (f"registration gone {expired_s:.1f} s after the cut, is_ready {ready} while unregistered, "
            f"{'took adds throughout' if took_adds else 'replaced by the writer'}, "
            f"registered again {back_s:.1f} s after the heal")


async def _append(writer: Recorder, handle: LedgerHandle, payloads: random.Random, count: int, name: str) -> None:
    """Append ``count`` entries, ``IN_FLIGHT`` at a time; every one must be acknowledged."""
    for start in range(0, count, IN_FLIGHT):
        batch = [f"{name} L{handle.ledger_id} ".encode() + payloads.randbytes(payloads.randint(100, 4000))
                 for _ in range(min(IN_FLIGHT, count - start))]
        results = await asyncio.gather(*(writer.append(handle, data) for data in batch))
        failed = [op.error for op in writer.history.ops if not op.ok and op.process == writer.process]
        assert all(r is not None for r in results), f"{name}: an append failed: {failed}"
