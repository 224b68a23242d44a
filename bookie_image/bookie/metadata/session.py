"""``ZkSession``: one ZooKeeper session under a ledgers root, an asyncio API over kazoo, shared by every
metadata role (registration, cookies, ledger ids, ledger metadata, under-replication).

kazoo's asynchronous calls run on kazoo's own threads; each result is handed to the event loop through a
loop future, so the loop never blocks on ZooKeeper. Every ZooKeeper failure surfaces as a ``MetadataError``
(a subclass says which), and a call made while disconnected fails at once instead of queueing: the GC must
see "ZooKeeper unavailable" as an error, never as "no ledgers".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Self, TypeVar

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    SessionExpiredError,
    ZookeeperError,
)
from kazoo.handlers.threading import KazooTimeoutError

from bookie.metadata import layout as lay
from bookie.metadata.security import ZkSecurity
from bookie.waits import wait_event

log = logging.getLogger(__name__)
T = TypeVar("T")


class MetadataError(Exception):
    """Any failure talking to ZooKeeper (connection loss, session expiry, timeout, unexpected state)."""


class ZooKeeperUnreachable(MetadataError):
    """ZooKeeper did not answer: no connection, a connection lost, a session expired, or no answer in time. The
    operation may or may not have been applied: a caller that can repeat it safely (a read, a write conditional on
    a version) can wait for the session to come back (``ZkSession.until_connected``) and try again."""


class NoNode(MetadataError):
    """The znode does not exist."""


class NodeExists(MetadataError):
    """The znode already exists."""


class BadVersion(MetadataError):
    """Conditional update with a stale version."""


class NotEmpty(MetadataError):
    """The znode still has children."""


class NoAuth(MetadataError):
    """ZooKeeper refused: the znode's ACL does not grant this session's identities the operation."""


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
    if isinstance(exc, (ConnectionLoss, SessionExpiredError, OperationTimeoutError)):
        return ZooKeeperUnreachable(f"ZooKeeper unreachable: {exc!r}")
    if isinstance(exc, NoAuthError):
        return NoAuth("ZooKeeper refused: the znode's ACL does not allow this session's identity (zkEnableSecurity "
                      "znodes belong to the fleet's identity: zkDigestAuthFile or the client certificate)")
    return MetadataError(f"ZooKeeper error: {exc!r}")


def _deliver(loop: asyncio.AbstractEventLoop, fut: asyncio.Future[Any], async_result: Any) -> None:
    """kazoo completion (kazoo thread) -> loop future."""
    try:
        value = async_result.get_nowait()
    except BaseException as exc:
        loop.call_soon_threadsafe(_settle, fut, None, exc)
    else:
        loop.call_soon_threadsafe(_settle, fut, value, None)


def event_setter(loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> Callable[[Any], None]:
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


class ZkSession:
    """One ZooKeeper session under one ledgers root. Use ``async with`` or ``connect()``/``close()``.

    ``on_session_expired`` is called on the loop once a *new* session has replaced an expired one: the
    bookie's ephemeral znodes are gone and it must register again. ``security``: TLS, identity and ACLs
    (``bookie.metadata.security``); by default plaintext and open ACLs, as Apache BookKeeper's default.
    """

    def __init__(self, zk_servers: str, ledgers_root: str = "/ledgers", *, session_timeout_ms: int = 10000,
                 op_timeout_s: float | None = None, connect_timeout_s: float = 30.0,
                 on_session_expired: Callable[[], Awaitable[None] | None] | None = None,
                 security: ZkSecurity | None = None) -> None:
        self.layout = lay.ZkLayout(ledgers_root)
        self.zk_servers = zk_servers
        self.session_timeout_ms = session_timeout_ms
        self.op_timeout_s = op_timeout_s if op_timeout_s is not None else max(session_timeout_ms / 1000, 1.0)
        self.on_session_expired = on_session_expired
        self.connect_timeout_s = connect_timeout_s
        self.security = security or ZkSecurity()
        self._zk = KazooClient(hosts=zk_servers, timeout=session_timeout_ms / 1000,
                               connection_retry={"max_tries": -1, "max_delay": 1.0},
                               **self.security.kazoo_options())
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lost = False
        self._stopped = False  # closed by its owner: no longer "unreachable", gone
        self._state_changed = asyncio.Event()  # set on the loop at each change of the connection's state
        self._tasks: set[asyncio.Task[Any]] = set()

    @classmethod
    def from_config(cls, conf: Any, **kwargs: Any) -> Self:
        """From a ``bookie.config.BookieConfig`` (connect string, root, zkTimeout and ZooKeeper security)."""
        return cls(conf.zk_connect, conf.ledgers_root, session_timeout_ms=conf.zk_timeout,
                   security=ZkSecurity.from_config(conf), **kwargs)

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
        self._stopped = True
        loop = asyncio.get_running_loop()
        self._zk.remove_listener(self._on_state)
        await loop.run_in_executor(None, self._zk.stop)
        await loop.run_in_executor(None, self._zk.close)
        for task in list(self._tasks):
            task.cancel()

    async def __aenter__(self) -> Self:
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

    async def until_connected(self, seconds: float) -> bool:
        """Whether the session is connected, now or within ``seconds`` (a lost connection back, or a new session
        in place of an expired one)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while not self.connected:
            self._state_changed.clear()
            if self.connected or not await wait_event(self._state_changed, deadline - loop.time()):
                return self.connected
        return True

    def _on_state(self, state: str) -> None:
        # kazoo thread: only flip a flag and hop to the loop.
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed under a late notice
                self._loop.call_soon_threadsafe(self._state_changed.set)
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
        if self._stopped:
            raise MetadataError(f"the ZooKeeper session ({self.zk_servers}) was closed")
        # kazoo's live flag, not its state: start() returns once the flag is set, and the state changes to
        # CONNECTED a moment later on kazoo's thread; a call in between must not count as "unreachable".
        if not self.connected:
            raise ZooKeeperUnreachable(f"not connected to ZooKeeper ({self._zk.state})")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        try:
            async_result = getattr(self._zk, method + "_async")(*args, **kwargs)
        except (KazooException, ZookeeperError) as exc:
            raise _translate(exc) from exc
        async_result.rawlink(lambda ar: _deliver(loop, fut, ar))
        try:
            async with asyncio.timeout(self.op_timeout_s):
                return await fut
        except TimeoutError as exc:
            raise ZooKeeperUnreachable(f"ZooKeeper {method} timed out after {self.op_timeout_s}s") from exc
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

    async def _children_or_empty(self, path: str) -> list[str]:
        """Children; a vanished node counts as empty (raced with a deletion), as in BookKeeper."""
        try:
            return await self._children(path)
        except NoNode:
            return []
