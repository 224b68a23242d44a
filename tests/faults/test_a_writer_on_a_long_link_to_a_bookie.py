"""A writer with a long link to one bookie of its ensemble (every byte either way late, by a time that varies,
nothing lost: the bookie in another zone or region, on a path whose queues fill and drain) loses nothing, keeps
that bookie, and its acknowledgements follow its ack quorum, not the far bookie.

The link is real (``tests/support/faults.py``, ``DelayedLink``): new connections to the bookie's address and port
go through a relay that holds what it reads a seeded 100 to 400 ms before passing it on, each way, and each piece
up to a seeded jitter (0 to as much again) later still, in order.

Each round, on 3 bookies of either implementation: the link to a seeded bookie made long, a new client (its
connections made through the link), a 3/3/2 ledger (every entry goes to the far bookie, two near ones acknowledge
it), a seeded number of entries appended, all of which must be acknowledged with no ensemble change (the delay is
well inside the 5 s add timeout), the ledger closed, the link healed, and every entry read back from the far bookie
alone (it stored each one, late). At the end a new client recovers and reads back every ledger and the history
checker judges every operation. How long the appends took, against the link's round trip, is printed (and written
down in docs/reliability.md), not asserted.

Soak runs raise the rounds with ``BOOKIE_FLEET_FAULT_ROUNDS`` (bench/fault_soak.py).
"""

from __future__ import annotations

import asyncio
import random
import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from bookie.client import BookKeeper
from bookie.protocol.codes import StatusCode

from tests.support.accept_loop import serve_connections
from tests.support.faults import DelayedLink
from tests.support.history import History, check, report
from tests.support.java_bookies import BookieCluster
from tests.support.raw_client import RawConnection
from tests.support.recorder import Recorder, recover_and_read_every_ledger
from tests.support.seeds import rounds
from tests.support.victims import append_batches, read_from

CONF: dict[str, Any] = {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",  # as deployed
                        "flushInterval": 1000}
ROUNDS = {"python": 3, "java": 2}
DELAY_MS = (100, 400)
APPENDS = (60, 200)
IN_FLIGHT = 8


# ------------------------------------------------------------------ the link itself


def test_a_long_link_of_bad_input_says_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="1 to 60,000 ms each way, not 0"):
        DelayedLink("127.0.0.1", 3181, delay_ms=0)
    with pytest.raises(ValueError, match="jitter is 0 to 60,000 ms, not -1"):
        DelayedLink("127.0.0.1", 3181, delay_ms=10, jitter_ms=-1)
    with pytest.raises(ValueError, match="65535, not 70000"):
        DelayedLink("127.0.0.1", 70000, delay_ms=100)


@pytest.fixture
def echo_server() -> Iterator[tuple[str, int]]:
    """A TCP server on this machine that sends back what it reads, one connection at a time."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def echo(conn: socket.socket) -> None:
        while data := conn.recv(65536):
            conn.sendall(data)

    thread = threading.Thread(target=serve_connections, args=(listener, stop, echo))
    thread.start()
    try:
        yield listener.getsockname()
    finally:
        stop.set()
        thread.join()
        listener.close()


def _round_trip(address: tuple[str, int], payload: bytes) -> tuple[float, bytes]:
    with socket.create_connection(address, timeout=10) as conn:
        started = time.monotonic()
        conn.sendall(payload)
        back = b""
        while len(back) < len(payload):
            back += conn.recv(65536)
        return time.monotonic() - started, back


def test_a_long_link_delays_new_connections_both_ways_until_healed(echo_server: tuple[str, int]) -> None:
    payload = random.Random(7).randbytes(300_000)
    with DelayedLink(*echo_server, delay_ms=150) as link:
        took, back = _round_trip(echo_server, payload)
        assert back == payload, "the relay changed what it passed on"
        assert took >= 0.3, f"a round trip over a 150 ms link took {took * 1000:.0f} ms"   # a lower bound only
        assert link.relayed == 1
        link.heal()
        _, back = _round_trip(echo_server, payload)
        assert back == payload and link.relayed == 1, "a connection made after the heal went through the relay"


def test_a_jittery_link_varies_each_pieces_delay_and_keeps_the_stream_in_order(
        echo_server: tuple[str, int]) -> None:
    rng = random.Random(11)
    with DelayedLink(*echo_server, delay_ms=5, jitter_ms=40, seed=3) as link, \
            socket.create_connection(echo_server, timeout=10) as conn:
        sent = b""
        back = b""
        for _ in range(30):  # pieces a few ms apart: later ones may be due before earlier ones, never passed on so
            piece = rng.randbytes(rng.randint(1, 2000))
            conn.sendall(piece)
            sent += piece
            time.sleep(0.003)
        while len(back) < len(sent):
            back += conn.recv(65536)
        assert back == sent, "the relay reordered or changed the stream"
        added = list(link.added_ms)
    assert added and all(5 <= ms <= 45 for ms in added), added
    assert max(added) - min(added) > 10, f"the pieces' delays did not vary: {added}"


# ------------------------------------------------------------------ the scenario


@pytest.mark.parametrize("bookie_kind", ["python", "java"])
async def test_a_writer_on_a_long_link_to_a_bookie_loses_nothing_and_keeps_it(
        cluster_factory: Callable[..., BookieCluster], bookie_kind: str, seeded_rng: random.Random) -> None:
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 3, **CONF)
    history = History()
    seen = [await _round(cluster, history, seeded_rng, f"{bookie_kind}-{number}")
            for number in range(rounds(ROUNDS[bookie_kind]))]
    await recover_and_read_every_ledger(cluster.client_config(), history, IN_FLIGHT)
    violations = check(history)
    assert not violations, report(violations, history)
    print(f"{len(history)} operations; " + "; ".join(seen))


async def _round(cluster: BookieCluster, history: History, rng: random.Random, name: str) -> str:
    """One ledger written with one bookie of its ensemble behind a long link; returns what was seen."""
    far = rng.choice(cluster.bookies)
    payloads = random.Random(rng.getrandbits(64))
    delay_ms = rng.randint(*DELAY_MS)
    link = DelayedLink(far.address, far.port, delay_ms=delay_ms, jitter_ms=rng.randint(0, delay_ms),
                       seed=rng.getrandbits(32))
    await asyncio.to_thread(link.cut)
    try:
        async with BookKeeper(cluster.client_config()) as bk:
            handle = await bk.create_ledger(3, 3, 2)
            writer = Recorder(history, f"writer-{name}")
            batches = []  # how long each batch of IN_FLIGHT appends took, in s
            for _ in range(rng.randint(*APPENDS) // IN_FLIGHT):
                started = time.monotonic()
                await append_batches(writer, handle, payloads, IN_FLIGHT, name, IN_FLIGHT,
                                     "a long link delays one bookie's answers; two near ones make the ack quorum")
                batches.append(time.monotonic() - started)
            ensembles = handle.metadata.ensembles
            assert len(ensembles) == 1, f"{name}: the far bookie was replaced: {ensembles}"
            assert await writer.close(handle), f"{name}: the writer could not close ledger {handle.ledger_id}"
        assert link.relayed >= 1, f"{name}: the writer's connection did not go through the long link"
        # Read from the far bookie over a direct link (one read per round trip would take minutes): once the
        # last entry is there, what the relay still held has reached it too (in order, on one connection).
        link_jitter_ms, added_ms = link.jitter_ms, list(link.added_ms)  # before the heal, which zeroes the jitter
        await asyncio.to_thread(link.heal)
        entries = list(range(handle.last_add_confirmed + 1))
        await _until_stored(far, handle.ledger_id, entries[-1], name)
        statuses = await read_from(far, handle.ledger_id, entries, history, f"far-reader-{name}")
        lacking = [entry for entry, status in statuses.items() if status != StatusCode.EOK]
        assert not lacking, f"{name}: the far bookie lacks entries {lacking}"
    finally:
        await asyncio.to_thread(link.close)
    return (f"{name}: {far.bookie_id} {link.delay_ms} ms away each way, up to {link_jitter_ms} ms more per piece "
            f"({len(added_ms)} pieces, {min(added_ms):.0f} to {max(added_ms):.0f} ms), {len(entries)} appends "
            f"{IN_FLIGHT} at a time, a batch's median {statistics.median(batches) * 1000:.0f} ms, slowest "
            f"{max(batches) * 1000:.0f} ms")


async def _until_stored(bookie: Any, ledger_id: int, entry: int, name: str) -> None:
    """Until ``bookie`` answers a read of the entry (without recording it: it may still be on its way)."""
    async with await RawConnection.open(bookie.bookie_id) as conn:
        for _ in range(200):
            if (await conn.read(ledger_id, entry)).status == StatusCode.EOK:
                return
            await asyncio.sleep(0.05)
    raise AssertionError(f"{name}: {bookie.bookie_id} lacks entry {entry} 10 s after its link was healed")
