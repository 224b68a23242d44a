"""Expected audit numbers, computed from the fleet plan alone (never from the reader under test)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from tests.pipeline.fleetgen import DAY_MS, Fleet, placements


@dataclass
class LogUsage:
    bookie: str
    path: str
    total: int
    garbage: int
    overreplicated: int
    age_days: float

    @property
    def live(self) -> int:
        return self.total - self.garbage

    @property
    def usage(self) -> float:
        return self.live / self.total if self.total else 0.0

    @property
    def state(self) -> str:
        if self.total == 0:
            return "empty"
        if self.live == 0:
            return "dead"
        return "live" if self.garbage == 0 else "partial"


def log_usage(fleet: Fleet, as_of_ms: int) -> dict[str, LogUsage]:
    out = {}
    for log in fleet.logs:
        total = garbage = over = 0
        for c in log.copies:
            led = fleet.ledgers[c.ledger_id]
            n = c.size + 4
            total += n
            if not led.in_metadata:
                garbage += n
            elif log.bookie not in {b for ens in led.ensembles.values() for b in ens}:
                over += n
        out[log.path] = LogUsage(log.bookie, log.path, total, garbage, over, (as_of_ms - log.mtime_ms) / DAY_MS)
    return out


def replication_status(fleet: Fleet) -> dict[tuple[int, int], tuple[str, int]]:
    """(ledger, entry) -> (status, misplaced copies) for every entry metadata says exists."""
    stored = {(b, lid, e) for (b, lid, e) in placements(fleet.ledgers)}
    # Copies the truncated log lost are not stored either.
    on_disk = {(c.bookie, c.ledger_id, c.entry_id) for c in fleet.copies()}
    stored &= on_disk
    out = {}
    for lid, led in fleet.ledgers.items():
        if not led.in_metadata:
            continue
        last = led.entries - 1 if led.closed else max(e for (_b, ll, e) in stored if ll == lid)
        for e in range(last + 1):
            ws = set(led.write_set(e))
            holders = {b for (b, ll, ee) in stored if ll == lid and ee == e}
            replicas = len(ws & holders)
            if replicas >= led.write_quorum:
                status = "ok"
            elif replicas == 0:
                status = "missing"
            else:
                status = "under"
            out[(lid, e)] = (status, len(holders - ws))
    return out


def status_counts(fleet: Fleet) -> Counter[str]:
    return Counter(s for s, _m in replication_status(fleet).values())
