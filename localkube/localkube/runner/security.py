"""A container's securityContext as the kubelet and containerd turn it into a process: user and groups,
the runAsNonRoot check, capabilities, no_new_privs, seccomp, and fsGroup ownership of volumes.

Container fields override pod fields (the kubelet's ``DetermineEffectiveSecurityContext``).
"""

from __future__ import annotations

import functools
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Obj = dict[str, Any]

# containerd's default capability set (the Docker one), given to a container unless it drops them.
DEFAULT_CAPS = ("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
                "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
                "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE")
ALL_CAPS = (*DEFAULT_CAPS, "CAP_DAC_READ_SEARCH", "CAP_LINUX_IMMUTABLE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN",
            "CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_PTRACE", "CAP_SYS_PACCT",
            "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE", "CAP_SYS_TIME",
            "CAP_SYS_TTY_CONFIG", "CAP_LEASE", "CAP_AUDIT_CONTROL", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN",
            "CAP_SYSLOG", "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
            "CAP_CHECKPOINT_RESTORE")
# Volume types whose ownership the kubelet manages with fsGroup (the writable, pod-owned ones).
FS_GROUP_VOLUMES = ("emptyDir", "persistentVolumeClaim", "ephemeral")


class SecurityError(ValueError):
    """The container cannot start under its securityContext (CreateContainerConfigError)."""


def effective(pod: Obj, container: Obj) -> Obj:
    """The container's securityContext with the pod's fields filled in where the container has none."""
    pod_sc = pod["spec"].get("securityContext") or {}
    merged = {k: pod_sc[k] for k in ("runAsUser", "runAsGroup", "runAsNonRoot", "seccompProfile") if k in pod_sc}
    merged.update(container.get("securityContext") or {})
    return merged


@dataclass(frozen=True)
class ImageUser:
    """An image's USER: a numeric uid (and maybe gid) or a name."""

    uid: int | None
    gid: int | None
    name: str

    @classmethod
    def parse(cls, user: str) -> ImageUser:
        name, _, group = (user or "").partition(":")
        uid = int(name) if name.isdigit() else (0 if not name else None)
        gid = int(group) if group.isdigit() else None
        return cls(uid, gid, name if uid is None else "")


def verify_run_as_non_root(pod: Obj, container: Obj, image_user: ImageUser) -> None:
    """The kubelet's ``verifyRunAsNonRoot``, with its error texts."""
    sc = effective(pod, container)
    if not sc.get("runAsNonRoot"):
        return
    meta = pod["metadata"]
    where = f'(pod: "{meta["name"]}_{meta["namespace"]}({meta["uid"]})", container: {container["name"]})'
    if sc.get("runAsUser") is not None:
        if int(sc["runAsUser"]) == 0:
            raise SecurityError(f"container's runAsUser breaks non-root policy {where}")
        return
    if image_user.uid == 0:
        raise SecurityError(f"container has runAsNonRoot and image will run as root {where}")
    if image_user.uid is None and image_user.name:
        raise SecurityError(f"container has runAsNonRoot and image has non-numeric user ({image_user.name}), "
                            f"cannot verify user is non-root {where}")


def _table(path: Path) -> list[list[str]]:
    try:
        return [line.split(":") for line in path.read_text().splitlines() if line and not line.startswith("#")]
    except OSError:
        return []


def process_user(pod: Obj, container: Obj, image_user: ImageUser, rootfs: Path) -> Obj:
    """OCI ``process.user``: uid/gid as containerd derives them, additionalGids with fsGroup and
    supplementalGroups (and the image's /etc/group memberships)."""
    sc = effective(pod, container)
    passwd = _table(rootfs / "etc" / "passwd")
    if sc.get("runAsUser") is not None:
        uid, username, gid = int(sc["runAsUser"]), "", None
    elif image_user.uid is not None:
        uid, username, gid = image_user.uid, "", image_user.gid
    else:
        entry = next((e for e in passwd if e[0] == image_user.name and len(e) > 3), None)
        if entry is None:
            raise SecurityError(f"unable to find user {image_user.name}: no matching entries in passwd file")
        uid, username, gid = int(entry[2]), entry[0], (image_user.gid if image_user.gid is not None
                                                        else int(entry[3]))
    if sc.get("runAsGroup") is not None:
        gid = int(sc["runAsGroup"])
    by_uid = next((e for e in passwd if len(e) > 3 and e[2] == str(uid)), None)
    if gid is None:
        gid = int(by_uid[3]) if by_uid is not None else 0
    username = username or (by_uid[0] if by_uid is not None else "")
    groups = [gid]
    if username:
        groups += [int(e[2]) for e in _table(rootfs / "etc" / "group")
                   if len(e) > 3 and username in e[3].split(",") and e[2].isdigit()]
    pod_sc = pod["spec"].get("securityContext") or {}
    groups += [int(g) for g in pod_sc.get("supplementalGroups") or []]
    if pod_sc.get("fsGroup") is not None:
        groups.append(int(pod_sc["fsGroup"]))
    return {"uid": uid, "gid": gid, "additionalGids": list(dict.fromkeys(groups))}


def capabilities(container: Obj) -> Obj:
    """OCI ``process.capabilities``: containerd's default set, ``drop``/``add`` applied (ALL allowed)."""
    caps = (container.get("securityContext") or {}).get("capabilities") or {}
    add = [c.upper() for c in caps.get("add") or []]
    drop = [c.upper() for c in caps.get("drop") or []]
    current = list(ALL_CAPS) if "ALL" in add else list(DEFAULT_CAPS)
    if "ALL" in drop:
        current = []
    for cap in add:
        name = cap if cap.startswith("CAP_") else f"CAP_{cap}"
        if cap != "ALL" and name not in current:
            current.append(name)
    dropped = {c if c.startswith("CAP_") else f"CAP_{c}" for c in drop}
    current = [c for c in current if c not in dropped]
    return {"bounding": current, "effective": current, "permitted": current, "inheritable": [], "ambient": []}


def no_new_privileges(container: Obj) -> bool:
    """The kubelet's ``AddNoNewPrivileges``: only an explicit ``allowPrivilegeEscalation: false`` sets it."""
    value = (container.get("securityContext") or {}).get("allowPrivilegeEscalation")
    return value is False


def seccomp_type(pod: Obj, container: Obj) -> str:
    """``RuntimeDefault``, ``Unconfined`` (the kubelet's default) or ``Localhost``."""
    profile = effective(pod, container).get("seccompProfile") or {}
    return str(profile.get("type") or "Unconfined")


def apply_fs_group(directory: Path, fs_group: int, policy: str = "Always", readonly: bool = False) -> None:
    """The kubelet's ``SetVolumeOwnership``: group ``fs_group`` on everything, group read/write (read-only:
    read), directories setgid and group-searchable; ``OnRootMismatch`` skips a volume whose root matches."""
    mask = 0o440 if readonly else 0o660
    if policy == "OnRootMismatch":
        st = directory.stat()
        want = mask | stat.S_ISGID | 0o110
        if st.st_gid == fs_group and st.st_mode & want == want:
            return
    _own(str(directory), fs_group, mask)
    for root, dirs, files in os.walk(directory):
        for name in [*dirs, *files]:
            _own(os.path.join(root, name), fs_group, mask)


def _own(path: str, fs_group: int, mask: int) -> None:
    st = os.lstat(path)
    os.lchown(path, -1, fs_group)
    if not stat.S_ISLNK(st.st_mode):
        extra = mask | (stat.S_ISGID | 0o110 if stat.S_ISDIR(st.st_mode) else 0)
        os.chmod(path, stat.S_IMODE(st.st_mode) | extra)


# The RuntimeDefault profile: moby's default seccomp profile (the one Docker applies), in Docker's format, which
# scripts/bootstrap prints from its Go module (hack/seccomp) and names here; read, not copied, so it follows the
# maintained rules.
PROFILE_ENV = "BOOKIE_FLEET_SECCOMP_PROFILE"
# uname -m -> the architecture names of the profile's includes/excludes (libseccomp's, as moby maps GOARCH),
# and libseccomp's native architecture.
_GO_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "i686": "x86", "ppc64le": "ppc64le",
            "s390x": "s390x", "riscv64": "riscv64"}
_SCMP_ARCH = {"x86_64": "SCMP_ARCH_X86_64", "aarch64": "SCMP_ARCH_AARCH64", "armv7l": "SCMP_ARCH_ARM",
              "i686": "SCMP_ARCH_X86", "ppc64le": "SCMP_ARCH_PPC64LE", "s390x": "SCMP_ARCH_S390X",
              "riscv64": "SCMP_ARCH_RISCV64"}


def load_seccomp_profile() -> Obj:
    path = os.environ.get(PROFILE_ENV)
    if not path:
        raise SecurityError(f"seccomp profile RuntimeDefault: ${PROFILE_ENV} is not set (scripts/bootstrap "
                            "prints moby's default profile and sets it)")
    return _read_profile(path)


@functools.cache
def _read_profile(path: str) -> Obj:
    try:
        profile: Obj = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise SecurityError(f"seccomp profile RuntimeDefault: cannot read {path} ({exc})") from None
    return profile


def _kernel(release: str) -> tuple[int, ...]:
    head = release.split("-", 1)[0]
    return tuple(int(part) for part in head.split(".")[:2] if part.isdigit())


def runtime_default_seccomp(profile: Obj, bounding: list[str], machine: str, kernel_release: str) -> Obj:
    """OCI ``linux.seccomp`` from a Docker-format default profile, as moby's ``setupSeccomp`` (and podman)
    resolve it for one container: the native architecture and its sub-architectures from ``archMap``, and each
    rule only if its ``includes`` hold and its ``excludes`` do not (architecture, capabilities in the bounding
    set, minimum kernel): without CAP_SYS_ADMIN, mount and unshare are refused, and so on."""
    arch = _GO_ARCH.get(machine, machine)
    native = _SCMP_ARCH.get(machine)
    kernel = _kernel(kernel_release)
    caps = set(bounding)

    def applies(rule: Obj) -> bool:
        inc, exc = rule.get("includes") or {}, rule.get("excludes") or {}
        if arch in (exc.get("arches") or []) or caps & set(exc.get("caps") or []):
            return False
        if exc.get("minKernel") and kernel >= _kernel(exc["minKernel"]):
            return False
        if inc.get("arches") and arch not in inc["arches"]:
            return False
        if not set(inc.get("caps") or []) <= caps:
            return False
        return not (inc.get("minKernel") and kernel < _kernel(inc["minKernel"]))

    syscalls = []
    for rule in profile.get("syscalls") or []:
        names = rule.get("names") or ([rule["name"]] if rule.get("name") else [])
        if not names or not applies(rule):
            continue
        out: Obj = {"names": names, "action": rule["action"]}
        if rule.get("args"):
            out["args"] = [{k: a[k] for k in ("index", "value", "valueTwo", "op") if k in a} for a in rule["args"]]
        if rule.get("errnoRet") is not None:
            out["errnoRet"] = rule["errnoRet"]
        syscalls.append(out)
    architectures = next(([m["architecture"], *(m.get("subArchitectures") or [])]
                          for m in profile.get("archMap") or [] if m.get("architecture") == native),
                         [native] if native else [])
    result: Obj = {"defaultAction": profile["defaultAction"], "architectures": architectures, "syscalls": syscalls}
    if profile.get("defaultErrnoRet") is not None:
        result["defaultErrnoRet"] = profile["defaultErrnoRet"]
    return result
