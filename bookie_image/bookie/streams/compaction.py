"""Key compaction semantics (Kafka's log cleaner), pure: shared by the single-machine cleaner
(``bookie.streams.cleaner``) and the Spark compactor.

* ``cleanable_ratio``: dirty bytes / (clean + dirty bytes) over the closed segments, where clean means
  below the cleaner's checkpoint (``cleaned_to``); the open segment is never cleaned (Kafka's active segment).
* ``OffsetMap``: key -> latest position over the dirty section, bounded in memory like Kafka's dedupe buffer.
  It hashes keys to find a bucket but compares the keys themselves, so a hash collision never makes one key
  shadow another (Kafka keeps only the hash and accepts that risk).
* ``retain``: a record is kept unless a later record has the same key, or it is a tombstone older than the
  delete horizon. Records without a key are kept.
* ``model``: the expected result of cleaning everything, used by tests and by the Spark job's checks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable

from bookie.streams.metadata import StreamMetadata
from bookie.streams.records import Record

ENTRY_OVERHEAD = 210  # measured Python heap per entry besides the key bytes (dict slot, tuple, int, bytes header)


def cleanable_ratio(md: StreamMetadata) -> float:
    clean = dirty = 0
    for seg in md.closed_segments:
        assert seg.last is not None
        if seg.last < md.cleaned_to:
            clean += seg.bytes
        else:
            dirty += seg.bytes
    total = clean + dirty
    return dirty / total if total else 0.0


def dirty_bytes(md: StreamMetadata) -> int:
    return sum(s.bytes for s in md.closed_segments if s.last is not None and s.last >= md.cleaned_to)


def default_hash(key: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")


class MapFull(Exception):
    pass


class OffsetMap:
    """key -> latest position within ``max_bytes`` (keys' sizes plus ``ENTRY_OVERHEAD`` each, which is what a
    entry really costs in the Python heap: ``bench/stream_cleaner_bench.py`` measures it).

    A hash value maps to ``(key, position)``, or to a list of them when different keys share the hash."""

    def __init__(self, max_bytes: int, hash_fn: Callable[[bytes], int] = default_hash) -> None:
        self.max_bytes = max_bytes
        self.hash_fn = hash_fn
        self._slots: dict[int, tuple[bytes, int] | list[tuple[bytes, int]]] = {}
        self.size = 0
        self.bytes_used = 0
        self.collisions = 0

    def cost(self, key: bytes) -> int:
        return len(key) + ENTRY_OVERHEAD

    def put(self, key: bytes, position: int) -> None:
        h = self.hash_fn(key)
        slot = self._slots.get(h)
        if slot is None:
            self._reserve(key)
            self._slots[h] = (key, position)
            return
        if isinstance(slot, tuple):
            if slot[0] == key:
                if position > slot[1]:
                    self._slots[h] = (key, position)
                return
            self._reserve(key)
            self.collisions += 1
            self._slots[h] = [slot, (key, position)]
            return
        for i, (k, p) in enumerate(slot):
            if k == key:
                if position > p:
                    slot[i] = (key, position)
                return
        self._reserve(key)
        self.collisions += 1
        slot.append((key, position))

    def _reserve(self, key: bytes) -> None:
        if self.bytes_used + self.cost(key) > self.max_bytes:
            raise MapFull(f"offset map full ({self.size} keys, {self.bytes_used} bytes)")
        self.size += 1
        self.bytes_used += self.cost(key)

    def get(self, key: bytes) -> int | None:
        slot = self._slots.get(self.hash_fn(key))
        if slot is None:
            return None
        if isinstance(slot, tuple):
            return slot[1] if slot[0] == key else None
        for k, p in slot:
            if k == key:
                return p
        return None

    def would_fit(self, keys: dict[bytes, int]) -> bool:
        """Whether adding all ``keys`` (key -> latest position) stays within the bound."""
        extra = sum(self.cost(k) for k in keys if self.get(k) is None)
        return self.bytes_used + extra <= self.max_bytes

    def add_all(self, keys: dict[bytes, int]) -> None:
        for key, position in keys.items():
            self.put(key, position)


def segment_keys(records: Iterable[Record]) -> dict[bytes, int]:
    """Latest position per key within one segment (what the segment adds to the offset map)."""
    out: dict[bytes, int] = {}
    for r in records:
        if r.key is not None:
            out[r.key] = max(out.get(r.key, -1), r.position)
    return out


def keep(record: Record, latest_position: int | None, delete_horizon_ms: int) -> bool:
    """The retention rule, given the latest position of the record's key (None: not known)."""
    if record.key is None:
        return True
    if latest_position is not None and record.position < latest_position:
        return False  # a later record has the same key
    return not (record.tombstone and record.timestamp < delete_horizon_ms)


def retain(record: Record, offsets: OffsetMap, delete_horizon_ms: int) -> bool:
    return keep(record, offsets.get(record.key) if record.key is not None else None, delete_horizon_ms)


def group_by_size(sizes: list[int], max_bytes: int) -> list[list[int]]:
    """Consecutive indexes grouped while their sizes add up to at most ``max_bytes`` (at least one each):
    Kafka's ``groupSegmentsBySize``, used to decide which rewritten segments share an output ledger."""
    groups: list[list[int]] = []
    total = 0
    for i, size in enumerate(sizes):
        if groups and total + size <= max_bytes:
            groups[-1].append(i)
            total += size
        else:
            groups.append([i])
            total = size
    return groups


def model(records: Iterable[Record], delete_horizon_ms: int) -> list[Record]:
    """Everything compacted: the latest record per key (unkeyed records all kept), tombstones older than the
    horizon removed, in position order."""
    latest: dict[bytes, Record] = {}
    unkeyed: list[Record] = []
    for r in records:
        if r.key is None:
            unkeyed.append(r)
        elif r.key not in latest or r.position > latest[r.key].position:
            latest[r.key] = r
    kept = [r for r in latest.values() if not (r.tombstone and r.timestamp < delete_horizon_ms)]
    return sorted(kept + unkeyed, key=lambda r: r.position)
