"""The playground's workload: Apache Pulsar, as the users of these bookies run it.

A real broker (``bookie_fleet.pulsar``, Maven Central's jars) runs next to the local Kubernetes cluster and
stores its topics on the BookieCluster's bookies. Three topics of one namespace are written at once, so that
every entry log of every bookie holds entries of all three:

* ``orders``: its ``billing`` subscription never acknowledges, so Pulsar keeps every message;
* ``clicks`` and ``views``: their ``analytics`` subscription's messages expire (Pulsar's message expiry, what a
  TTL does on schedule), and with no retention configured Pulsar deletes every ledger it no longer needs.

Then the bookies hold a few live ``orders`` entries in every entry log: the disk stays full until compaction.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bookie_fleet.pulsar import BookieClientTLS, Producer, PulsarBroker

NAMESPACE = "public/playground"
KEPT = {"orders": "billing"}
EXPIRING = {"clicks": "analytics", "views": "analytics"}
TOPICS = {**KEPT, **EXPIRING}  # topic -> its subscription
# Ledgers roll every 2 MB (not Pulsar's default 2 GB, with a 10 minute minimum): a short run leaves many
# closed ledgers, which is what retention and expiry delete.
BROKER_SETTINGS: dict[str, Any] = {"managedLedgerMaxSizePerLedgerMbytes": 2, "managedLedgerMaxEntriesPerLedger": 50000,
                                   "managedLedgerMinLedgerRolloverTimeMinutes": 0}


def topic_name(topic: str) -> str:
    return f"persistent://{NAMESPACE}/{topic}"


@dataclass
class PulsarWorkload:
    workdir: Path
    zk_connect: str
    ledgers_root: str
    chroot: str = "/pulsar-playground"   # Pulsar's own metadata, beside BookKeeper's in the same ZooKeeper
    broker_settings: dict[str, Any] = field(default_factory=lambda: dict(BROKER_SETTINGS))
    bookie_tls: BookieClientTLS | None = None  # the broker's TLS to bookies that require client certificates
    broker: PulsarBroker | None = None
    producers: dict[str, Producer] = field(default_factory=dict)

    def start(self) -> PulsarBroker:
        """Pulsar's cluster metadata on the bookies' BookKeeper metadata, the broker, the namespace and the
        topics with their subscriptions."""
        broker = PulsarBroker(self.workdir, self.zk_connect, self.ledgers_root, chroot=self.chroot,
                              log_level="warn", settings=self.broker_settings, bookie_tls=self.bookie_tls)
        self.broker = broker
        broker.setup_metadata()
        broker.start()
        broker.admin("PUT", f"namespaces/{NAMESPACE}")
        for topic, subscription in TOPICS.items():
            broker.admin("PUT", f"persistent/{NAMESPACE}/{topic}/subscription/{subscription}")
        return broker

    def _broker(self) -> PulsarBroker:
        if self.broker is None:
            raise RuntimeError("the Pulsar broker is not started")
        return self.broker

    def produce(self, bytes_per_s: float, max_message: int) -> None:
        """Every topic at once, each a third of ``bytes_per_s`` (messages of 1..``max_message`` bytes), until
        ``stop_producing``."""
        rate = bytes_per_s / len(TOPICS) / ((1 + max_message) / 2)
        for topic in TOPICS:
            self.producers[topic] = Producer(self._broker(), f"{NAMESPACE}/{topic}", 0, keys=16,
                                             max_size=max_message, rate=rate)

    def stop_producing(self) -> int:
        """Stops the producers once every message sent has Pulsar's answer; returns the messages acknowledged."""
        acked = 0
        for producer in self.producers.values():
            producer.finish()
            acked += len(producer.acked)
        self.producers.clear()
        return acked

    def written_bytes(self) -> int:
        """Bytes the broker received on the three topics (its ``bytesInCounter``)."""
        return sum(int(self._broker().admin("GET", f"persistent/{NAMESPACE}/{topic}/stats")["bytesInCounter"])
                   for topic in TOPICS)

    def ledgers(self, topic: str) -> list[int]:
        return self._broker().ledgers_of(f"{NAMESPACE}/{topic}")

    def expire(self, timeout: float = 180) -> list[int]:
        """Expires every message of the expiring topics' subscriptions and waits until Pulsar has deleted the
        ledgers it no longer needs (all but each topic's current one); returns their ids."""
        broker = self._broker()
        before = {topic: self.ledgers(topic) for topic in EXPIRING}
        for topic, subscription in EXPIRING.items():
            broker.admin("POST", f"persistent/{NAMESPACE}/{topic}/subscription/{subscription}/expireMessages/1")
        deadline = time.monotonic() + timeout
        while True:
            now = {topic: self.ledgers(topic) for topic in EXPIRING}
            if all(len(ids) <= 1 for ids in now.values()):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"Pulsar kept the expired topics' ledgers {now} for {timeout:.0f} s")
            time.sleep(1)
        return sorted(set().union(*before.values()) - set().union(*now.values()))

    def delete_expired_topics(self) -> list[int]:
        """Deletes the expiring topics (what Pulsar does to inactive topics, brokerDeleteInactiveTopicsEnabled)
        with their ledgers; returns the ids of the ledgers they still had."""
        broker = self._broker()
        left = [lid for topic in EXPIRING for lid in self.ledgers(topic)]
        for topic in EXPIRING:
            broker.admin("DELETE", f"persistent/{NAMESPACE}/{topic}?force=true")
        return left

    def close(self) -> None:
        for producer in self.producers.values():
            producer.kill()
        self.producers.clear()
        if self.broker is not None:
            self.broker.stop()
