"""Our metadata formats and ZooKeeper usage against BookKeeper's own Java code (from Maven Central).

Runs tests/metadata/java/MetadataInterop.java as a single-file Java program on $BOOKIE_FLEET_BK_LIB.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

from bookie.metadata.cookie import Cookie
from bookie.metadata.ledger_metadata import (
    LedgerMetadata,
    LedgerState,
    new_ledger_metadata,
    parse_ledger_metadata,
    serialize_ledger_metadata,
)
from bookie.metadata.store import MetadataStore
from bookie.protocol.entry import DigestType
from bookie_fleet.zookeeper import ZooKeeperServer

PROGRAM = Path(__file__).parent / "java" / "MetadataInterop.java"


async def java_lines(*args: str) -> list[str]:
    lib = os.environ["BOOKIE_FLEET_BK_LIB"]
    cmd = [shutil.which("java") or "java", "-Xmx128m", "-cp", f"{lib}/*", str(PROGRAM), *args]
    proc = await asyncio.to_thread(subprocess.run, cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [line[len("RESULT "):] for line in proc.stdout.splitlines() if line.startswith("RESULT ")]


async def java(*args: str) -> str:
    return (await java_lines(*args))[-1]


def _sample() -> LedgerMetadata:
    return LedgerMetadata(
        ensemble_size=2, write_quorum_size=2, ack_quorum_size=1,
        ensembles={0: ("a:3181", "b:3181"), 5: ("a:3181", "c:3181")}, state=LedgerState.CLOSED,
        last_entry_id=9, length=100, digest_type=DigestType.CRC32C, password=b"pw", ctime=1700000000000,
        custom_metadata={"app": b"x"}, c_token=3)


async def test_ledger_metadata_bytes_identical_to_java() -> None:
    java_bytes = base64.b64decode(await java("metadata-write"))
    assert serialize_ledger_metadata(_sample()) == java_bytes
    assert parse_ledger_metadata(java_bytes) == _sample()


async def test_java_parses_our_ledger_metadata() -> None:
    ours = base64.b64encode(serialize_ledger_metadata(_sample())).decode()
    assert await java("metadata-read", ours) == (
        "CLOSED|9|100|{0=[a:3181, b:3181], 5=[a:3181, c:3181]}|CRC32C|1|1700000000000|3|pw")


async def test_cookie_text_identical_to_java() -> None:
    text = base64.b64decode(await java("cookie")).decode()
    ours = Cookie.generate("10.0.0.5:3181", ["/data/journal"], ["/data/l1", "/data/l2"], instance_id="abc")
    assert ours.render() == text
    assert Cookie.parse(text) == ours


async def test_ledger_ids_interleave_with_the_java_generator(metadata_store: MetadataStore,
                                                            zookeeper: ZooKeeperServer) -> None:
    s = metadata_store
    ours = [await s.generate_ledger_id() for _ in range(3)]
    theirs = json.loads(await java("ids", zookeeper.connect_string, s.layout.root, "3"))
    ours += [await s.generate_ledger_id() for _ in range(3)]
    assert ours[:3] == [0, 1, 2] and theirs == [3, 4, 5] and ours[3:] == [6, 7, 8]


async def test_ledger_ranges_identical_to_java_iterator(metadata_store: MetadataStore,
                                                       zookeeper: ZooKeeperServer) -> None:
    s = metadata_store
    md = new_ledger_metadata(["a:3181"], 1, 1)
    ids = [0, 7, 9999, 10000, 123456789, 2**31 - 2, 2**31 - 1, 2**40, 2**40 + 3, 2**62 + 11]
    await asyncio.gather(*(s.create_ledger_metadata(i, md) for i in ids))
    await s._create(f"{s.layout.root}/00/0000/L12345")  # outside its bucket: both must drop it
    ours = [list(r.ledger_ids) async for r in s.ledger_ranges()]
    lines = await java_lines("ranges", zookeeper.connect_string, s.layout.root)
    assert ours == [json.loads(line) for line in lines]
    assert len(ours) == 7
