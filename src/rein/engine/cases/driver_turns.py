"""The driver's turn, consumed: check an envelope, measure the work, consume it.

Every slip an agent can still undo is refused here with nothing changed, so that it does
not end the run: an envelope that answers nothing current, outputs the engine would reject
(RT031 type or a path that does not exist, RT032 schema, RT033 missing), and writes outside
``fs:write`` or refs moved (listed, to be undone; these refusals are counted against the
attempt's allowance, ``[driver] max_write_refusals``, after which the submit is accepted and
fails the attempt as ``permission_denied``). The Harness (:meth:`Harness.submit`) calls
:func:`consume` under the run lock and then advances the run; the clock is the caller's.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

from rein.core.frozen import Frozen
from rein.core.time import iso
from rein.engine.events import EventType, append
from rein.workers.driver.protocol import USAGE_ENV, EnvelopeRefused

REFUSED = EventType.DRIVER_REFUSED.value  # a submit refused for writes the agent may undo


def driver_settings(workers: Any) -> Any:
    """The settings of the driver worker among ``workers`` (the defaults without one)."""
    from rein.workers.driver.worker import DriverSettings, DriverWorker

    for worker in workers:
        if isinstance(worker, DriverWorker):
            return worker.settings
    return DriverSettings()


class Consumed(Frozen):
    """What a submit did with its envelope: whether this submit applied it (``accepted``;
    false when the same envelope was applied before) and what happened, in words."""

    accepted: bool
    note: str


def consume(ws: Path, engine: Any, envelope: dict[str, Any], root: str, *, now: dt.datetime,
            max_write_refusals: int) -> Consumed:
    """Check ``envelope`` against the pending instruction of run ``root``, measure the
    workspace and consume it in one transaction with its event; what happened.
    :class:`EnvelopeRefused` (nothing changed) for every slip the agent can still undo."""
    from rein.workers.driver.current import baseline_for, current_turn, waiting_turns
    from rein.workers.driver.fs import measure
    from rein.workers.driver.protocol import envelope_problems, reported_usage
    from rein.workers.driver.store import TurnStatus, answer_turn, get_turn

    store = engine.store
    token = envelope.get("token")
    turn = get_turn(store, token) if isinstance(token, str) else None
    if turn is None:
        what = f"token {token!r}" if isinstance(token, str) else "no token"
        # Checked against the instruction this workspace answers next as well, so that
        # one refusal names everything to fix, not the token alone.
        current = current_turn(store, ws)
        problems = [] if current is None else envelope_problems(envelope, current.instruction)
        count = f" ({len(problems)} problems)" if len(problems) > 1 else ""
        raise EnvelopeRefused(f"the envelope has {what}, which names no instruction of run "
                              f"{root}{count}", problems=problems,
                              hint="copy the token from `rein next`" + (
                                  ", and fix every problem listed to validate against "
                                  "respond_with (rein next --json)" if count else ""))
    if turn.status is TurnStatus.ANSWERED:
        stored = (turn.answer or {}).get("envelope")
        if stored == store.redact(envelope):  # stored as redacted
            return Consumed(accepted=False,
                            note=f"this envelope was already applied to {turn.node_key} "
                                 f"attempt {turn.attempt}; nothing was applied twice")
        raise EnvelopeRefused(f"instruction {turn.token} ({turn.node_key} attempt "
                              f"{turn.attempt}) was already answered with another envelope",
                              code="DRIVER_ANSWERED",
                              hint="answer the pending instruction `rein next` prints")
    if turn.token not in {t.token for t in waiting_turns(store, root)}:
        raise EnvelopeRefused(f"instruction {turn.token} ({turn.node_key} attempt "
                              f"{turn.attempt}) is no longer pending",
                              code="DRIVER_STALE", hint="see `rein next`")
    current = current_turn(store, ws)
    if current is not None and current.token != turn.token:
        raise EnvelopeRefused(
            f"instruction {turn.token} ({turn.node_key} of run {turn.root_run_id}) is not the "
            f"current one in this workspace: {current.token} ({current.node_key} of run "
            f"{current.root_run_id}) was handed out first", code="DRIVER_NOT_CURRENT",
            hint="answer the instruction `rein next` prints; the others wait their turn "
                 "so that each one's writes can be told apart")
    problems = envelope_problems(envelope, turn.instruction)
    if not problems and "usage" not in envelope:
        problems = _environment_usage_problems()
        if problems:
            raise EnvelopeRefused(f"{problems[0]}", code="DRIVER001", problems=problems,
                                  hint=f"fix or unset {USAGE_ENV} (docs/driver.md, "
                                       "\"Usage\"), or put usage in the envelope")
    if problems:
        # The outputs' own check too, so that one refusal names everything to fix.
        if envelope.get("status") == "done":
            problems += [f"outputs/{p.output}: {p.code} {p.message}"
                         for p in _output_problems(ws, envelope, turn)
                         if not any(line.startswith(f"outputs/{p.output}:")
                                    for line in problems)]
        count = f" ({len(problems)} problems)" if len(problems) > 1 else ""
        raise EnvelopeRefused(f"the envelope does not answer {turn.node_key} attempt "
                              f"{turn.attempt}{count}: {problems[0]}", problems=problems,
                              hint="fix them all to validate against respond_with (rein "
                                   "next --json), then submit again" if count else
                                   "fix it to validate against respond_with (rein next "
                                   "--json), then submit again")
    run = store.get_run(root)
    if run is not None:
        engine.check_binding(run, force=False)  # RT053: the approved graph changed
    if envelope.get("status") == "done":
        _check_outputs(ws, envelope, turn)
    checks, after = measure(ws, turn, now, baseline_for(store, turn, ws))
    at = iso(now)
    _refuse_undoable(store, turn, checks, at, max_write_refusals)
    answer = {"envelope": envelope, "checks": checks, "after": after}
    reported = reported_usage(envelope, os.environ)
    if reported is not None:  # what the agent says it spent; shown as self-reported
        answer["usage"] = reported
    _, changed = answer_turn(store, turn.token, answer, at)
    if not changed:
        return Consumed(accepted=False,
                        note="this envelope was already applied; nothing was applied twice")
    outside = checks.get("writes_outside") or []
    extra = f" (writes outside fs:write: {', '.join(outside)})" if outside else ""
    return Consumed(accepted=True,
                    note=f"accepted for {turn.node_key} attempt {turn.attempt}{extra}")


def _environment_usage_problems() -> list[str]:
    """What is wrong with ``REIN_USAGE_JSON`` of this process (empty when unset or right)."""
    from rein.workers.driver.protocol import environment_usage

    return environment_usage(os.environ)[1]


def _output_problems(ws: Path, envelope: dict[str, Any], turn: Any) -> list[Any]:
    """The engine's own output check (AGS §9.3) of a ``done`` envelope's outputs."""
    from rein.engine.run.outputs import check_outputs

    specs = {str(o["name"]): {"type": o.get("type", "any"), "required": o.get("required", True),
                              **({"schema": o["schema"]} if o.get("schema") else {})}
             for o in turn.instruction.get("outputs") or []}
    outputs = envelope.get("outputs")
    return list(check_outputs(dict(outputs if isinstance(outputs, dict) else {}), specs,
                              workspace=ws))


def _check_outputs(ws: Path, envelope: dict[str, Any], turn: Any) -> None:
    """The engine's own output check (AGS §9.3), before anything is consumed."""
    found = _output_problems(ws, envelope, turn)
    if found:
        first = found[0]
        raise EnvelopeRefused(
            f"the outputs of {turn.node_key} attempt {turn.attempt} would fail the node: "
            f"{first.message}", code=first.code,
            problems=[f"outputs/{p.output}: {p.code} {p.message}" for p in found],
            hint="create the file (paths are relative to the workspace) or fix the value, "
                 "then submit again")


def _refuse_undoable(store: Any, turn: Any, checks: dict[str, Any], at: str, allowed: int
                     ) -> None:
    """Refuse a submit whose writes outside ``fs:write`` (or moved refs) the agent can still
    undo, while the attempt's allowance lasts; each refusal is recorded, and counted."""
    outside = list(checks.get("writes_outside") or [])
    refs = list(checks.get("refs_moved") or []) if checks.get("head_moved") and not \
        checks.get("commit_allowed") else []
    if not outside and not refs:
        return
    used = sum(1 for e in store.events(turn.run_id, types=[REFUSED])
               if e.payload.get("token") == turn.token)
    if used >= allowed:
        return  # the allowance is spent: accepted, and the attempt fails
    append(store, turn.run_id, EventType.DRIVER_REFUSED, {
        "token": turn.token, "node": turn.node_key, "attempt": turn.attempt,
        "writes_outside": outside[:50], "refs_moved": refs, "refusal": used + 1}, at)
    left = allowed - used - 1
    problems = [f"written outside fs:write: {p}" for p in outside[:50]]
    problems += [f"git ref moved: {r}" for r in refs]
    count = (checks.get("counts") or {}).get("writes_outside", len(outside))
    what = " and ".join(([f"{count} path(s) written outside fs:write"] if outside
                         else []) + (["git refs moved"] if refs else []))
    named = ", ".join(outside[:10] + refs[:5]) + (" …" if len(outside) > 10 else "")
    raise EnvelopeRefused(
        f"{what} since the instruction was issued: {named}",
        code="DRIVER_WRITES_OUTSIDE", problems=problems,
        hint=(f"undo them (restore or delete the files, reset the refs), then submit again; "
              f"{left} more refusal(s) for this attempt, then a submit with such writes "
              "fails it as permission_denied"))


def advisory_failures(store: Any, turn: Any) -> list[dict[str, Any]]:
    """The advisory criteria the answered attempt did not pass (they do not fail it, so no
    retry feedback carries them: the agent hears of them here)."""
    node = store.node(turn.run_id, turn.node_key)
    if node is None:
        return []
    out = []
    for attempt in node.record.get("attempts") or []:
        if attempt.get("attempt") != turn.attempt:
            continue
        for result in (attempt.get("success") or {}).get("results") or []:
            if result.get("severity") == "advisory" and not result.get("passed"):
                out.append({"id": result.get("id"), "evidence": result.get("evidence")})
    return out


__all__ = ["REFUSED", "Consumed", "advisory_failures", "consume", "driver_settings"]
