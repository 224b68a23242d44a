"""``bookie-stream``, run as a subprocess: create a namespace and a stream, set policies, append (values,
keyed lines, tombstones), read, tail, describe, and run a cleaner pass with a progress bar and a summary of
bytes reclaimed; bad input is a clear error."""

from __future__ import annotations

import asyncio
import json
import subprocess

from tests.support import cli
from tests.support.bookies import BookieSet


def _cmd(bookies: BookieSet, root: str, *args: str) -> list[str]:
    return [cli.script("bookie-stream"), "--zk", bookies.zk_connect, "--ledgers-root", bookies.ledgers_root,
            "--streams-root", root, *args]


async def stream_cli(bookies: BookieSet, root: str, *args: str, input: str | None = None,
                     check: bool = True) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(cli.run, "bookie-stream", "--zk", bookies.zk_connect, "--ledgers-root",
                                   bookies.ledgers_root, "--streams-root", root, *args, input=input, check=check)


async def test_create_append_read_describe_and_clean(bookies: BookieSet, streams_root: str) -> None:
    run = stream_cli
    await run(bookies, streams_root, "namespace", "create", "shop", "roll_bytes=300", "ensemble=3",
              "write_quorum=2", "ack_quorum=2", "delete_pause_ms=0")
    created = json.loads((await run(bookies, streams_root, "create", "shop/prices", "cleanup_policy=compact")).stdout)
    assert created["effective_policies"]["cleanup_policy"] == "compact"
    assert created["effective_policies"]["roll_bytes"] == 300  # from the namespace

    first = await run(bookies, streams_root, "append", "shop/prices", "1.00", "1.10", "--key", "apple")
    assert first.stdout.split() == ["0", "1"]
    lines = "".join(f"{fruit}\t{i}.00\n" for i in range(20) for fruit in ("apple", "pear", "plum"))
    keyed = await run(bookies, streams_root, "append", "shop/prices", "--keyed", input=lines + "plum\n")
    assert keyed.stdout.split() == [str(i) for i in range(2, 63)]

    read = (await run(bookies, streams_root, "read", "shop/prices", "--from", "60")).stdout.splitlines()
    assert read == ["60\tpear\t19.00", "61\tplum\t19.00", "62\tplum\t<tombstone>"]
    assert len((await run(bookies, streams_root, "read", "shop/prices", "--max", "5")).stdout.splitlines()) == 5

    described = json.loads((await run(bookies, streams_root, "describe", "shop/prices")).stdout)
    assert described["total_records"] == 63 and described["cleanable_ratio"] == 1.0
    assert len(described["segments"]) > 2

    # delete_retention_ms=0: the plum tombstone is past the horizon at once.
    await run(bookies, streams_root, "set-policy", "shop/prices", "delete_retention_ms=0")
    cleaned = await run(bookies, streams_root, "clean")
    summary = json.loads(cleaned.stdout)
    assert summary["stream"] == "shop/prices" and summary["swapped"] is True
    assert summary["records_read"] == 63 and summary["records_kept"] == 2
    assert summary["bytes_reclaimed"] == summary["bytes_before"] - summary["bytes_after"] > 0
    assert "63/63 records" in cleaned.stderr and f"reclaimed {summary['bytes_reclaimed']} bytes" in cleaned.stderr

    after = (await run(bookies, streams_root, "read", "shop/prices", "--json")).stdout.splitlines()
    assert [json.loads(x) for x in after] == [
        {"position": 59, "key": "apple", "value": "19.00", "timestamp": json.loads(after[0])["timestamp"]},
        {"position": 60, "key": "pear", "value": "19.00", "timestamp": json.loads(after[1])["timestamp"]}]
    nothing = json.loads((await run(bookies, streams_root, "clean")).stdout)
    assert nothing["cleaned"] is None


async def test_tail_follows_appends_from_another_process(bookies: BookieSet, streams_root: str) -> None:
    await stream_cli(bookies, streams_root, "namespace", "create", "logs", "ensemble=3", "write_quorum=2",
                     "ack_quorum=2")
    await stream_cli(bookies, streams_root, "create", "logs/app")
    await stream_cli(bookies, streams_root, "append", "logs/app", "before")
    tail = await asyncio.create_subprocess_exec(
        *_cmd(bookies, streams_root, "tail", "logs/app", "--count", "3", "--idle-timeout", "60"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        await stream_cli(bookies, streams_root, "append", "logs/app", "after-1", "after-2")
        stdout, stderr = await asyncio.wait_for(tail.communicate(), 120)
    finally:
        if tail.returncode is None:
            tail.kill()
            await tail.wait()
    out, err = stdout.decode(), stderr.decode()
    assert tail.returncode == 0, err
    assert out.splitlines() == ["0\t\tbefore", "1\t\tafter-1", "2\t\tafter-2"]


async def test_bad_input_is_a_clear_error(bookies: BookieSet, streams_root: str) -> None:
    bad_policy = await stream_cli(bookies, streams_root, "namespace", "create", "n", "colour=blue", check=False)
    assert bad_policy.returncode == 1 and "bad policy 'colour=blue'" in bad_policy.stderr
    missing = await stream_cli(bookies, streams_root, "describe", "n/none", check=False)
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    await stream_cli(bookies, streams_root, "namespace", "create", "n", "max_record_bytes=100", "ensemble=3",
                     "write_quorum=2", "ack_quorum=2")
    await stream_cli(bookies, streams_root, "create", "n/s")
    too_big = await stream_cli(bookies, streams_root, "append", "n/s", "x" * 200, check=False)
    assert too_big.returncode == 1 and "exceeds max_record_bytes=100" in too_big.stderr
