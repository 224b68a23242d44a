"""The securityContext rules of the container runtime as pure functions: the user and groups containerd
derives, the kubelet's runAsNonRoot messages, capability sets, no_new_privs, image name normalisation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from localkube.runner import security
from localkube.runner.imagestore import normalise

POD: dict[str, Any] = {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": {}}


def _pod(**pod_sc: Any) -> dict[str, Any]:
    return {**POD, "spec": {"securityContext": pod_sc}}


@pytest.fixture
def rootfs(tmp_path: Path) -> Path:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd").write_text("root:x:0:0::/root:/bin/sh\napp:x:1000:1001::/home/app:/bin/sh\n")
    (tmp_path / "etc" / "group").write_text("root:x:0:\napp:x:1001:\nextra:x:3000:app,other\n")
    return tmp_path


@pytest.mark.parametrize(("image_user", "pod_sc", "expected"), [
    ("", {}, {"uid": 0, "gid": 0, "additionalGids": [0]}),
    ("1000", {}, {"uid": 1000, "gid": 1001, "additionalGids": [1001, 3000]}),
    ("app", {}, {"uid": 1000, "gid": 1001, "additionalGids": [1001, 3000]}),
    ("1000:5", {}, {"uid": 1000, "gid": 5, "additionalGids": [5, 3000]}),
    ("4242", {}, {"uid": 4242, "gid": 0, "additionalGids": [0]}),       # not in /etc/passwd: gid 0
    ("1000", {"runAsUser": 7, "fsGroup": 2000, "supplementalGroups": [9]},
     {"uid": 7, "gid": 0, "additionalGids": [0, 9, 2000]}),
    ("1000", {"runAsGroup": 8}, {"uid": 1000, "gid": 8, "additionalGids": [8, 3000]}),
])
def test_process_user(rootfs: Path, image_user: str, pod_sc: dict[str, Any], expected: dict[str, Any]) -> None:
    assert security.process_user(_pod(**pod_sc), {"name": "c"}, security.ImageUser.parse(image_user),
                                 rootfs) == expected


def test_unknown_user_name_is_an_error(rootfs: Path) -> None:
    with pytest.raises(security.SecurityError, match="unable to find user nobody"):
        security.process_user(POD, {"name": "c"}, security.ImageUser.parse("nobody"), rootfs)


@pytest.mark.parametrize(("image_user", "pod_sc", "container_sc", "message"), [
    ("", {"runAsNonRoot": True}, {}, "container has runAsNonRoot and image will run as root"),
    ("0:0", {}, {"runAsNonRoot": True}, "container has runAsNonRoot and image will run as root"),
    ("app", {"runAsNonRoot": True}, {}, "container has runAsNonRoot and image has non-numeric user (app), "
                                        "cannot verify user is non-root"),
    ("1000", {"runAsNonRoot": True, "runAsUser": 0}, {}, "container's runAsUser breaks non-root policy"),
    ("1000", {"runAsNonRoot": True}, {}, None),
    ("", {"runAsNonRoot": True}, {"runAsUser": 5}, None),
    ("", {"runAsNonRoot": True}, {"runAsNonRoot": False}, None),     # the container's field wins
])
def test_run_as_non_root(image_user: str, pod_sc: dict[str, Any], container_sc: dict[str, Any],
                         message: str | None) -> None:
    container = {"name": "c", "securityContext": container_sc}
    if message is None:
        security.verify_run_as_non_root(_pod(**pod_sc), container, security.ImageUser.parse(image_user))
        return
    with pytest.raises(security.SecurityError) as info:
        security.verify_run_as_non_root(_pod(**pod_sc), container, security.ImageUser.parse(image_user))
    assert str(info.value) == f'{message} (pod: "p_ns(u1)", container: c)'


def test_capabilities_and_no_new_privileges() -> None:
    assert security.capabilities({})["bounding"] == list(security.DEFAULT_CAPS)
    dropped = security.capabilities({"securityContext": {"capabilities": {"drop": ["ALL"], "add": ["SYS_TIME"]}}})
    assert dropped == {"bounding": ["CAP_SYS_TIME"], "effective": ["CAP_SYS_TIME"], "permitted": ["CAP_SYS_TIME"],
                       "inheritable": [], "ambient": []}
    assert "CAP_NET_RAW" not in security.capabilities(
        {"securityContext": {"capabilities": {"drop": ["NET_RAW"]}}})["bounding"]
    assert security.no_new_privileges({"securityContext": {"allowPrivilegeEscalation": False}})
    assert not security.no_new_privileges({})   # the kubelet leaves it off unless asked
    assert not security.no_new_privileges({"securityContext": {"allowPrivilegeEscalation": True}})


@pytest.mark.parametrize(("image", "ref"), [
    ("busybox", "busybox:latest"), ("docker.io/library/busybox:1.36", "busybox:1.36"),
    ("docker.io/bookie-fleet/bookie:0.4.0", "bookie-fleet/bookie:0.4.0"),
    ("registry.example:5000/team/app", "team/app:latest"), ("localhost/a/b:1", "a/b:1"),
    ("a/b@sha256:00ff", "a/b@sha256:00ff"),
])
def test_image_names(image: str, ref: str) -> None:
    assert normalise(image) == ref
