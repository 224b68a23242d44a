"""Pulsar's Java client writes keyed, batched messages through a real broker to the bookies and reads them
back byte for byte; the ledgers it leaves carry the managed-ledger metadata the audit reads."""

from __future__ import annotations

import asyncio

from bookie.metadata.store import MetadataStore
from bookie_fleet.pulsar import Producer, consume

from tests.pulsar.conftest import PulsarOnBookies

COUNT = 3000


def test_keyed_batched_messages_come_back_byte_identical(pulsar: PulsarOnBookies) -> None:
    topic = "public/default/roundtrip"
    # The subscription exists before the first message: without one (and with Pulsar's default retention
    # of nothing) the broker trims every ledger no subscription still needs.
    pulsar.broker.admin("PUT", f"persistent/{topic}/subscription/check")
    producer = Producer(pulsar.broker, topic, COUNT, keys=16, max_size=3000)
    producer.finish()
    assert not producer.failed, list(producer.failed.items())[:5]
    assert sorted(producer.acked) == list(range(COUNT))
    # 3000 messages in batches of up to 50, 20 entries (batches) per ledger: the topic rolled over ledgers.
    stats = pulsar.broker.admin("GET", f"persistent/{topic}/internalStats")
    ledgers = [int(entry["ledgerId"]) for entry in stats["ledgers"]]
    assert len(ledgers) >= 3

    got = consume(pulsar.broker, topic, "check", COUNT)
    assert [seq for seq, _, _ in got] == list(range(COUNT)), "messages lost, duplicated or reordered"
    for seq, key, sha in got:
        assert (key, sha) == (producer.acked[seq].key, producer.acked[seq].sha256), f"message {seq} changed"


def test_ledgers_carry_the_managed_ledger_name(pulsar: PulsarOnBookies) -> None:
    """What the broker writes into each ledger's custom metadata, read back from ZooKeeper: the data
    ledgers name their managed ledger (``tenant/namespace/persistent/topic``), the cursor ledger its cursor."""
    topic = "public/default/metadata"
    pulsar.broker.admin("PUT", f"persistent/{topic}/subscription/audit")
    Producer(pulsar.broker, topic, 200, max_size=500).finish()
    stats = pulsar.broker.admin("GET", f"persistent/{topic}/internalStats")
    data = [int(entry["ledgerId"]) for entry in stats["ledgers"]]
    cursor = int(stats["cursors"]["audit"]["cursorLedger"])
    custom = asyncio.run(_custom_metadata(pulsar, [*data, cursor]))
    for lid in data:
        assert custom[lid] == {"application": b"pulsar", "component": b"managed-ledger",
                               "pulsar/managed-ledger": b"public/default/persistent/metadata"}
    assert custom[cursor] == {"application": b"pulsar", "component": b"managed-ledger",
                              "pulsar/managed-ledger": b"public/default/persistent/metadata",
                              "pulsar/cursor": b"audit"}


async def _custom_metadata(pulsar: PulsarOnBookies, ledgers: list[int]) -> dict[int, dict[str, bytes]]:
    async with MetadataStore(pulsar.bookies.zk_connect, pulsar.bookies.ledgers_root) as store:
        return {lid: dict((await store.read_ledger_metadata(lid)).value.custom_metadata) for lid in ledgers}
