"""The Python heap of a long-running bookie: how often the interpreter's cycle collector runs, and over what.

Almost everything an add allocates (its request, the closures that carry it to the journal and back, the
response) is freed by reference counting the moment it is answered; the cycle collector finds nothing there.
CPython's defaults still run it every 700 new container objects and have it walk every object that is alive
at that moment: with hundreds of adds in flight, and the modules, models and ledger states loaded at start-up,
that walk took about a quarter of a busy bookie's CPU. So, once the bookie has started:

* the start-up heap is moved out of the collector's sight (``gc.freeze``): it lives as long as the process
  and would be walked again by every full collection;
* a young-generation collection runs every ``YOUNG_COLLECTION_THRESHOLD`` new container objects instead of
  700: the walk of the adds in flight is paid once per many thousands of allocations, not per few hundred.

Garbage cycles are still collected, only later: the memory they hold meanwhile is bounded by the threshold.
"""

from __future__ import annotations

import gc

# New container objects between two young-generation collections (CPython's default: 700). At about ten
# per add this is one collection per thousand adds, and a gen-0 walk of a few thousand live objects.
YOUNG_COLLECTION_THRESHOLD = 10_000


def settle_after_start() -> None:
    """Called once the bookie serves: collect what start-up left, freeze the rest, space out collections."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, middle, old)
