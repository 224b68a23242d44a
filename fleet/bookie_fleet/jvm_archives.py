"""Class-data sharing for the short-lived JVMs the test suite starts by the hundred (Apache BookKeeper's bookies,
ZooKeeper, Pulsar's broker): a JVM that finds an archive of the classes an earlier JVM of the same program loaded
maps them, instead of reading, parsing, verifying and linking each one from its jar again, which is most of the
CPU a JVM spends before it serves. A test bookie of Apache BookKeeper 4.17.3 took 1.8 to 2.5 CPU-seconds to be
ready without its archive and 1.15 to 1.2 with it, measured here.

The first JVM of a program writes the archive when it exits (``-XX:ArchiveClassesAtExit``, a dynamic archive,
Java 13 and later), under a name of its own; a later start adopts a finished one as the program's archive and
every start after that uses it (``-XX:SharedArchiveFile``). An archive is keyed by the Java runtime, the
classpath's jars (names, sizes, times) and the main class, so a changed jar or JVM makes a new one; the JVM
checks again itself, and one that does not match is ignored (``-Xshare:auto``), never an error. A JVM killed
before it exits writes nothing, and after ``_TRAINING_EXPIRES_S`` another start may try.

Only where ``$BOOKIE_FLEET_JVM_ARCHIVES`` names a directory (tests/conftest.py sets it for the test suite, in
the cache): the playground, benchmarks and production settings run the JVM as shipped. Classpaths holding a
directory of classes are left alone: a dynamic archive takes classes from jars only. The bootstrap packs the
client harnesses the tests start by the hundred into jars for this: Apache BookKeeper's (tests/java) takes 1.05
CPU-seconds a run instead of 1.6, Pulsar's (hack/pulsar) 1.15 instead of 1.8.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
import uuid
from pathlib import Path

ENV = "BOOKIE_FLEET_JVM_ARCHIVES"
# A training JVM that has not finished its archive by then (killed, or still running) lets another start try.
_TRAINING_EXPIRES_S = 600.0
# A written archive is adopted once it has not changed for this long: the JVM that wrote it has exited.
_SETTLED_S = 30.0
# The JVM's notes about archives (one that does not match, one being written) would land in the program's
# output, which tests read.
_QUIET = "-Xlog:cds*=off"
# Archives unused for this long are removed by ``prune``: a changed jar or JVM leaves its old ones behind.
UNUSED_FOR_S = 3 * 24 * 3600.0


def archive_options(java: str, classpath: str, main: str) -> list[str]:
    """The JVM options that use, or write, the archive of ``main`` on ``classpath``; none when archives are
    off or the classpath has a directory of classes."""
    archive = archive_path(java, classpath, main)
    return [] if archive is None else options_for(archive)


def options_for(archive: Path) -> list[str]:
    """The JVM options that use ``archive``, or write it when it is not written yet and this start claims the
    writing; none when another start is writing it."""
    using = use_options(archive)
    if using or not _claim_training(archive):
        return using
    return [_QUIET, f"-XX:ArchiveClassesAtExit={archive}.{uuid.uuid4().hex[:12]}.writing"]


def archive_path(java: str, classpath: str, main: str) -> Path | None:
    """Where the archive of ``main`` on ``classpath`` is (or will be); None when archives are off or the
    classpath has a directory of classes."""
    directory = os.environ.get(ENV)
    jars = _jars(classpath) if directory else None
    if not directory or jars is None:
        return None
    home = Path(directory)
    home.mkdir(parents=True, exist_ok=True)
    return home / f"{main.rsplit('.', 1)[-1]}-{_key(java, jars, main)}.jsa"


def use_options(archive: Path) -> list[str]:
    """The JVM options that use ``archive`` once it is written; none before (never a claim to write it)."""
    if not archive.exists():
        _adopt_settled(archive)
    if not archive.exists():
        return []
    with contextlib.suppress(OSError):
        os.utime(archive)  # its last use, for ``prune``
    return [_QUIET, f"-XX:SharedArchiveFile={archive}"]


def _jars(classpath: str) -> list[Path] | None:
    """The classpath's jars in order (``dir/*`` expanded as the JVM does), or None if it names a directory of
    classes."""
    jars: list[Path] = []
    for entry in classpath.split(os.pathsep):
        if entry.endswith("/*"):
            jars.extend(sorted(p for p in Path(entry[:-2]).glob("*") if p.suffix in (".jar", ".JAR")))
        elif entry.endswith((".jar", ".JAR")):
            jars.append(Path(entry))
        elif entry:
            return None
    return jars


def _key(java: str, jars: list[Path], main: str) -> str:
    digest = hashlib.sha256(main.encode())
    runtime = Path(shutil.which(java) or java).resolve()
    for path in (runtime, *jars):
        with contextlib.suppress(OSError):
            stat = path.stat()
            digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def _adopt_settled(archive: Path) -> None:
    """A finished archive of this program (written, then untouched for ``_SETTLED_S``) becomes its archive."""
    now = time.time()
    for written in sorted(archive.parent.glob(f"{archive.name}.*.writing")):
        with contextlib.suppress(OSError):
            if now - written.stat().st_mtime >= _SETTLED_S and written.stat().st_size > 0:
                os.replace(written, archive)
                return


def _claim_training(archive: Path) -> bool:
    """Whether this start writes the archive: one start at a time, another after ``_TRAINING_EXPIRES_S``."""
    claim = archive.with_name(archive.name + ".claim")
    with contextlib.suppress(OSError):
        if time.time() - claim.stat().st_mtime > _TRAINING_EXPIRES_S:
            claim.unlink()
    try:
        os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return False
    return True


def prune(directory: Path, unused_for_s: float = UNUSED_FOR_S) -> list[Path]:
    """Remove the archives (and their leftovers) not used for ``unused_for_s``; returns what went."""
    gone = []
    now = time.time()
    for path in directory.glob("*.jsa*"):
        with contextlib.suppress(OSError):
            if now - path.stat().st_mtime > unused_for_s:
                path.unlink()
                gone.append(path)
    return gone
