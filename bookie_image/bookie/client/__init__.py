"""The Python ledger client of BookKeeper: ``BookKeeper``, ``LedgerHandle``, ``SyncBookKeeper``.

It runs on the application's event loop. Its commands (``bookie-shell``, ``bookie-stream``, ``bookie
autorecovery``) run it on uvloop (``uvloop.run(main())``; the blocking ``SyncBookKeeper`` starts one itself),
which costs less CPU per append than asyncio's default loop (docs/benchmarks.md, "Our client's appends"). The
playground, the fleet monitoring's light load and the Spark audit still run it on asyncio's loop."""

from bookie.client.bookkeeper import BookKeeper
from bookie.client.config import ClientConfig
from bookie.client.ledger import LedgerEntry, LedgerHandle
from bookie.tls import ClientTLS

__all__ = ["BookKeeper", "ClientConfig", "ClientTLS", "LedgerEntry", "LedgerHandle"]
