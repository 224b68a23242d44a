"""The audit image runs the audit on its own PySpark and JRE, as a restricted pod runs it (uid 185, read-only
root, no capabilities): a whole ``bookie-audit run`` in local mode over entry logs and a snapshot mounted as
volumes, and Spark's own tools (``spark-submit``, Java 17) from the image."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState
from bookie.protocol import entry as bke
from bookie.storage import entrylog_format as ef
from bookie_audit.snapshot import Manifest, metadata_tables, write_snapshot

from tests.support import oci

BOOKIE = "10.0.0.1:3181"
_CRC = bke.digest_manager(bke.DigestType.CRC32C)


def _fleet(root: Path) -> None:
    """One bookie's log: ledger 2 (in metadata) and ledger 1 (deleted: garbage), a snapshot holding ledger 2,
    taken after the log was written."""
    current = root / "logs" / "bookie" / "current"
    current.mkdir(parents=True)
    body = bytearray(ef.LogHeader().encode())
    sizes: dict[int, int] = {}
    for ledger in (1, 2):
        for e in range(10):
            entry = bke.package_entry(_CRC, ledger, e, e - 1, 100 * (e + 1), bytes([e]) * 100)
            body += ef.encode_record(ledger, e, entry)
            sizes[ledger] = sizes.get(ledger, 0) + len(entry) + 4
    offset = len(body)
    body += ef.encode_ledgers_map(sizes)
    body[8:20] = ef.encode_map_location(offset, len(sizes))
    (current / "0.log").write_bytes(body)
    md = LedgerMetadata(ensemble_size=1, write_quorum_size=1, ack_quorum_size=1, ensembles={0: (BOOKIE,)},
                        state=LedgerState.CLOSED, last_entry_id=9, length=1000, digest_type=bke.DigestType.CRC32C,
                        password=b"")
    ledgers, fragments = metadata_tables({2: (md, 0)})
    now_ms = int(time.time() * 1000) + 1000
    write_snapshot(str(root / "snap"), ledgers, fragments, Manifest("zk:2181", "/ledgers", now_ms, now_ms, 1, 2))
    for path in root.rglob("*"):  # readable by the image's user
        os.chmod(path, 0o777 if path.is_dir() else 0o666)
    os.chmod(root, 0o777)


def test_audit_runs_in_the_image(images: dict[str, oci.Image], rootfs: Callable[[str], Path],
                                 tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    _fleet(data)
    hosts = tmp_path / "hosts"  # what the kubelet mounts in a pod: Spark looks its host name up
    hosts.write_text("127.0.0.1 localhost image-test\n")
    result = oci.run(images["audit"], rootfs("audit"), tmp_path / "bundle",
                     ["bookie-audit", "run", "--master", "local[1]", "--logs", f"{BOOKIE}=/data/logs/bookie",
                      "--metadata", "/data/snap", "--out", "/data/out", "--min-age-days", "0"],
                     host_network=True, binds={"/data": data, "/etc/hosts": hosts}, timeout=600)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    summary = json.loads((data / "out" / "summary.json").read_text())
    assert summary["bookies"] == [BOOKIE] and summary["logs"] == 1
    assert summary["replication"]["ok"] == 10, summary
    garbage = sum(r["bytes"] for r in pq.read_table(data / "out" / "ledger_map.parquet").to_pylist()
                  if r["ledger_id"] == 1)
    assert summary["totals"]["garbage_bytes"] == garbage > 0
    assert (data / "out" / "report.html").stat().st_size > 0


def test_spark_and_java_of_the_image(images: dict[str, oci.Image], rootfs: Callable[[str], Path],
                                     tmp_path: Path) -> None:
    result = oci.run(images["audit"], rootfs("audit"), tmp_path / "java", ["java", "-version"])
    assert result.returncode == 0 and 'version "17.' in result.stderr, result.stderr
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost image-test\n")
    result = oci.run(images["audit"], rootfs("audit"), tmp_path / "spark", ["spark-submit", "--version"],
                     binds={"/etc/hosts": hosts})
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "version 4." in output, output[-2000:]
