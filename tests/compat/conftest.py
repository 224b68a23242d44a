"""Compatibility with Apache BookKeeper 4.17 (Maven Central): its Java client and bookies against ours."""

from tests.support.java_bookies import cluster, cluster_factory, java_cluster, python_cluster

# Fixtures, found by pytest under these names (each folder keeps its own session clusters).
__all__ = ["cluster", "cluster_factory", "java_cluster", "python_cluster"]
