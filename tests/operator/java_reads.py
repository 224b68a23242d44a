"""Apache BookKeeper's Java client reading a cluster's ledgers after the operator moved their replicas
(tests/java/ClientHarness.java, ``dump``): the metadata the operator wrote, as that client parses it, and every
entry read on its own. The harness runs on this machine against the cluster's ZooKeeper and reaches the pods'
bookie ports the way our client does in these tests, through the endpoints each bookie publishes in its
registration (tests/operator/conftest.py)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from bookie.client import BookKeeper

from tests.support.java_bookies import BookieCluster
from tests.support.java_client import run_harness


@dataclass
class JavaLedger:
    """One ledger as the Java client saw it."""

    ensembles: dict[int, tuple[str, ...]] = field(default_factory=dict)
    custom_metadata: dict[str, bytes] = field(default_factory=dict)
    payloads: dict[int, bytes] = field(default_factory=dict)
    unreadable: dict[int, int] = field(default_factory=dict)      # entry id -> BKException code
    last_add_confirmed: int = -2
    length: int = -1
    closed: bool = False


def _parse(lines: list[str]) -> dict[int, JavaLedger]:
    ledgers: dict[int, JavaLedger] = {}
    for line in lines:
        tag, _, rest = line.partition(" ")
        if tag not in ("ENSEMBLE", "CUSTOM", "PAYLOAD", "UNREADABLE", "RESULT"):
            continue                                   # a log line the client printed to stdout
        lid, a, b, *more = rest.split(" ")
        ledger = ledgers.setdefault(int(lid), JavaLedger())
        if tag == "ENSEMBLE":
            ledger.ensembles[int(a)] = tuple(b.split(","))
        elif tag == "CUSTOM":
            ledger.custom_metadata[bytes.fromhex(a).decode()] = bytes.fromhex(b)
        elif tag == "PAYLOAD":
            ledger.payloads[int(a)] = bytes.fromhex(b)
        elif tag == "UNREADABLE":
            ledger.unreadable[int(a)] = int(b)
        else:
            ledger.last_add_confirmed, ledger.length, ledger.closed = int(a), int(b), more == ["true"]
    return ledgers


async def java_read(zk_connect: str, ledgers_root: str, ledger_ids: Iterable[int],
                    password: str = "") -> dict[int, JavaLedger]:
    """Each ledger of ``ledger_ids`` opened by the Java client without recovery and read entry by entry."""
    ids, begin = sorted(ledger_ids), time.monotonic()
    run = await run_harness(BookieCluster(zk_connect, ledgers_root), "dump", "v3", password, *map(str, ids))
    seen = _parse(run.lines)
    assert sorted(seen) == ids, f"the Java client answered for ledgers {sorted(seen)}, not {ids}"
    payloads = [p for ledger in seen.values() for p in ledger.payloads.values()]
    print(f"the Java client read {len(ids)} ledgers, {len(payloads)} entries, {sum(map(len, payloads))} bytes: "
          f"{time.monotonic() - begin:.1f}s")
    return seen


async def assert_java_reads_back(bk: BookKeeper, written: dict[int, list[bytes]], gone: str | None = None,
                                 given_up: frozenset[int] = frozenset()) -> dict[int, JavaLedger]:
    """The Java client reads every entry of every closed ledger of ``written`` byte for byte as written, except
    the ledgers of ``given_up``, whose entries it must find none of; the ensembles and custom metadata it parses
    are those our client reads, and no ensemble names ``gone``."""
    seen = await java_read(bk.config.zk_servers, bk.config.ledgers_root, written)
    for lid, payloads in written.items():
        java, ours = seen[lid], (await bk.ledger_metadata(lid)).value
        assert java.ensembles == dict(ours.ensembles), f"ledger {lid}: Java {java.ensembles}, ours {ours.ensembles}"
        assert java.custom_metadata == dict(ours.custom_metadata), f"ledger {lid}: {java.custom_metadata}"
        if gone is not None:
            assert all(gone not in e for e in java.ensembles.values()), f"ledger {lid} still names {gone}"
        closed = (java.closed, java.last_add_confirmed, java.length)
        assert closed == (True, len(payloads) - 1, ours.length), f"ledger {lid}: (closed, last, length) {closed}"
        if lid in given_up:
            assert not java.payloads and sorted(java.unreadable) == list(range(len(payloads))), \
                f"ledger {lid}: given up, yet the Java client read entries {sorted(java.payloads)}"
            continue
        assert not java.unreadable, f"ledger {lid}: the Java client could not read entries {java.unreadable}"
        wrong = [i for i, payload in enumerate(payloads) if java.payloads.get(i) != payload]
        assert not wrong and len(java.payloads) == len(payloads), \
            f"ledger {lid}: the Java client read other bytes than written for entries {wrong}"
    return seen
