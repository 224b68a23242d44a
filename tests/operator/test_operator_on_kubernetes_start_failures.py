"""Bookies that cannot start are reported where operators look: the pod's termination message, the
BookieCluster's ``bookies[].startFailure``, ``Degraded`` with a specific reason naming the bookies, and one
Warning Event per bookie and reason.

The volume-reuse case: a BookieCluster deleted with its claims kept (the default) and created again against a
fresh metadata root; its bookies find cookies of the old BookKeeper instance on their volumes. Following the
documented fix (delete the claims, then the pods) brings it to Ready, and so does the explicit opt-in that lets
the operator delete them. Apache BookKeeper's bookies, which write no termination message, are recognised
from the end of their log; the Java bookie image without an Apache BookKeeper the operator manages says so
itself (UnsupportedVersion). And a read-only ledger volume."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import Any

from bookie_fleet.zookeeper import ZooKeeperServer
from bookie_operator import crd

from tests.operator.conftest import (
    JAVA,
    OperatorProcess,
    SmallVolumes,
    await_events,
    bookie_cluster,
    condition,
    get_cluster,
    wait_ready,
)
from tests.support.kube import KubeTarget, wait_for

Obj = dict[str, Any]


def degraded_with(kube: KubeTarget, ns: str, name: str, reason: str, failing: int) -> Callable[[], Obj | None]:
    def check() -> Obj | None:
        obj = get_cluster(kube, ns, name)
        c = condition(obj, "Degraded")
        failed = [b for b in obj.get("status", {}).get("bookies", []) if b.get("startFailure")]
        return obj if c and c["status"] == "True" and c["reason"] == reason and len(failed) == failing else None

    return check


def termination_message(pod: Obj) -> str:
    status = pod["status"]["containerStatuses"][0]
    term = status.get("lastState", {}).get("terminated") or status.get("state", {}).get("terminated") or {}
    return str(term.get("message", ""))


def test_recreated_cluster_on_old_claims_is_cookie_mismatch_until_the_claims_are_deleted(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    ns = kube_namespace
    operator_factory(ns)
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, f"/{ns}/first/ledgers"), namespace=ns)
    old_id = wait_ready(kube, ns, "bk")["status"]["instanceId"]

    # Deleted with its claims kept, then created again against a fresh metadata root.
    kube.kubectl("-n", ns, "delete", f"{crd.models.PLURAL}.{crd.models.GROUP}", "bk", "--wait=true")
    wait_for(lambda: not kube.pods(ns), 120, what="the old bookies gone")
    claims = sorted(p["metadata"]["name"] for p in
                    kube.api.request("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"])
    assert claims == sorted(f"{v}-bk-{i}" for v in ("journal-0", "ledgers-0") for i in range(3))
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, f"/{ns}/second/ledgers"), namespace=ns)

    obj = wait_for(degraded_with(kube, ns, "bk", "CookieMismatch", 3), 240, interval=1,
                   what="Degraded CookieMismatch for the three bookies")
    new_id = obj["status"]["instanceId"]
    assert new_id and new_id != old_id
    message = condition(obj, "Degraded")["message"]  # type: ignore[index]
    assert message.startswith("bk-0, bk-1, bk-2 cannot start (CookieMismatch): their volumes hold cookies of "
                              f"BookKeeper instance '{old_id}' but the metadata service "
                              f"{zookeeper.connect_string}/{ns}/second/ledgers is instance '{new_id}'"), message
    assert all(c in message for c in claims)
    for b in obj["status"]["bookies"]:
        failure = b["startFailure"]
        assert failure["reason"] == "CookieMismatch" and failure["since"]
        assert f"instance id '{new_id}' != '{old_id}'" in failure["message"]
    for pod in kube.pods(ns):
        assert termination_message(pod).startswith("CookieMismatch: cookie check failed: /bookie/"), pod["status"]
    ready = condition(obj, "Ready")
    assert ready is not None and ready["status"] == "False"

    # One Warning Event per bookie, not one per tick: wait for a few more restarts and ticks.
    warned = await_events(kube, ns, "bk", "CookieMismatch", at_least=3)
    assert len(warned) == 3 and all(e["type"] == "Warning" for e in warned)
    assert any(f"volumes hold a cookie of BookKeeper instance '{old_id}'" in e["message"] for e in warned)
    time.sleep(10)
    assert len(await_events(kube, ns, "bk", "CookieMismatch", at_least=3)) == 3

    # The documented fix: delete the claims, then the pods; the bookies start again, empty.
    kube.kubectl("-n", ns, "delete", "pvc", *claims, "--wait=false")
    kube.kubectl("-n", ns, "delete", "pod", "bk-0", "bk-1", "bk-2", "--wait=false")
    obj = wait_ready(kube, ns, "bk", timeout=300)
    degraded = condition(obj, "Degraded")
    assert degraded is not None and degraded["status"] == "False", degraded
    assert not any(b.get("startFailure") for b in obj["status"]["bookies"])


def test_read_only_ledger_volume_is_directory_not_writable(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess],
        small_ledger_volumes: Callable[[str, int, int], SmallVolumes]) -> None:
    ns = kube_namespace
    vols = small_ledger_volumes("ro", 1, 16)
    path = vols.paths["ledgers-0-ro-0"]
    subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True)
    operator_factory(ns)
    kube.apply(bookie_cluster("ro", zookeeper.connect_string, f"/{ns}/ledgers", replicas=1, ensembleSize=1,
                              storage={"ledgers": {"size": "16Mi", "storageClassName": vols.storage_class}}),
               namespace=ns)

    obj = wait_for(degraded_with(kube, ns, "ro", "DirectoryNotWritable", 1), 180, interval=1,
                   what="Degraded DirectoryNotWritable")
    message = condition(obj, "Degraded")["message"]  # type: ignore[index]
    assert message.startswith("ro-0 cannot start (DirectoryNotWritable): directory /bookie/ledgers-0 is not "
                              "writable (Read-only file system)"), message
    assert obj["status"]["bookies"][0]["startFailure"]["reason"] == "DirectoryNotWritable"
    [pod] = kube.pods(ns)
    assert termination_message(pod).startswith("DirectoryNotWritable: directory /bookie/ledgers-0 is not writable")
    assert len(await_events(kube, ns, "ro", "DirectoryNotWritable", at_least=1)) == 1


def test_the_operator_reclaims_old_volumes_only_when_the_spec_names_their_instance(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    ns = kube_namespace
    operator_factory(ns)
    one = {"replicas": 1, "ensembleSize": 1}
    kube.apply(bookie_cluster("re", zookeeper.connect_string, f"/{ns}/first/ledgers", **one), namespace=ns)
    old_id = wait_ready(kube, ns, "re")["status"]["instanceId"]
    kube.kubectl("-n", ns, "delete", f"{crd.models.PLURAL}.{crd.models.GROUP}", "re", "--wait=true")
    wait_for(lambda: not kube.pods(ns), 120, what="the old bookie gone")
    kube.apply(bookie_cluster("re", zookeeper.connect_string, f"/{ns}/second/ledgers", **one), namespace=ns)
    wait_for(degraded_with(kube, ns, "re", "CookieMismatch", 1), 240, interval=1, what="Degraded CookieMismatch")
    claims = kube.api.request("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"]
    assert len(claims) == 2, "nothing is deleted without the opt-in"

    kube.apply(bookie_cluster("re", zookeeper.connect_string, f"/{ns}/second/ledgers",
                              storage={"reclaimVolumesOfInstance": old_id}, **one), namespace=ns)
    obj = wait_ready(kube, ns, "re", timeout=300)
    assert not obj["status"]["bookies"][0].get("startFailure")
    reclaimed = await_events(kube, ns, "re", "VolumesReclaimed")
    assert len(reclaimed) == 1 and "journal-0-re-0, ledgers-0-re-0" in reclaimed[0]["message"]
    uids = {c["metadata"]["uid"] for c in claims}
    now = kube.api.request("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"]
    assert len(now) == 2 and not uids & {c["metadata"]["uid"] for c in now}, "new, empty claims"


def test_apache_bookkeeper_bookies_on_old_claims_are_cookie_mismatch_from_their_log(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    ns = kube_namespace
    operator_factory(ns)
    java = {"replicas": 1, "ensembleSize": 1, **JAVA}
    kube.apply(bookie_cluster("jb", zookeeper.connect_string, f"/{ns}/first/ledgers", **java), namespace=ns)
    old_id = wait_ready(kube, ns, "jb", timeout=240)["status"]["instanceId"]
    kube.kubectl("-n", ns, "delete", f"{crd.models.PLURAL}.{crd.models.GROUP}", "jb", "--wait=true")
    wait_for(lambda: not kube.pods(ns), 120, what="the old bookie gone")
    kube.apply(bookie_cluster("jb", zookeeper.connect_string, f"/{ns}/second/ledgers", **java), namespace=ns)
    obj = wait_for(degraded_with(kube, ns, "jb", "CookieMismatch", 1), 300, interval=1,
                   what="Degraded CookieMismatch")
    new_id = obj["status"]["instanceId"]
    message = condition(obj, "Degraded")["message"]  # type: ignore[index]
    assert message.startswith("jb-0 cannot start (CookieMismatch): their volumes hold cookies of BookKeeper "
                              f"instance '{old_id}' but the metadata service {zookeeper.connect_string}/{ns}/second/"
                              f"ledgers is instance '{new_id}'"), message
    failure = obj["status"]["bookies"][0]["startFailure"]
    assert failure["message"] == ("org.apache.bookkeeper.bookie.BookieException$InvalidCookieException: "
                                  f"instanceId {new_id} is not matching with {old_id}")
    [pod] = kube.pods(ns)
    assert failure["message"] in termination_message(pod), "the end of the Java bookie's log"
    assert len(await_events(kube, ns, "jb", "CookieMismatch", at_least=1)) == 1


def test_a_java_bookie_image_without_a_supported_bookkeeper_is_unsupported_version(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    """The Java bookie image with its classpath hidden under an empty volume holds no Apache BookKeeper the
    operator manages: its entrypoint stops before the JVM (the versions found and supported named, as
    tests/images/test_images_java_bookie_refuses_unsupported_versions.py shows for an image of another version),
    as the image's user, in the pod's termination message, which the operator shows in Degraded."""
    ns = kube_namespace
    operator_factory(ns)
    java = {"replicas": 1, "ensembleSize": 1, **JAVA, "extraVolumes": [{"name": "no-jars", "emptyDir": {}}],
            "extraVolumeMounts": [{"name": "no-jars", "mountPath": "/opt/bookkeeper/lib"}]}
    kube.apply(bookie_cluster("uv", zookeeper.connect_string, f"/{ns}/ledgers", **java), namespace=ns)
    obj = wait_for(degraded_with(kube, ns, "uv", "UnsupportedVersion", 1), 180, interval=1,
                   what="Degraded UnsupportedVersion")
    said = ("the image runs no Apache BookKeeper bookie (no bookkeeper-server jar in /opt/bookkeeper/lib), the "
            "operator supports Apache BookKeeper 4.17, 4.18 (BOOKIE_FLEET_BOOKKEEPER_VERSIONS): set spec.image to "
            "an image of one of those versions")
    message = condition(obj, "Degraded")["message"]  # type: ignore[index]
    assert message == f"uv-0 cannot start (UnsupportedVersion): {said} (spec.image {JAVA['image']})", message
    assert obj["status"]["bookies"][0]["startFailure"]["message"] == said
    [pod] = kube.pods(ns)
    assert termination_message(pod) == f"UnsupportedVersion: {said}"
    assert len(await_events(kube, ns, "uv", "UnsupportedVersion", at_least=1)) == 1
