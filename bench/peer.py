"""The benchmarks' ``--peer``: which Apache BookKeeper release our bookie is measured against.

The bootstrap assembles two releases' jars: hack/maven/pom.xml's (``$BOOKIE_FLEET_BK_LIB``) and the compatibility
matrix's other (``$BOOKIE_FLEET_BK_COMPAT_LIB``, scripts/bootstrap.d/bk-compat.sh). The peer's bookies run the
chosen release's jars. BookKeeper's own benchmark tools (``bookkeeper-benchmark``, published up to 4.17.3) and
every other Java client of a run stay on ``$BOOKIE_FLEET_BK_LIB``'s jars whatever the peer, so that a change of
peer changes the bookies and nothing else. By default the peer is the newest release assembled; a release that
was not assembled is refused before anything starts, naming the releases that were.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

LIB_ENVS = ("BOOKIE_FLEET_BK_LIB", "BOOKIE_FLEET_BK_COMPAT_LIB")
SERVER_JAR = "bookkeeper-server-[0-9]*.jar"  # a release's version is in its name
# The release of every result saved before the peer could be chosen.
EARLIER_RUNS_PEER = "4.17.3"


@dataclass(frozen=True)
class Peer:
    """One Apache BookKeeper release: its version and the directory of its jars."""

    version: str
    lib: Path

    @property
    def name(self) -> str:
        return f"Apache BookKeeper {self.version}"


def _jar_version(jar: Path) -> str:
    return jar.name.removeprefix("bookkeeper-server-").removesuffix(".jar")


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def assembled() -> dict[str, Path]:
    """Every release whose jars the bootstrap assembled, by version (read from its bookkeeper-server jar)."""
    releases: dict[str, Path] = {}
    for env in LIB_ENVS:
        lib = os.environ.get(env, "")
        if not lib or not Path(lib).is_dir():
            continue
        for jar in Path(lib).glob(SERVER_JAR):
            releases[_jar_version(jar)] = Path(lib)
    return releases


def choose(version: str | None, releases: dict[str, Path] | None = None) -> Peer:
    """The release named (the newest assembled when None); ValueError naming the assembled ones otherwise."""
    releases = assembled() if releases is None else releases
    if not releases:
        raise ValueError(f"no Apache BookKeeper jars found (${' and $'.join(LIB_ENVS)} name none): run "
                         "./scripts/bootstrap and source its env file")
    if version is None:
        version = max(releases, key=_version_key)
    if version not in releases:
        raise ValueError(f"{version} is not a release the bootstrap assembled (assembled: "
                         f"{', '.join(sorted(releases, key=_version_key))})")
    return Peer(version, releases[version])


def running_release(pid: int) -> str | None:
    """The release a running Apache BookKeeper JVM serves: its classpath's bookkeeper-server jar (None when its
    command line names none)."""
    args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    if "-cp" not in args:
        return None
    for entry in args[args.index("-cp") + 1].split(":"):
        path = Path(entry.removesuffix("*"))
        for jar in [path] if path.match(SERVER_JAR) else path.glob(SERVER_JAR):
            return _jar_version(jar)
    return None


def chosen_peer(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Peer:
    """``--peer``'s release; a release not assembled ends the run as any bad argument does (exit status 2)."""
    try:
        return choose(args.peer)
    except ValueError as exc:
        parser.error(f"--peer: {exc}")


def add_peer_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--peer", default=None, metavar="VERSION",
                        help="the Apache BookKeeper release whose bookies ours are measured against (default: the "
                             "newest the bootstrap assembled)")
