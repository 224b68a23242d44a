"""The test suite's JVMs share archives of their classes (fleet/bookie_fleet/jvm_archives.py): the first start of a
program writes its archive at exit, one start at a time; once written, every later start maps its classes from
it; a changed jar makes a new archive; a classpath with a directory of classes, or no archive directory, gets no
option at all. Run on a real JVM and Apache BookKeeper's classpath (ZooKeeper's version printer as the program)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from bookie_fleet import jvm_archives

MAIN = "org.apache.zookeeper.version.VersionInfoMain"


@pytest.fixture
def archives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "archives"
    monkeypatch.setenv(jvm_archives.ENV, str(directory))
    monkeypatch.setattr(jvm_archives, "_SETTLED_S", 0.0)  # adopt a written archive at once
    return directory


def _classpath() -> str:
    return f"{os.environ['BOOKIE_FLEET_BK_LIB']}/*"


def _java(options: list[str], *extra: str) -> str:
    done = subprocess.run(["java", *options, *extra, "-cp", _classpath(), MAIN], capture_output=True, text=True,
                          timeout=120, check=True)
    return done.stdout


def test_the_first_start_writes_the_archive_and_later_starts_map_it(archives: Path) -> None:
    first = jvm_archives.archive_options("java", _classpath(), MAIN)
    assert any(o.startswith("-XX:ArchiveClassesAtExit=") for o in first), first
    assert jvm_archives.archive_options("java", _classpath(), MAIN) == [], "a second start trained at the same time"
    _java(first)
    later = jvm_archives.archive_options("java", _classpath(), MAIN)
    [used] = [o.removeprefix("-XX:SharedArchiveFile=") for o in later if o.startswith("-XX:SharedArchiveFile=")]
    assert Path(used).parent == archives and Path(used).is_file(), later
    loaded = _java(later, "-Xlog:class+load=info")
    assert f"{MAIN} source: shared objects file (top)" in loaded, loaded[-2000:]


def test_a_changed_jar_makes_a_new_archive(archives: Path, tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    jar = lib / "program.jar"
    jar.write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip: only its name, size and time matter here
    first = jvm_archives.archive_options("java", f"{lib}/*", MAIN)
    os.utime(jar, ns=(0, 0))
    second = jvm_archives.archive_options("java", f"{lib}/*", MAIN)
    assert first and second and first[-1].split(".jsa")[0] != second[-1].split(".jsa")[0], (first, second)


def test_no_option_for_a_directory_of_classes_or_without_an_archive_directory(
        archives: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert jvm_archives.archive_options("java", f"{tmp_path}{os.pathsep}{_classpath()}", MAIN) == []
    monkeypatch.delenv(jvm_archives.ENV)
    assert jvm_archives.archive_options("java", _classpath(), MAIN) == []


def test_the_client_harnesses_run_from_jars_and_so_map_archived_classes(archives: Path, tmp_path: Path) -> None:
    """Apache BookKeeper's client harness (tests/java) and Pulsar's (hack/pulsar): the JVMs the tests start most,
    packed into jars by the bootstrap so that archives apply to them."""
    from bookie_fleet.pulsar import NEWEST

    from tests.support.java_client import java_command

    harnesses = {"ClientHarness": java_command("ClientHarness", "digests"),
                 "PulsarHarness": NEWEST.harness_command("consume", log_config=tmp_path / "l", tmp=tmp_path / "t")}
    for main, command in harnesses.items():
        classpath = command[command.index("-cp") + 1]
        assert classpath.split(os.pathsep)[0].endswith(".jar"), (main, classpath)
        assert any(o.startswith("-XX:ArchiveClassesAtExit=") for o in command), (main, command)
