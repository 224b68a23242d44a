"""Client tests run against real bookies: Apache BookKeeper's (Java) and ours (Python), same specs."""

from tests.support.java_bookies import bookie_kind, cluster, cluster_factory, java_cluster, python_cluster
from tests.support.silent_peer import silent_bookie

# Fixtures, found by pytest under these names (each folder keeps its own session clusters).
__all__ = ["bookie_kind", "cluster", "cluster_factory", "java_cluster", "python_cluster", "silent_bookie"]
