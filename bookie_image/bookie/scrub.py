"""Checking every entry of a bookie's entry logs against its digest: ``bookie scrub LEDGER_DIR...``.

A bit flipped at rest is found by a client only when it reads that copy (its digest check refuses it and reads
another replica); the bookie serves the damaged bytes as they are. This names the damaged entries from the disk's
side, for this bookie's directories or Apache BookKeeper's (the same entry-log format), the bookie running or not:
each log is read under a shared lock that delays GC's deletion of it (``storage.log_files``).

An entry is stored as its client packaged it: header (ledger, entry, LAC, length), digest, payload. The digest's
type is the ledger's, in its metadata, not on the disk, so each ledger's is told from its entries: CRC32C (4 bytes)
and CRC32 (8 bytes) digests are recomputed, and the type most of a ledger's entries verify with is the ledger's;
its entries that do not are damaged. A ledger none of whose entries verify is reported as not verified: its
digests are HMAC-SHA1 (keyed with the ledger's password, which a bookie never has) or none (DUMMY), or every one
of its entries is damaged, which this cannot tell apart.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bookie.protocol.entry import METADATA_LENGTH, Crc32cDigestManager, Crc32DigestManager, DigestManager
from bookie.storage.log_files import entry_log_files, scan_records

# The digests a bookie can recompute without the ledger's password, by the name BookKeeper gives their type.
CHECKED = {"CRC32C": Crc32cDigestManager(), "CRC32": Crc32DigestManager()}


@dataclass(frozen=True)
class DamagedEntry:
    """An entry whose bytes no longer match the digest its writer computed."""

    log: str
    offset: int  # of the record's size prefix in the log
    ledger: int
    entry: int
    digest: str  # the ledger's digest type, as its other entries show it


@dataclass
class ScrubReport:
    entry_logs: int = 0
    entries: int = 0
    verified: int = 0
    damaged: list[DamagedEntry] = field(default_factory=list)
    not_verified: dict[int, int] = field(default_factory=dict)  # ledger -> entries (HMAC, DUMMY, or all damaged)
    problems: list[str] = field(default_factory=list)  # logs that could not be read to their end

    def as_json(self) -> dict[str, Any]:
        found = asdict(self)
        found["not_verified"] = {str(ledger): count for ledger, count in sorted(self.not_verified.items())}
        return found


def scrub(ledger_dirs: Sequence[Path]) -> ScrubReport:
    """Every entry of every entry log under ``ledger_dirs`` (each holding ``current/<id>.log``) checked."""
    report = ScrubReport()
    verifies: dict[int, Counter[str]] = defaultdict(Counter)  # ledger -> entries each digest type verifies
    unverified: dict[int, list[tuple[str, int, int]]] = defaultdict(list)  # ledger -> (log, offset, entry)
    for log in [path for ledger_dir in ledger_dirs for _, path in entry_log_files(ledger_dir)]:
        report.entry_logs += 1
        for offset, ledger, entry, matches in _check_log(log, report):
            report.entries += 1
            if matches:
                verifies[ledger].update(matches)
            else:
                unverified[ledger].append((str(log), offset, entry))
    for ledger, failed in unverified.items():
        if not verifies[ledger]:
            report.not_verified[ledger] = len(failed)
            continue
        digest = verifies[ledger].most_common(1)[0][0]
        report.damaged += [DamagedEntry(log, offset, ledger, entry, digest) for log, offset, entry in failed]
    report.verified = report.entries - len(report.damaged) - sum(report.not_verified.values())
    return report


def _check_log(path: Path, report: ScrubReport) -> Iterator[tuple[int, int, int, list[str]]]:
    """(offset, ledger, entry, digest types it verifies with) of each record of the log; a damaged record ends
    the log's check (``report.problems``)."""
    yield from scan_records(path, report.problems, _verifying)


def _verifying(entry: memoryview) -> list[str]:
    """The digest types whose digest, recomputed over the entry's header and payload, is the one stored."""
    return [name for name, manager in CHECKED.items() if _matches(manager, entry)]


def _matches(manager: DigestManager, entry: memoryview) -> bool:
    n = manager.digest_length
    if len(entry) < METADATA_LENGTH + n:
        return False
    stored = entry[METADATA_LENGTH:METADATA_LENGTH + n]
    return manager.compute((entry[:METADATA_LENGTH], entry[METADATA_LENGTH + n:])) == stored
