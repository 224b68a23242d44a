#!/usr/bin/env python3
"""Fail when product code has an import cycle, printing each one.

import-linter's contracts check layers and forbidden imports but not cycles, so this walks the same import
graph (grimp, import-linter's own library). Every import counts, including those inside functions and under
``if TYPE_CHECKING:``: a cycle held apart by a lazy import is still a cycle in the design.

Usage: ``import_cycles.py [PACKAGE ...]`` (default: every product package). Exit status 1 when a cycle exists.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Iterable, Mapping, Sequence

import grimp

# The top-level packages of the product (pyproject.toml's packages.find roots).
PRODUCT_PACKAGES = ("bookie", "bookie_operator", "bookie_fleet", "localkube", "bookie_audit")

# Cycles being removed by changes under way elsewhere, reported but not failing: each entry is the set of
# modules of one cycle. Delete an entry once its cycle is gone (the checker then keeps it gone).
KNOWN_CYCLES: tuple[frozenset[str], ...] = ()


def import_graph(packages: Iterable[str]) -> dict[str, set[str]]:
    """Module -> modules it imports, within ``packages`` only."""
    graph = grimp.build_graph(*packages, cache_dir=None)
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def strongly_connected(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (a deep package would overflow Python's recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def shortest_cycle(edges: Mapping[str, set[str]], component: Sequence[str]) -> list[str]:
    """A shortest cycle through the component's first module, staying inside the component."""
    start, members = component[0], set(component)
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(edges.get(node, ())):
            if child not in members:
                continue
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if child not in previous:
                previous[child] = node
                queue.append(child)
    return [start, start]


def modules_of(packages: Iterable[str]) -> set[str]:
    return set(grimp.build_graph(*packages, cache_dir=None).modules)


def find_cycles(packages: Iterable[str]) -> list[tuple[list[str], list[str]]]:
    """Per group of modules that import each other (directly or not): one shortest cycle and the group."""
    edges = import_graph(packages)
    groups = [c for c in strongly_connected(edges) if len(c) > 1 or c[0] in edges.get(c[0], ())]
    return sorted((shortest_cycle(edges, c), c) for c in groups)


def main(argv: Sequence[str]) -> int:
    packages = list(argv) or list(PRODUCT_PACKAGES)
    cycles = []
    found = find_cycles(packages)
    for cycle, group in found:
        known = frozenset(group) in KNOWN_CYCLES
        print(("known import cycle, being removed: " if known else "import cycle: ") + " -> ".join(cycle))
        if len(group) > len(cycle) - 1:
            print(f"  (one of several among: {', '.join(group)})")
        if not known:
            cycles.append(cycle)
    present = {frozenset(group) for _, group in found}
    for gone in KNOWN_CYCLES:
        if gone not in present and set(gone) <= modules_of(packages):
            print(f"known cycle gone, delete its KNOWN_CYCLES entry: {', '.join(sorted(gone))}")
    if cycles:
        print(f"{len(cycles)} import cycle(s) in {', '.join(packages)}: break each by moving the shared part "
              "into a module both sides import (lazy or TYPE_CHECKING imports do not count as broken)")
        return 1
    print(f"no import cycles in {', '.join(packages)}" + (" other than the known ones" if present & set(KNOWN_CYCLES)
                                                            else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
