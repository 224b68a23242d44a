"""The playground's first look (`--first-look`, what scripts/playground shows while the local Kubernetes binaries
build on a fresh machine): with ZooKeeper, three of our bookies and a real Pulsar broker on this machine, two
topics expire, GC runs, and the bookies' explain endpoint names the topic whose ledgers keep the disks full, with
the pinned-garbage series; nothing is left running. And `kube.sh --built` says whether a build is needed without
building anything, which is how scripts/playground decides to show the first look."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KUBE_SH = REPO / "scripts" / "bootstrap.d" / "kube.sh"
ORDERS = "persistent://public/playground/orders"


def test_the_first_look_names_the_topic_that_keeps_the_disks_full(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bookie_fleet.cli", "playground", "--first-look", "--workdir", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=600, env={**os.environ, "BOOKIE_FLEET_CACHE": str(tmp_path)})
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert re.search(r"Pulsar deleted [1-9]\d* ledgers", out), out
    explained = [line for line in out.splitlines() if re.match(r"\s+127\.0\.0\.\d+:\d+: \d+ entry logs", line)]
    assert len(explained) == 3 and all(ORDERS in line for line in explained), out
    assert f'topic="{ORDERS}"' in out, "the pinned-garbage series name the topic"
    answer = re.search(r"the answer: (\S+) keeps (\d+) entry logs holding ([\d.]+) MiB of garbage", out)
    assert answer is not None and answer.group(1) == ORDERS and float(answer.group(3)) > 0, out
    assert "first look stopped" in out
    leftovers = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True)
    assert leftovers.stdout == "", f"processes left running: {leftovers.stdout}"


def test_kube_sh_built_answers_without_building(tmp_path: Path) -> None:
    built = subprocess.run(["bash", str(KUBE_SH), "--built"], capture_output=True, text=True, timeout=60)
    assert built.returncode == 0, "the session's cache has the Kubernetes binaries: " + built.stderr
    empty = tmp_path / "empty-cache"
    cold = subprocess.run(["bash", str(KUBE_SH), "--built"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "BOOKIE_FLEET_CACHE": str(empty)})
    assert cold.returncode == 1, cold.stderr
    assert not empty.exists(), "asking built nothing"
