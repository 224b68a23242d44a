"""Daily time windows (``HH:MM-HH:MM``, may wrap midnight), as the configuration writes them
(``majorCompactionWindow``) and GC applies them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import time as dtime


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A daily local-time window ``HH:MM-HH:MM``; may wrap midnight (``22:00-04:00``)."""

    start: dtime
    end: dtime

    def contains(self, t: dtime) -> bool:
        if self.start <= self.end:
            return self.start <= t < self.end
        return t >= self.start or t < self.end


_WINDOW_RE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")


def parse_window(text: str) -> TimeWindow | None:
    """``"01:00-05:00"`` -> TimeWindow; ``""`` -> None (no window). Raises ValueError on anything else."""
    if not text.strip():
        return None
    m = _WINDOW_RE.match(text)
    if not m:
        raise ValueError(f"expected HH:MM-HH:MM, got {text!r}")
    h1, m1, h2, m2 = (int(g) for g in m.groups())
    if h1 > 23 or h2 > 23 or m1 > 59 or m2 > 59:
        raise ValueError(f"hours must be 0-23 and minutes 0-59, got {text!r}")
    if (h1, m1) == (h2, m2):
        raise ValueError(f"an empty window never allows compaction, got {text!r}")
    return TimeWindow(dtime(h1, m1), dtime(h2, m2))
