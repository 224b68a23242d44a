"""The report's plots as inline SVG, drawn by matplotlib (its SVG backend: axes, ticks and legends as users
expect them; text kept as text; no JavaScript, nothing fetched): scatter, stacked bars, lines.

Each plot is a standalone ``Figure`` (no pyplot state, so plots can be drawn from any thread), saved as SVG
without matplotlib's metadata block, with the caption as its ``aria-label``. Several plots share one HTML page, so
each figure's element ids are salted with its title (SVG ids are global to the page).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from html import escape

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac")
SIZE_INCHES = (7.6, 3.4)
MAX_POINTS = 5000          # per scatter series: the report stays small whatever the fleet's size
MAX_LEGEND = 16


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def human_bytes(n: float) -> str:
    for unit in ("B", "K", "M", "G", "T", "P"):
        if abs(n) < 1024 or unit == "P":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
    return str(n)


def _figure(xlabel: str, ylabel: str, yfmt: Callable[[float], str]) -> tuple[Figure, Axes]:
    fig = Figure(figsize=SIZE_INCHES)
    ax = fig.add_subplot()
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: yfmt(v)))
    ax.grid(axis="y", color="#eeeeee")
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return fig, ax


def _legend(ax: Axes, fig: Figure) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles[:MAX_LEGEND], [label[:28] for label in labels[:MAX_LEGEND]],
                  loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()


def _svg(fig: Figure, title: str) -> str:
    """The figure as an inline <svg> element: no XML prolog, DOCTYPE or metadata (creator, date)."""
    out = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": title}):
        fig.savefig(out, format="svg", metadata={"Creator": None, "Date": None, "Format": None, "Type": None})
    text = out.getvalue()
    text = text[text.index("<svg"):]
    label = escape(title, quote=True)
    return text.replace("<svg ", f'<svg class="plot" role="img" aria-label="{label}" ', 1)


def scatter(title: str, series: dict[str, list[tuple[float, float]]], xlabel: str, ylabel: str,
            hlines: Sequence[tuple[float, str]] = (), yfmt: Callable[[float], str] = lambda v: f"{v:g}",
            ) -> str:
    fig, ax = _figure(xlabel, ylabel, yfmt)
    for i, (name, pts) in enumerate(series.items()):
        pts = pts[:MAX_POINTS]
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=14, color=color(i), alpha=0.7,
                   label=name)
    for value, label in hlines:
        ax.axhline(value, color="#999999", linestyle="--", linewidth=1)
        ax.annotate(label, xy=(1.0, value), xycoords=("axes fraction", "data"), ha="right",
                    va="bottom", fontsize=8, color="#666666")
    top = max([1.0, *(p[1] for pts in series.values() for p in pts)])
    ax.set_ylim(0.0, top * 1.02)
    ax.set_xlim(left=0.0)
    _legend(ax, fig)
    return _svg(fig, title)


def stacked_bars(title: str, categories: Sequence[str], stacks: dict[str, Sequence[float]], ylabel: str,
                 yfmt: Callable[[float], str] = human_bytes, colors: Sequence[str] | None = None,
                 xlabel: str = "") -> str:
    fig, ax = _figure(xlabel, ylabel, yfmt)
    positions = list(range(len(categories)))
    base = [0.0] * len(categories)
    for s, (name, values) in enumerate(stacks.items()):
        heights = [float(v) for v in values]
        ax.bar(positions, heights, bottom=base, width=0.6, label=name,
               color=colors[s] if colors else color(s))
        base = [b + h for b, h in zip(base, heights, strict=True)]
    ax.set_xticks(positions, [c[:18] for c in categories], fontsize=8)
    _legend(ax, fig)
    return _svg(fig, title)


def lines(title: str, series: dict[str, list[tuple[float, float]]], xlabel: str, ylabel: str,
          dashed: Sequence[bool] = (), yfmt: Callable[[float], str] = human_bytes,
          colors: Sequence[str] | None = None) -> str:
    fig, ax = _figure(xlabel, ylabel, yfmt)
    for i, (name, pts) in enumerate(series.items()):
        pts = sorted(pts)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, linewidth=1.8,
                linestyle="--" if i < len(dashed) and dashed[i] else "-",
                color=colors[i] if colors else color(i), label=name)
    ax.set_ylim(bottom=0.0)
    _legend(ax, fig)
    return _svg(fig, title)
