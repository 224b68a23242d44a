"""Real-ZooKeeper fixtures for the metadata tests (defined in tests/support/zookeeper.py)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

# `pytest` (unlike `python -m pytest`) does not put the repository on sys.path; tests.support lives there.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

# Imported dynamically so that type checkers see tests/support/zookeeper.py under one module name only.
_support = importlib.import_module("tests.support.zookeeper")
zookeeper = _support.zookeeper
zookeeper_factory = _support.zookeeper_factory
ledgers_root = _support.ledgers_root
metadata_store = _support.metadata_store
