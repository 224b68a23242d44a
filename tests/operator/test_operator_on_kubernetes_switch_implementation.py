"""Three Apache BookKeeper bookies holding ledgers are switched in place to bookie-fleet's bookie one pod at a
time, with the operator killed in the middle of the switch, and then back to Apache BookKeeper, held by
spec.implementationSwitch.paused first (no pod restarts; Argo CD reads it Suspended, kstatus InProgress): every entry,
those written by Java's bookies and those written by ours, is read back byte-identical; the claims are the same
(UIDs), and so are the bookie ids, the cookies and every ledger's metadata (nothing was re-replicated): the
operator disabled re-replication for each switch, no ledger was ever marked under-replicated, and replication is
enabled again at the end, as it was before."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from bookie.client import BookKeeper
from bookie.client.config import ClientConfig
from bookie_fleet.zookeeper import ZooKeeperServer
from bookie_operator.models import BOOKIE_IMAGE

from tests.operator.conftest import (
    JAVA,
    OperatorProcess,
    as_posted,
    await_events,
    bookie_cluster,
    events,
    get_cluster,
    patch_spec,
    wait_ready,
)
from tests.operator.gitops_health import argocd_health, kstatus
from tests.operator.ledger_identities import identities
from tests.operator.re_replication_watch import ReplicationWatch
from tests.support.kube import KubeTarget, pod_ready, wait_for

pytestmark = pytest.mark.bootstrap_part("gitops")


OURS = {"implementation": "bookie-fleet", "image": BOOKIE_IMAGE}
# Each direction restarts three bookies, each only once the one before is ready: a Java bookie's start on a
# loaded 2-core machine takes up to a minute.
SWITCH_TIMEOUT = 600


async def write_ledgers(config: ClientConfig, tag: str, count: int = 4, entries: int = 40) -> dict[int, list[bytes]]:
    written: dict[int, list[bytes]] = {}
    async with BookKeeper(config) as bk:
        for _ in range(150):                # Ready means registered; writable may follow a moment later
            if len(await bk.writable_bookies()) == 3:
                break
            await asyncio.sleep(0.2)
        for n in range(count):
            handle = await bk.create_ledger(ensemble_size=3, write_quorum=3, ack_quorum=2)
            written[handle.ledger_id] = [f"{tag} ledger {n} entry {i} ".encode() * (1 + i % 7) for i in range(entries)]
            for payload in written[handle.ledger_id]:
                await handle.add(payload)
            await handle.close()
    return written


def claims(kube: KubeTarget, ns: str) -> dict[str, str]:
    items = kube.api.request("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"]
    return {c["metadata"]["name"]: c["metadata"]["uid"] for c in items}


def switched(kube: KubeTarget, ns: str, implementation: str) -> Callable[[], dict[str, Any] | None]:
    """The cluster once the switch is over: every pod Ready on ``implementation``, no switch in status."""
    def done() -> dict[str, Any] | None:
        pods = kube.pods(ns, "app.kubernetes.io/instance=bk")
        obj = get_cluster(kube, ns, "bk")
        on_target = [p for p in pods if p["metadata"]["labels"].get("bookie-fleet.dev/implementation")
                     == implementation and pod_ready(p)]
        return obj if len(on_target) == 3 and "implementationSwitch" not in obj["status"] else None
    return done


def held(kube: KubeTarget, ns: str) -> Callable[[], tuple[tuple[str, str], tuple[str, str]] | None]:
    """Argo CD's and kstatus' readings once the switch is paused."""
    def paused() -> tuple[tuple[str, str], tuple[str, str]] | None:
        obj = get_cluster(kube, ns, "bk")
        switch = obj["status"].get("implementationSwitch") or {}
        return (argocd_health(obj), kstatus(obj)) if switch.get("phase") == "Paused" else None
    return paused


def restored(kube: KubeTarget, ns: str) -> Callable[[], dict[str, Any] | None]:
    def done() -> dict[str, Any] | None:
        obj = get_cluster(kube, ns, "bk")
        return obj if "reReplicationSuspended" not in obj["status"] else None
    return done


async def test_three_java_bookies_switch_to_ours_and_back_in_place_through_an_operator_kill(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    config = ClientConfig(zk_servers=zookeeper.connect_string, ledgers_root=root)
    op = operator_factory(ns)
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, root, **JAVA), namespace=ns)
    wait_ready(kube, ns, "bk", timeout=300)
    written = await write_ledgers(config, "java")
    before = await identities(zookeeper.connect_string, root, list(written))
    volumes = claims(kube, ns)
    assert len(before["bookies"]) == 3 and len(volumes) == 6

    async with ReplicationWatch(zookeeper.connect_string, root) as watch:
        started = time.monotonic()
        patch_spec(kube, ns, "bk", OURS)
        # The operator dies once the second bookie's restart is under way, and resumes from status.
        await asyncio.to_thread(await_events, kube, ns, "bk", "ImplementationSwitching", at_least=2,
                                timeout=SWITCH_TIMEOUT)
        op.kill()
        status = get_cluster(kube, ns, "bk")["status"]
        kept = status["implementationSwitch"]
        assert kept["target"] == "bookie-fleet" and kept["source"] == "apache-bookkeeper"
        assert status["reReplicationSuspended"]["previouslyDisabled"] is False, "what to restore, in status"
        await asyncio.sleep(3)
        op.start()
        await asyncio.to_thread(wait_for, switched(kube, ns, "bookie-fleet"), SWITCH_TIMEOUT, 1,
                                "every bookie on bookie-fleet")
        print(f"switch to bookie-fleet: {time.monotonic() - started:.0f}s")
        await asyncio.to_thread(wait_for, restored(kube, ns), 120, 1, "re-replication restored after the switch")
        switching = as_posted(events(kube, ns, "bk", "ImplementationSwitching"))
        assert [e["message"].split()[0] for e in switching] == ["bk-2", "bk-1", "bk-0"]
        written.update(await write_ledgers(config, "ours"))       # written by our bookies, read back by Java's
        middle = await identities(zookeeper.connect_string, root, list(written))

        # Back, held first: nothing restarts while paused, and GitOps tools read the hold from the API server.
        pods_before = {p["metadata"]["uid"] for p in kube.pods(ns, "app.kubernetes.io/instance=bk")}
        patch_spec(kube, ns, "bk", {**JAVA, "implementationSwitch": {"paused": True}})
        argocd, flux = await asyncio.to_thread(wait_for, held(kube, ns), 60, 1, "the paused switch")
        assert argocd == ("Suspended", "ImplementationSwitchPaused: bookie-fleet to apache-bookkeeper, 0 switched, "
                                       "3 to go: spec.implementationSwitch.paused"), argocd
        assert flux[0] == "InProgress" and "paused by spec.implementationSwitch.paused" in flux[1], flux
        await asyncio.sleep(6)                                   # a few of the operator's ticks
        assert {p["metadata"]["uid"] for p in kube.pods(ns, "app.kubernetes.io/instance=bk")} == pods_before
        started = time.monotonic()
        patch_spec(kube, ns, "bk", {"implementationSwitch": {"paused": False}})
        await asyncio.to_thread(wait_for, switched(kube, ns, "apache-bookkeeper"), SWITCH_TIMEOUT, 1,
                                "every bookie back on apache-bookkeeper")
        print(f"switch back to apache-bookkeeper: {time.monotonic() - started:.0f}s")
        await asyncio.to_thread(wait_ready, kube, ns, "bk", timeout=120)
        await asyncio.to_thread(wait_for, restored(kube, ns), 120, 1, "re-replication restored")
        assert await watch.now_disabled_by() is None, "re-replication enabled again, as it was before"
    assert watch.marked == set(), f"ledgers marked under-replicated during the switches: {sorted(watch.marked)}"
    assert len(watch.disabled_by - {None}) == 1, f"disabled by the operator meanwhile: {watch.disabled_by}"
    # One of each for each switch. The status that says re-replication is back is written just before its
    # Event is posted, so the second Restored may still be on its way.
    suspended = events(kube, ns, "bk", "ReReplicationSuspended")
    restored_events = await asyncio.to_thread(await_events, kube, ns, "bk", "ReReplicationRestored", at_least=2)
    assert len(suspended) == 2 and len(restored_events) == 2, "one for each switch"

    after = await identities(zookeeper.connect_string, root, list(written))
    assert after["bookies"] == before["bookies"]
    assert after["cookies"] == before["cookies"]
    assert after["metadata"] == middle["metadata"]           # no ensemble changed: nothing re-replicated
    assert {lid: before["metadata"][lid] for lid in before["metadata"]} == \
        {lid: after["metadata"][lid] for lid in before["metadata"]}
    assert after["under_replicated"] == [] and middle["under_replicated"] == []
    assert claims(kube, ns) == volumes
    async with BookKeeper(config) as bk:
        for lid, payloads in written.items():
            reader = await bk.open_ledger(lid)
            assert [e.payload for e in await reader.read(0, len(payloads) - 1)] == payloads, f"ledger {lid}"
    assert len(events(kube, ns, "bk", "ImplementationSwitchStarted")) == 2
    assert events(kube, ns, "bk", "RollingRestart") == []
