"""Garbage collection of the bookie: ledger GC, entry-log GC, compaction (docs/gc.md).

``bookie.gc.collector.GarbageCollector`` is the controller the server runs. Nothing is imported here so
``bookie.config`` can use ``bookie.gc.policy`` without an import cycle.
"""
