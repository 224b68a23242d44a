"""The JSON merge patch (RFC 7386) that turns one status into another, at any depth.

Every status write goes through ``merge_patch``: Kubernetes applies ``application/merge-patch+json`` to the
stored object recursively, so a key that disappeared anywhere in the new status (``compaction.run`` when a
run ends, say) must be sent as ``null`` at its own level, or the API server keeps the old value and the next
reconcile reads it back. Lists are replaced whole, as RFC 7386 defines.

Twenty lines of our own rather than a dependency: the PyPI packages for JSON merge patches are unmaintained,
and this diff is the one direction we need.
"""

from __future__ import annotations

from typing import Any

Json = Any


def merge_patch(old: Json, new: Json) -> Json:
    """The smallest merge patch that, applied to ``old``, gives ``new``.

    ``new`` must not contain ``None`` values: a merge patch cannot set a member to null (null removes it).
    """
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    patch: dict[str, Json] = {key: None for key in old if key not in new}
    for key, value in new.items():
        if key not in old:
            patch[key] = value
        elif old[key] != value:
            patch[key] = merge_patch(old[key], value)
    return patch

