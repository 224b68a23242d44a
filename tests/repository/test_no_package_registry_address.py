"""No tracked file names a package registry's address (Maven Central, PyPI, the Go module proxy, npm,
crates.io, Debian's mirrors): every download goes through the user's own tool and its configuration (Maven's
settings.xml, pip's index, GOPROXY, apt's sources), so a machine behind a company mirror builds as one that
reaches the public registries directly. Names in prose ("Maven Central") are fine; host names and the URL
shapes of a repository (``.../maven2``, a ``.../simple`` index, a ``.../debian`` archive) are not.

The patterns are regular expressions with escaped dots and optional parts, so this file does not match them.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

HOSTS = {
    "Maven Central": r"repo\d?\.maven\.org|repo\.maven\.apache\.org|central\.maven\.org|(?:s01\.)?oss\.sonatype\.org"
                     r"|repo\.maven\.\w+",
    "PyPI": r"(?:test\.)?pypi\.(?:org|python\.org)|files\.pythonhosted\.org",
    "the Go module proxy": r"proxy\.golang\.org|sum\.golang\.org|goproxy\.(?:io|cn)",
    "npm": r"registry\.npmjs\.(?:org|com)|registry\.yarnpkg\.com",
    "crates.io": r"(?:static\.|index\.)?crates\.io(?=/)|://crates\.io",
    "Debian's mirrors": r"(?:deb|security|httpredir|snapshot|ftp(?:\.[a-z]{2})?)\.debian\.org"
                        r"|archive\.ubuntu\.com|security\.ubuntu\.com",
}
# A repository's address on any host: Maven's layout, a PEP 503 index, an apt archive.
PATH_SHAPES = r"[a-z][a-z0-9+.-]*s?://[^\s\"'<>()]+/(?:maven2|simple|debian)(?![\w.-])"

PATTERN = re.compile("|".join(f"(?P<h{i}>{p})" for i, p in enumerate(HOSTS.values())) + f"|(?P<path>{PATH_SHAPES})",
                     re.IGNORECASE)
WHAT = {f"h{i}": name for i, name in enumerate(HOSTS)} | {"path": "a repository's URL"}


def registry_addresses(text: str) -> list[tuple[int, str, str]]:
    """(line number, what it names, the match) for each registry address in ``text``."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in PATTERN.finditer(line):
            found.append((number, WHAT[str(match.lastgroup)], match.group()))
    return found


def tracked_text_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True).stdout
    files = [REPO / name for name in names.decode().split("\0") if name]
    return [f for f in files if f.is_file() and b"\0" not in f.read_bytes()[:8192]]


@pytest.mark.parametrize("text", [
    "url = " + "https://repo1" + ".maven.org/maven2",
    "pip install -i " + "https://pypi" + ".org/simple bookie",
    "GOPROXY=" + "https://proxy" + ".golang.org,direct",
    "registry=" + "https://registry" + ".npmjs.org/",
    "[source] " + "https://index" + ".crates" + ".io/",
    "deb " + "http://deb" + ".debian.org/debian bookworm main",
    "<url>" + "https://nexus.example.com/repository" + "/maven2</url>",
    "index-url = " + "https://artifacts.example.com/pypi" + "/simple",
])
def test_the_patterns_find_registry_addresses(text: str) -> None:
    assert registry_addresses(text), text


@pytest.mark.parametrize("text", [
    "the jars come from Maven Central (Debian's packages, the Go module proxy)",
    '<project xmlns="http://maven.apache.org/POM/4.0.0">',
    "sed -n 's/^URIs: *\\(http[^ ]*debian\\)\\/*$/\\1/p' /etc/apt/sources.list.d/*.sources",
    "https://kubernetes.default.svc/api/v1/namespaces",
])
def test_the_patterns_leave_names_and_other_urls_alone(text: str) -> None:
    assert registry_addresses(text) == [], text


def test_no_tracked_file_names_a_registry_address() -> None:
    found = [f"{path.relative_to(REPO)}:{number}: {what}: {match}"
             for path in tracked_text_files()
             for number, what, match in registry_addresses(path.read_text(errors="replace"))]
    assert found == [], "package registry addresses in the repository (use the tool's own configuration):\n" + \
        "\n".join(found)
