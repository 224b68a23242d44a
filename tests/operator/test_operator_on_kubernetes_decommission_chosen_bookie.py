"""spec.decommission on our bookies: the middle bookie of five leaves whatever its ordinal. An entry that names no
bookie is refused with the reason in status and an Event, and nothing changes. The chosen bookie's ledgers are
re-replicated and verified, its cookie deleted, its pod and volumes deleted, and the StatefulSet, still at five,
re-creates the ordinal empty: it starts at once (no stale cookie), no ledger names it, it takes writes, every
entry of every ledger reads back, through our client and Apache BookKeeper's Java client alike, nothing is
under-replicated. An operator killed in the middle resumes from status, and the done entry is not run again
while it stays in the spec."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from bookie.client import BookKeeper
from bookie.client.config import ClientConfig
from bookie.metadata.store import MetadataStore
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import (
    OperatorProcess,
    await_events,
    bookie_cluster,
    bookie_status,
    events,
    get_cluster,
    patch_spec,
    wait_ready,
)
from tests.operator.java_reads import assert_java_reads_back
from tests.operator.ledgers_written import write_ledgers
from tests.support.kube import KubeTarget, wait_for


def _claims(kube: KubeTarget, ns: str) -> dict[str, str]:
    return {c["metadata"]["name"]: c["metadata"]["uid"] for c in
            kube.api.request("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"]}


def _requests(kube: KubeTarget, ns: str) -> list[dict[str, Any]]:
    return list(get_cluster(kube, ns, "bk")["status"].get("decommissionRequests", []))


async def test_the_middle_bookie_of_five_is_decommissioned_and_comes_back_empty(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    begin = time.monotonic()
    op = operator_factory(ns)
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, root, replicas=5, ensembleSize=3), namespace=ns)
    wait_ready(kube, ns, "bk", timeout=300)
    gone = f"bk-2.bk-headless.{ns}.svc.cluster.local:3181"
    config = ClientConfig(zk_servers=zookeeper.connect_string, ledgers_root=root)
    written = await write_ledgers(config, 5, gone, ledgers=10, entries=20)
    print(f"five bookies ready and written: {time.monotonic() - begin:.0f}s")

    # An entry that names no bookie: refused, said in status and in an Event, and nothing moves.
    claims_before = _claims(kube, ns)
    patch_spec(kube, ns, "bk", {"decommission": ["bk-7"]})
    refused = wait_for(lambda: next((r for r in _requests(kube, ns) if r["phase"] == "Refused"), None), 60,
                       interval=0.5, what="the entry bk-7 refused")
    assert "no bookie bk-7" in refused["message"], refused
    assert any("bk-7" in e["message"] for e in await_events(kube, ns, "bk", "DecommissionRefused"))
    assert not events(kube, ns, "bk", "DecommissionStarted")
    assert _claims(kube, ns) == claims_before

    old_pod = kube.get(f"/api/v1/namespaces/{ns}/pods/bk-2")
    assert old_pod is not None
    patch_spec(kube, ns, "bk", {"decommission": ["bk-2"]})
    await_events(kube, ns, "bk", "DecommissionStarted", timeout=60)
    started = next(r for r in _requests(kube, ns) if r["entry"] == "bk-2")
    assert started["bookieId"] == gone and started["oldPodUid"] == old_pod["metadata"]["uid"]
    op.kill()                                      # the operator dies in the middle ...
    await asyncio.sleep(3)
    op.start()                                     # ... and resumes from status.decommissionRequests

    def done() -> dict[str, Any] | None:
        return next((r for r in _requests(kube, ns) if r["entry"] == "bk-2" and r["phase"] == "Done"), None)

    record = wait_for(done, 420, interval=1, what="the decommission of bk-2 done")
    print(f"bk-2 decommissioned and re-created: {time.monotonic() - begin:.0f}s")
    assert record["completedAt"]
    assert len(events(kube, ns, "bk", "DecommissionStarted")) == 1          # resumed, not started again
    phases = [e["message"] for e in events(kube, ns, "bk", "Decommissioning")]
    for step in ("-> DeletingCookie", "-> RecreatingBookie", "-> AwaitingNewBookie", "-> Done"):
        assert any(step in m for m in phases), (step, phases)

    obj = wait_ready(kube, ns, "bk", timeout=120)
    sts = kube.get(f"/apis/apps/v1/namespaces/{ns}/statefulsets/bk")
    assert sts is not None and sts["spec"]["replicas"] == 5 and obj["status"]["readyReplicas"] == 5
    new_pod = kube.get(f"/api/v1/namespaces/{ns}/pods/bk-2")
    assert new_pod is not None and new_pod["metadata"]["uid"] != old_pod["metadata"]["uid"]
    # No stale cookie: an empty bookie facing its old cookie would have failed to start.
    assert new_pod["status"]["containerStatuses"][0]["restartCount"] == 0
    claims_after = _claims(kube, ns)
    renewed = [n for n in claims_before if n.endswith("-bk-2")]
    assert renewed and all(claims_after[n] != claims_before[n] for n in renewed)
    assert {n: u for n, u in claims_after.items() if n not in renewed} == \
        {n: u for n, u in claims_before.items() if n not in renewed}
    assert bookie_status(obj, 2)["state"] == "Writable"

    async with MetadataStore(zookeeper.connect_string, root) as store:
        assert await store.list_underreplicated() == []
        assert await store.read_cookie(gone) is not None
    async with BookKeeper(config) as bk:
        for lid, payloads in written.items():
            md = (await bk.ledger_metadata(lid)).value
            assert all(gone not in e for e in md.ensembles.values()), f"ledger {lid} still names {gone}"
            reader = await bk.open_ledger(lid)
            assert [e.payload for e in await reader.read(0, len(payloads) - 1)] == payloads
        # Apache BookKeeper's own client too: the metadata the operator rewrote parses, and reads back the same.
        await assert_java_reads_back(bk, written, gone)
        print(f"read back by our client and the Java client: {time.monotonic() - begin:.0f}s")
        # The new bookie takes writes: an ensemble of all five includes it.
        handle = await bk.create_ledger(ensemble_size=5, write_quorum=5, ack_quorum=5)
        await handle.add(b"on the new bookie")
        await handle.close()
        assert any(gone in e for e in (await bk.ledger_metadata(handle.ledger_id)).value.ensembles.values())
        assert [e.payload for e in await (await bk.open_ledger(handle.ledger_id)).read(0, 0)] == \
            [b"on the new bookie"]

    # Done once: the entry stays in the spec, and nothing runs again.
    await asyncio.sleep(5)
    assert len(events(kube, ns, "bk", "DecommissionStarted")) == 1
    assert [r["phase"] for r in _requests(kube, ns)] == ["Done"]
    print(f"whole test: {time.monotonic() - begin:.0f}s")
