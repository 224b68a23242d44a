"""An image that cannot be built names the step that failed (scripts/build-image, as the bootstrap runs it)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_broken_dockerfile_names_the_failing_step(tmp_path: Path) -> None:
    store = Path(os.environ["BOOKIE_FLEET_CACHE"]) / "buildah"
    context = tmp_path / "context"
    context.mkdir()
    (context / "Dockerfile").write_text("FROM python:3.11-slim-bookworm\n"
                                        "RUN python3 -c 'print(\"fine\")'\n"
                                        "RUN echo broken && exit 3\n"
                                        "USER 10000\n")
    result = subprocess.run([str(REPO / "scripts" / "build-image"), str(store), str(context / "Dockerfile"),
                             str(context), "bookie-fleet/broken:test", str(tmp_path / "oci"),
                             str(tmp_path / "build.log")], capture_output=True, text=True, timeout=600)
    assert result.returncode == 1
    assert "building bookie-fleet/broken:test from" in result.stderr
    assert "failed at STEP 3/4: RUN echo broken && exit 3" in result.stderr, result.stderr
    assert not (tmp_path / "oci").exists(), "a failed build pushed an image"
