"""Each Python image's runtime dependencies are enough: every module of the packages it ships imports inside
the image (which has only its runtime lock installed), run as the image's user on a read-only root."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import oci

IMPORT_ALL = ("import importlib, pkgutil, sys\n"
              "for top in sys.argv[1:]:\n"
              "    package = importlib.import_module(top)\n"
              "    names = [m.name for m in pkgutil.walk_packages(package.__path__, top + '.')]\n"
              "    for name in names:\n"
              "        if name.endswith('.regenerate') or name.endswith('.__main__'):\n"
              "            continue  # development-only helpers, run with python -m\n"
              "        importlib.import_module(name)\n"
              "    print(top, len(names) + 1, 'modules')\n")
PACKAGES = {"bookie": ["bookie"], "operator": ["bookie_operator"], "audit": ["bookie_audit"]}


@pytest.mark.parametrize("role", sorted(PACKAGES))
def test_every_module_of_the_image_imports(images: dict[str, oci.Image], rootfs: Callable[[str], Path],
                                          tmp_path: Path, role: str) -> None:
    img = images[role]
    runner = oci.Image(img.layout, img.ref, img.manifest,
                       {**img.config, "config": {**img.runtime, "Entrypoint": ["/opt/venv/bin/python", "-c"]}})
    result = oci.run(runner, rootfs(role), tmp_path / "bundle", [IMPORT_ALL, *PACKAGES[role]])
    assert result.returncode == 0, result.stderr[-3000:]
    for package in PACKAGES[role]:
        assert f"{package} " in result.stdout
