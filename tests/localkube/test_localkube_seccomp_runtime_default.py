"""``seccompProfile: RuntimeDefault`` as the runner resolves it: moby's default profile (printed by the bootstrap
from its Go module) turned into one container's OCI ``linux.seccomp`` the way moby does it: an allow-list whose
conditional rules follow the container's capabilities, the machine's architecture and kernel."""

from __future__ import annotations

from typing import Any

import pytest
from localkube.runner import security

NO_CAPS: list[str] = []
DEFAULT_CAPS = list(security.DEFAULT_CAPS)


def allowed(profile: dict[str, Any]) -> set[str]:
    """Calls allowed whatever their arguments."""
    return {n for rule in profile["syscalls"] if rule["action"] == "SCMP_ACT_ALLOW" and not rule.get("args")
            for n in rule["names"]}


def resolve(caps: list[str], machine: str = "x86_64", kernel: str = "6.1.0-18-amd64") -> dict[str, Any]:
    return security.runtime_default_seccomp(security.load_seccomp_profile(), caps, machine, kernel)


def test_it_is_an_allow_list_for_the_machines_architectures() -> None:
    profile = resolve(NO_CAPS)
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO"          # what is not listed is refused
    assert profile["architectures"] == ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"]
    assert resolve(NO_CAPS, machine="aarch64")["architectures"] == ["SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"]
    assert {"read", "write", "futex", "epoll_wait", "openat", "execve", "bind"} <= allowed(profile)
    for rule in profile["syscalls"]:
        assert set(rule) <= {"names", "action", "args", "errnoRet"}, rule   # OCI fields only


@pytest.mark.parametrize("call", ["mount", "umount2", "unshare", "setns", "bpf", "keyctl", "add_key", "kexec_load",
                                  "init_module", "reboot", "swapon", "settimeofday", "open_by_handle_at"])
def test_without_capabilities_the_dangerous_calls_are_refused(call: str) -> None:
    assert call not in allowed(resolve(NO_CAPS))
    assert call not in allowed(resolve(DEFAULT_CAPS))


def test_capabilities_bring_their_calls_back() -> None:
    assert {"mount", "unshare", "setns", "bpf"} <= allowed(resolve([*DEFAULT_CAPS, "CAP_SYS_ADMIN"]))
    assert "chroot" in allowed(resolve(["CAP_SYS_CHROOT"])) and "chroot" not in allowed(resolve(NO_CAPS))
    assert {"settimeofday", "clock_settime"} <= allowed(resolve(["CAP_SYS_TIME"]))


def test_conditions_are_resolved_as_moby_resolves_them() -> None:
    profile = {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
               "archMap": [{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86"]}],
               "syscalls": [
                   {"names": ["a"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["arm64"]}},
                   {"names": ["b"], "action": "SCMP_ACT_ALLOW", "excludes": {"arches": ["amd64"]}},
                   {"names": ["c"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_X", "CAP_Y"]}},
                   {"names": ["d"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38, "excludes": {"caps": ["CAP_X"]}},
                   {"names": ["e"], "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": "5.8"}},
                   {"names": ["f"], "action": "SCMP_ACT_ALLOW", "excludes": {"minKernel": "5.8"}},
                   {"name": "g", "action": "SCMP_ACT_ALLOW",
                    "args": [{"index": 0, "value": 8, "valueTwo": 0, "op": "SCMP_CMP_EQ"}], "comment": "old form"},
               ]}

    def names(caps: list[str], kernel: str) -> list[str]:
        out = security.runtime_default_seccomp(profile, caps, "x86_64", kernel)
        assert out["architectures"] == ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86"] and out["defaultErrnoRet"] == 1
        return [n for rule in out["syscalls"] for n in rule["names"]]

    assert names(["CAP_X"], "5.4.0-1-amd64") == ["f", "g"]
    assert names(["CAP_X", "CAP_Y"], "5.10.0") == ["c", "e", "g"]
    assert names([], "6.1") == ["d", "e", "g"]
    resolved = security.runtime_default_seccomp(profile, [], "x86_64", "6.1")
    assert resolved["syscalls"][0] == {"names": ["d"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38}
    assert resolved["syscalls"][2]["args"] == [{"index": 0, "value": 8, "valueTwo": 0, "op": "SCMP_CMP_EQ"}]


def test_without_the_profile_the_container_cannot_be_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(security.PROFILE_ENV, raising=False)
    with pytest.raises(security.SecurityError, match="BOOKIE_FLEET_SECCOMP_PROFILE is not set"):
        security.load_seccomp_profile()
    monkeypatch.setenv(security.PROFILE_ENV, "/nonexistent/default.json")
    with pytest.raises(security.SecurityError, match=r"cannot read /nonexistent/default\.json"):
        security.load_seccomp_profile()
