"""The benchmarks' ``--peer`` (bench/peer.py): Apache BookKeeper's bookies run the release named, found among the
releases whose jars the bootstrap assembled, the newest by default; a release not assembled is refused naming
those that were. A running bookie's release is read from its own classpath."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.bench_runs import bench_module


@pytest.fixture(scope="module")
def peer() -> Iterator[ModuleType]:
    yield from bench_module("peer")


def jars(tmp_path: Path, version: str) -> Path:
    lib = tmp_path / version
    lib.mkdir()
    for name in (f"bookkeeper-server-{version}.jar", "bookkeeper-benchmark-4.17.3.jar", "netty-common-4.1.jar"):
        (lib / name).touch()
    return lib


def test_the_releases_are_read_from_the_jars_each_directory_holds(
        peer: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOOKIE_FLEET_BK_LIB", str(jars(tmp_path, "4.17.3")))
    monkeypatch.setenv("BOOKIE_FLEET_BK_COMPAT_LIB", str(jars(tmp_path, "4.18.0")))
    assert peer.assembled() == {"4.17.3": tmp_path / "4.17.3", "4.18.0": tmp_path / "4.18.0"}


def test_the_newest_release_is_the_default(peer: ModuleType, tmp_path: Path) -> None:
    releases = {"4.9.1": tmp_path / "a", "4.18.0": tmp_path / "b", "4.17.3": tmp_path / "c"}
    assert peer.choose(None, releases) == peer.Peer("4.18.0", tmp_path / "b")   # by version, not by text
    assert peer.choose("4.17.3", releases).lib == tmp_path / "c"


def test_a_release_not_assembled_is_refused_naming_those_that_were(peer: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"4\.19\.0 is not a release the bootstrap assembled "
                                         r"\(assembled: 4\.17\.3, 4\.18\.0\)"):
        peer.choose("4.19.0", {"4.18.0": tmp_path, "4.17.3": tmp_path})
    with pytest.raises(ValueError, match="no Apache BookKeeper jars found"):
        peer.choose(None, {})


def started(args: list[str]) -> subprocess.Popen[str]:
    """A process with ``args`` on its command line, once it runs its own program: until then (between fork and
    exec) its command line is still its parent's."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(30)", *args],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "up\n"
    return proc


def test_a_running_bookies_release_is_read_from_its_classpath(peer: ModuleType, tmp_path: Path) -> None:
    lib = jars(tmp_path, "4.18.0")
    # A process whose command line has the shape of a Java bookie's: options, -cp <dir>/*, the main class.
    # (Python takes the arguments after -c's program as its own argv and ignores them.)
    proc = started(["-Xmx1g", "-cp", f"{lib}/*", "org.apache.bookkeeper.server.Main"])
    try:
        assert peer.running_release(proc.pid) == "4.18.0"
    finally:
        proc.kill()
        proc.communicate()  # reaps it and closes its pipe
    # A classpath of jars named one by one.
    listed = started(["-cp", f"{lib}/netty-common-4.1.jar:{lib}/bookkeeper-server-4.18.0.jar", "Main"])
    try:
        assert peer.running_release(listed.pid) == "4.18.0"
    finally:
        listed.kill()
        listed.communicate()  # reaps it and closes its pipe
    bare = started([])
    try:
        assert peer.running_release(bare.pid) is None
    finally:
        bare.kill()
        bare.communicate()  # reaps it and closes its pipe
