"""The Java bookie image's jars (hack/apache-bookkeeper/jars.lock) are the classpath the bootstrap assembles
with Maven from hack/maven/pom.xml ($BOOKIE_FLEET_BK_LIB): same files, same bytes. A pom change without
``python3 hack/apache-bookkeeper/jars.py lock`` fails here."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "hack" / "apache-bookkeeper"))

import jars  # noqa: E402  (hack/apache-bookkeeper/jars.py, not a package)


def test_jars_lock_is_the_maven_classpath() -> None:
    lib = Path(os.environ["BOOKIE_FLEET_BK_LIB"])
    locked = {j.file_name: j.sha256 for j in jars.parse_lock((REPO / "hack/apache-bookkeeper/jars.lock").read_text())}
    assembled = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in lib.glob("*.jar")}
    assert sorted(set(assembled) - set(locked)) == [], "jars.lock lacks jars of the classpath"
    assert sorted(set(locked) - set(assembled)) == [], "jars.lock has jars the classpath does not"
    differ = sorted(name for name in locked if locked[name] != assembled[name])
    assert differ == [], f"jars whose sha256 differs from jars.lock: {differ}"

