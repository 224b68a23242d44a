"""A small reader of the Prometheus text format, strict enough to check BookKeeper's layout."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


@dataclass
class Exposition:
    types: dict[str, str] = field(default_factory=dict)
    samples: list[tuple[str, dict[str, str], float]] = field(default_factory=list)

    def value(self, name: str, **labels: str) -> float:
        """The sum over the series of ``name`` whose labels include ``labels``."""
        found = [v for n, lab, v in self.samples if n == name and labels.items() <= lab.items()]
        if not found:
            raise KeyError(f"no sample {name}{labels}")
        return sum(found)

    def label_sets(self, name: str) -> list[dict[str, str]]:
        return [lab for n, lab, _ in self.samples if n == name]


def parse(text: str) -> Exposition:
    out = Exposition()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            assert name not in out.types, f"# TYPE {name} twice"
            out.types[name] = kind
        elif line and not line.startswith("#"):
            match = _SAMPLE.match(line)
            assert match, f"not a sample line: {line!r}"
            labels = dict(_LABEL.findall(match.group(2) or ""))
            out.samples.append((match.group(1), labels, float(match.group(3))))
    return out
