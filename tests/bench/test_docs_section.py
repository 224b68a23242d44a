"""Every benchmark rewrites only its own section of the results document."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def _docs_section() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "bench" / "docs_section.py"
    spec = importlib.util.spec_from_file_location("docs_section", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_section_replaces_only_its_markers(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# B\n\n<!-- a:begin -->\nold a\n<!-- a:end -->\n\n<!-- b:begin -->\nb\n<!-- b:end -->\n")
    _docs_section().write_section(doc, "<!-- a:begin -->\nnew a\n<!-- a:end -->", "<!-- a:begin -->",
                                  "<!-- a:end -->")
    assert doc.read_text() == "# B\n\n<!-- a:begin -->\nnew a\n<!-- a:end -->\n\n<!-- b:begin -->\nb\n<!-- b:end -->\n"


def test_a_new_section_is_appended_or_placed_before_another(tmp_path: Path) -> None:
    ds = _docs_section()
    doc = tmp_path / "benchmarks.md"
    ds.write_section(doc, "<!-- a:begin -->\na\n<!-- a:end -->", "<!-- a:begin -->", "<!-- a:end -->")
    assert doc.read_text() == ds.NEW_DOC + "\n<!-- a:begin -->\na\n<!-- a:end -->\n"
    ds.write_section(doc, "<!-- s:begin -->\ns\n<!-- s:end -->", "<!-- s:begin -->", "<!-- s:end -->",
                     insert_before="<!-- a:begin -->")
    assert doc.read_text() == (ds.NEW_DOC + "\n<!-- s:begin -->\ns\n<!-- s:end -->\n\n"
                               "<!-- a:begin -->\na\n<!-- a:end -->\n")
