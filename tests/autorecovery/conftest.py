"""Autorecovery runs against real bookies (Java and ours) in a real ZooKeeper."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

_bk = importlib.import_module("tests.support.java_bookies")
java_cluster = _bk.java_cluster
python_cluster = _bk.python_cluster
cluster_factory = _bk.cluster_factory


@pytest.fixture(params=["java", "python"])
def cluster(request: pytest.FixtureRequest) -> object:
    """A shared 4-bookie cluster of each kind (tests must not stop its bookies)."""
    return request.getfixturevalue(f"{request.param}_cluster")


@pytest.fixture(params=["java", "python"])
def bookie_kind(request: pytest.FixtureRequest) -> str:
    """For fault tests that build their own cluster with ``cluster_factory(bookie_kind, ...)``."""
    return str(request.param)
