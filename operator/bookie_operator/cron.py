"""Cron schedules (forced compactions, storage audits): validation, the next/previous fire times (UTC), and
the fire time due now.

The same grammar is checked in two places: by the API server (a CEL rule generated from ``CRON_PATTERN``)
and here (croniter), so a schedule the API server accepted is one the operator can run.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from croniter import croniter

_MONTHS = "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"
_DAYS = "sun|mon|tue|wed|thu|fri|sat"


def _field(number: str) -> str:
    item = rf"(\*|({number})(-({number}))?)(/[0-9]+)?"
    return rf"{item}(,{item})*"


_FIELDS = (
    _field(r"[0-5]?[0-9]"),                                # minute
    _field(r"[01]?[0-9]|2[0-3]"),                          # hour
    _field(r"0?[1-9]|[12][0-9]|3[01]|\?"),                 # day of month
    _field(rf"0?[1-9]|1[0-2]|{_MONTHS}"),                  # month
    _field(rf"[0-7]|{_DAYS}|\?"),                         # day of week
)
MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
CRON_PATTERN = "(?i)^((" + "|".join(MACROS) + ")|" + r"\s+".join(f"({f})" for f in _FIELDS) + ")$"
CRON_HELP = ("a 5-field cron expression 'minute hour day-of-month month day-of-week' "
             "(e.g. '30 2 * * *') or one of " + ", ".join(MACROS))


def validate(expression: str) -> str:
    """Return the expression, or raise ValueError saying what a schedule must look like."""
    import re

    text = expression.strip()
    if not re.fullmatch(CRON_PATTERN, text) or not croniter.is_valid(text):
        raise ValueError(f"must be {CRON_HELP}, got {expression!r}")
    return text


def next_after(expression: str, after: dt.datetime) -> dt.datetime:
    """The first fire time strictly after ``after`` (UTC)."""
    fire: dt.datetime = croniter(expression, after.astimezone(dt.UTC)).get_next(dt.datetime)
    return fire.astimezone(dt.UTC)


def previous_at_or_before(expression: str, at: dt.datetime) -> dt.datetime:
    """The last fire time at or before ``at`` (UTC)."""
    probe = at.astimezone(dt.UTC) + dt.timedelta(seconds=1)
    fire: dt.datetime = croniter(expression, probe).get_prev(dt.datetime)
    return fire.astimezone(dt.UTC)


@dataclass(frozen=True)
class DueFire:
    at: dt.datetime
    late_seconds: float
    in_time: bool      # within the starting deadline: run it; otherwise it is a missed run


def due_fire(expression: str, now: dt.datetime, handled_until: dt.datetime,
             starting_deadline_seconds: float) -> DueFire | None:
    """The last fire time at or before ``now`` that comes after ``handled_until`` (the last one run or skipped,
    or the resource's creation), or None. Only the latest counts: a run missed for longer than one period is
    one missed run, as with a Kubernetes CronJob's startingDeadlineSeconds."""
    due = previous_at_or_before(expression, now)
    if due <= handled_until:
        return None
    late = (now - due).total_seconds()
    return DueFire(due, late, late <= starting_deadline_seconds)
