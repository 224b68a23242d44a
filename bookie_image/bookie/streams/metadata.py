"""Stream metadata in ZooKeeper: its own tree, one JSON znode per namespace and per stream, updated with
compare-and-set on the znode version (so a writer rolling a ledger, retention and cleaners never lose each
other's changes, and of two cleaners swapping the same ledgers exactly one wins).

    <streams root>/<namespace>              {"policies": {...}}            (namespace defaults)
    <streams root>/<namespace>/<stream>     StreamMetadata as JSON
    <streams root>/_cleaners/<cleaner id>   ephemeral: the cleaner is alive
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from bookie.metadata.security import ZkSecurity
from bookie.streams.policies import DEFAULTS, Policies

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


class StreamError(Exception):
    """Base of the stream layer's errors."""


class NoSuchStream(StreamError):
    pass


class StreamExists(StreamError):
    pass


class Conflict(StreamError):
    """Someone else changed the stream first (compare-and-set lost)."""


def now_ms() -> int:
    return int(time.time() * 1000)


def check_name(what: str, name: str) -> str:
    if not _NAME.match(name):
        raise StreamError(f"bad {what} name {name!r}: letters, digits, '.', '_', '-' (not first)")
    return name


@dataclass(frozen=True)
class Segment:
    """One ledger of a stream, holding positions ``first..last`` (``last`` is None while it is written)."""

    ledger: int
    first: int
    last: int | None = None
    records: int = 0
    bytes: int = 0
    created_ms: int = 0
    closed_ms: int | None = None
    max_timestamp: int | None = None
    dense: bool = True  # entry id == position - first (False once compaction removed records)

    @property
    def open(self) -> bool:
        return self.last is None


@dataclass(frozen=True)
class StreamMetadata:
    namespace: str
    name: str
    created_ms: int
    policies: Policies = field(default_factory=Policies)  # the stream's own overrides
    segments: tuple[Segment, ...] = ()
    start: int = 0  # positions below were deleted by retention
    next_position: int = 0  # the position the next closed segment would start at (writer's tail)
    cleaned_to: int = 0  # the cleaner's checkpoint: positions below are clean
    pending_deletes: tuple[int, ...] = ()  # ledgers out of the stream, not yet deleted
    cleaning: dict[str, tuple[int, ...]] = field(default_factory=dict)  # cleaner id -> ledgers it is writing
    epoch: int = 0  # bumped by every swap / truncation: readers re-locate
    writer: str | None = None

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def closed_segments(self) -> list[Segment]:
        return [s for s in self.segments if not s.open]

    @property
    def open_segment(self) -> Segment | None:
        return self.segments[-1] if self.segments and self.segments[-1].open else None

    @property
    def total_bytes(self) -> int:
        return sum(s.bytes for s in self.segments)

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["policies"] = self.policies.to_json()
        out["segments"] = [dataclasses.asdict(s) for s in self.segments]
        out["cleaning"] = {k: list(v) for k, v in self.cleaning.items()}
        out["pending_deletes"] = list(self.pending_deletes)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StreamMetadata:
        data = dict(data)
        data["policies"] = Policies.from_json(data.get("policies", {}))
        data["segments"] = tuple(Segment(**s) for s in data.get("segments", []))
        data["pending_deletes"] = tuple(data.get("pending_deletes", []))
        data["cleaning"] = {k: tuple(v) for k, v in data.get("cleaning", {}).items()}
        return cls(**data)


@dataclass(frozen=True)
class Versioned:
    value: StreamMetadata
    version: int


class StreamStore:
    """Async access to the streams tree (kazoo calls run in threads)."""

    def __init__(self, zk_servers: str, root: str = "/streams", *, session_timeout_s: float = 10.0,
                 security: ZkSecurity | None = None) -> None:
        self.root = root.rstrip("/") or "/streams"
        self.zk = KazooClient(hosts=zk_servers, timeout=session_timeout_s,
                              **(security or ZkSecurity()).kazoo_options())

    async def connect(self) -> StreamStore:
        await asyncio.to_thread(self.zk.start, 30)
        return self

    async def close(self) -> None:
        await asyncio.to_thread(self.zk.stop)
        await asyncio.to_thread(self.zk.close)

    async def __aenter__(self) -> StreamStore:
        return await self.connect()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _ns(self, namespace: str) -> str:
        return f"{self.root}/{check_name('namespace', namespace)}"

    def _stream(self, namespace: str, name: str) -> str:
        return f"{self._ns(namespace)}/{check_name('stream', name)}"

    # ------------------------------------------------------------ namespaces

    async def create_namespace(self, namespace: str, policies: Policies | None = None) -> None:
        data = json.dumps({"policies": (policies or Policies()).validated().to_json()}).encode()
        try:
            await asyncio.to_thread(self.zk.create, self._ns(namespace), data, makepath=True)
        except NodeExistsError as exc:
            raise StreamExists(f"namespace {namespace} exists") from exc

    async def namespace_policies(self, namespace: str) -> Policies:
        try:
            data, _ = await asyncio.to_thread(self.zk.get, self._ns(namespace))
        except NoNodeError as exc:
            raise NoSuchStream(f"namespace {namespace} does not exist") from exc
        return Policies.from_json(json.loads(data or b"{}").get("policies", {}))

    async def set_namespace_policies(self, namespace: str, change: Policies) -> Policies:
        while True:
            try:
                data, stat = await asyncio.to_thread(self.zk.get, self._ns(namespace))
            except NoNodeError as exc:
                raise NoSuchStream(f"namespace {namespace} does not exist") from exc
            merged = change.over(Policies.from_json(json.loads(data or b"{}").get("policies", {}))).validated()
            try:
                await asyncio.to_thread(self.zk.set, self._ns(namespace),
                                        json.dumps({"policies": merged.to_json()}).encode(), stat.version)
                return merged
            except BadVersionError:
                continue

    async def namespaces(self) -> list[str]:
        try:
            names = await asyncio.to_thread(self.zk.get_children, self.root)
        except NoNodeError:
            return []
        return sorted(n for n in names if not n.startswith("_"))

    # ------------------------------------------------------------ streams

    async def create_stream(self, namespace: str, name: str, policies: Policies | None = None) -> StreamMetadata:
        await self.namespace_policies(namespace)  # the namespace must exist
        md = StreamMetadata(namespace, name, now_ms(), (policies or Policies()).validated())
        try:
            await asyncio.to_thread(self.zk.create, self._stream(namespace, name), _dump(md))
        except NodeExistsError as exc:
            raise StreamExists(f"stream {namespace}/{name} exists") from exc
        return md

    async def streams(self, namespace: str) -> list[str]:
        try:
            return sorted(await asyncio.to_thread(self.zk.get_children, self._ns(namespace)))
        except NoNodeError as exc:
            raise NoSuchStream(f"namespace {namespace} does not exist") from exc

    async def all_streams(self) -> list[tuple[str, str]]:
        return [(ns, s) for ns in await self.namespaces() for s in await self.streams(ns)]

    async def get(self, namespace: str, name: str) -> Versioned:
        try:
            data, stat = await asyncio.to_thread(self.zk.get, self._stream(namespace, name))
        except NoNodeError as exc:
            raise NoSuchStream(f"stream {namespace}/{name} does not exist") from exc
        return Versioned(StreamMetadata.from_json(json.loads(data)), stat.version)

    async def put(self, md: StreamMetadata, version: int) -> int:
        """Compare-and-set; ``Conflict`` when the stream changed since ``version``."""
        try:
            stat = await asyncio.to_thread(self.zk.set, self._stream(md.namespace, md.name), _dump(md), version)
        except BadVersionError as exc:
            raise Conflict(f"stream {md.full_name} changed concurrently (version {version} is stale)") from exc
        except NoNodeError as exc:
            raise NoSuchStream(f"stream {md.full_name} does not exist") from exc
        return int(stat.version)

    async def update(self, namespace: str, name: str,
                     change: Callable[[StreamMetadata], StreamMetadata | None]) -> Versioned:
        """Apply ``change`` to the latest metadata until the compare-and-set succeeds (``None``: no change)."""
        while True:
            current = await self.get(namespace, name)
            new = change(current.value)
            if new is None:
                return current
            try:
                return Versioned(new, await self.put(new, current.version))
            except Conflict:
                continue

    async def effective_policies(self, md: StreamMetadata) -> Policies:
        return md.policies.over((await self.namespace_policies(md.namespace)).over(DEFAULTS))

    async def delete_stream(self, namespace: str, name: str) -> None:
        await asyncio.to_thread(self.zk.delete, self._stream(namespace, name))

    # ------------------------------------------------------------ cleaner liveness

    async def register_cleaner(self, cleaner_id: str) -> None:
        await asyncio.to_thread(self.zk.create, f"{self.root}/_cleaners/{cleaner_id}", b"", ephemeral=True,
                                makepath=True)

    async def live_cleaners(self) -> set[str]:
        try:
            return set(await asyncio.to_thread(self.zk.get_children, f"{self.root}/_cleaners"))
        except NoNodeError:
            return set()


def _dump(md: StreamMetadata) -> bytes:
    return json.dumps(md.to_json(), separators=(",", ":")).encode()
