"""The one writer of benchmark results into the docs: each benchmark owns a section of a Markdown file between
its own ``<!-- name:begin -->`` / ``<!-- name:end -->`` markers and rewrites only that section."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
NEW_DOC = "# Benchmarks\n\nEvery number here comes from a command in bench/.\n"


def write_section(doc: Path, section: str, begin: str, end: str, *, insert_before: str | None = None) -> None:
    """Replace the text from ``begin`` to ``end`` with ``section`` (which carries both markers).

    A document without the markers gets the section appended, or placed before ``insert_before`` when that
    marker is present (so a suite's table stays above the sections it summarises).
    """
    text = doc.read_text() if doc.exists() else NEW_DOC
    if begin in text:
        head, rest = text.split(begin, 1)
        text = head + section + rest.split(end, 1)[1]
    elif insert_before is not None and insert_before in text:
        head, sep, rest = text.partition(insert_before)
        text = head + section + "\n\n" + sep + rest
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    doc.write_text(text)


def publish(name: str, section: str, results: Any, *, write: bool, doc: Path = BENCHMARKS) -> None:
    """A benchmark's ending: its Markdown section and its results (JSON, last line) on stdout, and the section
    written between ``<!-- name:begin -->`` and ``<!-- name:end -->`` of the results document when ``write``."""
    print(section)
    if write:
        begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
        write_section(doc, f"{begin}\n{section}\n{end}", begin, end)
    print(json.dumps(results, default=str))
