"""Tiny inline-SVG plots for the report (no JavaScript, no CDN): scatter, stacked bars, lines."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac")
W, H = 680, 320
ML, MR, MT, MB = 64, 190, 20, 44  # margins (right margin holds the legend)


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def human_bytes(n: float) -> str:
    for unit in ("B", "K", "M", "G", "T", "P"):
        if abs(n) < 1024 or unit == "P":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
    return str(n)


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    return [start + i * step for i in range(int((hi - start) / step) + 2) if start + i * step <= hi + 1e-9]


def _frame(title: str, xlabel: str, ylabel: str, x0: float, x1: float, y0: float, y1: float,
           xfmt: Callable[[float], str], yfmt: Callable[[float], str]) -> tuple[list[str], Callable[[float], float],
                                                                            Callable[[float], float]]:
    pw, ph = W - ML - MR, H - MT - MB
    x1 = x1 if x1 > x0 else x0 + 1
    y1 = y1 if y1 > y0 else y0 + 1

    def sx(x: float) -> float:
        return ML + (x - x0) / (x1 - x0) * pw

    def sy(y: float) -> float:
        return MT + ph - (y - y0) / (y1 - y0) * ph

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{W}" height="{H}" '
             f'viewBox="0 0 {W} {H}" role="img" aria-label="{escape(title)}">',
             f"<title>{escape(title)}</title>",
             f'<rect x="{ML}" y="{MT}" width="{pw}" height="{ph}" fill="#fafafa" stroke="#ccc"/>']
    for t in _ticks(x0, x1):
        if x0 <= t <= x1 and xfmt(t):
            parts.append(f'<line x1="{sx(t):.1f}" y1="{MT + ph}" x2="{sx(t):.1f}" y2="{MT + ph + 4}" stroke="#666"/>'
                         f'<text x="{sx(t):.1f}" y="{MT + ph + 16}" font-size="10" text-anchor="middle">'
                         f"{escape(xfmt(t))}</text>")
    for t in _ticks(y0, y1):
        if y0 <= t <= y1:
            parts.append(f'<line x1="{ML}" y1="{sy(t):.1f}" x2="{ML + pw}" y2="{sy(t):.1f}" stroke="#eee"/>'
                         f'<text x="{ML - 6}" y="{sy(t) + 3:.1f}" font-size="10" text-anchor="end">'
                         f"{escape(yfmt(t))}</text>")
    parts.append(f'<text x="{ML + pw / 2}" y="{H - 8}" font-size="11" text-anchor="middle">{escape(xlabel)}</text>')
    parts.append(f'<text x="14" y="{MT + ph / 2}" font-size="11" text-anchor="middle" '
                 f'transform="rotate(-90 14 {MT + ph / 2})">{escape(ylabel)}</text>')
    return parts, sx, sy


def _legend(parts: list[str], names: Sequence[str], dashed: Sequence[bool] = (),
            colors: Sequence[str] | None = None) -> None:
    for i, name in enumerate(names[:16]):
        y = MT + 8 + i * 16
        x = W - MR + 12
        dash = ' stroke-dasharray="4 3"' if i < len(dashed) and dashed[i] else ""
        stroke = colors[i] if colors else color(i)
        parts.append(f'<line x1="{x}" y1="{y}" x2="{x + 16}" y2="{y}" stroke="{stroke}" stroke-width="4"{dash}/>'
                     f'<text x="{x + 22}" y="{y + 4}" font-size="11">{escape(name[:28])}</text>')


def scatter(title: str, series: dict[str, list[tuple[float, float]]], xlabel: str, ylabel: str,
            hlines: Sequence[tuple[float, str]] = (), yfmt: Callable[[float], str] = lambda v: f"{v:g}",
            ) -> str:
    points = [p for pts in series.values() for p in pts]
    x1 = max((p[0] for p in points), default=1.0)
    y1 = max([1.0, *(p[1] for p in points)])
    parts, sx, sy = _frame(title, xlabel, ylabel, 0.0, x1 * 1.05 or 1.0, 0.0, y1, lambda v: f"{v:g}", yfmt)
    for value, label in hlines:
        parts.append(f'<line x1="{ML}" y1="{sy(value):.1f}" x2="{W - MR}" y2="{sy(value):.1f}" stroke="#999" '
                     f'stroke-dasharray="5 4"/><text x="{W - MR - 4}" y="{sy(value) - 3:.1f}" font-size="10" '
                     f'text-anchor="end" fill="#666">{escape(label)}</text>')
    for i, (_name, pts) in enumerate(series.items()):
        for x, y in pts[:5000]:
            parts.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3.5" fill="{color(i)}" fill-opacity="0.7"/>')
    _legend(parts, list(series))
    parts.append("</svg>")
    return "".join(parts)


def stacked_bars(title: str, categories: Sequence[str], stacks: dict[str, Sequence[float]], ylabel: str,
                 yfmt: Callable[[float], str] = human_bytes, colors: Sequence[str] | None = None,
                 xlabel: str = "") -> str:
    totals = [sum(vals[i] for vals in stacks.values()) for i in range(len(categories))]
    parts, _sx, sy = _frame(title, xlabel, ylabel, 0, 1, 0, max(totals, default=1) or 1, lambda v: "", yfmt)
    pw = W - ML - MR
    slot = pw / max(len(categories), 1)
    bw = min(60.0, slot * 0.7)
    for c, cat in enumerate(categories):
        x = ML + c * slot + (slot - bw) / 2
        base = 0.0
        for s, (name, vals) in enumerate(stacks.items()):
            v = vals[c]
            if v > 0:
                fill = colors[s] if colors else color(s)
                parts.append(f'<rect x="{x:.1f}" y="{sy(base + v):.1f}" width="{bw:.1f}" '
                             f'height="{sy(base) - sy(base + v):.1f}" fill="{fill}">'
                             f"<title>{escape(cat)} {escape(name)}: {escape(yfmt(v))}</title></rect>")
            base += v
        parts.append(f'<text x="{x + bw / 2:.1f}" y="{H - MB + 14}" font-size="10" text-anchor="middle">'
                     f"{escape(cat[:18])}</text>")
    names = list(stacks)
    for i, name in enumerate(names):
        y = MT + 8 + i * 16
        fill = colors[i] if colors else color(i)
        parts.append(f'<rect x="{W - MR + 12}" y="{y - 5}" width="14" height="10" fill="{fill}"/>'
                     f'<text x="{W - MR + 32}" y="{y + 4}" font-size="11">{escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def lines(title: str, series: dict[str, list[tuple[float, float]]], xlabel: str, ylabel: str,
          dashed: Sequence[bool] = (), yfmt: Callable[[float], str] = human_bytes,
          colors: Sequence[str] | None = None) -> str:
    points = [p for pts in series.values() for p in pts]
    xs = [p[0] for p in points] or [0.0, 1.0]
    y1 = max([p[1] for p in points] or [1.0]) or 1.0
    parts, sx, sy = _frame(title, xlabel, ylabel, min(xs), max(xs), 0.0, y1, lambda v: f"{v:g}", yfmt)
    for i, (_name, pts) in enumerate(series.items()):
        pts = sorted(pts)
        dash = ' stroke-dasharray="6 4"' if i < len(dashed) and dashed[i] else ""
        path = " ".join(f"{'M' if j == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}" for j, (x, y) in enumerate(pts))
        stroke = colors[i] if colors else color(i)
        parts.append(f'<path d="{path}" fill="none" stroke="{stroke}" stroke-width="2"{dash}/>')
        for x, y in pts:
            parts.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="{stroke}"/>')
    _legend(parts, list(series), dashed, colors)
    parts.append("</svg>")
    return "".join(parts)
