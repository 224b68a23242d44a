"""``bookie scrub`` names every entry whose bytes no longer match its digest, and only those.

Ledgers of each digest type a client may choose are written through the storage engine into entry logs; seeded
bits are flipped in entries of the CRC32C and CRC32 ledgers (in the payload, the header or the digest itself).
The scrub names exactly those entries, with their log, offset and the ledger's digest type; the HMAC and DUMMY
ledgers, whose digests a bookie cannot recompute, are listed as not verified, never as damaged; a clean disk
exits 0, a damaged one 1. A record cut short is reported as a problem, not skipped in silence.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from bookie import cli
from bookie.protocol.entry import DigestType, digest_manager, package_entry
from bookie.scrub import scrub
from bookie.storage import entrylog_format as ef
from bookie.storage.engine import StorageEngine

from tests.storage.conftest import engine_conf
from tests.support.faults import flip_bit
from tests.support.raw_client import MASTER_KEY

LEDGERS = {10: DigestType.CRC32C, 11: DigestType.CRC32, 12: DigestType.HMAC, 13: DigestType.DUMMY}
ENTRIES = 30


async def _write(base: Path, rng: random.Random) -> None:
    engine = StorageEngine(engine_conf(base))
    await engine.start()
    try:
        for ledger, digest in LEDGERS.items():
            manager, length = digest_manager(digest, b"the ledger's password"), 0
            for entry_id in range(ENTRIES):
                payload = rng.randbytes(rng.randint(50, 2000))
                length += len(payload)
                await engine.add_entry(package_entry(manager, ledger, entry_id, entry_id - 1, length, payload),
                                       MASTER_KEY)
    finally:
        await engine.close()


def _records(ledger_dir: Path) -> dict[tuple[int, int], tuple[Path, int, int]]:
    """(ledger, entry) -> (log, offset of the record, size of the entry)."""
    found = {}
    for log in sorted((ledger_dir / "current").glob("*.log")):
        for record in ef.iter_records(log.read_bytes()):
            found[(record.ledger_id, record.entry_id)] = (log, record.offset, record.size)
    return found


async def test_scrub_names_exactly_the_damaged_entries(tmp_path: Path, seeded_rng: random.Random,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    await _write(tmp_path, seeded_rng)
    ledger_dir = tmp_path / "l0"
    assert cli.main(["scrub", str(ledger_dir)]) == 0, "a clean disk"
    records = _records(ledger_dir)
    damaged = {(ledger, entry) for ledger in (10, 11) for entry in seeded_rng.sample(range(ENTRIES), 3)}
    for key in sorted(damaged):
        log, offset, size = records[key]
        # Anywhere after the ledger and entry ids, which name the entry: the LAC, length, digest or payload.
        flip_bit(log, offset + ef.RECORD_SIZE_PREFIX + seeded_rng.randrange(16, size), seeded_rng.randrange(8))
    report = scrub([ledger_dir])
    assert {(d.ledger, d.entry) for d in report.damaged} == damaged
    for found in report.damaged:
        log, offset, _ = records[(found.ledger, found.entry)]
        assert (found.log, found.offset, found.digest) == (str(log), offset, LEDGERS[found.ledger].name)
    assert report.not_verified == {12: ENTRIES, 13: ENTRIES}
    assert report.verified == 2 * ENTRIES - len(damaged) and report.entries == len(LEDGERS) * ENTRIES
    assert not report.problems
    capsys.readouterr()
    assert cli.main(["scrub", str(ledger_dir)]) == 1
    said = capsys.readouterr().err
    assert all(f"ledger {ledger} entry {entry} in " in said for ledger, entry in damaged), said


async def test_a_record_cut_short_is_a_problem_named(tmp_path: Path, seeded_rng: random.Random) -> None:
    await _write(tmp_path, seeded_rng)
    log, offset, _ = _records(tmp_path / "l0")[(10, 5)]
    data = bytearray(log.read_bytes())
    data[offset:offset + 4] = (2**31 - 1).to_bytes(4, "big")  # a size past the end of the log
    log.write_bytes(bytes(data))
    report = scrub([tmp_path / "l0"])
    assert report.problems == [f"{log}: at offset {offset}: record of {2**31 - 1} bytes runs past the end of the "
                               f"data ({len(data)}) (the records after it were not read)"]


def test_a_directory_without_entry_logs_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=f"{tmp_path / 'nowhere' / 'current'}: no such directory"):
        scrub([tmp_path / "nowhere"])
