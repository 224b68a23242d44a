"""Real-ZooKeeper fixtures for the metadata tests (see tests/support/zookeeper.py)."""

from __future__ import annotations

import sys
from pathlib import Path

# `pytest` (not `python -m pytest`) does not put the repository on sys.path; tests.support lives there.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.support.zookeeper import ledgers_root, metadata_store, zookeeper, zookeeper_factory

__all__ = ["ledgers_root", "metadata_store", "zookeeper", "zookeeper_factory"]
