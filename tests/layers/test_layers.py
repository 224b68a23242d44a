"""The layer contracts (.importlinter) and the import-cycle check hold for the product, and fail on a violation.

The failing cases run the same commands as ./scripts/check-layers on a copy of the product packages with one
violating module added, so they prove the check in CI can fail, not only that today's code passes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = {"bookie": "bookie_image", "bookie_operator": "operator", "bookie_fleet": "fleet",
            "bookie_audit": "pipeline", "localkube": "localkube"}
LINT = "from importlinter.cli import lint_imports_command; lint_imports_command()"


def _run(args: list[str], root: Path) -> subprocess.CompletedProcess[str]:
    """A check with ``root`` first on the path, so the copies there shadow this checkout's packages."""
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "200"}
    return subprocess.run([sys.executable, *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300, check=False)


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return _run(["-P", "-c", LINT, "--config", str(REPO / ".importlinter"), "--no-cache"], root)


def _copy_product(root: Path) -> None:
    for package, parent in PACKAGES.items():
        shutil.copytree(REPO / parent / package, root / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so"))


def test_contracts_hold_for_the_product(tmp_path: Path) -> None:
    _copy_product(tmp_path)
    result = _lint(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_storage_importing_http_breaks_the_storage_contract(tmp_path: Path) -> None:
    _copy_product(tmp_path)
    (tmp_path / "bookie" / "storage" / "rest_shortcut.py").write_text("from bookie.http import api\n")
    result = _lint(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "The storage engine imports no protocol, HTTP, metadata or GC code BROKEN" in result.stdout
    assert "bookie.storage.rest_shortcut -> bookie.http.api" in result.stdout


def test_operator_importing_the_server_breaks_its_contract(tmp_path: Path) -> None:
    _copy_product(tmp_path)
    (tmp_path / "bookie_operator" / "inline_bookie.py").write_text(
        "def start():\n    from bookie.server import BookieServer\n    return BookieServer\n")
    result = _lint(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "The operator does not import the bookie server BROKEN" in result.stdout


def test_inspector_importing_the_storage_engine_breaks_its_contract(tmp_path: Path) -> None:
    _copy_product(tmp_path)
    (tmp_path / "bookie" / "inspector" / "index_shortcut.py").write_text(
        "from bookie.storage.engine import StorageEngine\n")
    result = _lint(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "The inspector imports no storage engine" in result.stdout and "BROKEN" in result.stdout
    assert "bookie.inspector.index_shortcut -> bookie.storage.engine" in result.stdout


def test_no_import_cycles_in_the_product() -> None:
    result = _run([str(REPO / "scripts" / "import_cycles.py")], REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "\nimport cycle:" not in "\n" + result.stdout


def test_a_cycle_held_apart_by_a_lazy_import_is_reported(tmp_path: Path) -> None:
    package = tmp_path / "cyclic"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from cyclic import b\n")
    (package / "b.py").write_text("def later():\n    from cyclic import a\n    return a\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyclic import a\n")
    result = _run([str(REPO / "scripts" / "import_cycles.py"), "cyclic"], tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "import cycle: cyclic.a -> cyclic.b -> cyclic.a" in result.stdout

    (package / "b.py").write_text("def later():\n    return None\n")  # the cycle broken for real
    result = _run([str(REPO / "scripts" / "import_cycles.py"), "cyclic"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no import cycles in cyclic" in result.stdout
