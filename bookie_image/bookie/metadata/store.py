"""``MetadataStore``: BookKeeper's ZooKeeper metadata, asyncio API over kazoo.

kazoo's asynchronous calls run on kazoo's own threads; each result is handed to the event loop through a
loop future, so the loop never blocks on ZooKeeper. Every ZooKeeper failure surfaces as a ``MetadataError``
(a subclass says which), and a call made while disconnected fails at once instead of queueing: the GC must
see "ZooKeeper unavailable" as an error, never as "no ledgers".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from google.protobuf import text_format
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    ZookeeperError,
)
from kazoo.handlers.threading import KazooTimeoutError

from bookie.metadata import layout as lay
from bookie.metadata.cookie import Cookie
from bookie.metadata.ledger_metadata import LedgerMetadata, parse_ledger_metadata, serialize_ledger_metadata
from bookie.protocol.proto import DataFormats_pb2 as _df

df: Any = _df
log = logging.getLogger(__name__)
T = TypeVar("T")


class MetadataError(Exception):
    """Any failure talking to ZooKeeper (connection loss, session expiry, timeout, unexpected state)."""


class NoNode(MetadataError):
    """The znode does not exist."""


class NodeExists(MetadataError):
    """The znode already exists."""


class BadVersion(MetadataError):
    """Conditional update with a stale version."""


class NotEmpty(MetadataError):
    """The znode still has children."""


class NoSuchLedger(NoNode):
    """No metadata for this ledger id."""


class RegistrationError(MetadataError):
    """The bookie's registration znode is held by another live session."""


class LayoutMismatch(MetadataError):
    """The cluster uses a ledger layout this code does not implement."""


@dataclass(frozen=True, slots=True)
class Versioned(Generic[T]):
    value: T
    version: int


@dataclass(frozen=True, slots=True)
class LedgerRange:
    """Sorted ledger ids found under one leaf znode (BookKeeper's ``LedgerRange``)."""

    ledger_ids: tuple[int, ...]

    @property
    def start(self) -> int:
        return self.ledger_ids[0]

    @property
    def end(self) -> int:
        return self.ledger_ids[-1]


@dataclass(frozen=True, slots=True)
class UnderreplicatedLedger:
    ledger_id: int
    replicas: tuple[str, ...]  # missing replicas (bookie ids)
    ctime: int | None


def _translate(exc: BaseException) -> MetadataError:
    if isinstance(exc, MetadataError):
        return exc
    if isinstance(exc, NoNodeError):
        return NoNode(str(exc) or "no node")
    if isinstance(exc, NodeExistsError):
        return NodeExists(str(exc) or "node exists")
    if isinstance(exc, BadVersionError):
        return BadVersion(str(exc) or "bad version")
    if isinstance(exc, NotEmptyError):
        return NotEmpty(str(exc) or "not empty")
    return MetadataError(f"ZooKeeper error: {exc!r}")


def _deliver(loop: asyncio.AbstractEventLoop, fut: asyncio.Future[Any], async_result: Any) -> None:
    """kazoo completion (kazoo thread) -> loop future."""
    try:
        value = async_result.get_nowait()
    except BaseException as exc:
        loop.call_soon_threadsafe(_settle, fut, None, exc)
    else:
        loop.call_soon_threadsafe(_settle, fut, value, None)


def _event_setter(loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> Callable[[Any], None]:
    """A kazoo watch (runs on a kazoo thread) that sets ``event`` on the loop."""
    def watch(_watched_event: Any) -> None:
        loop.call_soon_threadsafe(event.set)

    return watch


def _settle(fut: asyncio.Future[Any], value: Any, exc: BaseException | None) -> None:
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(value)


class MetadataStore:
    """BookKeeper metadata under one ledgers root. Use ``async with`` or ``connect()``/``close()``.

    ``on_session_expired`` is called on the loop once a *new* session has replaced an expired one: the
    bookie's ephemeral znodes are gone and it must register again.
    """

    def __init__(self, zk_servers: str, ledgers_root: str = "/ledgers", *, session_timeout_ms: int = 10000,
                 op_timeout_s: float | None = None, connect_timeout_s: float = 30.0,
                 on_session_expired: Callable[[], Awaitable[None] | None] | None = None) -> None:
        self.layout = lay.ZkLayout(ledgers_root)
        self.zk_servers = zk_servers
        self.session_timeout_ms = session_timeout_ms
        self.op_timeout_s = op_timeout_s if op_timeout_s is not None else max(session_timeout_ms / 1000, 1.0)
        self.on_session_expired = on_session_expired
        self.connect_timeout_s = connect_timeout_s
        self._zk = KazooClient(hosts=zk_servers, timeout=session_timeout_ms / 1000,
                               connection_retry={"max_tries": -1, "max_delay": 1.0})
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lost = False
        self._tasks: set[asyncio.Task[Any]] = set()

    @classmethod
    def from_config(cls, conf: Any, **kwargs: Any) -> MetadataStore:
        """From a ``bookie.config.BookieConfig`` (connect string, root and zkTimeout)."""
        return cls(conf.zk_connect, conf.ledgers_root, session_timeout_ms=conf.zk_timeout, **kwargs)

    # ------------------------------------------------------------ connection

    async def connect(self) -> None:
        """Start the session; waits up to ``connect_timeout_s``."""
        self._loop = asyncio.get_running_loop()
        self._zk.add_listener(self._on_state)
        wait = self.connect_timeout_s
        try:
            await self._loop.run_in_executor(None, lambda: self._zk.start(timeout=wait))
        except (KazooTimeoutError, KazooException) as exc:
            await self._loop.run_in_executor(None, self._zk.stop)
            raise MetadataError(f"cannot connect to ZooKeeper at {self.zk_servers}: {exc!r}") from exc

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        self._zk.remove_listener(self._on_state)
        await loop.run_in_executor(None, self._zk.stop)
        await loop.run_in_executor(None, self._zk.close)
        for task in list(self._tasks):
            task.cancel()

    async def __aenter__(self) -> MetadataStore:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def connected(self) -> bool:
        return bool(self._zk.connected)

    @property
    def session_id(self) -> int | None:
        client_id = self._zk.client_id
        return client_id[0] if client_id else None

    def _on_state(self, state: str) -> None:
        # kazoo thread: only flip a flag and hop to the loop.
        if state == KazooState.LOST:
            self._lost = True
            log.warning("ZooKeeper session expired (%s)", self.zk_servers)
        elif state == KazooState.CONNECTED and self._lost and self._loop is not None:
            self._lost = False
            self._loop.call_soon_threadsafe(self._session_replaced)

    def _session_replaced(self) -> None:
        if self.on_session_expired is None:
            return
        result = self.on_session_expired()
        if asyncio.iscoroutine(result):
            task = asyncio.ensure_future(result)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Run ``KazooClient.<method>_async``; raise ``MetadataError`` subclasses; never wait forever."""
        if self._zk.state != KazooState.CONNECTED:
            raise MetadataError(f"not connected to ZooKeeper ({self._zk.state})")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        try:
            async_result = getattr(self._zk, method + "_async")(*args, **kwargs)
        except (KazooException, ZookeeperError) as exc:
            raise _translate(exc) from exc
        async_result.rawlink(lambda ar: _deliver(loop, fut, ar))
        try:
            return await asyncio.wait_for(fut, self.op_timeout_s)
        except TimeoutError as exc:
            raise MetadataError(f"ZooKeeper {method} timed out after {self.op_timeout_s}s") from exc
        except (KazooException, ZookeeperError) as exc:
            raise _translate(exc) from exc

    # ------------------------------------------------------------ small helpers

    async def _create(self, path: str, data: bytes = b"", *, ephemeral: bool = False, sequence: bool = False,
                      makepath: bool = False) -> str:
        return str(await self._call("create", path, data, ephemeral=ephemeral, sequence=sequence,
                                    makepath=makepath))

    async def _ensure(self, path: str, data: bytes = b"") -> bool:
        """Create a persistent znode (and parents) unless it exists; True if this call created it."""
        if await self._call("exists", path) is not None:
            return False
        try:
            await self._create(path, data, makepath=True)
        except NodeExists:
            return False
        return True

    async def _get(self, path: str) -> tuple[bytes, Any]:
        data, stat = await self._call("get", path)
        return bytes(data), stat

    async def _children(self, path: str, watch: Callable[[Any], None] | None = None) -> list[str]:
        return list(await self._call("get_children", path, watch=watch))

    async def _delete(self, path: str, version: int = -1, *, missing_ok: bool = False) -> None:
        try:
            await self._call("delete", path, version=version)
        except NoNode:
            if not missing_ok:
                raise

    # ------------------------------------------------------------ cluster

    async def init_cluster(self) -> str:
        """Create whatever part of the cluster layout is missing (idempotent); returns the instance id."""
        L = self.layout
        await self._ensure(L.root)
        for path in (L.available, L.readonly, L.cookies):
            await self._ensure(path)
        if await self._call("exists", L.layout) is None:
            with contextlib.suppress(NodeExists):
                await self._create(L.layout, lay.LAYOUT_DATA)
        await self.check_layout()
        await self._init_underreplication()
        if await self._call("exists", L.instance_id) is None:
            with contextlib.suppress(NodeExists):
                await self._create(L.instance_id, str(uuid.uuid4()).encode())
        return await self.instance_id()

    async def check_layout(self) -> None:
        """Refuse clusters whose LAYOUT names another ledger manager (our paths would be wrong)."""
        try:
            data, _ = await self._get(self.layout.layout)
        except NoNode as exc:
            raise LayoutMismatch(f"{self.layout.layout} is missing: cluster not initialised") from exc
        lines = data.decode(errors="replace").split("\n")
        manager = lines[1].rsplit(":", 1)[0] if len(lines) > 1 else ""
        if manager != lay.HIERARCHICAL_FACTORY:
            raise LayoutMismatch(f"cluster layout {data!r} is not {lay.HIERARCHICAL_FACTORY}")

    async def _init_underreplication(self) -> None:
        L = self.layout
        await self._ensure(L.underreplication)
        wanted = df.LedgerRereplicationLayoutFormat(type=lay.UR_LAYOUT_TYPE, version=lay.UR_LAYOUT_VERSION)
        if await self._call("exists", L.ur_layout) is None:
            with contextlib.suppress(NodeExists):
                await self._create(L.ur_layout, text_format.MessageToString(wanted).encode())
        await self._ensure(L.ur_ledgers)
        await self._ensure(L.ur_locks)

    async def instance_id(self) -> str:
        try:
            data, _ = await self._get(self.layout.instance_id)
        except NoNode as exc:
            raise NoNode(f"{self.layout.instance_id} missing: cluster not initialised") from exc
        return data.decode()

    # ------------------------------------------------------------ cookies

    async def read_cookie(self, bookie_id: str) -> Versioned[Cookie] | None:
        try:
            data, stat = await self._get(self.layout.cookie(bookie_id))
        except NoNode:
            return None
        return Versioned(Cookie.parse(data), stat.version)

    async def write_cookie(self, bookie_id: str, cookie: Cookie, version: int | None) -> int:
        """Create (``version`` None; fails with NodeExists) or update at ``version``; returns new version."""
        path = self.layout.cookie(bookie_id)
        if version is None:
            await self._create(path, cookie.to_bytes(), makepath=True)
            return 0
        stat = await self._call("set", path, cookie.to_bytes(), version=version)
        return int(stat.version)

    async def list_cookies(self) -> list[str]:
        """Ids of every bookie that has a cookie: the cluster's bookies, running or not."""
        return sorted(await self._children_or_empty(self.layout.cookies))

    async def delete_cookie(self, bookie_id: str, version: int = -1) -> None:
        await self._delete(self.layout.cookie(bookie_id), version)

    # ------------------------------------------------------------ registration

    async def register_bookie(self, bookie_id: str, readonly: bool, service_info: bytes = b"") -> None:
        """Register as writable or read-only, with BookKeeper's order of transitions.

        Read-only: create ``available/readonly/<id>`` then delete ``available/<id>``. Writable: create
        ``available/<id>`` then delete ``available/readonly/<id>``. So the bookie is never invisible.
        """
        if readonly:
            await self._ensure(self.layout.readonly)
        await self._register_at(self.layout.bookie(bookie_id, readonly), service_info)
        await self._delete(self.layout.bookie(bookie_id, not readonly), missing_ok=True)

    async def _register_at(self, path: str, service_info: bytes) -> None:
        # The dead session expires after its timeout, measured by ZooKeeper from its last heartbeat: allow twice.
        deadline = time.monotonic() + 2 * self.session_timeout_ms / 1000 + 1
        while True:
            gone = asyncio.Event()
            stat = await self._call("exists", path, watch=_event_setter(asyncio.get_running_loop(), gone))
            if stat is None:
                break
            if stat.ephemeralOwner == self.session_id:
                return  # already ours
            # A previous incarnation's session may still be alive: wait up to zkTimeout for it to expire.
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RegistrationError(f"{path} is held by session 0x{stat.ephemeralOwner:x} and did not "
                                        f"disappear within {self.session_timeout_ms} ms")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(gone.wait(), min(remaining, 0.5))
        try:
            await self._create(path, service_info, ephemeral=True)
        except NodeExists as exc:
            raise RegistrationError(f"{path} was registered concurrently by another session") from exc

    async def unregister_bookie(self, bookie_id: str, readonly: bool) -> None:
        await self._delete(self.layout.bookie(bookie_id, readonly), missing_ok=True)

    async def list_bookies(self, readonly: bool = False) -> list[str]:
        """Registered bookie ids (writable ones exclude the ``readonly`` child)."""
        path = self.layout.readonly if readonly else self.layout.available
        try:
            children = await self._children(path)
        except NoNode:
            return []
        return sorted(c for c in children if readonly or c != lay.READONLY)

    async def bookie_service_info(self, bookie_id: str) -> bytes | None:
        """The data of a bookie's registration (writable or read-only); None when it is not registered."""
        for readonly in (False, True):
            try:
                data, _ = await self._get(self.layout.bookie(bookie_id, readonly))
            except NoNode:
                continue
            return data
        return None

    # ------------------------------------------------------------ ledger ids and metadata

    async def generate_ledger_id(self) -> int:
        """BookKeeper's id generation for the hierarchical layout (``LongZkLedgerIdGenerator``).

        Short ids: sequence number of an ephemeral-sequential ``<root>/idgen/ID-`` node (deleted right
        after). Once ``<root>/idgen-long`` exists (31-bit ids exhausted), ids are
        ``HOB << 32 | sequence`` of ``<root>/idgen-long/HOB-%010d/ID-``.
        """
        if await self._call("exists", self.layout.idgen_long) is not None:
            return await self._generate_long_id()
        ledger_id = await self._sequence_id(f"{self.layout.idgen}/{lay.ID_GEN_PREFIX}")
        if 0 <= ledger_id < lay.INT_MAX:
            return ledger_id
        await self._ensure(self.layout.idgen_long)
        return await self._generate_long_id()

    async def _sequence_id(self, prefix: str) -> int:
        created = await self._create(prefix, ephemeral=True, sequence=True, makepath=True)
        await self._delete(created, missing_ok=True)
        return lay.parse_java_long(created[len(prefix):])

    async def _generate_long_id(self) -> int:
        base = self.layout.idgen_long
        while True:
            hobs = [lay.parse_java_long(c[len(lay.HOB_PREFIX):]) for c in await self._children(base)
                    if c.startswith(lay.HOB_PREFIX) and c[len(lay.HOB_PREFIX):].isdigit()]
            high = max(hobs) if hobs else 0
            if high == 0:
                await self._ensure(f"{base}/{lay.HOB_PREFIX}{1:010d}")
                continue
            low = await self._sequence_id(f"{base}/{lay.HOB_PREFIX}{high:010d}/{lay.ID_GEN_PREFIX}")
            if 0 <= low < lay.INT_MAX:
                return (high << 32) | low
            await self._ensure(f"{base}/{lay.HOB_PREFIX}{high + 1:010d}")

    async def create_ledger_metadata(self, ledger_id: int, metadata: LedgerMetadata) -> int:
        """Create the ledger's znode (NodeExists if the id is taken); returns its version (0)."""
        await self._create(self.layout.ledger(ledger_id), serialize_ledger_metadata(metadata), makepath=True)
        return 0

    async def create_ledger(self, metadata: LedgerMetadata) -> Versioned[int]:
        """Allocate a fresh ledger id and store its metadata; returns (ledger id, znode version)."""
        while True:
            ledger_id = await self.generate_ledger_id()
            try:
                return Versioned(ledger_id, await self.create_ledger_metadata(ledger_id, metadata))
            except NodeExists:
                log.warning("ledger id %d already taken, generating another", ledger_id)

    async def read_ledger_metadata(self, ledger_id: int) -> Versioned[LedgerMetadata]:
        try:
            data, stat = await self._get(self.layout.ledger(ledger_id))
        except NoNode as exc:
            raise NoSuchLedger(f"ledger {ledger_id} has no metadata") from exc
        return Versioned(parse_ledger_metadata(data), stat.version)

    async def write_ledger_metadata(self, ledger_id: int, metadata: LedgerMetadata, version: int) -> int:
        """Conditional update (BadVersion on conflict, NoSuchLedger if deleted); returns the new version."""
        try:
            stat = await self._call("set", self.layout.ledger(ledger_id), serialize_ledger_metadata(metadata),
                                    version=version)
        except NoNode as exc:
            raise NoSuchLedger(f"ledger {ledger_id} has no metadata") from exc
        return int(stat.version)

    async def delete_ledger_metadata(self, ledger_id: int, version: int = -1) -> None:
        try:
            await self._delete(self.layout.ledger(ledger_id), version)
        except NoNode as exc:
            raise NoSuchLedger(f"ledger {ledger_id} has no metadata") from exc

    async def ledger_exists(self, ledger_id: int) -> bool:
        return await self._call("exists", self.layout.ledger(ledger_id)) is not None

    # ------------------------------------------------------------ ledger ranges (GC)

    async def ledger_ranges(self) -> AsyncIterator[LedgerRange]:
        """Existing ledgers, range by range, exactly like ``HierarchicalLedgerManager.getLedgerRanges``.

        Legacy (2-4-4) ranges first, then long (3-4-4-4-4) ranges; nodes in lexicographic order; empty
        ranges skipped. Any ZooKeeper error raises ``MetadataError``: GC deletes data based on this.
        """
        async for r in self._legacy_ranges():
            yield r
        async for r in self._long_ranges(self.layout.root, 0):
            yield r

    async def all_ledger_ids(self) -> list[int]:
        return [i async for r in self.ledger_ranges() for i in r.ledger_ids]

    async def _children_or_empty(self, path: str) -> list[str]:
        """Children; a vanished node counts as empty (raced with a deletion), as in BookKeeper."""
        try:
            return await self._children(path)
        except NoNode:
            return []

    async def _legacy_ranges(self) -> AsyncIterator[LedgerRange]:
        root = self.layout.root
        for l1 in sorted(await self._children(root)):  # a missing root is an error, never "no ledgers"
            if not lay.LEGACY_PARENT_RE.fullmatch(l1):
                continue
            for l2 in sorted(await self._children(f"{root}/{l1}")):
                path = f"{root}/{l1}/{l2}"
                try:
                    low = lay.parse_java_long(l1 + l2 + "0000")
                    high = lay.parse_java_long(l1 + l2 + "9999")
                except ValueError as exc:
                    raise MetadataError(f"unexpected znode {path}: {exc}") from exc
                ids = self._ledger_ids(path, await self._children_or_empty(path))
                selected = tuple(i for i in ids if low <= i <= high)
                if selected:
                    yield LedgerRange(selected)

    async def _long_ranges(self, path: str, level: int) -> AsyncIterator[LedgerRange]:
        for node in sorted(await self._children_or_empty(path)):
            if level == 0 and not lay.LONG_PARENT_RE.fullmatch(node):
                continue
            child = f"{path}/{node}"
            if level < 3:
                async for r in self._long_ranges(child, level + 1):
                    yield r
                continue
            ids = self._ledger_ids(child, await self._children_or_empty(child))
            if ids:
                yield LedgerRange(tuple(ids))

    def _ledger_ids(self, parent: str, names: Iterable[str]) -> list[int]:
        """``ledgerListToSet``: skip special names and names that do not parse (logged)."""
        ids = set()
        for name in names:
            if lay.is_special_znode(name):
                continue
            try:
                ids.add(self.layout.ledger_id(f"{parent}/{name}"))
            except ValueError:
                log.warning("ignoring znode %s/%s: not a ledger", parent, name)
        return sorted(ids)

    # ------------------------------------------------------------ underreplication (autorecovery)

    async def mark_ledger_underreplicated(self, ledger_id: int, missing_replicas: Iterable[str],
                                          *, store_ctime: bool = True) -> None:
        """Create or extend ``underreplication/ledgers/.../urL%010d`` (text-format data)."""
        path = self.layout.ur_ledger(ledger_id)
        missing = list(dict.fromkeys(missing_replicas))
        while True:
            fmt = df.UnderreplicatedLedgerFormat(replica=missing)
            if store_ctime:
                fmt.ctime = int(time.time() * 1000)
            try:
                await self._create(path, text_format.MessageToString(fmt).encode(), makepath=True)
                return
            except NodeExists:
                pass
            if await self._merge_replicas(path, missing, store_ctime):
                return

    async def _merge_replicas(self, path: str, missing: list[str], store_ctime: bool) -> bool:
        """Add replicas to an existing mark; False if it vanished meanwhile (caller re-creates)."""
        while True:
            try:
                data, stat = await self._get(path)
            except NoNode:
                return False
            fmt = text_format.Parse(data.decode(), df.UnderreplicatedLedgerFormat())
            added = [r for r in missing if r not in fmt.replica]
            if not added:
                return True
            fmt.replica.extend(added)
            if store_ctime:
                fmt.ctime = int(time.time() * 1000)
            try:
                await self._call("set", path, text_format.MessageToString(fmt).encode(), version=stat.version)
                return True
            except NoNode:
                return False
            except BadVersion:
                continue

    async def get_underreplicated(self, ledger_id: int) -> UnderreplicatedLedger | None:
        try:
            data, _ = await self._get(self.layout.ur_ledger(ledger_id))
        except NoNode:
            return None
        fmt = text_format.Parse(data.decode(), df.UnderreplicatedLedgerFormat())
        ctime = fmt.ctime if fmt.HasField("ctime") else None
        return UnderreplicatedLedger(ledger_id, tuple(fmt.replica), ctime)

    async def mark_ledger_replicated(self, ledger_id: int) -> None:
        """Remove the mark and the hex hierarchy above it when empty."""
        path = self.layout.ur_ledger(ledger_id)
        await self._delete(path, missing_ok=True)
        parent = path.rsplit("/", 1)[0]
        for _ in range(4):
            try:
                await self._delete(parent, missing_ok=True)
            except NotEmpty:
                return
            parent = parent.rsplit("/", 1)[0]

    async def list_underreplicated(self) -> list[int]:
        """Ledger ids currently marked underreplicated, ascending."""
        found: list[int] = []
        await self._walk_ur(self.layout.ur_ledgers, 0, found)
        return sorted(found)

    async def _walk_ur(self, path: str, level: int, found: list[int]) -> None:
        for name in await self._children_or_empty(path):
            if level < 4:
                await self._walk_ur(f"{path}/{name}", level + 1, found)
            elif name.startswith("urL"):
                with contextlib.suppress(ValueError):
                    found.append(lay.ZkLayout.ur_ledger_id(name))

    async def acquire_underreplicated_lock(self, ledger_id: int, owner: str) -> bool:
        """Ephemeral ``locks/urL%010d``; False if another replication worker holds it."""
        data = text_format.MessageToString(df.LockDataFormat(bookieId=owner)).encode()
        try:
            await self._create(self.layout.ur_lock(ledger_id), data, ephemeral=True, makepath=True)
        except NodeExists:
            return False
        return True

    async def release_underreplicated_lock(self, ledger_id: int) -> None:
        await self._delete(self.layout.ur_lock(ledger_id), missing_ok=True)

    async def is_replication_enabled(self) -> bool:
        return await self._call("exists", self.layout.ur_disable) is None

    async def set_replication_enabled(self, enabled: bool) -> None:
        if enabled:
            await self._delete(self.layout.ur_disable, missing_ok=True)
        else:
            await self._ensure(self.layout.ur_disable)

    async def lost_bookie_recovery_delay(self) -> int | None:
        try:
            data, _ = await self._get(self.layout.ur_lost_bookie_recovery_delay)
        except NoNode:
            return None
        return int(data.decode())

    async def set_lost_bookie_recovery_delay(self, seconds: int) -> None:
        path = self.layout.ur_lost_bookie_recovery_delay
        if not await self._ensure(path, str(seconds).encode()):
            await self._call("set", path, str(seconds).encode())

    # ------------------------------------------------------------ auditor election

    async def submit_auditor_vote(self, bookie_id: str) -> str:
        """Ephemeral-sequential ``auditorelection/V_<seq>``; returns the vote's path."""
        await self._ensure(self.layout.auditor_election)
        data = text_format.MessageToString(df.AuditorVoteFormat(bookieId=bookie_id)).encode()
        return await self._create(f"{self.layout.auditor_election}/{lay.UR_VOTE_PREFIX}", data,
                                  ephemeral=True, sequence=True)

    async def auditor_votes(self) -> list[str]:
        """Vote node names, lowest sequence (the auditor) first."""
        votes = [v for v in await self._children_or_empty(self.layout.auditor_election)
                 if v.startswith(lay.UR_VOTE_PREFIX)]
        return sorted(votes, key=lambda v: lay.parse_java_long(v[len(lay.UR_VOTE_PREFIX):]))

    async def auditor_id(self) -> str | None:
        """Bookie id of the elected auditor (owner of the lowest vote), or None."""
        for vote in await self.auditor_votes():
            try:
                data, _ = await self._get(f"{self.layout.auditor_election}/{vote}")
            except NoNode:
                continue
            return str(text_format.Parse(data.decode(), df.AuditorVoteFormat()).bookieId)
        return None

    async def withdraw_auditor_vote(self, vote_path: str) -> None:
        await self._delete(vote_path, missing_ok=True)
