"""The Apache BookKeeper classpath of the Java bookie image, pinned: Maven Central coordinates and sha256.

    python3 hack/apache-bookkeeper/jars.py lock      # rewrite jars.lock from hack/maven/pom.xml (needs mvn)
    python3 jars.py fetch jars.lock /opt/bookkeeper/lib [--cache DIR]   # inside the image build

``fetch`` needs only the Python standard library (it runs in the image build, on the base image's
interpreter) and refuses a jar whose sha256 differs from the lock's. The file names are Maven's
(``dependency:copy-dependencies``), so the image's lib/ holds the same files as the bootstrap's classpath.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

CENTRAL = "https://repo1.maven.org/maven2"
HERE = Path(__file__).resolve().parent


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

    @property
    def url(self) -> str:
        return f"{CENTRAL}/{self.group.replace('.', '/')}/{self.artifact}/{self.version}/{self.file_name}"

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


def fetch(lock: Path, target: Path, cache: Path | None) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for jar in parse_lock(lock.read_text()):
        cached = cache / jar.sha256 if cache else None
        if cached is not None and cached.is_file() and sha256_of(cached) == jar.sha256:
            shutil.copyfile(cached, target / jar.file_name)
            continue
        with tempfile.NamedTemporaryFile(dir=target, delete=False) as out:
            try:
                with urllib.request.urlopen(jar.url, timeout=120) as response:
                    shutil.copyfileobj(response, out)
            except OSError as exc:
                os.unlink(out.name)
                raise SystemExit(f"downloading {jar.url} failed: {exc}") from exc
        got = sha256_of(Path(out.name))
        if got != jar.sha256:
            os.unlink(out.name)
            raise SystemExit(f"{jar.url}: sha256 {got} differs from jars.lock's {jar.sha256}")
        os.replace(out.name, target / jar.file_name)
        os.chmod(target / jar.file_name, 0o644)
        if cached is not None:
            cache.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(target / jar.file_name, cached)


def lock(pom_dir: Path, out: Path) -> None:
    """Resolve hack/maven's runtime classpath with Maven and write its coordinates and hashes."""
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
    header = ("# The Java bookie image's classpath (hack/maven/pom.xml's runtime scope), from Maven Central.\n"
              "# Regenerate after changing the pom: python3 hack/apache-bookkeeper/jars.py lock\n")
    out.write_text(header + "".join(j.line() + "\n" for j in sorted(jars, key=lambda j: j.line())))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("lock", help="rewrite jars.lock from hack/maven/pom.xml")
    get = sub.add_parser("fetch", help="download the locked jars into a directory")
    get.add_argument("lock", type=Path)
    get.add_argument("target", type=Path)
    get.add_argument("--cache", type=Path, help="a directory of jars by sha256, reused between builds")
    args = parser.parse_args(argv)
    if args.what == "lock":
        lock(HERE.parent / "maven", HERE / "jars.lock")
    else:
        fetch(args.lock, args.target, args.cache)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
