"""Compatibility with Apache BookKeeper 4.17 (Maven Central): its Java client and bookies against ours."""

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
    return request.getfixturevalue(f"{request.param}_cluster")
