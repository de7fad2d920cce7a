"""One vocabulary of states for every page: the word a person reads and the tone it is
drawn in, for each state value the console shows.

A run, a node, an attempt, an approval, a thread, a turn, a feature of the development
flow and a document of the specification flow each have their own state values; the
same value means the same thing everywhere (``succeeded`` of a run and of a node), and
the values that mean the same to a person (a turn's ``completed``, a flow's ``done``) are
drawn in the same tone. Every badge of every page is made by :func:`badge`; the page's
script reads :func:`table` (embedded by :func:`rein.web.html.page`) when it changes a badge
or a box of the picture, so a live page and a reloaded one use the same words.
``tests/web/test_states.py`` checks that every page's badges come from here.
"""

from __future__ import annotations

import json
from typing import Any

from rein.core.frozen import Frozen


class Look(Frozen):
    label: str  # what a person reads
    tone: str  # one of TONES: the colour family it is drawn in


# The tones the stylesheet knows (``.status.tone-NAME``, ``g.node[data-tone=NAME]``).
TONES = ("idle", "active", "waiting", "good", "bad", "skipped", "stopped")


def _look(label: str, tone: str) -> Look:
    assert tone in TONES, tone
    return Look(label=label, tone=tone)


STATES: dict[str, Look] = {
    # runs, nodes and attempts (rein.core.states)
    "pending": _look("pending", "idle"),
    "ready": _look("ready", "active"),
    "running": _look("running", "active"),
    "waiting": _look("waiting", "waiting"),
    "awaiting_human": _look("awaiting a person", "waiting"),
    "succeeded": _look("succeeded", "good"),
    "partial": _look("partial", "bad"),
    "failed": _look("failed", "bad"),
    "blocked": _look("blocked", "bad"),
    "skipped": _look("skipped", "skipped"),
    "cancelled": _look("cancelled", "stopped"),
    "timeout": _look("timed out", "bad"),
    "budget_exceeded": _look("over budget", "bad"),
    "criteria_failed": _look("criteria failed", "bad"),
    # approvals
    "accepted": _look("accepted", "good"),
    "declined": _look("declined", "bad"),
    "timed_out": _look("timed out", "stopped"),
    # threads and their turns and items (the app-server's spelling)
    "new": _look("new", "idle"),
    "idle": _look("idle", "idle"),
    "active": _look("running", "active"),
    "inProgress": _look("running", "active"),
    "completed": _look("completed", "good"),
    "interrupted": _look("interrupted", "stopped"),
    # the development and specification flows: where they stopped, their documents
    "done": _look("done", "good"),
    "budget": _look("over budget", "bad"),
    "changed": _look("changed", "waiting"),
    "planned": _look("planned", "idle"),
    "writing": _look("writing", "active"),
    "approved": _look("approved", "good"),
    "not run": _look("not run", "skipped"),
}
UNKNOWN = "idle"  # the tone of a value this table does not name (drawn, never an error)


def look(state: Any) -> Look:
    value = "" if state is None else str(state)
    return STATES.get(value) or Look(label=value, tone=UNKNOWN)


def badge(state: Any, *, attrs: str = "") -> str:
    """The one badge: ``<span class="status tone-…" data-state="…">label</span>``.
    ``attrs``: more attributes, already escaped (``data-feature='f1'``)."""
    from html import escape

    seen = look(state)
    extra = f" {attrs}" if attrs else ""
    return (f'<span class="status tone-{seen.tone}" '
            f'data-state="{escape("" if state is None else str(state), quote=True)}"{extra}>'
            f"{escape(seen.label)}</span>")


def table() -> str:
    """The vocabulary as JSON for the page's script: value → [label, tone]."""
    return json.dumps({k: [v.label, v.tone] for k, v in STATES.items()}, sort_keys=True,
                      separators=(",", ":"))


__all__ = ["STATES", "TONES", "UNKNOWN", "Look", "badge", "look", "table"]
