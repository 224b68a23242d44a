"""A cleaner process SIGKILLed at any point of a pass (after building its map, after creating an output ledger,
in the middle of writing, just before or after the swap, between deletions; or by this test, at a random
moment of its rewrite) leaves the stream readable with no record lost and none duplicated; the next pass
resumes from the checkpoint, deletes what the dead cleaner left (once its ZooKeeper session is gone) and ends
with the fully compacted stream."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import subprocess

import pytest
from bookie import failpoints
from bookie.streams import Policies, Record, Streams
from bookie.streams.cleaner import Cleaner
from bookie.streams.compaction import model

from tests.streams.stream_support import Clock, visible
from tests.support import cli
from tests.support.bookies import BookieSet

KILL_POINTS = ["after_map", "ledger_created", "mid_write", "before_swap", "after_swap", "mid_delete", "from_outside"]


def latest_per_key(records: list[Record]) -> dict[bytes | None, bytes | None]:
    return {r.key: r.value for r in sorted(records, key=lambda r: r.position) if r.key is not None}


async def _kill_while_rewriting(command: list[str], progress_lines: int) -> None:
    """SIGKILL the cleaner from here once its progress bar has printed ``progress_lines`` lines (its rewrite
    is then between 0 and 50 %); wherever it really is by then is the random point."""
    proc = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.DEVNULL,
                                                stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    seen = 0
    try:
        while seen < progress_lines:
            line = await asyncio.wait_for(proc.stderr.readline(), 180)
            if not line:
                break
            seen += line.startswith(b"clean [")
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
    assert proc.returncode in (-signal.SIGKILL, 0), f"the cleaner failed on its own ({proc.returncode})"


@pytest.mark.parametrize("kill_at", KILL_POINTS)
async def test_a_killed_cleaner_loses_and_duplicates_nothing(streams: Streams, clock: Clock, bookies: BookieSet,
                                                             streams_root: str, kill_at: str,
                                                             seeded_rng: random.Random) -> None:
    await streams.create_namespace("k", Policies(roll_bytes=800, cleanup_policy="compact", delete_pause_ms=0,
                                                 ensemble=3, write_quorum=2, ack_quorum=2))
    await streams.create_stream("k", "s")
    items = [(f"key-{i % 25}".encode(), f"value-{i}".encode(), None) for i in range(400)]
    async with await streams.writer("k", "s") as w:
        positions = await w.append_many(items)
    written = [Record(p, k, v, clock.now) for p, (k, v, _) in zip(positions, items, strict=True)]
    expected = model(written, 0)
    before = await streams.metadata("k", "s")

    command = [cli.script("bookie-stream"), "--zk", bookies.zk_connect, "--ledgers-root", bookies.ledgers_root,
               "--streams-root", streams_root, "--zk-session-timeout", "2", "clean", "--stream", "k/s",
               "--map-bytes", "1000000"]
    if kill_at == "from_outside":
        await _kill_while_rewriting(command, progress_lines=seeded_rng.randint(1, 6))
    else:
        if kill_at == "mid_write":
            kill_at = f"mid_write:{seeded_rng.randint(1, 3)}"  # after 100, 200 or 300 of the 400 records
        env = {**os.environ, failpoints.ENV: f"stream.cleaner.{kill_at}"}
        proc = await asyncio.to_thread(subprocess.run, command, env=env, capture_output=True, text=True,
                                       timeout=180)
        assert proc.returncode == -9, f"the cleaner was not killed at {kill_at}: {proc.stderr}"

    # Right after the kill: readable, positions strictly increasing, every key's latest value there.
    seen = await streams.reader("k", "s").read_all()
    positions_seen = [r.position for r in seen]
    assert positions_seen == sorted(set(positions_seen)), f"duplicates after a kill at {kill_at}"
    assert latest_per_key(seen) == latest_per_key(written), f"lost records after a kill at {kill_at}"
    assert visible(seen) in (visible(written), visible(expected))  # the old list or the new one, no mix

    # Once the dead cleaner's session is gone, the next pass cleans up after it and finishes the job.
    dead = (await streams.metadata("k", "s")).cleaning.keys()
    for _ in range(600):  # its session expires 2 s after the kill
        if not set(dead) & await streams.store.live_cleaners():
            break
        await asyncio.sleep(0.2)
    await Cleaner(streams).clean("k", "s")

    md = await streams.metadata("k", "s")
    assert md.cleaned_to == before.next_position and md.pending_deletes == () and md.cleaning == {}
    assert visible(await streams.reader("k", "s").read_all()) == visible(expected)
    stream_ledgers = {s.ledger for s in md.segments}
    others = set(await streams.bk.list_ledgers()) - stream_ledgers
    written_by_us = {s.ledger for s in before.segments}
    assert not others & written_by_us  # the old ledgers are deleted
    for ledger_id in others:  # and no ledger of this stream is left outside its list
        custom = (await streams.bk.ledger_metadata(ledger_id)).value.custom_metadata
        mine = custom.get("bookie-stream") == b"k/s" and custom.get("bookie-stream-root") == streams_root.encode()
        assert not mine, f"ledger {ledger_id} left behind after a kill at {kill_at}"
