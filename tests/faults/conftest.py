"""Fault scenarios against real bookies of both implementations (tests/support/java_bookies.py), judged by the
history checker (tests/support/history.py); docs/reliability.md has the table they fill."""

from tests.support.java_bookies import cluster_factory

# Fixtures, found by pytest under these names.
__all__ = ["cluster_factory"]
