"""Leader election over a ``coordination.k8s.io/v1`` Lease, so that several operator replicas run but only one
acts: the others wait, without watching anything, until the leader's lease expires.

The protocol is client-go's: the holder renews ``spec.renewTime`` every ``retry`` seconds; a candidate takes
the lease over once it has seen the same record, unchanged, for ``lease_duration`` seconds of its *own*
clock (so clocks need not agree), with an optimistic-concurrency update that only one candidate can win.
A leader that cannot renew within ``renew_deadline`` stops (the process exits and its pod restarts as a
candidate); one that stops cleanly releases the lease so the next takes over at once.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bookie_operator.kube import KubeError

log = logging.getLogger("bookie_operator.leader")
Obj = dict[str, Any]


class LostLease(Exception):
    """The leader could not renew in time: another replica may be acting now."""


@dataclass(frozen=True)
class Timing:
    lease_duration: float = 15.0      # a candidate waits this long on an unchanged record
    renew_deadline: float = 10.0      # the leader gives up after failing to renew for this long
    retry: float = 2.0                # renew (leader) and poll (candidate) period


@dataclass
class Observed:
    """The last lease record seen and when (monotonic, local) it was first seen as it is."""

    key: tuple[str, str] | None = None
    since: float = 0.0

    def expired(self, record: Obj | None, now: float, duration: float) -> bool:
        """Has the holder of ``record`` failed to renew for ``duration`` seconds of our clock?"""
        spec = (record or {}).get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        if not holder:
            return True
        key = (holder, str(spec.get("renewTime")))
        if key != self.key:
            self.key, self.since = key, now
            return False
        return now - self.since >= float(spec.get("leaseDurationSeconds") or duration)


def _micro_time(now: dt.datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, kube: Any, namespace: str, name: str, identity: str, timing: Timing = Timing(),
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.kube, self.namespace, self.name, self.identity = kube, namespace, name, identity
        self.timing, self.monotonic = timing, monotonic
        self.observed = Observed()
        self.path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"

    async def acquire(self) -> None:
        """Wait until this replica holds the lease."""
        log.info("waiting for the lease %s/%s as %s", self.namespace, self.name, self.identity)
        while True:
            try:
                if await self._try_acquire():
                    break
            except KubeError as exc:
                log.warning("reading the lease failed: %s", exc)
            await asyncio.sleep(self.timing.retry)
        log.info("acquired the lease %s/%s as %s: now the active operator", self.namespace, self.name,
                 self.identity)

    async def hold(self) -> None:
        """Renew the lease until cancelled; raises LostLease when renewals fail for renew_deadline."""
        last_ok = self.monotonic()
        while True:
            await asyncio.sleep(self.timing.retry)
            try:
                if await self._renew():
                    last_ok = self.monotonic()
                    continue
                raise LostLease(f"lease {self.namespace}/{self.name} taken by another replica")
            except KubeError as exc:
                log.warning("renewing the lease failed: %s", exc)
            if self.monotonic() - last_ok > self.timing.renew_deadline:
                raise LostLease(f"lease {self.namespace}/{self.name} not renewed for "
                                f"{self.timing.renew_deadline:.0f}s")

    async def release(self) -> None:
        """Give the lease up (a clean stop): the next candidate takes over without waiting for expiry."""
        record = await self.kube.request("GET", f"{self.path}/{self.name}")
        if record is None or (record.get("spec") or {}).get("holderIdentity") != self.identity:
            return
        record["spec"].update(holderIdentity="", leaseDurationSeconds=1)
        try:
            await self.kube.request("PUT", f"{self.path}/{self.name}", body=record)
            log.info("released the lease %s/%s", self.namespace, self.name)
        except KubeError as exc:
            log.warning("releasing the lease failed: %s", exc)

    # ------------------------------------------------------------------------------------------------
    async def _try_acquire(self) -> bool:
        now = dt.datetime.now(dt.UTC)
        record = await self.kube.request("GET", f"{self.path}/{self.name}")
        spec = self._spec(now, transitions=0)
        if record is None:
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace}, "spec": spec}
            return await self._write("POST", self.path, body)
        held = (record.get("spec") or {}).get("holderIdentity")
        if held != self.identity and not self.observed.expired(record, self.monotonic(),
                                                               self.timing.lease_duration):
            return False
        transitions = int((record.get("spec") or {}).get("leaseTransitions") or 0)
        record["spec"] = self._spec(now, transitions=transitions + (held != self.identity))
        return await self._write("PUT", f"{self.path}/{self.name}", record)

    async def _renew(self) -> bool:
        record = await self.kube.request("GET", f"{self.path}/{self.name}")
        if record is None or (record.get("spec") or {}).get("holderIdentity") != self.identity:
            return False
        record["spec"]["renewTime"] = _micro_time(dt.datetime.now(dt.UTC))
        return await self._write("PUT", f"{self.path}/{self.name}", record)

    def _spec(self, now: dt.datetime, *, transitions: int) -> Obj:
        stamp = _micro_time(now)
        return {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.timing.lease_duration),
                "acquireTime": stamp, "renewTime": stamp, "leaseTransitions": transitions}

    async def _write(self, method: str, url: str, body: Obj) -> bool:
        """A create or a resourceVersion-checked update: a 409 means another replica wrote first."""
        try:
            await self.kube.request(method, url, body=body)
            return True
        except KubeError as exc:
            if exc.status == 409:
                return False
            raise
