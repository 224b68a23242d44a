"""The HTML report is self-contained and renders its plots (drawn by matplotlib's SVG backend) in headless
Chromium (screenshot taken)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# polyglot.md: without the background-networking flags Chromium tries Google's hosts on this closed network.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]


def test_report_is_self_contained_with_four_plots(audit_out: Any) -> None:
    html = (Path(audit_out[0]) / "report.html").read_text()
    assert html.count("<svg") == 4
    assert not re.search(r"<(script|link|img)\b", html)  # nothing fetched, no JavaScript
    # SVG's namespace names are identifiers, never fetched; no other address appears.
    names = html.replace('xmlns="http://www.w3.org/2000/svg"', "").replace(
        'xmlns:xlink="http://www.w3.org/1999/xlink"', "")
    assert "http://" not in names and "https://" not in names
    assert "Matplotlib" not in html and "<metadata" not in html   # no creator or date block
    for caption in ("age x usage", "bytes per bookie", "compaction what-if", "replication health"):
        assert f'aria-label="{caption}"' in html
    assert "Data loss: 1 entries" in html


def test_report_renders_in_headless_chromium(audit_out: Any, tmp_path: Path) -> None:
    assert os.path.exists(CHROMIUM), "Chromium missing: scripts/bootstrap.d/chromium.sh installs it"
    report = Path(audit_out[0]) / "report.html"
    shot = tmp_path / "report.png"
    dom = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                          report.as_uri()], capture_output=True, text=True, timeout=120, check=True).stdout
    # What Chromium parsed: four SVG plots with their markers (one <use> per point), bars and curves, and their
    # axes' tick labels as text.
    assert dom.count("<svg") == 4 and dom.count("<use ") > 13 and "<path" in dom and dom.count("<text") > 20
    subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
                    "--window-size=1400,2200", report.as_uri()], capture_output=True, timeout=120, check=True)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000  # a page with plots, not a blank one
    keep = os.environ.get("BOOKIE_AUDIT_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)
