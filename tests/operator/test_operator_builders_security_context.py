"""The bookie pods the builders make meet the ``restricted`` Pod Security Standard, for both bookie
implementations: non-root with the images' own numeric uid, no capabilities, no privilege escalation, the
runtime's default seccomp profile, a read-only root filesystem and writable volumes where the bookie writes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from bookie_operator import builders
from bookie_operator.builders import Owner

from tests.operator.helpers import spec

OWNER = Owner("bk", "ns", "uid-1")
REPO = Path(__file__).resolve().parents[2]
JAVA = {"implementation": "apache-bookkeeper", "image": "bookie-fleet/apache-bookkeeper:4.18.0"}
# The volume types the restricted profile admits.
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                      "projected", "secret"}


def pod_spec(**fields: Any) -> dict[str, Any]:
    sts = builders.statefulset(OWNER, spec(**fields), 3)
    return dict(sts["spec"]["template"]["spec"])


@pytest.mark.parametrize("fields", [{}, JAVA], ids=["bookie-fleet", "apache-bookkeeper"])
def test_pod_and_container_meet_the_restricted_profile(fields: dict[str, Any]) -> None:
    pod = pod_spec(**fields)
    sc = pod["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["runAsUser"] == builders.BOOKIE_UID != 0
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert sc["fsGroup"] == builders.BOOKIE_UID
    # Apache BookKeeper's bookies have the inspector beside them: it meets the profile too.
    assert [c["name"] for c in pod["containers"]] == (["bookie", "inspector"] if fields else ["bookie"])
    for container in pod["containers"]:
        csc = container["securityContext"]
        assert csc["allowPrivilegeEscalation"] is False
        assert csc["capabilities"] == {"drop": ["ALL"]}
        assert csc["readOnlyRootFilesystem"] is True
        assert not {"privileged", "procMount", "seLinuxOptions", "windowsOptions"} & set(csc)
        for port in container["ports"]:
            assert "hostPort" not in port
    assert not {"hostNetwork", "hostPID", "hostIPC"} & set(pod)
    for volume in pod["volumes"]:
        assert set(volume) - {"name"} <= RESTRICTED_VOLUMES, volume


@pytest.mark.parametrize("fields", [{}, JAVA], ids=["bookie-fleet", "apache-bookkeeper"])
def test_the_bookie_writes_only_to_volumes(fields: dict[str, Any]) -> None:
    pod = pod_spec(**fields)
    bookie = pod["containers"][0]
    mounts = {m["mountPath"]: m for m in bookie["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    # /tmp: the Java entrypoint writes its configuration there, the JVM its perf data, Python its temp files.
    assert volumes[mounts["/tmp"]["name"]] == {"name": "tmp", "emptyDir": {}}
    claims = {c["metadata"]["name"] for c in builders.statefulset(OWNER, spec(**fields), 3)["spec"]
              ["volumeClaimTemplates"]}
    assert {mounts["/bookie/journal-0"]["name"], mounts["/bookie/ledgers-0"]["name"]} <= claims
    if not fields:
        assert volumes[mounts[builders.RUN_DIR]["name"]]["emptyDir"] == {}   # the start-up copy of the config
    writable = {path for path, m in mounts.items() if not m.get("readOnly")}
    assert all(path.startswith(("/bookie/", "/tmp", builders.RUN_DIR)) for path in writable), writable


def test_the_uid_is_the_one_both_images_run_as() -> None:
    """runAsNonRoot can only be verified against a numeric user, and the pod's uid must own the image's files."""
    for dockerfile in ("bookie_image/Dockerfile", "hack/apache-bookkeeper/Dockerfile"):
        users = re.findall(r"^USER\s+(\S+)", (REPO / dockerfile).read_text(), re.MULTILINE)
        assert users[-1] == f"{builders.BOOKIE_UID}:{builders.BOOKIE_UID}", dockerfile


def test_escape_hatches_cannot_take_the_writable_tmp() -> None:
    with pytest.raises(ValueError, match=r"spec.extraVolumes\[0\].name: tmp is the operator's"):
        spec(extraVolumes=[{"name": "tmp", "emptyDir": {}}])
    with pytest.raises(ValueError, match=r"spec.extraVolumeMounts\[0\].mountPath: /tmp is the bookie's own"):
        spec(extraVolumes=[{"name": "scratch", "emptyDir": {}}],
             extraVolumeMounts=[{"name": "scratch", "mountPath": "/tmp"}])
    spec(extraVolumes=[{"name": "tmpdata", "emptyDir": {}}],          # names that only start alike are free
         extraVolumeMounts=[{"name": "tmpdata", "mountPath": "/tmp/data"}])


@pytest.mark.parametrize("fields", [{}, JAVA], ids=["bookie-fleet", "apache-bookkeeper"])
def test_the_uid_and_gid_can_be_chosen_and_stay_non_root(fields: dict[str, Any]) -> None:
    """A platform that assigns each namespace its uid range: spec.podSecurity sets the uid and gid, the volumes
    follow the gid, and the rest of the restricted profile is unchanged."""
    default = pod_spec(**fields)["securityContext"]
    chosen = pod_spec(**fields, podSecurity={"runAsUser": 1000650000, "runAsGroup": 1000650001})["securityContext"]
    assert (chosen["runAsUser"], chosen["runAsGroup"], chosen["fsGroup"]) == (1000650000, 1000650001, 1000650001)
    assert {k: v for k, v in chosen.items() if k not in {"runAsUser", "runAsGroup", "fsGroup"}} == \
        {k: v for k, v in default.items() if k not in {"runAsUser", "runAsGroup", "fsGroup"}}
    assert (default["runAsUser"], default["runAsGroup"]) == (builders.BOOKIE_UID, builders.BOOKIE_UID)


@pytest.mark.parametrize("field", ["runAsUser", "runAsGroup"])
def test_root_is_refused(field: str) -> None:
    with pytest.raises(ValueError, match=f"podSecurity.{field}"):
        spec(podSecurity={field: 0})


def test_the_inspector_reads_the_bookies_ledger_volumes_and_writes_none() -> None:
    pod = pod_spec(**JAVA, storage={"ledgers": {"count": 2}})
    bookie, inspector = pod["containers"]
    mounts = {m["mountPath"]: m for m in inspector["volumeMounts"]}
    ledger_mounts = {m["mountPath"]: m["name"] for m in bookie["volumeMounts"] if m["name"].startswith("ledgers-")}
    assert len(ledger_mounts) == 2
    for path, name in ledger_mounts.items():   # at the bookie's own paths, read-only
        assert mounts[path] == {"name": name, "mountPath": path, "readOnly": True}
    assert not any(m["name"].startswith("journal-") for m in mounts.values()), "the journal is the bookie's alone"
    writable = {path for path, m in mounts.items() if not m.get("readOnly")}
    assert writable == {"/tmp", builders.RUN_DIR}
    assert "inspector" not in {c["name"] for c in pod_spec(**JAVA, inspector={"enabled": False})["containers"]}


@pytest.mark.parametrize("fields", [{}, JAVA, {"serviceAccountName": "bookies"}],
                         ids=["bookie-fleet", "apache-bookkeeper", "named-service-account"])
def test_bookie_pods_get_no_service_account_token(fields: dict[str, Any]) -> None:
    """The bookies never call the Kubernetes API: no token is mounted, whichever ServiceAccount the pods run as."""
    assert pod_spec(**fields)["automountServiceAccountToken"] is False
