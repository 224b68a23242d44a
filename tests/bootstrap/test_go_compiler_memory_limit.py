"""The Go builds run the compiler with its collector off up to a soft memory limit sized to the machine
(scripts/bootstrap.d/lib/go.sh): each of the compiles the go command runs at once (one per core) gets the machine's
memory divided by four times its cores, at most 3 GiB, so that together they stay within a quarter of it; a machine
with less than 512 MiB for each keeps Go's defaults, and a GOGC or GOMEMLIMIT the user set is left as it is."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

GO_SH = Path(__file__).resolve().parents[2] / "scripts" / "bootstrap.d" / "lib" / "go.sh"
GIB_KIB = 1024 * 1024


def _limit_mib(memory_kib: int, cores: int) -> str:
    return subprocess.run(["bash", "-c", f'source "{GO_SH}"; go_compiler_memory_limit_mib {memory_kib} {cores}'],
                          check=True, capture_output=True, text=True).stdout.strip()


def _exported(**environment: str) -> tuple[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GOGC", "GOMEMLIMIT")} | environment
    out = subprocess.run(["bash", "-c", f'source "{GO_SH}"; echo "${{GOGC:-}} ${{GOMEMLIMIT:-}}"'],
                         check=True, capture_output=True, text=True, env=env).stdout
    gogc, _, limit = out.rstrip("\n").partition(" ")
    return gogc, limit


@pytest.mark.parametrize(("memory_gib", "cores", "expected_mib"), [
    (24, 2, "3072"),    # this project's machine: the cap
    (16, 2, "2048"),
    (32, 16, "512"),    # many cores: each compile's share of a quarter of the memory
    (4, 8, ""),         # 128 MiB each would collect all the time: Go's defaults instead
])
def test_each_compile_gets_a_share_of_a_quarter_of_the_memory(memory_gib: int, cores: int, expected_mib: str) -> None:
    assert _limit_mib(memory_gib * GIB_KIB, cores) == expected_mib


def test_the_bootstrap_exports_the_limit_for_this_machine() -> None:
    gogc, limit = _exported()
    with open("/proc/meminfo") as meminfo:
        memory_kib = next(int(line.split()[1]) for line in meminfo if line.startswith("MemTotal:"))
    expected = _limit_mib(memory_kib, len(os.sched_getaffinity(0)))  # what nproc counts
    assert (gogc, limit) == (("off", f"{expected}MiB") if expected else ("", ""))


@pytest.mark.parametrize("setting", [{"GOGC": "200"}, {"GOMEMLIMIT": "1GiB"}])
def test_a_collector_setting_of_the_users_own_wins(setting: dict[str, str]) -> None:
    assert _exported(**setting) == (setting.get("GOGC", ""), setting.get("GOMEMLIMIT", ""))
