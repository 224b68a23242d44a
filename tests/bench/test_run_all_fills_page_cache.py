"""Before each measured point the suite reads back into the page cache what the previous points evicted of its
ballast, so that every point starts with memory full of page cache; and it stops once free memory is down to
its target, reading nothing more. The ballast takes memory, not disk: it is a sparse file, so it never takes
the space the bookies' journals and entry logs need on the same disk."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.bench_runs import bench_module

MIB = 2**20


@pytest.fixture(scope="module")
def run_all() -> Iterator[ModuleType]:
    yield from bench_module("run_all")


def evict(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # clean pages (a hole's): dropped at once
    finally:
        os.close(fd)


def cached(run_all: ModuleType, path: Path) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        return int(run_all._cached_bytes(fd, 0, path.stat().st_size))
    finally:
        os.close(fd)


def test_the_ballast_is_page_cache_and_no_disk_block(run_all: ModuleType, tmp_path: Path) -> None:
    cache = run_all.FullPageCache(tmp_path, keep_free=0, chunk=4 * MIB)
    cache.create(32 * MIB)
    assert cache.path.stat().st_size == 32 * MIB
    assert cache.path.stat().st_blocks == 0                 # not one block of the disk allocated
    assert cached(run_all, cache.path) == 32 * MIB          # all of it in the page cache once made
    assert cache.free_at_points == []                       # making it is not the start of a measured point


def test_evicted_ballast_is_read_back_until_memory_is_full(run_all: ModuleType, tmp_path: Path) -> None:
    cache = run_all.FullPageCache(tmp_path, keep_free=0, chunk=4 * MIB)  # never full: every chunk read back
    cache.create(32 * MIB)
    evict(cache.path)
    assert cached(run_all, cache.path) < 8 * MIB
    cache.fill()
    assert cached(run_all, cache.path) == 32 * MIB
    assert len(cache.free_at_points) == 1


def test_nothing_is_read_once_free_memory_is_down_to_the_target(run_all: ModuleType, tmp_path: Path) -> None:
    cache = run_all.FullPageCache(tmp_path, keep_free=2**62, chunk=4 * MIB)  # already "full" at any free memory
    cache.create(32 * MIB)
    evict(cache.path)
    cache.fill()
    assert cached(run_all, cache.path) < 8 * MIB
    cache.remove()
    assert not cache.path.exists()
