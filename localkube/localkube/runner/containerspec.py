"""The parts of a container's runc spec that come from the pod rather than the image: the environment the
kubelet adds, the seccomp profile, and the pod's files bind-mounted into the container."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from localkube.runner import security
from localkube.runner.imagestore import DEFAULT_PATH, Image
from localkube.runner.runtime import bind_mount
from localkube.runner.termination import termination_log_path

Obj = dict[str, Any]
SHIM_IN_CONTAINER = "/dev/.localkube/bindshim.so"   # on the container's own /dev tmpfs: the image is untouched


def base_env(image: Image, hostname: str, apiserver_port: int) -> dict[str, str]:
    """The image's ENV, then what the kubelet adds (HOSTNAME, the API server's service variables)."""
    port = str(apiserver_port)
    env = {"PATH": DEFAULT_PATH, **image.env, "HOSTNAME": hostname}
    env.update({"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port,
                "KUBERNETES_SERVICE_PORT_HTTPS": port, "KUBERNETES_PORT": f"tcp://127.0.0.1:{port}",
                "KUBERNETES_PORT_443_TCP": f"tcp://127.0.0.1:{port}", "KUBERNETES_PORT_443_TCP_PROTO": "tcp",
                "KUBERNETES_PORT_443_TCP_ADDR": "127.0.0.1", "KUBERNETES_PORT_443_TCP_PORT": port})
    return env


def argv(image: Image, command: list[str], args: list[str]) -> list[str]:
    """Kubernetes' rule: ``command`` replaces ENTRYPOINT (and drops CMD), ``args`` replace CMD."""
    return [*command, *args] if command else [*image.entrypoint, *(args or image.cmd)]


def seccomp(pod: Obj, container: Obj) -> Obj | None:
    kind = security.seccomp_type(pod, container)
    if kind == "RuntimeDefault":
        uname = os.uname()
        return security.runtime_default_seccomp(security.load_seccomp_profile(),
                                                security.capabilities(container)["bounding"], uname.machine,
                                                uname.release)
    if kind == "Unconfined":
        return None
    raise security.SecurityError(f"seccomp profile type {kind} is not supported by localkube "
                                 "(RuntimeDefault and Unconfined are)")


def pod_file_mounts(pod_dir: Path, container: Obj, hostname: str, hosts: Path, bind_shim: Path | None) -> list[Obj]:
    """/etc/hosts, /etc/hostname, /etc/resolv.conf (read-only with a read-only root), the container's
    termination log and the bind shim, as OCI bind mounts."""
    readonly_root = bool((container.get("securityContext") or {}).get("readOnlyRootFilesystem"))
    hostname_file = pod_dir / "etc-hostname"
    hostname_file.write_text(hostname + "\n")
    resolv = pod_dir / "etc-resolv.conf"
    if not resolv.exists():
        shutil.copyfile("/etc/resolv.conf", resolv)
    term = termination_log_path(pod_dir, container["name"])
    term.parent.mkdir(parents=True, exist_ok=True)
    term.write_bytes(b"")   # a fresh message for every container start
    term.chmod(0o666)       # written by the container's user, whoever that is
    mounts = [bind_mount(str(hosts), "/etc/hosts", readonly_root),
              bind_mount(str(hostname_file), "/etc/hostname", readonly_root),
              bind_mount(str(resolv), "/etc/resolv.conf", readonly_root),
              bind_mount(str(term), container.get("terminationMessagePath") or "/dev/termination-log", False)]
    if bind_shim is not None:
        mounts.append(bind_mount(str(bind_shim), SHIM_IN_CONTAINER, True))
    return mounts
