"""In-memory caches of entries: the write cache (not yet in entry logs) and the read cache (read-ahead).

Both are plain memory structures without I/O. The write cache is only touched from the event loop; the read
cache is filled by reader threads, so it takes a lock.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator


class WriteCache:
    """Entries added since the last checkpoint, by ledger then entry id."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.count = 0
        self._ledgers: dict[int, dict[int, bytes]] = {}
        self._last: dict[int, int] = {}

    def has_room(self, nbytes: int) -> bool:
        # An empty cache always takes one entry, so an entry larger than the cache is never refused forever.
        return self.size + nbytes <= self.max_bytes or self.count == 0

    def put(self, ledger_id: int, entry_id: int, body: bytes) -> None:
        entries = self._ledgers.setdefault(ledger_id, {})
        old = entries.get(entry_id)
        if old is not None:
            self.size -= len(old)
            self.count -= 1
        entries[entry_id] = body
        self.size += len(body)
        self.count += 1
        if entry_id > self._last.get(ledger_id, -1):
            self._last[ledger_id] = entry_id

    def get(self, ledger_id: int, entry_id: int) -> bytes | None:
        entries = self._ledgers.get(ledger_id)
        return None if entries is None else entries.get(entry_id)

    def last_entry(self, ledger_id: int) -> int | None:
        return self._last.get(ledger_id)

    def entry_ids(self, ledger_id: int) -> list[int]:
        return sorted(self._ledgers.get(ledger_id, ()))

    def delete_ledger(self, ledger_id: int) -> None:
        entries = self._ledgers.pop(ledger_id, {})
        self._last.pop(ledger_id, None)
        self.size -= sum(len(b) for b in entries.values())
        self.count -= len(entries)

    def by_ledger(self) -> Iterator[tuple[int, list[int], list[bytes]]]:
        """(ledger, entry ids, their bodies) in ledger order, entry ids sorted: entry logs keep a ledger's
        entries together. Built with C-level calls only, not a loop step per entry."""
        for ledger_id in sorted(self._ledgers):
            entries = self._ledgers[ledger_id]
            entry_ids = sorted(entries)
            yield ledger_id, entry_ids, list(map(entries.__getitem__, entry_ids))

    def __len__(self) -> int:
        return self.count


class ReadCache:
    """Least-recently-used entries read from entry logs, bounded in bytes."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self._entries: OrderedDict[tuple[int, int], bytes] = OrderedDict()
        self._lock = threading.Lock()
        # Counted by the engine's read path, once per read: a hit when a read finds its entry here, a miss when
        # it goes to the entry log (a read that waits for another's read-ahead and then finds it is a hit).
        self.hits = 0
        self.misses = 0

    def get(self, ledger_id: int, entry_id: int) -> bytes | None:
        with self._lock:
            body = self._entries.get((ledger_id, entry_id))
            if body is not None:
                self._entries.move_to_end((ledger_id, entry_id))
            return body

    def put(self, ledger_id: int, entry_id: int, body: bytes) -> None:
        if len(body) > self.max_bytes // 2:
            return
        with self._lock:
            key = (ledger_id, entry_id)
            old = self._entries.pop(key, None)
            if old is not None:
                self.size -= len(old)
            self._entries[key] = body
            self.size += len(body)
            while self.size > self.max_bytes and self._entries:
                _, evicted = self._entries.popitem(last=False)
                self.size -= len(evicted)

    def __len__(self) -> int:
        return len(self._entries)

    def delete_ledger(self, ledger_id: int) -> None:
        with self._lock:
            for key in [k for k in self._entries if k[0] == ledger_id]:
                self.size -= len(self._entries.pop(key))
