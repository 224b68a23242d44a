"""A bookie killed (SIGKILL) and restarted under a Pulsar producer: every message Pulsar acknowledged is
read back intact. Pulsar's acknowledgement is the contract: with 2/2/2 ensembles on three bookies, the
broker's BookKeeper client replaces the dead bookie in the ensembles it was in and goes on writing."""

from __future__ import annotations

from bookie_fleet.pulsar import Producer, consume

from tests.pulsar.conftest import PulsarOnBookies

RATE = 300  # messages per second
BEFORE, DURING, AFTER = 300, 900, 300  # acknowledged messages to see in each phase


def test_no_acknowledged_message_is_lost_when_a_bookie_dies(pulsar: PulsarOnBookies) -> None:
    topic = "public/default/survivor"
    pulsar.broker.admin("PUT", f"persistent/{topic}/subscription/check")
    victim = pulsar.bookies.bookies[1]
    producer = Producer(pulsar.broker, topic, 0, keys=16, max_size=2048, rate=RATE)
    try:
        producer.wait_for(lambda: len(producer.acked) >= BEFORE, 120, "messages before the crash")
        victim.kill()
        at_kill = len(producer.acked)
        producer.wait_for(lambda: len(producer.acked) >= at_kill + DURING, 180, "messages with a bookie down")
        victim.start()
        at_restart = len(producer.acked)
        producer.wait_for(lambda: len(producer.acked) >= at_restart + AFTER, 120, "messages after the restart")
        producer.finish()
    finally:
        producer.kill()
        if not victim.running:
            victim.start()
    acked = producer.acked
    sent = len(acked) + len(producer.failed)
    print(f"{len(acked)} acknowledged, {len(producer.failed)} failed; kill at {at_kill}, restart at {at_restart}")

    got = consume(pulsar.broker, topic, "check", sent)
    seen = {seq: (key, sha) for seq, key, sha in got}
    lost = sorted(set(acked) - set(seen))
    assert not lost, f"{len(lost)} acknowledged messages lost, first {lost[:10]}"
    for seq, ack in acked.items():
        assert seen[seq] == (ack.key, ack.sha256), f"message {seq} changed"
