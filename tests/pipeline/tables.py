"""An audit's output directory as comparable data: every table as sorted JSON rows, with each input root replaced
by a name (the paths of the two readings differ, nothing else may), and the summary without its run time."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq


def audit_tables(out: Path, names: dict[str, str]) -> dict[str, list[str]]:
    # Longer roots first: one may be a prefix of another.
    roots = sorted(names.items(), key=lambda kv: -len(kv[0]))
    tables: dict[str, list[str]] = {}
    for path in sorted(out.glob("*.parquet")):
        rows = [json.dumps(r, sort_keys=True, default=repr) for r in pq.read_table(path).to_pylist()]
        for root, name in roots:
            rows = [r.replace(root, name) for r in rows]
        tables[path.stem] = sorted(rows)
    summary = json.loads((out / "summary.json").read_text())
    summary.pop("elapsed_s")
    tables["summary"] = [json.dumps(summary, sort_keys=True)]
    return tables
