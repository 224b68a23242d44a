"""The whole reconcile of an online volume expansion, without a cluster: each Bound claim patched once, its
progress through the resize protocol kept in status.volumeExpansion, and an operator that restarts in the
middle carrying on from the claims without patching or announcing anything twice."""

from __future__ import annotations

from typing import Any

from tests.operator.fakes import NS, World, cluster_spec

Obj = dict[str, Any]


def claims(w: World) -> dict[str, Obj]:
    return {name: o for (kind, _, name), o in w.kube.objects.items() if kind == "PersistentVolumeClaim"}


def bind_claims(w: World, size: str) -> None:
    """The StatefulSet controller's and the provisioner's part: a Bound claim per bookie volume."""
    w.kube.objects[("StorageClass", "", "expandable")] = {"kind": "StorageClass", "metadata": {"name": "expandable"},
                                                        "allowVolumeExpansion": True}
    for ordinal in range(3):
        for volume in ("journal-0", "ledgers-0"):
            name = f"{volume}-bk-{ordinal}"
            w.kube.objects[("PersistentVolumeClaim", NS, name)] = {
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": NS, "labels": {"app.kubernetes.io/name": "bookie",
                                                                       "app.kubernetes.io/instance": "bk"}},
                "spec": {"storageClassName": "expandable", "resources": {"requests": {"storage": size}}},
                "status": {"phase": "Bound", "capacity": {"storage": size}}}


def resize(w: World, name: str, allocated: str | None, capacity: str | None = None) -> None:
    status = w.kube.objects[("PersistentVolumeClaim", NS, name)]["status"]
    status["allocatedResourceStatuses"] = {"storage": allocated} if allocated else {}
    if capacity:
        status["capacity"] = {"storage": capacity}


def phases(w: World) -> dict[str, str]:
    return {c["claim"]: c["phase"] for c in w.status["volumeExpansion"]["claims"]}


async def test_an_expansion_survives_an_operator_restart() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(storage={"journal": {"size": "1Gi"}, "ledgers": {"size": "1Gi"}}))
    await w.tick()
    bind_claims(w, "1Gi")
    await w.tick()
    assert "volumeExpansion" not in w.status          # nothing to grow: no run

    w.kube.patch_spec("bk", {"storage": {"ledgers": {"size": "2Gi"}}})
    await w.tick()
    ledgers = [f"ledgers-0-bk-{i}" for i in range(3)]
    assert [claims(w)[c]["spec"]["resources"]["requests"]["storage"] for c in ledgers] == ["2Gi"] * 3
    assert claims(w)["ledgers-0-bk-0"]["spec"]["storageClassName"] == "expandable"
    run = w.status["volumeExpansion"]
    assert (run["ledgersSize"], run["journalSize"], run.get("completedAt")) == ("2Gi", "1Gi", None)
    assert {c: phases(w)[c] for c in ledgers} == dict.fromkeys(ledgers, "Requested")
    assert len(w.kube.reasons("VolumeExpansionRequested")) == 3
    started = run["startedAt"]

    resize(w, ledgers[0], "NodeResizePending")
    resize(w, ledgers[1], "ControllerResizeInProgress")
    w.operator = w.new_operator()                     # the operator restarts mid-way
    await w.tick()
    assert phases(w)[ledgers[0]] == "FileSystemResizePending" and phases(w)[ledgers[1]] == "ControllerResizing"
    assert w.status["volumeExpansion"]["startedAt"] == started
    assert len(w.kube.reasons("VolumeExpansionRequested")) == 3 and len(w.kube.reasons("VolumeExpansionStarted")) == 1

    for name in ledgers:
        resize(w, name, None, capacity="2Gi")
    await w.tick()
    run = w.status["volumeExpansion"]
    assert run["completedAt"] and set(phases(w).values()) == {"Expanded"}
    assert len(w.kube.reasons("VolumeExpanded")) == 3 and len(w.kube.reasons("VolumesExpanded")) == 1
    condition = next(c for c in w.status["conditions"] if c["type"] == "VolumeExpansion")
    assert (condition["status"], condition["reason"]) == ("False", "Expanded")
    await w.tick()
    assert len(w.kube.reasons("VolumesExpanded")) == 1
