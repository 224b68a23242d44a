"""The bookie's storage engine: journal, write cache, entry logs, RocksDB index and read cache.

It knows nothing about the network: ``engine.StorageEngine`` is called with entry bytes and ledger ids and
raises ``errors`` that the request processor maps to protocol status codes.
"""
