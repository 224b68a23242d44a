"""The bookie's C sources include project headers only as .importlinter lets the matching Python modules
import: storage's C includes no protocol header, protocol's no storage header (each file and header read as
the module of its path). The failing cases run the check of ./scripts/check-layers on a copy of the sources
with one violating file added, so they prove the check in CI can fail."""

from __future__ import annotations

from pathlib import Path

from tests.layers.native_sources_check import REPO, check, copy_sources


def test_the_product_includes_follow_the_layers() -> None:
    result = check(REPO / "bookie_image")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "includes within the layers of .importlinter" in result.stdout


def test_storage_including_a_protocol_header_breaks_the_storage_contract(tmp_path: Path) -> None:
    copy_sources(tmp_path)
    (tmp_path / "bookie" / "storage" / "_shortcut.h").write_text('#include "../protocol/_native_api.h"\n')
    result = check(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert ('bookie/storage/_shortcut.h includes "../protocol/_native_api.h" (bookie.protocol._native_api): '
            "breaks the contract 'The storage engine imports no protocol, HTTP, metadata or GC code'"
            ) in result.stdout


def test_protocol_including_a_storage_header_breaks_the_protocol_contract(tmp_path: Path) -> None:
    copy_sources(tmp_path)
    (tmp_path / "bookie" / "protocol" / "_shortcut.c").write_text('#  include "../storage/_write_path_api.h"\n')
    result = check(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "bookie/protocol/_shortcut.c includes \"../storage/_write_path_api.h\"" in result.stdout
    assert "'The protocol imports no storage (nor anything above it)'" in result.stdout


def test_the_client_including_a_storage_header_breaks_the_client_contract(tmp_path: Path) -> None:
    copy_sources(tmp_path)
    (tmp_path / "bookie" / "client" / "_shortcut.c").write_text('#include "../storage/_write_path_api.h"\n')
    result = check(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "'The ledger client imports no bookie server, storage or GC code'" in result.stdout
