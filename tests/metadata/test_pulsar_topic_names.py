"""The Pulsar topic named by a ledger's custom metadata, as a 4.0 broker writes it (tests/pulsar checks the
keys against a real broker)."""

from __future__ import annotations

from bookie.metadata.pulsar import pulsar_owner, topic_name


def test_data_ledger_names_its_topic() -> None:
    custom = {"application": b"pulsar", "component": b"managed-ledger",
              "pulsar/managed-ledger": b"public/default/persistent/orders"}
    assert pulsar_owner(custom) == "persistent://public/default/orders"


def test_cursor_ledger_names_its_topic_and_subscription() -> None:
    custom = {"application": b"pulsar", "component": b"managed-ledger",
              "pulsar/managed-ledger": b"public/default/persistent/orders", "pulsar/cursor": b"billing"}
    assert pulsar_owner(custom) == "persistent://public/default/orders (cursor billing)"


def test_encoded_local_names_and_older_four_part_names() -> None:
    assert topic_name("acme/eu/persistent/a+b%3Dc") == "persistent://acme/eu/a b=c"
    assert topic_name("prop/cluster/ns/non-persistent/t") == "non-persistent://prop/cluster/ns/t"


def test_other_ledgers_have_no_topic_and_odd_names_pass_through() -> None:
    assert pulsar_owner({}) is None
    assert pulsar_owner({"application": b"stream"}) is None
    assert pulsar_owner({"pulsar/managed-ledger": "topic-7"}) == "topic-7"
