"""The bookie's C sources include project headers only as .importlinter lets the matching Python modules
import: storage's C includes no protocol header, protocol's no storage header (each file and header read as
the module of its path). The failing cases run the check of ./scripts/check-layers on a copy of the sources
with one violating file added, so they prove the check in CI can fail."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHECK = REPO / "scripts" / "native_sources.py"


def _check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CHECK), "--root", str(root)], capture_output=True, text=True,
                          timeout=60, check=False)


def _copy_sources(root: Path) -> None:
    shutil.copytree(REPO / "bookie_image" / "bookie", root / "bookie",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))


def test_the_product_includes_follow_the_layers() -> None:
    result = _check(REPO / "bookie_image")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "includes within the layers of .importlinter" in result.stdout


def test_storage_including_a_protocol_header_breaks_the_storage_contract(tmp_path: Path) -> None:
    _copy_sources(tmp_path)
    (tmp_path / "bookie" / "storage" / "_shortcut.h").write_text('#include "../protocol/_native_api.h"\n')
    result = _check(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert ('bookie/storage/_shortcut.h includes "../protocol/_native_api.h" (bookie.protocol._native_api): '
            "breaks the contract 'The storage engine imports no protocol, HTTP, metadata or GC code'"
            ) in result.stdout


def test_protocol_including_a_storage_header_breaks_the_protocol_contract(tmp_path: Path) -> None:
    _copy_sources(tmp_path)
    (tmp_path / "bookie" / "protocol" / "_shortcut.c").write_text('#  include "../storage/_write_path_api.h"\n')
    result = _check(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "bookie/protocol/_shortcut.c includes \"../storage/_write_path_api.h\"" in result.stdout
    assert "'The protocol imports no storage (nor anything above it)'" in result.stdout


def test_the_client_including_a_storage_header_breaks_the_client_contract(tmp_path: Path) -> None:
    _copy_sources(tmp_path)
    (tmp_path / "bookie" / "client" / "_shortcut.c").write_text('#include "../storage/_write_path_api.h"\n')
    result = _check(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "'The ledger client imports no bookie server, storage or GC code'" in result.stdout
