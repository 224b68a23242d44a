"""The read cache: entries read ahead from entry logs, least recently used first out.

A plain memory structure without I/O, filled by reader threads, so it takes a lock. The write cache (entries
not yet in entry logs) is ``_write_path.WriteCache``, in C: the request hot path stores adds in it without the
interpreter.
"""

from __future__ import annotations

import threading
from collections import OrderedDict


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
