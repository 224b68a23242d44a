"""A stream's metadata is one JSON znode under the streams root, next to its namespace's znode (the
namespace's default policies); every change is a compare-and-set on the znode version, so a change made from
a stale copy is refused (Conflict) and ``update`` re-applies its change to the latest copy instead."""

from __future__ import annotations

import dataclasses
import json

import pytest
from bookie.streams import Conflict, Policies, StreamExists, Streams
from bookie.streams.policies import DEFAULTS


async def test_layout_policies_and_compare_and_set(streams: Streams, streams_root: str) -> None:
    await streams.create_namespace("ns", Policies(retention_ms=1000, cleanup_policy="compact"))
    await streams.create_stream("ns", "a", Policies(retention_ms=5000))
    await streams.create_stream("ns", "b")
    with pytest.raises(StreamExists):
        await streams.create_stream("ns", "a")

    zk = streams.store.zk
    assert json.loads(zk.get(f"{streams_root}/ns")[0]) == {"policies": {"retention_ms": 1000,
                                                                        "cleanup_policy": "compact"}}
    raw, stat = zk.get(f"{streams_root}/ns/a")
    assert json.loads(raw)["policies"] == {"retention_ms": 5000} and stat.version == 0

    # Stream overrides, then namespace defaults, then the built-in defaults.
    a, b = await streams.policies("ns", "a"), await streams.policies("ns", "b")
    assert (a.retention_ms, b.retention_ms) == (5000, 1000)
    assert a.cleanup_policy == b.cleanup_policy == "compact" and a.roll_bytes == DEFAULTS.roll_bytes
    await streams.store.set_namespace_policies("ns", Policies(retention_ms=2000))
    assert (await streams.policies("ns", "b")).retention_ms == 2000
    assert (await streams.policies("ns", "a")).retention_ms == 5000

    stale = await streams.store.get("ns", "a")
    await streams.set_policies("ns", "a", Policies(roll_bytes=123))
    with pytest.raises(Conflict):
        await streams.store.put(dataclasses.replace(stale.value, start=99), stale.version)
    updated = await streams.store.update("ns", "a", lambda md: dataclasses.replace(md, start=99))
    assert updated.version == 2 and updated.value.start == 99 and updated.value.policies.roll_bytes == 123
    assert await streams.store.streams("ns") == ["a", "b"]
