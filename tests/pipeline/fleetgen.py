"""A synthetic fleet of entry logs with known garbage, pinning and replication faults.

Logs are written with the canonical writer (``bookie.storage.entrylog_format``) and entries packaged by
``bookie.protocol.entry``, exactly as a bookie stores them. The plan (which entry is where) is kept in plain
Python so tests compute every expected number independently of the reader under test.

Scenario, three bookies, ensembles of 3 with write quorum 2 unless said:
  ledgers 1-5       healthy, closed
  ledger 6          also has copies of entries 0-3 on the bookie outside each entry's write set (misplaced)
  ledger 7          bookie 2 lost entries 0-4 of its share: under-replicated
  ledger 8          entry 5 lost on both of its bookies: missing (data loss)
  ledger 9          two fragments (ensemble changed at entry 10)
  ledger 10         ensemble of bookies 1 and 2 only, but a copy of everything also on bookie 3 (not in ensemble)
  ledger 11         open (no last entry id in metadata), in the active, unfinalized log
  ledger 200        healthy, closed: the snapshot's highest id (ids above it would be "newer than snapshot")
  ledgers 101-103   deleted from metadata, still on disk (garbage)
  ledger 104        deleted; its log on bookie 3 is unfinalized and truncated in the middle of a record
Logs per bookie: slot 0 (40 days old: ledger 1 + deleted 101, 102 -> pinned by ledger 1), slot 1 (20 days
old: only deleted 103 -> dead), slot 2 (recent, ledgers 2-10), slot 3 (active, no ledgers map: ledger 11),
slot 4 on bookie 3 only (truncated, ledger 104).
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field

from bookie.metadata.cookie import Cookie
from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState
from bookie.protocol import entry as bke
from bookie.storage import entrylog_format as ef

BOOKIES = ("127.0.0.1:3181", "127.0.0.2:3181", "127.0.0.3:3181")
DAY_MS = 86_400_000
TRUNCATED_LOG_SLOT = 4
TRUNCATED_GOOD_RECORDS = 5


@dataclass
class Ledger:
    ledger_id: int
    entries: int
    ensembles: dict[int, tuple[str, ...]]
    write_quorum: int = 2
    in_metadata: bool = True
    closed: bool = True
    slot: int = 2
    managed_ledger: str = ""  # as a Pulsar broker names it: tenant/namespace/persistent/topic

    def write_set(self, entry_id: int) -> tuple[str, ...]:
        first = max(f for f in self.ensembles if f <= entry_id)
        ens = self.ensembles[first]
        return tuple(ens[(entry_id + i) % len(ens)] for i in range(self.write_quorum))

    def metadata(self) -> LedgerMetadata:
        ens_size = len(next(iter(self.ensembles.values())))
        return LedgerMetadata(
            ensemble_size=ens_size, write_quorum_size=self.write_quorum, ack_quorum_size=self.write_quorum,
            ensembles=self.ensembles, state=LedgerState.CLOSED if self.closed else LedgerState.OPEN,
            last_entry_id=self.entries - 1 if self.closed else -1, length=0,
            digest_type=bke.DigestType.CRC32C, password=b"", ctime=1_700_000_000_000 + self.ledger_id,
            custom_metadata=({"pulsar/managed-ledger": self.managed_ledger.encode()} if self.managed_ledger
                             else {}))


@dataclass
class Copy:
    bookie: str
    ledger_id: int
    entry_id: int
    size: int  # entry bytes (record = size + 4)


@dataclass
class Log:
    bookie: str
    log_id: int
    path: str
    mtime_ms: int
    finalized: bool
    copies: list[Copy] = field(default_factory=list)
    truncated: bool = False


@dataclass
class Fleet:
    root: str
    ledgers: dict[int, Ledger]
    logs: list[Log]
    now_ms: int

    @property
    def bookie_dirs(self) -> dict[str, str]:
        return {b: os.path.join(self.root, f"bookie{i + 1}") for i, b in enumerate(BOOKIES)}

    def copies(self) -> list[Copy]:
        return [c for log in self.logs for c in log.copies]


def plan_ledgers() -> dict[int, Ledger]:
    b1, b2, b3 = BOOKIES
    ens = (b1, b2, b3)
    ledgers = {i: Ledger(i, 20 + 3 * i, {0: ens}, managed_ledger=f"public/default/persistent/topic-{i}")
               for i in range(1, 9)}
    ledgers[1].slot = 0
    ledgers[9] = Ledger(9, 24, {0: ens, 10: (b2, b3, b1)})
    ledgers[10] = Ledger(10, 12, {0: (b1, b2)})
    ledgers[11] = Ledger(11, 10, {0: ens}, closed=False, slot=3)
    ledgers[200] = Ledger(200, 10, {0: ens})
    for i, slot in ((101, 0), (102, 0), (103, 1)):
        ledgers[i] = Ledger(i, 15, {0: ens}, in_metadata=False, slot=slot)
    ledgers[104] = Ledger(104, 8, {0: (b3,)}, write_quorum=1, in_metadata=False, slot=TRUNCATED_LOG_SLOT)
    return ledgers


def placements(ledgers: dict[int, Ledger]) -> list[tuple[str, int, int]]:
    """(bookie, ledger, entry) of every stored copy, faults applied."""
    _b1, b2, b3 = BOOKIES
    out: list[tuple[str, int, int]] = []
    for lid, led in sorted(ledgers.items()):
        for e in range(led.entries):
            ws = led.write_set(e)
            for b in ws:
                if lid == 7 and b == b2 and e <= 4:
                    continue  # under-replicated
                if lid == 8 and e == 5:
                    continue  # missing
                out.append((b, lid, e))
            if lid == 6 and e <= 3:
                out.extend((b, lid, e) for b in BOOKIES if b not in ws)  # misplaced copy
            if lid == 10:
                out.append((b3, lid, e))  # bookie outside the ensemble
    return out


def build(root: str, seed: int = 7) -> Fleet:
    rng = random.Random(seed)
    ledgers = plan_ledgers()
    now = int(time.time() * 1000)
    manager = bke.digest_manager(bke.DigestType.CRC32C)
    fleet = Fleet(root, ledgers, [], now)
    ages = {0: 40 * DAY_MS, 1: 20 * DAY_MS, 2: 2 * DAY_MS, 3: 60_000, TRUNCATED_LOG_SLOT: 120_000}
    by_log: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for bookie, lid, e in placements(ledgers):
        by_log.setdefault((bookie, ledgers[lid].slot), []).append((lid, e))
    payloads: dict[tuple[int, int], bytes] = {}
    lengths: dict[int, int] = {}
    for lid, led in sorted(ledgers.items()):
        for e in range(led.entries):
            data = rng.randbytes(rng.randint(60, 700))
            lengths[lid] = lengths.get(lid, 0) + len(data)
            payloads[(lid, e)] = bke.package_entry(manager, lid, e, e - 1, lengths[lid], data)
    for i, bookie in enumerate(BOOKIES):
        current = os.path.join(fleet.bookie_dirs[bookie], "current")
        os.makedirs(current, exist_ok=True)
        cookie = Cookie.generate(bookie, ["/journal"], [fleet.bookie_dirs[bookie]])
        with open(os.path.join(current, "VERSION"), "w") as f:
            f.write(cookie.render())
        for slot in sorted({s for (b, s) in by_log if b == bookie}):
            records = sorted(by_log[(bookie, slot)], key=lambda r: (rng.random(), r))  # interleaved
            log_id = 0x10 * (i + 1) + slot
            path = os.path.join(current, ef.log_file_name(log_id))
            finalized = slot not in (3, TRUNCATED_LOG_SLOT)
            log = Log(bookie, log_id, path, now - ages[slot], finalized)
            body = bytearray(ef.LogHeader().encode())
            sizes: dict[int, int] = {}
            for n, (lid, e) in enumerate(records):
                entry = payloads[(lid, e)]
                if slot == TRUNCATED_LOG_SLOT and n == TRUNCATED_GOOD_RECORDS:
                    body += ef.encode_record(lid, e, entry)[: 4 + len(entry) // 2]
                    log.truncated = True
                    break
                body += ef.encode_record(lid, e, entry)
                sizes[lid] = sizes.get(lid, 0) + len(entry) + ef.RECORD_SIZE_PREFIX
                log.copies.append(Copy(bookie, lid, e, len(entry)))
            if finalized:
                offset = len(body)
                body += ef.encode_ledgers_map(sizes)
                body[ef.MAP_LOCATION_OFFSET:ef.MAP_LOCATION_OFFSET + 12] = ef.encode_map_location(offset, len(sizes))
            with open(path, "wb") as f:
                f.write(body)
            os.utime(path, ns=(log.mtime_ms * 1_000_000, log.mtime_ms * 1_000_000))
            fleet.logs.append(log)
    return fleet
