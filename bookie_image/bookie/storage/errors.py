"""Errors of the storage engine. The request processor maps them to BookKeeper status codes."""

from __future__ import annotations


class StorageError(Exception):
    """Base class of storage errors."""


class NoLedgerError(StorageError):
    """The ledger is not stored on this bookie."""

    def __init__(self, ledger_id: int) -> None:
        super().__init__(f"ledger {ledger_id} is not stored on this bookie")
        self.ledger_id = ledger_id


class NoEntryError(StorageError):
    """The ledger is here but the entry is not."""

    def __init__(self, ledger_id: int, entry_id: int) -> None:
        super().__init__(f"entry {entry_id} of ledger {ledger_id} is not stored on this bookie")
        self.ledger_id = ledger_id
        self.entry_id = entry_id


class FencedError(StorageError):
    """An add to a fenced ledger that is not a recovery add."""

    def __init__(self, ledger_id: int) -> None:
        super().__init__(f"ledger {ledger_id} is fenced")
        self.ledger_id = ledger_id


class MasterKeyMismatchError(StorageError):
    """The master key of a request differs from the one the ledger was created with."""

    def __init__(self, ledger_id: int) -> None:
        super().__init__(f"master key mismatch on ledger {ledger_id}")
        self.ledger_id = ledger_id


class StorageThrottledError(StorageError):
    """The write cache stayed full longer than dbStorage_maxThrottleTimeMs."""


class StorageIOError(StorageError):
    """A disk operation failed or stored data is corrupt."""


class CorruptDataError(StorageIOError):
    """Bytes on disk do not have the expected format."""


class StorageClosedError(StorageIOError):
    """The engine is shutting down."""


class LedgerDirFullError(StorageError):
    """Writing this entry could take its ledger directory past diskUsageThreshold once checkpointed."""

    def __init__(self, path: str, free: int, pending: int, reserve: int) -> None:
        super().__init__(f"ledger directory {path}: {free} bytes free, {pending} waiting in the write cache, "
                         f"{reserve} kept free (diskUsageThreshold, room for compaction)")
        self.path = path


class IndexRolledBackError(StorageError):
    """A RocksDB index opened older than its last sync left it (RocksDB recovered a damaged manifest or
    write-ahead log by dropping writes): the location index would answer "no such entry" for entries on disk,
    the ledgers index would lose fences and master keys."""
