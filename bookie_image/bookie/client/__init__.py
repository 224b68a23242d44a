"""The Python ledger client of BookKeeper: ``BookKeeper``, ``LedgerHandle``, ``SyncBookKeeper``."""

from bookie.client.bookkeeper import BookKeeper
from bookie.client.config import ClientConfig
from bookie.client.ledger import LedgerEntry, LedgerHandle
from bookie.tls import ClientTLS

__all__ = ["BookKeeper", "ClientConfig", "ClientTLS", "LedgerEntry", "LedgerHandle"]
