"""bookie-audit: the fleet storage audit on Spark (PySpark).

Reads BookKeeper entry logs (ours and Apache BookKeeper's: same layout) with the ``entrylog`` Spark data
source, a snapshot of the ledger metadata exported from ZooKeeper to Parquet, and answers, for a whole fleet,
what an operator asks of a bookie whose disk fills: why is the disk full, what would compaction give back,
which ledgers pin old logs, which ledgers leaked and which entries have fewer replicas than their write
quorum.
"""

__version__ = "0.1.0"
