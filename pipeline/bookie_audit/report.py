"""The self-contained HTML report, rendered from the audit's Parquet tables (pyarrow only, no Spark)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from html import escape
from typing import Any

import pyarrow.parquet as pq

from bookie_audit import plots

REPORT_NAME = "report.html"
TOP = 25

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;font-size:12px;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 7px}
th{background:#f0f0f0;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
.warn{background:#fff3cd;border:1px solid #e0c060;padding:8px 12px;margin:6px 0}
.bad{background:#f8d7da;border:1px solid #e08080;padding:8px 12px;margin:6px 0}
.plots{display:flex;flex-wrap:wrap;gap:16px}.plots figure{margin:0}figcaption{font-size:12px;color:#555}
ul.findings li{margin:3px 0}
"""


def _table(out_dir: str, name: str) -> list[dict[str, Any]]:
    path = os.path.join(out_dir, f"{name}.parquet")
    return pq.read_table(path).to_pylist() if os.path.exists(path) else []


def _cell(value: Any, col: str) -> str:
    if value is None:
        return "<td></td>"
    if isinstance(value, float):
        return f'<td class="n">{value:.3f}</td>'
    if isinstance(value, int) and not isinstance(value, bool):
        text = plots.human_bytes(value) if col.endswith("bytes") else str(value)
        return f'<td class="n" title="{value}">{escape(text)}</td>'
    return f"<td>{escape(str(value))}</td>"


def html_table(rows: Sequence[dict[str, Any]], cols: Sequence[str], limit: int = TOP) -> str:
    if not rows:
        return "<p><em>none</em></p>"
    head = "".join(f"<th>{escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(_cell(r.get(c), c) for c in cols) + "</tr>" for r in rows[:limit])
    more = f"<p><em>{len(rows) - limit} more rows in the Parquet table</em></p>" if len(rows) > limit else ""
    return f"<table><tr>{head}</tr>{body}</table>{more}"


def render(out_dir: str) -> str:
    with open(os.path.join(out_dir, "summary.json")) as f:
        summary = json.load(f)
    logs = _table(out_dir, "usage_logs")
    bookies = _table(out_dir, "usage_bookies")
    whatif = _table(out_dir, "compaction_whatif")
    pinning = _table(out_dir, "pinning")
    orphans = _table(out_dir, "orphans")
    repl = _table(out_dir, "replication_ledgers")
    flagged = _table(out_dir, "flagged")

    by_bookie: dict[str, list[tuple[float, float]]] = {}
    for row in logs:
        by_bookie.setdefault(row["bookie"], []).append((max(row["age_days"] or 0.0, 0.0), row["usage"] or 0.0))
    figures = [("Entry logs: age x usage (one dot per log; GC deletes logs at 0, compacts below the thresholds)",
              plots.scatter("age x usage", by_bookie, "age (days since last write)", "usage (live / total)",
                          hlines=[(0.2, "minor 0.2"), (0.8, "major 0.8")]))]
    names = [b["bookie"] for b in bookies]
    figures.append(("Bytes per bookie: what GC reclaims by deleting dead logs, what only compaction reclaims",
                  plots.stacked_bars("bytes per bookie", names, {
                      "live": [float(b["live_bytes"] - b["overreplicated_bytes"]) for b in bookies],
                      "over-replicated": [float(b["overreplicated_bytes"]) for b in bookies],
                      "garbage in dead logs": [float(b["dead_log_bytes"]) for b in bookies],
                      "garbage in live logs": [float(max(b["garbage_bytes"] - b["dead_log_bytes"], 0))
                                               for b in bookies],
                  }, "bytes", colors=["#59a14f", "#edc948", "#e15759", "#f28e2b"])))
    if whatif:
        minor0 = min(r["minor_threshold"] for r in whatif)
        series: dict[str, list[tuple[float, float]]] = {}
        dashed: list[bool] = []
        agg: dict[tuple[str, float], list[float]] = {}
        for r in whatif:
            if r["minor_threshold"] == minor0:
                acc = agg.setdefault((r["bookie"], r["major_threshold"]), [0.0, 0.0])
                acc[0] += r["reclaimed_bytes"]
                acc[1] += r["rewritten_bytes"]
        line_colors: list[str] = []
        for i, bookie in enumerate(sorted({k[0] for k in agg})):
            series[f"{bookie} reclaimed"] = [(k[1], v[0]) for k, v in agg.items() if k[0] == bookie]
            series[f"{bookie} rewritten"] = [(k[1], v[1]) for k, v in agg.items() if k[0] == bookie]
            dashed += [False, True]
            line_colors += [plots.color(i), plots.color(i)]
        figures.append((f"Compaction what-if: bytes reclaimed (solid) and rewritten (dashed) by major threshold "
                      f"(minor {minor0:g})",
                      plots.lines("compaction what-if", series, "major compaction threshold", "bytes", dashed,
                                colors=line_colors)))
    rs = summary.get("replication") or {}
    if rs:
        # Ledgers with problems first, then the biggest: up to 12 bars of entries by status.
        shown = sorted(repl, key=lambda r: (-(r["missing"] + r["under"]), -r["entries"], r["ledger_id"]))[:12]
        figures.append(("Replication health: entries of each ledger by replicas found vs write quorum "
                      f"(fleet: {rs.get('ok', 0)} ok, {rs.get('under', 0)} under-replicated, "
                      f"{rs.get('missing', 0)} missing, {rs.get('unverified', 0)} unverified)",
                      plots.stacked_bars("replication health", [str(r["ledger_id"]) for r in shown], {
                          "ok": [float(r["ok"]) for r in shown],
                          "unverified": [float(r["unverified"]) for r in shown],
                          "under-replicated": [float(r["under"]) for r in shown],
                          "missing": [float(r["missing"]) for r in shown],
                      }, "entries", yfmt=lambda v: f"{v:g}", colors=["#59a14f", "#bab0ac", "#f28e2b", "#e15759"],
                          xlabel="ledger")))

    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>bookie-audit report</title>",
             f"<style>{_CSS}</style></head><body>",
             "<h1>Bookie fleet storage audit</h1>",
             f"<p>{summary['logs']} entry logs ({plots.human_bytes(summary['log_bytes'])}) on "
             f"{len(summary['bookies'])} bookies; metadata snapshot of {summary['snapshot_ledgers']} ledgers; "
             f"mode {escape(summary['mode'])}; audit took {summary['elapsed_s']:.1f}s.</p>"]
    for w in summary.get("warnings", []):
        parts.append(f'<div class="warn">{escape(w)}</div>')
    if rs.get("missing"):
        parts.append(f'<div class="bad">Data loss: {rs["missing"]} entries have no replica.</div>')
    parts.append("<h2>Findings</h2><ul class='findings'>"
                 + "".join(f"<li>{escape(x)}</li>" for x in summary.get("findings", [])) + "</ul>")
    parts.append("<h2>Plots</h2><div class='plots'>")
    for caption, plot in figures:
        parts.append(f"<figure>{plot}<figcaption>{escape(caption)}</figcaption></figure>")
    parts.append("</div>")
    parts.append("<h2>Usage per bookie</h2>" + html_table(bookies, [
        "bookie", "logs", "dead_logs", "partial_logs", "file_bytes", "total_bytes", "live_bytes", "garbage_bytes",
        "dead_log_bytes", "overreplicated_bytes", "oldest_log_days", "flagged_logs"], 1000))
    parts.append("<h2>Ledgers pinning old logs</h2>" + html_table(pinning, [
        "ledger_id", "topic", "class", "state", "bookies", "old_logs", "sole_pinner_logs", "live_bytes",
        "pinned_garbage_bytes", "oldest_log_days", "custom_metadata"]))
    grid: dict[tuple[float, float], dict[str, Any]] = {}
    for r in whatif:
        g = grid.setdefault((r["minor_threshold"], r["major_threshold"]), {
            "minor_threshold": r["minor_threshold"], "major_threshold": r["major_threshold"], "deleted_bytes": 0,
            "minor_logs": 0, "major_logs": 0, "reclaimed_bytes": 0, "rewritten_bytes": 0})
        for key in ("deleted_bytes", "minor_logs", "major_logs", "reclaimed_bytes", "rewritten_bytes"):
            g[key] += r[key]
    for g in grid.values():
        g["write_amplification"] = g["rewritten_bytes"] / g["reclaimed_bytes"] if g["reclaimed_bytes"] else 0.0
    parts.append("<h2>Compaction what-if (fleet)</h2>" + html_table(
        [grid[k] for k in sorted(grid)], ["minor_threshold", "major_threshold", "deleted_bytes", "minor_logs",
                                          "major_logs", "reclaimed_bytes", "rewritten_bytes",
                                          "write_amplification"], 200))
    best = sorted(whatif, key=lambda r: (r["bookie"], r["minor_threshold"], r["major_threshold"]))
    parts.append("<h2>Compaction what-if per bookie</h2>" + html_table(best, [
        "bookie", "minor_threshold", "major_threshold", "deleted_bytes", "minor_logs", "minor_reclaimed_bytes",
        "minor_rewritten_bytes", "major_logs", "major_reclaimed_bytes", "major_rewritten_bytes",
        "reclaimed_bytes", "rewritten_bytes", "write_amplification"], 200))
    parts.append("<h2>Orphans (on disk, not placed there by metadata)</h2>" + html_table(orphans, [
        "bookie", "ledger_id", "class", "bytes", "logs"]))
    if repl or rs:
        problems = [r for r in repl if r["ok"] != r["entries"] or r["over_replicated"]]
        parts.append("<h2>Replication vs write quorum</h2>"
                     + "<p>" + ", ".join(f"{escape(k)}: {v}" for k, v in sorted(rs.items())) + "</p>"
                     + html_table(problems, ["ledger_id", "state", "write_quorum", "entries", "ok", "under",
                                             "missing", "unverified", "over_replicated", "custom_metadata"]))
    rest = _table(out_dir, "rest_bookies")
    if rest:
        parts.append("<h2>Bookies known by their REST API only</h2><p>Their entry logs cannot be read (Apache "
                     "BookKeeper's bookies serve none): disk figures from their admin API, what metadata places on "
                     "them from the snapshot. No per-log garbage, pinning, what-if or replication check.</p>"
                     + html_table(rest, ["bookie", "read_only", "entry_logs", "disk_used_bytes", "disk_total_bytes",
                                         "ledgers", "open_ledgers", "expected_entries", "expected_bytes",
                                         "unexplained_bytes", "underreplicated_ledgers", "major_compactions",
                                         "minor_compactions", "error"], 1000))
    parts.append(f"<h2>Corrupt or truncated data ({len(flagged)})</h2>" + html_table(flagged, [
        "bookie", "path", "mode", "offset", "size", "status", "error"]))
    parts.append("</body></html>")
    return "".join(parts)


def write_report(out_dir: str) -> str:
    path = os.path.join(out_dir, REPORT_NAME)
    with open(path, "w") as f:
        f.write(render(out_dir))
    return path
