"""BookKeeper's ZooKeeper metadata: layout, ledger metadata format, cookies, registration (kazoo)."""
