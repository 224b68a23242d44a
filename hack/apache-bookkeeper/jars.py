"""The Apache BookKeeper classpath of the Java bookie image, pinned: Maven coordinates and sha256.

    python3 hack/apache-bookkeeper/jars.py lock                # rewrite jars.lock from pom.xml (beside it)
    python3 hack/apache-bookkeeper/jars.py check               # fail if jars.lock is not pom.xml's classpath
    python3 hack/apache-bookkeeper/jars.py stage DIR [--settings FILE]   # the locked jars, through Maven
    python3 jars.py install jars.lock STAGED /opt/bookkeeper/lib         # inside the image build

The jars are resolved by the user's own Maven (``stage``), never downloaded from an address written here: a
machine behind a company mirror or proxy repository (``~/.m2/settings.xml``: mirrors, proxies, credentials)
builds the image as one that reaches the public repository directly. The image build receives them as a
build context (``bookkeeper-jars``, see the Dockerfile). ``install`` needs only the Python standard library
(it runs in the image build, on the base image's interpreter) and refuses a set of jars that is not exactly
the lock's, byte for byte. The file names are Maven's (``dependency:copy-dependencies``).

The classpath is that of ``pom.xml`` beside this file (the image's Apache BookKeeper version, with the
versions BookKeeper's own build manages), not hack/maven/pom.xml's (the tests' Java bookies outside
Kubernetes, a version of their own).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

HERE = Path(__file__).resolve().parent
# Called by its full coordinates, not as ``dependency:``: resolving a plugin prefix reads the repository's
# group metadata, which a plain file or proxy repository may not serve. 2.8 is the version Maven 3.8's super
# POM binds, so the bootstrap's ``mvn dependency:copy-dependencies`` already has it in the local repository.
COPY_DEPENDENCIES = "org.apache.maven.plugins:maven-dependency-plugin:2.8:copy-dependencies"


@dataclass(frozen=True)
class Jar:
    group: str
    artifact: str
    version: str
    classifier: str
    sha256: str

    @property
    def file_name(self) -> str:
        suffix = f"-{self.classifier}" if self.classifier else ""
        return f"{self.artifact}-{self.version}{suffix}.jar"

    def line(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}:{self.classifier} {self.sha256}"


def parse_lock(text: str) -> list[Jar]:
    jars = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            coordinates, sha256 = line.split()
            group, artifact, version, classifier = coordinates.split(":")
        except ValueError:
            raise SystemExit(f"jars.lock line {number}: expected 'group:artifact:version:classifier sha256', "
                             f"got {raw!r}") from None
        jars.append(Jar(group, artifact, version, classifier, sha256))
    return jars


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def install(lock: Path, staged: Path, target: Path) -> None:
    """Copy the locked jars from ``staged`` into ``target`` after checking that ``staged`` holds exactly them
    (the same file names, the lock's sha256); files other than ``*.jar`` are ignored."""
    jars = parse_lock(lock.read_text())
    present = {p.name for p in staged.glob("*.jar")}
    missing = sorted(j.file_name for j in jars if j.file_name not in present)
    extra = sorted(present - {j.file_name for j in jars})
    if missing or extra:
        problems = ([f"missing {', '.join(missing)}"] if missing else []) + \
            ([f"not in the lock {', '.join(extra)}"] if extra else [])
        raise SystemExit(f"{staged} is not the classpath of {lock}: {'; '.join(problems)}")
    differ = [f"{j.file_name} (sha256 {got}, the lock says {j.sha256})"
              for j in jars if (got := sha256_of(staged / j.file_name)) != j.sha256]
    if differ:
        raise SystemExit(f"jars in {staged} differ from {lock}: {'; '.join(differ)}")
    target.mkdir(parents=True, exist_ok=True)
    for jar in jars:
        shutil.copyfile(staged / jar.file_name, target / jar.file_name)
        os.chmod(target / jar.file_name, 0o644)


def locked_pom(jars: list[Jar]) -> str:
    """A pom whose dependencies are exactly the locked jars, none transitive: Maven resolves these and nothing
    else, whatever the poms of these artifacts say today."""
    def dependency(j: Jar) -> str:
        classifier = f"<classifier>{escape(j.classifier)}</classifier>" if j.classifier else ""
        return (f"<dependency><groupId>{escape(j.group)}</groupId><artifactId>{escape(j.artifact)}</artifactId>"
                f"<version>{escape(j.version)}</version>{classifier}"
                "<exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>"
                "</dependency>")
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            "<groupId>local.bookiefleet</groupId><artifactId>apache-bookkeeper-image-jars</artifactId>"
            "<version>1</version><packaging>pom</packaging><dependencies>"
            + "".join(dependency(j) for j in jars) + "</dependencies></project>\n")


def stage(lock: Path, target: Path, settings: Path | None) -> None:
    """Resolve the locked jars with Maven (the user's settings: mirrors, proxies, credentials) and install
    them, checked against the lock, into ``target``."""
    jars = parse_lock(lock.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "pom.xml").write_text(locked_pom(jars))
        command = ["mvn", "-q", "-B", "-Dstyle.color=never", *(["-s", str(settings.resolve())] if settings else []),
                   COPY_DEPENDENCIES,
                   "-DincludeScope=runtime", f"-DoutputDirectory={project / 'lib'}"]
        try:
            result = subprocess.run(command, cwd=project, capture_output=True, text=True)
        except FileNotFoundError:
            raise SystemExit("mvn not found: the Java bookie image's jars are resolved with Maven "
                             "(Debian: apt-get install maven)") from None
        if result.returncode != 0:
            # Maven's own message, without its colours and the advice that follows a blank [ERROR] line.
            output = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr)
            message = output.split("[ERROR] \n", 1)[0].strip()
            raise SystemExit(f"Maven could not resolve the jars of {lock} (its settings: "
                             f"{settings or '~/.m2/settings.xml'}):\n{message[-3000:]}")
        install(lock, project / "lib", target)


HEADER = ("# The Java bookie image's classpath (hack/apache-bookkeeper/pom.xml's runtime scope), resolved by Maven.\n"
          "# Regenerate after changing the pom: python3 hack/apache-bookkeeper/jars.py lock\n")


def resolve(pom_dir: Path) -> str:
    """The lock's text for the runtime classpath of ``pom_dir``'s pom, resolved by the user's Maven."""
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp) / "deps.txt"
        subprocess.run(["mvn", "-q", "-B", "dependency:list", "-DincludeScope=runtime",
                        f"-DoutputFile={listing}", "-DoutputAbsoluteArtifactFilename=true"],
                       cwd=pom_dir, check=True)
        jars = []
        for line in listing.read_text().splitlines():
            fields = line.strip().split(":")
            if len(fields) not in (6, 7) or fields[2] != "jar":
                continue
            group, artifact = fields[0], fields[1]
            classifier = fields[3] if len(fields) == 7 else ""
            version, path = fields[-3], Path(fields[-1])
            jars.append(Jar(group, artifact, version, classifier, sha256_of(path)))
    return HEADER + "".join(j.line() + "\n" for j in sorted(jars, key=lambda j: j.line()))


def lock(pom_dir: Path, out: Path) -> None:
    """Resolve the pom's runtime classpath with Maven and write its coordinates and hashes."""
    out.write_text(resolve(pom_dir))


def check(pom_dir: Path, locked: Path) -> int:
    """0 when ``locked`` is the pom's classpath as Maven resolves it now; otherwise the differences, and 1."""
    want = {j.line() for j in parse_lock(resolve(pom_dir))}
    have = {j.line() for j in parse_lock(locked.read_text())}
    if want == have:
        return 0
    for line in sorted(have - want):
        print(f"only in {locked.name}: {line}", file=sys.stderr)
    for line in sorted(want - have):
        print(f"only in the pom's classpath: {line}", file=sys.stderr)
    print(f"{locked} is not {pom_dir / 'pom.xml'}'s classpath: run python3 hack/apache-bookkeeper/jars.py lock",
          file=sys.stderr)
    return 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("lock", help="rewrite jars.lock from pom.xml (beside this file)")
    sub.add_parser("check", help="fail if jars.lock is not pom.xml's classpath as Maven resolves it")
    staging = sub.add_parser("stage", help="resolve the locked jars with Maven into a directory")
    staging.add_argument("target", type=Path)
    staging.add_argument("--lock", type=Path, default=HERE / "jars.lock")
    staging.add_argument("--settings", type=Path, default=None,
                         help="Maven's settings file (default: Maven's own, ~/.m2/settings.xml)")
    put = sub.add_parser("install", help="copy the locked jars, checked, from a directory into another")
    put.add_argument("lock", type=Path)
    put.add_argument("staged", type=Path)
    put.add_argument("target", type=Path)
    args = parser.parse_args(argv)
    if args.what == "lock":
        lock(HERE, HERE / "jars.lock")
    elif args.what == "check":
        return check(HERE, HERE / "jars.lock")
    elif args.what == "stage":
        stage(args.lock, args.target, args.settings)
    else:
        install(args.lock, args.staged, args.target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
