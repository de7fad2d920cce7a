"""``rein runs events`` for a person: one readable line per event that tells something.

The raw stream (``--json``) has every event; people read what changed. Edges found active,
worker checkpoints and usage deltas are left out (``--all`` keeps them), a notice the worker
repeats on every attempt is said once, and nothing is cut: a message or an error is printed
whole. Times are counted from the run's start.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from rein.cli.live_state import seconds_between

# Event types a person does not need unless asked for everything.
_QUIET = frozenset({"attempt/state", "edge/resolved"})


class EventText:
    """Turns the events of one run into lines; it keeps what it has said already."""

    def __init__(self, *, everything: bool = False) -> None:
        self.everything = everything
        self.started_at: str | None = None
        self._said: set[str] = set()
        self.left_out = 0

    def lines(self, event: Any) -> list[str]:
        if self.started_at is None:
            self.started_at = event.at
        text = self.describe(event)
        if text is None:
            self.left_out += 1
            return []
        offset = seconds_between(self.started_at, event.at) or 0.0
        p = event.payload
        who = str(p.get("node") or "")
        if who and p.get("attempt") is not None and event.type.startswith(("attempt/", "item",
                                                                          "driver/")):
            who = f"{who} #{p['attempt']}"
        return [f"{event.seq:>5} +{offset:>8.3f}s  {who:<24} {text}".rstrip()]

    def describe(self, event: Any) -> str | None:
        """What the event says, or ``None`` for one left out."""
        p: Mapping[str, Any] = event.payload
        kind = event.type
        # An edge found inactive explains a node that did not run: it stays.
        if kind in _QUIET and not self.everything and \
                (kind != "edge/resolved" or p.get("active") is not False):
            return None
        match kind:
            case "run/started":
                child = f" for node {p['node']} of {p['parent_run_id']}" \
                    if p.get("parent_run_id") else ""
                return f"run started: {p.get('graph_id')} {p.get('digest')}{child}" \
                    + _params(p.get("params"))
            case "run/paused":
                return f"run paused: waits for {p.get('reason')} ({p.get('status')})"
            case "run/resumed":
                return f"run resumed (was {p.get('from')})"
            case "run/forced":
                return _forced(p)
            case "run/cancel_requested":
                note = f": {p['note']}" if p.get("note") else ""
                return f"cancel requested by {p.get('actor') or 'an operator'}{note}"
            case "run/finished":
                return f"run finished: {p.get('status')}"
            case "node/started":
                return f"started ({p.get('type')}: {p.get('title')})"
            case "node/finished" | "node/skipped" | "node/cancelled":
                reason = f" ({p['reason']})" if p.get("reason") else ""
                attempts = f" after {p['attempts']} attempts" \
                    if isinstance(p.get("attempts"), int) and p["attempts"] > 1 else ""
                decision = f", decided {p['decision']}" if p.get("decision") else ""
                return f"{p.get('status') or kind.split('/')[1]}{reason}{attempts}{decision}"
            case "node/waiting":
                return f"waits for {p.get('reason')}" + \
                    (f" (approval {p['approval_id']})" if p.get("approval_id") else "")
            case "attempt/started":
                return f"attempt started ({p.get('worker')}, tier {p.get('tier')})"
            case "attempt/finished":
                error = f": {p['error']}" if p.get("error") else ""
                return f"attempt {p.get('result')}{error}"
            case "attempt/interrupted":
                return "attempt interrupted (its process died)"
            case "approval/requested":
                return f"approval {p.get('approval_id')} asked ({p.get('kind')}): " \
                    f"{p.get('prompt') or ''}".rstrip(": ")
            case "approval/answered":
                return f"approval {p.get('approval_id')} ({p.get('kind')}) {p.get('status')}"
            case "approval/refused":
                return f"approval {p.get('approval_id')}: its answer ({p.get('status')}) " \
                    f"was refused ({p.get('code')}: {p.get('why')}); it waits again"
            case "edge/resolved":
                state = "active" if p.get("active") else "inactive"
                return f"edge {p.get('from')} → {p.get('to')} ({p.get('kind')}) {state}"
            case "item":
                return self._item(p)
            case "diagnostic":
                return self._once(f"{p.get('severity')} {p.get('code')}: {p.get('message')}")
            case "driver/instructed":
                return f"instruction {p.get('token')} handed to the driver ({p.get('kind')})"
            case "driver/answered":
                return f"the driver answered {p.get('token')}: {p.get('status')}"
            case "driver/refused":
                return f"an envelope was refused: {p.get('reason') or p.get('message')}"
            case "worker/unavailable":
                return f"no worker can serve it (tier {p.get('tier')})" + \
                    (f": {p['message']}" if p.get("message") else "")
            case "human/notified":
                return f"told people: {p.get('prompt')}"
        return _compact(p) if p else kind

    def _item(self, p: Mapping[str, Any]) -> str | None:
        data = p.get("data") if isinstance(p.get("data"), Mapping) else {}
        assert isinstance(data, Mapping)
        kind = str(p.get("kind"))
        if kind == "usage" and not self.everything:
            return None
        if kind == "notice":
            said = data.get("text") or data.get("driver") or _compact(data)
            return self._once(f"notice: {said}")
        if kind in ("message", "reasoning"):
            return f"{kind}: {data.get('text')}"
        if kind in ("tool_call", "tool_result"):
            name = data.get("name") or data.get("tool") or ""
            rest = {k: v for k, v in data.items() if k not in ("name", "tool")}
            return f"{kind.replace('_', ' ')} {name} {_compact(rest)}".rstrip()
        return f"{kind}: {_compact(data)}"

    def _once(self, text: str) -> str | None:
        # The same notice on every attempt is one fact: said the first time.
        if text in self._said:
            return None
        self._said.add(text)
        return text


def _forced(p: Mapping[str, Any]) -> str:
    """A forced resume: what changed, what was approved before, and who forced it."""
    changed = ", ".join(str(c) for c in p.get("changed") or []) or "nothing"
    given = p.get("given") if isinstance(p.get("given"), Mapping) else None
    who = ""
    if given is not None:
        how = "confined" if given.get("confined") else "not confined"
        how += ", a terminal" if given.get("terminal") else ", no terminal"
        who = f" by {given.get('approver')} via {given.get('surface')} ({how})"
    return (f"run FORCED on changed files ({changed}; approved before: "
            f"{p.get('approved_digest')}){who}")


def _params(params: Any) -> str:
    if not isinstance(params, Mapping) or not params:
        return ""
    return " with " + ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}"
                                for k, v in params.items())


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def render_all(events: Iterable[Any], *, everything: bool = False) -> list[str]:
    """Every line for ``events`` (a test's and a script's way to the same text)."""
    text = EventText(everything=everything)
    return [line for e in events for line in text.lines(e)]


__all__ = ["EventText", "render_all"]
