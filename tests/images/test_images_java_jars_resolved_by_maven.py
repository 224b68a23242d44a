"""The Java bookie image's jars are resolved by the building machine's Maven, with the user's settings: through
a mirror that stands for every repository (a company's proxy repository), exactly the locked jars arrive,
byte for byte; a mirror without them fails naming it; and the image build's ``install`` refuses a directory
that is not exactly the lock's jars.

The mirror here is this machine's local Maven repository served as a file repository (a remote repository
has the same layout), behind an empty local repository, so every jar comes through the mirror."""

from __future__ import annotations

import hashlib
import os
import pwd
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
JARS_PY = REPO / "hack" / "apache-bookkeeper" / "jars.py"
LOCK = REPO / "hack" / "apache-bookkeeper" / "jars.lock"
# Maven's home is Java's user.home, which comes from the password database, not $HOME: its local repository is
# there whatever $HOME says, unless $MAVEN_OPTS names another (-Dmaven.repo.local=...), which wins over a
# settings file's.
MAVEN_HOME = Path(pwd.getpwuid(os.getuid()).pw_dir)
_OPTS = os.environ.get("MAVEN_OPTS", "").split()
_REPO_LOCAL = "-Dmaven.repo.local="
# Where the bootstrap's Maven put the jars: the mirror of these tests.
FILLED_REPOSITORY = next((Path(o.removeprefix(_REPO_LOCAL)) for o in _OPTS if o.startswith(_REPO_LOCAL)),
                         MAVEN_HOME / ".m2" / "repository")
# The stage's Maven without that option, so that the settings file's local repository is the one it uses.
STAGE_ENV = {**os.environ, "MAVEN_OPTS": " ".join(o for o in _OPTS if not o.startswith(_REPO_LOCAL))}
sys.path.insert(0, str(JARS_PY.parent))

import jars  # noqa: E402  (hack/apache-bookkeeper/jars.py, not a package)


def _settings(tmp_path: Path, mirror: Path) -> Path:
    settings = tmp_path / "settings.xml"
    settings.write_text(
        f"<settings><localRepository>{tmp_path / 'local-repository'}</localRepository><mirrors><mirror>"
        f"<id>company-proxy</id><mirrorOf>*</mirrorOf><url>{mirror.as_uri()}</url></mirror></mirrors></settings>")
    return settings


def _stage(target: Path, settings: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(JARS_PY), "stage", str(target), "--settings", str(settings)],
                          capture_output=True, text=True, timeout=300, env=STAGE_ENV)


def test_stage_resolves_exactly_the_locked_jars_through_the_users_mirror(tmp_path: Path) -> None:
    result = _stage(tmp_path / "jars", _settings(tmp_path, FILLED_REPOSITORY))
    assert result.returncode == 0, result.stderr
    staged = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (tmp_path / "jars").iterdir()}
    assert staged == {j.file_name: j.sha256 for j in jars.parse_lock(LOCK.read_text())}
    # They came through the mirror into the settings' own (empty before) local repository.
    assert list((tmp_path / "local-repository").rglob("bookkeeper-server-*.jar"))


def test_stage_through_a_mirror_without_the_jars_fails_naming_it(tmp_path: Path) -> None:
    empty = tmp_path / "empty-repository"
    empty.mkdir()
    result = _stage(tmp_path / "jars", _settings(tmp_path, empty))
    assert result.returncode != 0
    assert "Maven could not resolve the jars of" in result.stderr
    assert str(empty) in result.stderr, result.stderr
    assert not (tmp_path / "jars").exists() or not list((tmp_path / "jars").glob("*.jar"))


def _locked_copy(tmp_path: Path) -> tuple[Path, list[jars.Jar]]:
    """A lock of three small fake jars and a directory holding exactly them."""
    staged = tmp_path / "staged"
    staged.mkdir()
    locked = []
    for n in range(3):
        data = f"jar {n}".encode()
        locked.append(jars.Jar("org.example", f"a{n}", "1.0", "linux-x86_64" if n == 2 else "",
                               hashlib.sha256(data).hexdigest()))
        (staged / locked[-1].file_name).write_bytes(data)
    (tmp_path / "jars.lock").write_text("# a lock\n" + "".join(j.line() + "\n" for j in locked))
    return staged, locked


def test_install_copies_exactly_the_locked_jars(tmp_path: Path) -> None:
    staged, locked = _locked_copy(tmp_path)
    (staged / ".complete").touch()   # not a jar: ignored (the bootstrap's classpath directory has one)
    jars.install(tmp_path / "jars.lock", staged, tmp_path / "lib")
    assert sorted(p.name for p in (tmp_path / "lib").iterdir()) == sorted(j.file_name for j in locked)
    assert all((tmp_path / "lib" / j.file_name).stat().st_mode & 0o777 == 0o644 for j in locked)


@pytest.mark.parametrize("change, message", [
    (lambda d: (d / "a1-1.0.jar").write_bytes(b"tampered"), "a1-1.0.jar (sha256 "),
    (lambda d: (d / "a0-1.0.jar").unlink(), "missing a0-1.0.jar"),
    (lambda d: (d / "extra-2.0.jar").write_bytes(b"x"), "not in the lock extra-2.0.jar"),
])
def test_install_refuses_a_directory_that_is_not_the_lock(tmp_path: Path, change: Callable[[Path], object],
                                                          message: str) -> None:
    staged, _ = _locked_copy(tmp_path)
    change(staged)
    with pytest.raises(SystemExit) as refused:
        jars.install(tmp_path / "jars.lock", staged, tmp_path / "lib")
    assert message in str(refused.value)
    assert not (tmp_path / "lib").exists()
