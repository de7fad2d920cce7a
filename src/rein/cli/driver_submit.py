"""What ``rein submit`` does with an envelope: check it, measure the work, consume, advance.

Every slip an agent can still undo is refused here with nothing changed, so that it does
not end the run: an envelope that answers nothing current, outputs the engine would reject
(RT031 type or a path that does not exist, RT032 schema, RT033 missing), and writes outside
``fs:write`` or refs moved (listed, to be undone; these refusals are counted against the
attempt's allowance, ``[driver] max_write_refusals``, after which the submit is accepted and
fails the attempt as ``permission_denied``).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import click

from rein.workers.driver_protocol import EnvelopeRefused

REFUSED = "driver/refused"  # a submit refused for writes the agent may undo (counted)


def apply(ws: Path, envelope: dict[str, Any], run_id: str | None, as_json: bool
          ) -> tuple[dict[str, Any], str]:
    """Validate, consume and advance; returns (the next status, what happened)."""
    from rein.cli.run import Progress, open_engine, run_lock
    from rein.cli.safe_output import guarded

    engine = open_engine(ws, create=False, listeners=[] if as_json else [Progress(False)])
    try:
        from rein.workers.driver_status import pick_run, status_of
        from rein.workers.driver_store import get_turn

        store = engine.store
        token = envelope.get("token")
        turn = get_turn(store, token) if isinstance(token, str) else None
        root = turn.root_run_id if turn is not None else pick_run(store, run_id, ws).run_id
        if run_id is not None and pick_run(store, run_id).run_id != root:
            raise EnvelopeRefused(f"the envelope answers an instruction of run {root}, not "
                                  f"of run {run_id}", code="DRIVER_WRONG_RUN",
                                  hint="send it without --run, or answer the run's own "
                                       "instruction")
        with run_lock(ws, root):
            note = _consume(ws, engine, envelope, root)
            if not as_json:  # before the progress lines of the advance it causes
                guarded(lambda text: click.echo(text, err=True))(f"submit: {note}")
            run = engine.store.get_run(root)
            # Advance after a new answer, or to continue a run a dead submit left running.
            if run is not None and not run.status.terminal and (
                    note.startswith("accepted") or run.status.value == "running"):
                engine.proceed(root)
        status = status_of(store, ws, root)
        if turn is not None and note.startswith("accepted"):
            advisory = advisory_failures(store, turn)
            if advisory:
                status["advisory_failures"] = advisory
        return status, note
    finally:
        engine.store.close()


def _driver_settings(engine: Any) -> Any:
    from rein.workers.driver import DriverSettings, DriverWorker

    for worker in engine.workers:
        if isinstance(worker, DriverWorker):
            return worker.settings
    return DriverSettings()


def _consume(ws: Path, engine: Any, envelope: dict[str, Any], root: str) -> str:
    from rein.workers.driver_current import baseline_for, current_turn, waiting_turns
    from rein.workers.driver_fs import measure
    from rein.workers.driver_protocol import envelope_problems
    from rein.workers.driver_store import TurnStatus, answer_turn, get_turn

    store = engine.store
    token = envelope.get("token")
    turn = get_turn(store, token) if isinstance(token, str) else None
    if turn is None:
        what = f"token {token!r}" if isinstance(token, str) else "no token"
        raise EnvelopeRefused(f"the envelope has {what}, which names no instruction of run "
                              f"{root}", hint="copy the token from `rein next`")
    if turn.status is TurnStatus.ANSWERED:
        stored = (turn.answer or {}).get("envelope")
        if stored == store.redact(envelope):  # stored as redacted
            return (f"this envelope was already applied to {turn.node_key} attempt "
                    f"{turn.attempt}; nothing was applied twice")
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
    if problems:
        raise EnvelopeRefused(f"the envelope does not answer {turn.node_key} attempt "
                              f"{turn.attempt}: {problems[0]}", problems=problems,
                              hint="fix it to validate against respond_with (rein next "
                                   "--json), then submit again")
    run = store.get_run(root)
    if run is not None:
        engine.check_binding(run, force=False)  # RT053: the approved graph changed
    if envelope.get("status") == "done":
        _check_outputs(ws, envelope, turn)
    now = dt.datetime.now(dt.UTC)
    checks, after = measure(ws, turn, now, baseline_for(store, turn, ws))
    at = now.isoformat().replace("+00:00", "Z")
    _refuse_undoable(store, turn, checks, at, _driver_settings(engine).max_write_refusals)
    _, changed = answer_turn(store, turn.token,
                             {"envelope": envelope, "checks": checks, "after": after}, at)
    if not changed:
        return "this envelope was already applied; nothing was applied twice"
    outside = checks.get("writes_outside") or []
    extra = f" (writes outside fs:write: {', '.join(outside)})" if outside else ""
    return f"accepted for {turn.node_key} attempt {turn.attempt}{extra}"


def _check_outputs(ws: Path, envelope: dict[str, Any], turn: Any) -> None:
    """The engine's own output check (AGS §9.3), before anything is consumed."""
    from rein.engine.outputs import check_outputs

    specs = {str(o["name"]): {"type": o.get("type", "any"), "required": o.get("required", True),
                              **({"schema": o["schema"]} if o.get("schema") else {})}
             for o in turn.instruction.get("outputs") or []}
    found = check_outputs(dict(envelope.get("outputs") or {}), specs, workspace=ws)
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
    store.transition(turn.run_id, REFUSED, {
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
