"""The storage audit of a fleet Pulsar wrote: its pinning table and HTML report name the topic of each ledger
keeping an entry log on disk, read from the managed-ledger metadata the broker wrote (the label's format:
tests/metadata/test_pulsar_topic_names.py). The audit runs as an operator runs it, ``bookie-audit snapshot``
then ``bookie-audit run``, in their own processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from bookie_fleet.pulsar import Producer

from tests.pulsar.conftest import PulsarOnBookies


def _audit(*args: str) -> None:
    env = {**os.environ, "BOOKIE_AUDIT_MASTER": "local[2]"}
    done = subprocess.run([sys.executable, "-m", "bookie_audit.cli", *args], capture_output=True, env=env,
                          timeout=600, check=False)
    assert done.returncode == 0, f"bookie-audit {args[0]} failed:\n{done.stderr.decode()[-4000:]}"


# The audit reads both implementations' entry logs alike (tests/pipeline/test_real_bookies.py); one Spark run
# on our bookies keeps this folder's time down.
@pytest.mark.parametrize("pulsar", ["python"], indirect=True)
def test_audit_report_names_the_topics_pinning_entry_logs(pulsar: PulsarOnBookies, tmp_path: Path) -> None:
    topic = "public/default/audited"
    pulsar.broker.admin("PUT", f"persistent/{topic}/subscription/billing")  # keeps every message
    producer = Producer(pulsar.broker, topic, 1500, max_size=3000, rate=500)
    producer.finish()
    assert len(producer.acked) == 1500
    stats = pulsar.broker.admin("GET", f"persistent/{topic}/internalStats")
    data_ledgers = {int(entry["ledgerId"]) for entry in stats["ledgers"]}

    snap, out = tmp_path / "snap", tmp_path / "out"
    _audit("snapshot", "--zk", pulsar.bookies.zk_connect, "--root", pulsar.bookies.ledgers_root, "--out", str(snap))
    logs = [arg for b in pulsar.bookies.bookies for arg in ("--logs", str(b.ledger_dir))]
    _audit("run", *logs, "--metadata", str(snap), "--out", str(out), "--mode", "metadata", "--min-age-days", "0",
           "--shuffle-partitions", "2")

    topics = {row["ledger_id"]: row["topic"] for row in pq.read_table(out / "pinning.parquet").to_pylist()}
    pinning_data = data_ledgers & set(topics)
    assert len(pinning_data) >= 3, (data_ledgers, topics)  # closed ledgers of the topic, on disk
    assert {topics[lid] for lid in pinning_data} == {"persistent://public/default/audited"}
    report = (out / "report.html").read_text()
    assert "persistent://public/default/audited" in report
