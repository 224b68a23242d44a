"""A random-subset power cut (``PageCacheFs.cut(zone, seed=S)``) keeps what a disk that wrote dirty pages back in
any order could hold: each dirty 4 KiB page whole, either as it was last synced or as the process last wrote it;
a kept page past the synced size extends the file with zeros in the gap; directory entries are never written
back early. Pure: the model, without FUSE."""

from __future__ import annotations

import pytest

from tests.support.powerloss.model import PAGE, PageCacheFs

SEEDS = range(60)


def _scene(durable: bytes, current: bytes, *, name_durable: bool = True) -> tuple[PageCacheFs, int]:
    """A file in zone ``z`` synced with ``durable``, then overwritten in place (not synced) with ``current``."""
    fs = PageCacheFs()
    fs.mkdir("/z", 0o755)
    fh = fs.create("/z/f", 0o644)
    node = fs.handle(fh)
    if name_durable:
        fs.sync_dir(fs.resolve("/z"))
    fs.write(node, durable, 0)
    fs.sync_file(node)
    fs.truncate(node, 0)
    fs.write(node, current, 0)
    return fs, node.ino


def _after_cut(durable: bytes, current: bytes, seed: int | None) -> bytes:
    fs, _ = _scene(durable, current)
    fs.cut("z", seed)
    return bytes(fs.resolve("/z/f").data)


def _pages(data: bytes) -> list[bytes]:
    return [data[i:i + PAGE] for i in range(0, len(data), PAGE)]


def test_each_page_is_whole_from_the_synced_or_the_written_state() -> None:
    durable = bytes([1]) * (5 * PAGE)
    current = bytes([2]) * (5 * PAGE)
    seen_kept = seen_dropped = 0
    for seed in SEEDS:
        after = _after_cut(durable, current, seed)
        assert len(after) == 5 * PAGE, f"seed {seed}: an overwrite in place changed the size"
        for page in _pages(after):
            assert page in (bytes([1]) * PAGE, bytes([2]) * PAGE), f"seed {seed}: a page mixes both states"
            seen_kept += page[0] == 2
            seen_dropped += page[0] == 1
    # 300 pages at 1/2 each: far outside these bounds only if the probability were wrong.
    assert 100 < seen_kept < 200 and seen_kept + seen_dropped == 5 * len(SEEDS)


def test_a_seed_replays_the_same_cut_and_seeds_differ() -> None:
    durable, current = bytes(8 * PAGE), bytes(range(256)) * (8 * PAGE // 256)
    assert _after_cut(durable, current, 7) == _after_cut(durable, current, 7)
    assert len({_after_cut(durable, current, seed) for seed in range(10)}) > 5


def test_a_kept_page_past_the_synced_size_extends_the_file_with_zeros_in_the_gap() -> None:
    synced = b"s" * 100
    appended = synced + b"a" * (3 * PAGE + 500 - len(synced))  # pages 0..3 dirty; the last one partial
    lengths = set()
    for seed in SEEDS:
        after = _after_cut(synced, appended, seed)
        lengths.add(len(after))
        assert len(after) in (100, PAGE, 2 * PAGE, 3 * PAGE, 3 * PAGE + 500), f"seed {seed}: {len(after)} bytes"
        for i, page in enumerate(_pages(after)):
            whole = appended[i * PAGE:(i + 1) * PAGE]
            if page != whole:  # a dropped page: the synced bytes, zeros past them
                expected = (synced[i * PAGE:(i + 1) * PAGE]).ljust(len(page), b"\0")
                assert page == expected, f"seed {seed}: page {i} neither written back nor synced-and-zeros"
        assert after[-1:] != b"\0" or len(after) == 100, f"seed {seed}: the file ends in a dropped page"
    assert {100, 3 * PAGE + 500} < lengths, "no cut kept the synced size only, or the whole append"


def test_without_a_seed_every_unsynced_page_is_lost() -> None:
    assert _after_cut(b"x" * PAGE, b"y" * (3 * PAGE), None) == b"x" * PAGE


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_directory_entries_are_not_written_back(seed: int) -> None:
    fs, _ = _scene(b"data", b"more data", name_durable=False)
    fs.mkdir("/z/d", 0o755)
    fs.cut("z", seed)
    assert fs.resolve("/z").entries == {}, f"seed {seed}: names never made durable survived"


def test_the_report_counts_kept_pages_and_only_dropped_bytes_as_lost() -> None:
    fs, _ = _scene(b"", b"w" * (4 * PAGE))
    report = fs.cut("z", 3)
    kept = len(fs.resolve("/z/f").data.replace(b"\0", b"")) // PAGE
    assert report.pages_kept == kept
    assert report.bytes_lost == (4 - kept) * PAGE
