"""Pulsar's LTS line (4.0) on our bookies: a 4.0.8 broker and its own Java client write keyed, batched
messages over several ledgers and read them back byte for byte.

The other Pulsar tests run the newest line (``bookie_fleet.pulsar.NEWEST``); this is the LTS line's one
compatibility test, on our bookies only (Apache BookKeeper's bookies are Pulsar's own tested pairing).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from bookie_fleet.pulsar import LTS, Producer, PulsarBroker, consume
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.pulsar.conftest import BOOKIE_CONF, FIRST_HOST, PulsarOnBookies
from tests.support.java_bookies import start_cluster

# Its classpath is the bootstrap's pulsar-lts part, which scripts/test assembles beside the tests.
pytestmark = pytest.mark.bootstrap_part("pulsar-lts")

LTS_VERSION = "4.0.8"
COUNT = 2000


@pytest.fixture(scope="module")
def lts_pulsar(zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PulsarOnBookies]:
    base = tmp_path_factory.mktemp("pulsar-lts")
    bookies = start_cluster("python", 3, base / "bookies", zookeeper, FIRST_HOST["lts"], **BOOKIE_CONF)
    broker = PulsarBroker(base / "broker", zookeeper.connect_string, bookies.ledgers_root,
                          chroot=f"/pulsar-lts-{uuid.uuid4().hex[:8]}", classpath=LTS)
    try:
        broker.setup_metadata()
        broker.start()
        yield PulsarOnBookies("python", bookies, broker)
    finally:
        broker.stop()
        bookies.stop()


def test_the_lts_broker_is_the_4_0_line() -> None:
    assert LTS.version == LTS_VERSION


def test_lts_broker_messages_come_back_byte_identical(lts_pulsar: PulsarOnBookies) -> None:
    broker = lts_pulsar.broker
    topic = "public/default/lts-roundtrip"
    broker.admin("PUT", f"persistent/{topic}/subscription/check")  # before the first message: nothing trimmed
    producer = Producer(broker, topic, COUNT, keys=16, max_size=3000)
    producer.finish()
    assert not producer.failed, list(producer.failed.items())[:5]
    assert sorted(producer.acked) == list(range(COUNT))
    ledgers = broker.ledgers_of(topic)
    assert len(ledgers) >= 2, f"the topic did not roll over ledgers: {ledgers}"

    got = consume(broker, topic, "check", COUNT)
    assert [seq for seq, _, _ in got] == list(range(COUNT)), "messages lost, duplicated or reordered"
    for seq, key, sha in got:
        assert (key, sha) == (producer.acked[seq].key, producer.acked[seq].sha256), f"message {seq} changed"
