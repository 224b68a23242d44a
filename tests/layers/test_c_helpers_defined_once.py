"""Each static function of the bookie's C sources is defined in one file: helpers the modules share live in
bookie/_native_common.h. The failing case runs the check of ./scripts/check-layers on a copy of the sources
with a copied helper added, so it proves the check in CI can fail."""

from __future__ import annotations

from pathlib import Path

from tests.layers.native_sources_check import REPO, check, copy_sources


def test_no_static_function_of_the_product_is_defined_twice() -> None:
    result = check(REPO / "bookie_image")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "each static function defined once" in result.stdout


def test_a_helper_copied_into_a_second_file_fails_naming_both(tmp_path: Path) -> None:
    copy_sources(tmp_path)
    (tmp_path / "bookie" / "storage" / "_copied.c").write_text(
        "#include <stdint.h>\n\n"
        "static int64_t\nread_int64_be(const uint8_t *p,\n              int unused) {\n    return p[0];\n}\n")
    result = check(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert ("static function read_int64_be is defined in 2 files: bookie/_native_common.h, "
            "bookie/storage/_copied.c") in result.stdout


def test_a_declaration_or_a_commented_out_copy_is_no_second_definition(tmp_path: Path) -> None:
    copy_sources(tmp_path)
    (tmp_path / "bookie" / "storage" / "_declared.c").write_text(
        "#include <stdint.h>\n\nstatic int64_t read_int64_be(const uint8_t *p);\n"
        "/* static long long now_ns(void) { return 0; } */\n")
    result = check(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
