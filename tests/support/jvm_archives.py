"""The test suite's JVMs share their classes' archives (fleet/bookie_fleet/jvm_archives.py): Apache BookKeeper's
bookies, ZooKeeper and Pulsar's broker, started hundreds of times a run, each map the classes an earlier start of
the same program archived instead of loading them again. The archives live in the cache
(``$BOOKIE_FLEET_CACHE/jvm-archives``), so a warm run has them all; those unused for three days are removed. A
value already in the environment wins (an empty one turns archives off)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from bookie_fleet import jvm_archives


def pytest_configure(config: pytest.Config) -> None:
    cache = os.environ.get("BOOKIE_FLEET_CACHE")
    if cache and jvm_archives.ENV not in os.environ:
        directory = Path(cache) / "jvm-archives"
        os.environ[jvm_archives.ENV] = str(directory)
        if directory.is_dir():
            jvm_archives.prune(directory)
