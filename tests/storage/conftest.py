"""Storage engines on real files in the test's directory, closed at the end of the test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest_asyncio
from bookie.config import BookieConfig
from bookie.storage.engine import StorageEngine


def engine_conf(base: Path, **overrides: Any) -> BookieConfig:
    """One journal and one ledger directory under ``base``; no timed checkpoint, no group wait."""
    values: dict[str, Any] = {"journalDirectories": str(base / "journal"), "ledgerDirectories": str(base / "l0"),
                              "flushInterval": 60000, "journalMaxGroupWaitMSec": 0}
    values.update(overrides)
    return BookieConfig.from_mapping(values)


@pytest_asyncio.fixture
async def engines(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """``await engines(**config overrides)``: a started engine, closed after the test."""
    opened: list[StorageEngine] = []

    async def open_engine(**overrides: Any) -> StorageEngine:
        engine = StorageEngine(engine_conf(tmp_path, **overrides))
        await engine.start()
        opened.append(engine)
        return engine

    yield open_engine
    for engine in opened:
        await engine.close()
