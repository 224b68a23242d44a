"""Entry logs written by a running bookie parse with a reader written here from BookKeeper's format facts
alone (it shares no code with the bookie): header, size-prefixed records and the ledgers map."""

from __future__ import annotations

import asyncio
import random
import struct
from pathlib import Path

from bookie.protocol.codes import StatusCode

from tests.support.bookies import BookieFactory
from tests.support.raw_client import RawConnection, entry


def read_entry_log(data: bytes) -> tuple[list[tuple[int, int, bytes]], dict[int, int]]:
    """(records, ledgers map) of a finalized log: 'BKLO', int32 version, int64 map offset, int32 count."""
    magic, version, map_offset, count = struct.unpack_from(">4siqi", data, 0)
    assert magic == b"BKLO" and version == 1
    assert map_offset > 0 and count > 0, "a finalized log points at its ledgers map"
    records, pos = [], 1024
    while pos < map_offset:
        (size,) = struct.unpack_from(">i", data, pos)
        body = data[pos + 4:pos + 4 + size]
        ledger_id, entry_id = struct.unpack_from(">qq", body, 0)
        records.append((ledger_id, entry_id, body))
        pos += 4 + size
    ledgers: dict[int, int] = {}
    pos = map_offset
    while len(ledgers) < count:
        length, lid, eid, n = struct.unpack_from(">iqqi", data, pos)
        assert (lid, eid) == (-1, -2)
        for i in range(n):
            ledger_id, size = struct.unpack_from(">qq", data, pos + 24 + 16 * i)
            ledgers[ledger_id] = size
        pos += 4 + length
    return records, ledgers


async def test_finalized_logs_parse_with_an_independent_reader(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(1, logSizeLimit=200_000, flushInterval=200)
    bookie = cluster[0]
    sent: dict[tuple[int, int], bytes] = {}
    ledgers = [random.randrange(1, 2**40) for _ in range(3)]
    async with await RawConnection.open(bookie.bookie_id, 3) as conn:
        for entry_id in range(120):
            for ledger in ledgers:
                body = entry(ledger, entry_id, random.randbytes(random.randrange(100, 3000)))
                assert (await conn.add(ledger, entry_id, body=body)).status == StatusCode.EOK
                sent[(ledger, entry_id)] = body
    await asyncio.sleep(1)
    bookie.stop()  # a clean stop finalizes the active log too
    logs = await asyncio.to_thread(_log_files, bookie.ledger_dir)
    assert len(logs) > 1, "logSizeLimit rolled the log"
    seen: dict[tuple[int, int], bytes] = {}
    for name, data in logs:
        records, ledgers_map = read_entry_log(data)
        per_ledger: dict[int, int] = {}
        for ledger_id, entry_id, body in records:
            seen[(ledger_id, entry_id)] = body
            per_ledger[ledger_id] = per_ledger.get(ledger_id, 0) + len(body) + 4
        assert ledgers_map == per_ledger, f"{name}: ledgers map disagrees with its records"
    assert seen == sent


def _log_files(ledger_dir: Path) -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in sorted(Path(ledger_dir, "current").glob("*.log"))]
