"""Autorecovery runs against real bookies (Java and ours) in a real ZooKeeper."""

from tests.support.java_bookies import bookie_kind, cluster, cluster_factory, java_cluster, python_cluster

# Fixtures, found by pytest under these names (each folder keeps its own session clusters).
__all__ = ["bookie_kind", "cluster", "cluster_factory", "java_cluster", "python_cluster"]
