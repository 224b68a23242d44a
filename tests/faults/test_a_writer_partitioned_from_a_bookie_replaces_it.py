"""A writer cut off from one bookie of its ensemble by a network partition replaces that bookie and loses nothing.

The partition is real: every TCP packet to and from the bookie's own address and port is dropped by the kernel
(``tests/support/faults.py``, ``Partition``: an nftables table of its own, removed by this file's finalizer and by
the session's safety net in conftest.py), so the client hears nothing from it, no reset and no error, and has to
find out by its add timeout. The bookie keeps its ZooKeeper session (another port) and stays registered: the
client must exclude it by itself. The rounds take the cut's directions in turn from a seeded first: both ways, only
what is sent to the bookie (its requests lost), only what it sends (it stores the adds, its answers are lost).

Each round, on 4 bookies of either implementation: a 3/2/2 ledger (each entry on 2 of the 3, both needed for the
acknowledgement, so every entry striped onto the cut bookie waits for the ensemble change), a seeded number of
entries acknowledged, one bookie of the ensemble (seeded) cut off, a seeded number more appended, which must all be
acknowledged after the writer replaced it (the cut bookie out of the ledger's last ensemble), a seeded sample of the
entries written before the cut read back while it is still cut (half of their copies are on it), the partition
healed, a tail appended and the ledger closed. At the end a new client recovers and reads back every ledger and the
history checker judges every operation: an acknowledged entry missing or read with other bytes, or an entry id
acknowledged with two contents, is a violation.

Soak runs raise the rounds with ``BOOKIE_FLEET_FAULT_ROUNDS`` (bench/fault_soak.py).
"""

from __future__ import annotations

import asyncio
import random
import socket
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest
from bookie.client import BookKeeper, LedgerHandle

from tests.support.faults import (
    PARTITION_DIRECTIONS,
    PARTITION_TABLE_PREFIX,
    Partition,
    partition_tables,
    remove_partitions,
)
from tests.support.history import History, check, report
from tests.support.java_bookies import BookieCluster
from tests.support.recorder import Recorder, recover_and_read_every_ledger
from tests.support.seeds import rounds

CONF: dict[str, Any] = {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",  # as deployed
                        "flushInterval": 1000}
# Each round waits one add timeout (the client's, 5 s in tests: BookieCluster.client_config) for the ensemble change,
# and Apache BookKeeper's bookies take longer to start: 3 rounds on ours and 2 on theirs keep the file near a minute.
ROUNDS = {"python": 3, "java": 2}
BEFORE_CUT = (20, 120)  # entries acknowledged before the partition
WHILE_CUT = (40, 160)  # entries appended while it lasts; all must be acknowledged
READS_WHILE_CUT = 6  # entries written before the cut, read back while it lasts
AFTER_HEAL = 30
IN_FLIGHT = 8
REGISTERED_WITHIN = 30  # s
# The fixture ``cut_until_the_end`` (tests/faults/conftest.py): cuts a partition, heals it at the test's end.
Cut = Callable[[Partition], Partition]


# ------------------------------------------------------------------ the toolkit itself


def _listener(address: str) -> socket.socket:
    server = socket.socket()
    server.bind((address, 0))
    server.listen(8)
    return server


def _connects(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=1.0):
            return True
    except OSError:  # dropped SYNs end in a timeout
        return False


def test_a_partition_drops_only_its_address_and_port_until_healed() -> None:
    cut_off, beside = _listener("127.0.0.251"), _listener("127.0.0.252")
    other_port = _listener("127.0.0.251")
    try:
        port = cut_off.getsockname()[1]
        with Partition("127.0.0.251", port) as partition:
            assert partition.table in partition_tables()
            assert not _connects("127.0.0.251", port), "a connection got through the partition"
            assert _connects("127.0.0.252", beside.getsockname()[1]), "another address was cut too"
            assert _connects("127.0.0.251", other_port.getsockname()[1]), "another port was cut too"
        assert partition.table not in partition_tables(), "the rule outlived the partition"
        assert _connects("127.0.0.251", port), "still cut after healing"
    finally:
        for server in (cut_off, beside, other_port):
            server.close()


def test_a_one_way_partition_drops_only_that_direction() -> None:
    server = _listener("127.0.0.251")
    port = server.getsockname()[1]
    try:
        with Partition("127.0.0.251", port, "to"):
            assert not _connects("127.0.0.251", port), "a SYN to the address got through"
        with socket.create_connection(("127.0.0.251", port), timeout=2) as conn, Partition("127.0.0.251", port, "from"):
            accepted, _ = server.accept()
            with accepted:
                conn.sendall(b"request")  # arrives: only what the address sends is dropped
                assert accepted.recv(16) == b"request"
                accepted.sendall(b"answer")
                conn.settimeout(1.0)
                with pytest.raises(TimeoutError):
                    conn.recv(16)
    finally:
        server.close()


def test_a_partition_left_by_a_killed_run_is_removed() -> None:
    gone = subprocess.Popen(["true"])  # the process that owned the leftover, ended before its finalizers ran
    gone.wait()
    leftover = Partition("127.0.0.251", 9)
    leftover.table = f"{PARTITION_TABLE_PREFIX}{gone.pid}_0"
    leftover.cut()
    try:
        assert leftover.table in remove_partitions()
        assert leftover.table not in partition_tables()
    finally:
        if leftover.table in partition_tables():
            leftover.heal()


def test_a_partition_of_bad_input_says_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="IPv4"):
        Partition("::1", 3181)
    with pytest.raises(ValueError, match="65535, not 0"):
        Partition("127.0.0.1", 0)
    with pytest.raises(ValueError, match="does not appear to be an IPv4 or IPv6 address"):
        Partition("bookie-0", 3181)
    with pytest.raises(ValueError, match="both, to, from, not 'sideways'"):
        Partition("127.0.0.1", 3181, "sideways")


# ------------------------------------------------------------------ the scenario


@pytest.mark.parametrize("bookie_kind", ["python", "java"])
async def test_a_writer_partitioned_from_a_bookie_replaces_it(
        cluster_factory: Callable[..., BookieCluster], cut_until_the_end: Cut, bookie_kind: str,
        seeded_rng: random.Random) -> None:
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 4, **CONF)
    history = History()
    replaced_after: list[float] = []
    first = seeded_rng.randrange(len(PARTITION_DIRECTIONS))  # then in turn: both ways, then one way each
    async with BookKeeper(cluster.client_config()) as bk:
        for number in range(rounds(ROUNDS[bookie_kind])):
            direction = PARTITION_DIRECTIONS[(first + number) % len(PARTITION_DIRECTIONS)]
            replaced_after.append(await _round(bk, cluster, cut_until_the_end, history, seeded_rng, direction,
                                               f"{bookie_kind}-{number}-{direction}"))
    await recover_and_read_every_ledger(cluster.client_config(), history, IN_FLIGHT)
    violations = check(history)
    assert not violations, report(violations, history)
    print(f"{len(history)} operations, {len(replaced_after)} partitions; the writer's first append after each cut "
          f"completed {min(replaced_after):.1f} to {max(replaced_after):.1f} s after it")


async def _round(bk: BookKeeper, cluster: BookieCluster, cut_until_the_end: Cut, history: History,
                 rng: random.Random, direction: str, name: str) -> float:
    """One ledger written across a partition of one bookie of its ensemble; returns how long the first batch
    appended while cut took (the add timeout, then the ensemble change)."""
    payloads = random.Random(rng.getrandbits(64))
    await _all_writable(bk, cluster, name)
    handle = await bk.create_ledger(3, 2, 2)
    victim = cluster.by_id(rng.choice(sorted(handle.metadata.ensemble_at(0))))
    writer = Recorder(history, f"writer-{name}")
    before = await _append(writer, handle, payloads, rng.randint(*BEFORE_CUT), name)
    partition = cut_until_the_end(Partition(victim.address, victim.port, direction))
    started = time.monotonic()
    await _append(writer, handle, payloads, IN_FLIGHT, name)
    first_batch_s = time.monotonic() - started
    await _append(writer, handle, payloads, rng.randint(*WHILE_CUT), name)
    ensembles = handle.metadata.ensembles
    last = ensembles[max(ensembles)]
    assert victim.bookie_id not in last, f"{name}: {victim.bookie_id} is cut off but still in the ensemble {last}"
    assert len(ensembles) == 2, f"{name}: {len(ensembles) - 1} ensemble changes for one partition: {ensembles}"
    sample = sorted(rng.sample(range(before), min(READS_WHILE_CUT, before)))
    read = await asyncio.gather(*(writer.read(handle, entry) for entry in sample))
    assert all(data is not None for data in read), f"{name}: entries {sample} read while cut: {read}"
    partition.heal()
    await _append(writer, handle, payloads, AFTER_HEAL, name)
    assert await writer.close(handle), f"{name}: the writer could not close ledger {handle.ledger_id}"
    return first_batch_s


async def _all_writable(bk: BookKeeper, cluster: BookieCluster, name: str) -> None:
    """The replacement is the fourth bookie: a round starts once all four are registered as writable (a bookie
    that lost its ZooKeeper session to an overloaded machine registers again within seconds)."""
    for _ in range(REGISTERED_WITHIN * 10):
        if sorted(await bk.writable_bookies()) == sorted(cluster.bookie_ids):
            return
        await asyncio.sleep(0.1)
    missing = sorted(set(cluster.bookie_ids) - set(await bk.writable_bookies()))
    raise AssertionError(f"{name}: {missing} not writable within {REGISTERED_WITHIN} s; logs:\n" +
                         "\n".join(cluster.by_id(b).tail_log() for b in missing))


async def _append(writer: Recorder, handle: LedgerHandle, payloads: random.Random, count: int, name: str) -> int:
    """Append ``count`` entries, ``IN_FLIGHT`` at a time; every one must be acknowledged. Returns ``count``."""
    for start in range(0, count, IN_FLIGHT):
        batch = [f"{name} L{handle.ledger_id} ".encode() + payloads.randbytes(payloads.randint(100, 4000))
                 for _ in range(min(IN_FLIGHT, count - start))]
        results = await asyncio.gather(*(writer.append(handle, data) for data in batch))
        failed = [op for op in writer.history.ops if not op.ok and op.process == writer.process]
        assert all(r is not None for r in results), f"{name}: an append failed: {failed}"
    return count
