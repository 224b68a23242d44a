"""Stream policies: rolling, time/size retention (RocketMQ's ``fileReservedTime``, ``deleteWhen``,
``diskSpaceCleanForciblyRatio``, ``deletePhysicFilesInterval``) and key compaction (Kafka's
``cleanup.policy=compact``, ``min.cleanable.dirty.ratio``, ``delete.retention.ms``).

A namespace carries defaults; a stream overrides any of them. ``None`` means "not set here".
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import Any

HOUR_MS = 3600 * 1000


@dataclass(frozen=True)
class Policies:
    roll_bytes: int | None = None  # roll to a new ledger once the current one holds this many bytes
    roll_ms: int | None = None  # ... or is this old
    max_record_bytes: int | None = None  # larger records are refused
    ensemble: int | None = None
    write_quorum: int | None = None
    ack_quorum: int | None = None
    cleanup_policy: str | None = None  # "delete", "compact" or "compact,delete"
    retention_ms: int | None = None  # fileReservedTime; -1 keeps forever
    retention_bytes: int | None = None  # total size kept; -1 unlimited
    delete_when: str | None = None  # deleteWhen: hours of the daily window, "04" or "02;04"
    disk_pressure_ratio: float | None = None  # fleet disk usage above which retention runs at once
    clean_forcibly: bool | None = None  # cleanFileForciblyEnable: under pressure the oldest unexpired ledger goes too
    delete_pause_ms: int | None = None  # deletePhysicFilesInterval: pause between two ledger deletions
    min_cleanable_ratio: float | None = None  # min.cleanable.dirty.ratio
    delete_retention_ms: int | None = None  # delete.retention.ms: tombstones older than this are dropped

    def over(self, base: Policies) -> Policies:
        """These policies where set, ``base`` elsewhere."""
        return dataclasses.replace(base, **{f.name: getattr(self, f.name) for f in fields(self)
                                            if getattr(self, f.name) is not None})

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Policies:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown policies {sorted(unknown)}; known: {sorted(known)}")
        return cls(**data)

    @classmethod
    def parse(cls, assignments: list[str]) -> Policies:
        """``["retention_ms=3600000", "cleanup_policy=compact"]`` (the command line's form)."""
        types = {f.name: f.type for f in fields(cls)}
        values: dict[str, Any] = {}
        for item in assignments:
            name, sep, raw = item.partition("=")
            name = name.strip().replace("-", "_")
            if not sep or name not in types:
                raise ValueError(f"bad policy {item!r}: expected NAME=VALUE with NAME one of {sorted(types)}")
            kind = str(types[name])
            try:
                values[name] = int(raw) if kind.startswith("int") else float(raw) if kind.startswith("float") \
                    else _boolean(raw) if kind.startswith("bool") else raw
            except ValueError as exc:
                raise ValueError(f"bad policy {item!r}: {exc}") from exc
        return cls(**values).validated()

    def validated(self) -> Policies:
        if self.cleanup_policy is not None and set(self.cleanup_policy.split(",")) - {"delete", "compact"}:
            raise ValueError(f"cleanup_policy must be delete, compact or compact,delete, not "
                             f"{self.cleanup_policy!r}")
        if self.delete_when is not None:
            delete_hours(self.delete_when)
        for name in ("disk_pressure_ratio", "min_cleanable_ratio"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], not {value}")
        return self

    @property
    def compact(self) -> bool:
        return "compact" in (self.cleanup_policy or "")

    @property
    def delete(self) -> bool:
        return "delete" in (self.cleanup_policy or "")


DEFAULTS = Policies(
    roll_bytes=64 * 1024 * 1024,
    roll_ms=HOUR_MS,
    max_record_bytes=1024 * 1024,
    ensemble=3,
    write_quorum=2,
    ack_quorum=2,
    cleanup_policy="delete",
    retention_ms=72 * HOUR_MS,
    retention_bytes=-1,
    delete_when="04",
    disk_pressure_ratio=0.85,
    clean_forcibly=False,  # RocketMQ enables it; here deleting unexpired data is the user's explicit choice
    delete_pause_ms=100,
    min_cleanable_ratio=0.5,
    delete_retention_ms=24 * HOUR_MS,
)


def _boolean(raw: str) -> bool:
    if raw.strip().lower() in ("true", "1", "yes"):
        return True
    if raw.strip().lower() in ("false", "0", "no"):
        return False
    raise ValueError(f"expected true or false, not {raw!r}")


def delete_hours(delete_when: str) -> set[int]:
    hours = set()
    for part in delete_when.split(";"):
        part = part.strip()
        if not part.isdigit() or not 0 <= int(part) <= 23:
            raise ValueError(f"delete_when must be hours 00-23 separated by ';', not {delete_when!r}")
        hours.add(int(part))
    return hours
