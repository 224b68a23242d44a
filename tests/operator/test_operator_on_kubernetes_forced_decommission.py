"""Forced decommission of a dead bookie, on our bookies: the middle one, bk-1 of three, is killed with its disk
(its claims deleted) while some single-replica ledgers lived only there. Naming it in spec.decommission lists
exactly those ledgers in status.dataLoss, with their Pulsar topic, and changes nothing while spec.acceptDataLoss
misses one of them; once it names them all, exactly those are given up (an EntriesGivenUp Event each, the loss
recorded in their metadata), the decommission completes with the ordinal re-created empty (the StatefulSet still
at three), and every other ledger is fully replicated off the dead bookie: no ledger references it, nothing is
under-replicated, and every entry of every other ledger reads back, through our client and Apache BookKeeper's
Java client alike (which finds the loss recorded and none of the given-up entries).

Last, the storage audit's replication check, run as a user runs it against the repaired cluster (``bookie-audit
snapshot`` then ``bookie-audit run`` in local Spark mode, reading each pod's entry logs through its admin API over
``bookie+http://`` with the cluster's read-scope audit token), reports every other ledger fully replicated (every
entry on each bookie of its write set), no fragment on the dead bookie, and the given-up entries as ``given_up``,
the loss their metadata records: no missing, under-replicated or unverified entry, no checksum failure, nothing
flagged corrupt. The same audit code as the operator's run (``spec.audit``), without its cost here: that run
starts Spark's driver and executor pods, and test_operator_on_kubernetes_audit.py covers it."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from bookie.client import BookKeeper
from bookie.client.config import ClientConfig
from bookie.metadata.data_loss import LOST_ENTRIES_KEY
from bookie.metadata.store import MetadataStore
from bookie_fleet.zookeeper import ZooKeeperServer
from bookie_operator import builders
from bookie_operator.models import HTTP_PORT

from tests.operator.audit_runs import entries_on_disk, ledger_dir, pod_ip
from tests.operator.conftest import (
    OperatorProcess,
    await_events,
    bookie_cluster,
    get_cluster,
    patch_spec,
    wait_ready,
)
from tests.operator.java_reads import assert_java_reads_back
from tests.support.kube import KubeTarget, wait_for

ENTRIES = 10


async def write_ledgers(bk: BookKeeper, gone: str) -> tuple[dict[int, list[bytes]], set[int]]:
    """Single-replica ledgers until some are on ``gone`` and some elsewhere, then replicated ones (write
    quorum 2); returns every ledger's entries and the single-replica ledgers on ``gone``."""
    for _ in range(100):                      # Ready means registered; writable may follow a moment later
        if len(await bk.writable_bookies()) == 3:
            break
        await asyncio.sleep(0.2)
    written: dict[int, list[bytes]] = {}
    only_on_gone: set[int] = set()
    for n in itertools.count():
        assert n < 60, "placement never put single-replica ledgers both on and off the bookie to kill"
        if len(only_on_gone) >= 2 and len(written) > len(only_on_gone):
            break
        topic = {"pulsar/managed-ledger": f"public/default/persistent/single-{n}".encode()}
        handle = await bk.create_ledger(ensemble_size=1, write_quorum=1, ack_quorum=1, custom_metadata=topic)
        await fill(handle, written, f"single {n}")
        if handle.metadata.ensembles[0] == (gone,):
            only_on_gone.add(handle.ledger_id)
    for n in range(6):
        handle = await bk.create_ledger(ensemble_size=2, write_quorum=2, ack_quorum=2)
        await fill(handle, written, f"replicated {n}")
    return written, only_on_gone


async def fill(handle: Any, written: dict[int, list[bytes]], name: str) -> None:
    written[handle.ledger_id] = [f"{name} entry {i}".encode() for i in range(ENTRIES)]
    for payload in written[handle.ledger_id]:
        await handle.add(payload)
    await handle.close()


def kill_with_its_disk(kube: KubeTarget, ns: str, pod: str) -> None:
    """Its claims deleted (held back by their protection while the pod uses them), then the pod: the
    StatefulSet's new pod gets empty volumes, whose missing cookie keeps the bookie from starting."""
    base = f"/api/v1/namespaces/{ns}/persistentvolumeclaims"
    claims = {c["metadata"]["name"]: c["metadata"]["uid"] for c in kube.api.request("GET", base)["items"]
              if c["metadata"]["name"].endswith(f"-{pod}")}
    assert claims, f"no claims of {pod}"
    for claim in claims:
        kube.api.request("DELETE", f"{base}/{claim}")
    kube.api.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{pod}")

    def replaced() -> bool:
        now = {name: (kube.get(f"{base}/{name}") or {}).get("metadata", {}).get("uid") for name in claims}
        return all(now[name] != uid for name, uid in claims.items())

    wait_for(replaced, 90, interval=0.5, what=f"the claims of {pod} to be deleted")


def placed(md: Any, ledger_id: int) -> set[tuple[str, int, int]]:
    """(bookie, ledger, entry) of every replica the metadata of a closed ledger places: each entry on the write
    set of its fragment's ensemble."""
    firsts = sorted(md.ensembles)
    out: set[tuple[str, int, int]] = set()
    for first, after in zip(firsts, [*firsts[1:], md.last_entry_id + 1], strict=True):
        ensemble = md.ensembles[first]
        out |= {(ensemble[(e + i) % len(ensemble)], ledger_id, e)
                for e in range(first, after) for i in range(md.write_quorum_size)}
    return out


def audit_through_the_bookies(kube: KubeTarget, ns: str, zk: str, root: str, out: Path) -> Path:
    """The storage audit's replication check as a user runs it against a live cluster: a metadata snapshot, then
    ``bookie-audit run`` in local Spark mode, reading every pod's entry logs through its admin API
    (``bookie+http://``) with the cluster's read-scope audit token. Returns the snapshot's directory; the report's
    tables are in ``out / "report"``."""
    secret = kube.get(f"/api/v1/namespaces/{ns}/secrets/{builders.audit_token_secret_name('bk')}")
    assert secret is not None, "no audit token Secret"
    token = out / "audit-token"
    token.write_bytes(base64.b64decode(secret["data"][builders.ADMIN_TOKEN_KEY]))
    snapshot = out / "snapshot"
    cli = [sys.executable, "-m", "bookie_audit.cli"]
    logs = [arg for i in range(3) for arg in
            ("--logs", f"bookie+http://{pod_ip(kube, ns, builders.pod_name('bk', i))}:{HTTP_PORT}")]
    for argv in (["snapshot", "--zk", zk, "--root", root, "--out", str(snapshot)],
                 ["run", "--metadata", str(snapshot), *logs, "--bookie-token-file", str(token), "--mode", "full",
                  "--master", "local[1]", "--shuffle-partitions", "2", "--out", str(out / "report")]):
        done = subprocess.run([*cli, *argv], capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, f"bookie-audit {argv[0]}: {done.returncode}\n{done.stdout}\n{done.stderr}"
    return snapshot


def assert_audit_finds_only_the_given_up_loss(report: Path, snapshot: Path, written: dict[int, list[bytes]],
                                              lost: set[int], gone: str) -> None:
    """Every other ledger fully replicated (each entry on every bookie of its write set), no ledger placed on
    the dead bookie, and the given-up entries reported as the loss their metadata records, not as corruption
    nor as a new data loss."""
    assert all(gone not in f["ensemble"] for f in pq.read_table(snapshot / "fragments.parquet").to_pylist())
    rows = {r["ledger_id"]: r for r in pq.read_table(report / "replication_ledgers.parquet").to_pylist()}
    assert set(rows) == set(written), "the audit's ledgers are the ones written"
    counts = ("entries", "ok", "under", "missing", "given_up", "unverified")
    for lid, row in rows.items():
        found = {k: row[k] for k in counts}
        if lid in lost:
            assert found == dict.fromkeys(counts, 0) | {"entries": ENTRIES, "given_up": ENTRIES}, f"ledger {lid}: {row}"
            assert json.loads(row["custom_metadata"])[LOST_ENTRIES_KEY] == f"{gone}:0-{ENTRIES - 1}"
        else:
            assert found == dict.fromkeys(counts, 0) | {"entries": ENTRIES, "ok": ENTRIES}, f"ledger {lid}: {row}"
    summary = json.loads((report / "summary.json").read_text())
    replication = {k: v for k, v in summary["replication"].items() if k != "over_replicated"}  # garbage, not loss
    assert replication == {"ok": ENTRIES * (len(written) - len(lost)), "given_up": ENTRIES * len(lost),
                           "checksum_failures": 0}, summary["replication"]
    assert summary["totals"]["flagged"] == 0, "nothing in the entry logs is corrupt or truncated"
    assert not [f for f in summary["findings"] if f.startswith("DATA LOSS")], summary["findings"]


async def test_a_dead_bookies_lost_ledgers_are_given_up_only_once_all_are_named(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess], tmp_path: Path) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    operator_factory(ns)
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, root, replicas=3), namespace=ns)
    wait_ready(kube, ns, "bk", timeout=240)
    gone = f"bk-1.bk-headless.{ns}.svc.cluster.local:3181"
    config = ClientConfig(zk_servers=zookeeper.connect_string, ledgers_root=root)
    async with BookKeeper(config) as bk:
        written, lost = await write_ledgers(bk, gone)
        before = {lid: (await bk.ledger_metadata(lid)).value for lid in lost}
        replicated_on_gone = [lid for lid in written if lid not in lost
                              and gone in (await bk.ledger_metadata(lid)).value.bookies()]
    assert replicated_on_gone, "no replicated ledger on the bookie to kill"

    kill_with_its_disk(kube, ns, "bk-1")
    async with MetadataStore(zookeeper.connect_string, root) as store:
        async def unregistered() -> bool:
            return gone not in await store.list_bookies() and gone not in await store.list_bookies(readonly=True)
        for _ in range(300):
            if await unregistered():
                break
            await asyncio.sleep(0.2)
        assert await unregistered()

    patch_spec(kube, ns, "bk", {"decommission": ["bk-1"]})

    def loss(phase: str) -> dict[str, Any] | None:
        found = get_cluster(kube, ns, "bk")["status"].get("dataLoss")
        return found if found and found["phase"] == phase else None

    listed = wait_for(lambda: loss("AwaitingAcceptance"), 120, interval=0.5, what="the lost ledgers in status")
    assert {lg["ledgerId"] for lg in listed["ledgers"]} == lost and set(listed["notAccepted"]) == lost
    assert all(lg["topic"].startswith("persistent://public/default/single-")
               and lg["lostEntries"] == [f"0-{ENTRIES - 1}"] for lg in listed["ledgers"])
    await_events(kube, ns, "bk", "DataLossNotAccepted")

    short = sorted(lost)[1:]                     # one lost ledger left out: still refused, nothing changes
    patch_spec(kube, ns, "bk", {"acceptDataLoss": short})
    wait_for(lambda: (lg := loss("AwaitingAcceptance")) and lg["notAccepted"] == sorted(lost)[:1], 60,
             interval=0.5, what="the refusal naming the ledger left out")
    assert get_cluster(kube, ns, "bk")["status"]["decommissionRequests"][0]["phase"] in (
        "MarkingReadOnly", "Recovering", "AwaitingReplication")
    async with BookKeeper(config) as bk:
        assert {lid: (await bk.ledger_metadata(lid)).value for lid in lost} == before

    patch_spec(kube, ns, "bk", {"acceptDataLoss": sorted(lost)})
    wait_for(lambda: gone in get_cluster(kube, ns, "bk")["status"].get("decommissioned", []), 300, interval=1,
             what="the forced decommission of bk-1 to finish")
    assert (kube.get(f"/apis/apps/v1/namespaces/{ns}/statefulsets/bk") or {}).get("spec", {}).get("replicas") == 3
    given_up = get_cluster(kube, ns, "bk")["status"]["dataLoss"]
    assert given_up["phase"] == "GivenUp" and {lg["ledgerId"] for lg in given_up["ledgers"]} == lost
    assert len(await_events(kube, ns, "bk", "EntriesGivenUp", at_least=len(lost))) == len(lost)

    async with MetadataStore(zookeeper.connect_string, root) as store:
        assert await store.list_underreplicated() == []
        assert gone in await store.list_bookies()           # the new, empty bookie under the same id
    replicas: set[tuple[str, int, int]] = set()
    async with BookKeeper(config) as bk:
        for lid, payloads in written.items():
            md = (await bk.ledger_metadata(lid)).value
            assert all(gone not in e for e in md.ensembles.values()), f"ledger {lid} still references {gone}"
            if lid in lost:
                assert md.custom_metadata[LOST_ENTRIES_KEY] == f"{gone}:0-{ENTRIES - 1}".encode()
                continue
            replicas |= placed(md, lid)
            reader = await bk.open_ledger(lid)
            assert [e.payload for e in await reader.read(0, ENTRIES - 1)] == payloads, f"ledger {lid}"
        # Apache BookKeeper's own client reads the repaired metadata the same: the loss recorded, the holes empty.
        seen = await assert_java_reads_back(bk, written, gone, given_up=frozenset(lost))
        for lid in lost:
            assert seen[lid].custom_metadata[LOST_ENTRIES_KEY] == f"{gone}:0-{ENTRIES - 1}".encode()

    # The storage audit, as a user checks the fleet after the repair: it reads entry logs only, so first every
    # replica the repair wrote is let reach them (the bookies checkpoint every second).
    disks = {builders.bookie_id("bk", ns, i): ledger_dir(kube, ns, "bk", i) for i in range(3)}

    def checkpointed() -> bool:
        on_disk = {(b, lid, e) for b, d in disks.items() for lid, e in entries_on_disk(d)}
        return replicas <= on_disk

    wait_for(checkpointed, 60, interval=1, what="every replica in the bookies' entry logs")
    snapshot = await asyncio.to_thread(audit_through_the_bookies, kube, ns, zookeeper.connect_string, root, tmp_path)
    assert_audit_finds_only_the_given_up_loss(tmp_path / "report", snapshot, written, lost, gone)
