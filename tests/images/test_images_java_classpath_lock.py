"""The Java bookie image's jars (hack/apache-bookkeeper/jars.lock) are the classpath Maven resolves from the
image's pom (hack/apache-bookkeeper/pom.xml): a pom change without ``python3 hack/apache-bookkeeper/jars.py
lock`` fails here. And its Apache BookKeeper is byte for byte the one the compatibility tests run outside
Kubernetes at that version ($BOOKIE_FLEET_BK_COMPAT_LIB), whose configuration keys the operator checks."""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = REPO / "hack" / "apache-bookkeeper"
sys.path.insert(0, str(HERE))

import jars  # noqa: E402  (hack/apache-bookkeeper/jars.py, not a package)


def test_jars_lock_is_the_image_poms_classpath(capsys: pytest.CaptureFixture[str]) -> None:
    assert jars.check(HERE, HERE / "jars.lock") == 0, capsys.readouterr().err


def test_the_images_bookkeeper_is_the_compatibility_tests_other_version() -> None:
    version = re.search(r"<bookkeeper.version>([^<]+)</bookkeeper.version>", (HERE / "pom.xml").read_text())
    assert version and version.group(1) == os.environ["BOOKIE_FLEET_BK_COMPAT_VERSION"]
    lib = Path(os.environ["BOOKIE_FLEET_BK_COMPAT_LIB"])
    bookkeeper = [j for j in jars.parse_lock((HERE / "jars.lock").read_text())
                  if j.group.startswith("org.apache.bookkeeper")]
    assert {j.artifact for j in bookkeeper} >= {"bookkeeper-server", "vertx-http-server",
                                                "prometheus-metrics-provider"}
    differ = [j.file_name for j in bookkeeper
              if not (lib / j.file_name).is_file() or hashlib.sha256((lib / j.file_name).read_bytes()).hexdigest()
              != j.sha256]
    assert differ == [], f"the image's BookKeeper jars not in {lib} as locked"
