"""The cache's playground runs are pruned to the last run's report and logs: a new run removes the runs before
it, `bookie-fleet cache prune` removes earlier runs and trims the last one to its report (summary.json, the
audit's report) and its logs (*.log outside container file systems), a run still in use (its lock held, or an
old unlocked one used in the last two hours) is left alone, and `bookie-fleet cache` prints each part's size.
On a real scratch cache laid out as runs leave it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from bookie_fleet import cache
from bookie_fleet.cli import main as fleet_main

MiB = 1 << 20


def _file(path: Path, size: int = 4096) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(size))
    return path


def _story_run(root: Path, name: str, *, locked_file: bool = True) -> Path:
    """A run directory as the Kubernetes story leaves it (sizes scaled down)."""
    run = root / name
    _file(run / "kube" / "etcd" / "member" / "snap" / "db", 2 * MiB)
    _file(run / "kube" / "logs" / "kube-apiserver.log")
    image = run / "kube" / "runner" / "rootfs" / "sha256-ab" / "rootfs"
    _file(image / "usr" / "lib" / "jvm" / "libjvm.so", MiB)
    _file(image / "var" / "log" / "dpkg.log")              # the image's own file, not a log of the run
    _file(run / "kube" / "runner" / "pods" / "p" / "upper" / "tmp" / "gc.log")
    _file(run / "kube" / "runner" / "logs" / "default_playground-0_u1" / "bookie.log")
    _file(run / "disks" / "ledgers-0-playground-0" / "current" / "0.log.data", MiB)
    _file(run / "zookeeper" / "zookeeper.log")
    _file(run / "zookeeper" / "version-2" / "log.100000001", MiB)
    _file(run / "pulsar" / "broker.log")
    _file(run / "audit" / "playground-1" / "report.html")
    (run / "summary.json").write_text('{"report": "audit/playground-1/report.html"}')
    (run / "kube" / "runner" / "current").symlink_to(image)
    if locked_file:
        (run / cache.LOCK_NAME).touch()
    return run


REPORT_AND_LOGS = {"summary.json", "audit/playground-1/report.html", "kube/logs/kube-apiserver.log",
                   "kube/runner/logs/default_playground-0_u1/bookie.log", "zookeeper/zookeeper.log",
                   "pulsar/broker.log"}


def _files(run: Path) -> set[str]:
    return {str(p.relative_to(run)) for p in run.rglob("*") if p.is_file() and p.name != cache.LOCK_NAME}


@pytest.fixture
def scratch_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("BOOKIE_FLEET_CACHE", str(root))
    _file(root / "venv-0123456789ab" / "lib" / "site.py", 3 * MiB)
    _file(root / "bookkeeper-0123456789ab" / "lib" / "a.jar", MiB)
    return root


def test_trim_keeps_the_report_and_the_logs_only(scratch_cache: Path) -> None:
    run = _story_run(cache.playground_root(), "20250101-120000")
    freed = cache.trim(run)
    assert _files(run) == REPORT_AND_LOGS
    assert freed >= 5 * MiB
    assert not (run / "kube" / "runner" / "rootfs").exists() and not (run / "kube" / "runner" / "current").exists()


def test_a_new_run_removes_the_earlier_ones_and_is_trimmed_at_its_end(scratch_cache: Path) -> None:
    root = cache.playground_root()
    first, second = _story_run(root, "20250101-120000"), _story_run(root, "20250101-130000")
    lines: list[str] = []
    with cache.playground_run(root / "20250101-140000", False, lines.append):
        assert not first.exists() and not second.exists()
        third = _story_run(root, "20250101-140000")
    assert sorted(p.name for p in root.iterdir()) == ["20250101-140000"]
    assert _files(third) == REPORT_AND_LOGS
    assert any("removed the earlier run" in line for line in lines) and "report and logs stay" in lines[-1]


def test_keep_keeps_everything(scratch_cache: Path) -> None:
    root = cache.playground_root()
    first = _story_run(root, "20250101-120000")
    with cache.playground_run(root / "20250101-130000", True, lambda line: None):
        second = _story_run(root, "20250101-130000")
    assert _files(first) == _files(second) and len(_files(second)) > len(REPORT_AND_LOGS)


def test_a_workdir_outside_the_cache_is_left_whole(scratch_cache: Path, tmp_path: Path) -> None:
    earlier = _story_run(cache.playground_root(), "20250101-120000")
    with cache.playground_run(tmp_path / "mine", False, lambda line: None):
        mine = _story_run(tmp_path, "mine")
    assert len(_files(mine)) > len(REPORT_AND_LOGS) and earlier.exists()
    assert not (mine / cache.LOCK_NAME).exists()


def test_runs_in_use_are_left_alone(scratch_cache: Path) -> None:
    root = cache.playground_root()
    live = _story_run(root, "20250101-120000")
    recent_unlocked = _story_run(root, "20250101-123000", locked_file=False)
    old_unlocked = _story_run(root, "20250101-124000", locked_file=False)
    hours_ago = time.time() - 3 * 3600
    os.utime(old_unlocked, (hours_ago, hours_ago))
    lines: list[str] = []
    with cache.locked(live), cache.playground_run(root / "20250101-130000", False, lines.append):
        pass
    assert live.exists() and recent_unlocked.exists() and not old_unlocked.exists()
    assert f"  left {live}: a playground is running in it" in lines
    assert len(_files(live)) > len(REPORT_AND_LOGS)


def test_cache_prune_and_sizes_on_the_command_line(scratch_cache: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    root = cache.playground_root()
    for name in ("20250101-120000", "20250101-130000", "20250101-140000"):
        _story_run(root, name)
    # The keyed entries: venv-<hash> in use by this environment, and an old one the bootstrap's rule removes.
    in_use = scratch_cache / "venv-0123456789ab"
    site = scratch_cache / "checkout" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / "bookie_fleet_dependencies.pth").write_text(f"{in_use}/lib/python3.11/site-packages\n")
    monkeypatch.setenv("BOOKIE_FLEET_VENV", str(scratch_cache / "checkout"))
    monkeypatch.delenv("BOOKIE_FLEET_IMAGES", raising=False)
    stale = []
    for n in range(4):
        stale.append(_file(scratch_cache / f"venv-{n:012d}" / "lib" / "site.py", MiB).parents[1])
        hours_ago = time.time() - (3 + n) * 3600
        os.utime(stale[-1], (hours_ago, hours_ago))

    assert fleet_main(["cache"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"{scratch_cache}: ")
    playground_line = next(line for line in shown.splitlines() if line.strip().startswith("playground"))
    assert "MiB" in playground_line and "3 runs" in playground_line
    assert any(line.split()[:3] == ["venv-0123456789ab", "3.0", "MiB"] for line in shown.splitlines()), shown

    assert fleet_main(["cache", "prune"]) == 0
    pruned = capsys.readouterr().out
    assert sorted(p.name for p in root.iterdir()) == ["20250101-140000"]
    assert _files(root / "20250101-140000") == REPORT_AND_LOGS
    # prune_cache_entries' rule: the one in use and the three used last stay, the oldest goes.
    assert in_use.exists() and [p.exists() for p in stale] == [True, True, False, False]
    assert f"removed {stale[2]} (not used for two hours)" in pruned
    assert "images-<hash>: left alone" in pruned
    assert (scratch_cache / "bookkeeper-0123456789ab").exists()
    assert "freed" in pruned.splitlines()[-1]
