"""``rein approvals list|accept|decline|cancel``: answer the one approval queue.

Accept approves the asked action (with values for input gates and takeovers), decline
refuses this one action (the run goes on and handles the refusal), cancel stops the whole
run. Answers are idempotent and bound to the digest of what was shown, file contents
included. Who answers is the approver the managed or user rein.toml names (``[approver]``),
never a name typed on the command line, and an approval that names ``roles`` takes one of
them. After an answer the run continues in the same process unless --no-continue.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rein.cli.output import emit_json, json_option
from rein.cli.run import (
    Progress,
    _finish,
    open_engine,
    resolve_workspace,
    workspace_option,
)
from rein.errors import ExitCode, Refused, ReinError


@click.group("approvals")
def approvals() -> None:
    """The approval queue: gates, checkpoints, human criteria, escalations.

    \b
    Example:
      rein approvals list
      rein approvals accept apv-20260101T120000-1a2b3c --note "looks right"

    \b
    Exit codes: 0 ok / run succeeded, 1 failed, 3 run still waiting, 4 refused, 64 usage.
    """


@approvals.command("list")
@click.option("--run", "run_id", default=None, help="Only this run (and its children).")
@click.option("--all", "show_all", is_flag=True, help="Answered ones too.")
@workspace_option
@json_option
def list_approvals(run_id: str | None, show_all: bool, workspace: Path | None,
                   as_json: bool) -> int:
    """Pending approvals (all with --all), oldest first.

    An approval whose timeout_seconds have passed takes its on_timeout here
    (there is no background timer); its run continues on `rein resume`.

    \b
    Example:
      rein approvals list --json

    \b
    Exit codes: 0 ok, 64 usage error.
    """
    import datetime as dt

    from rein.cli.run import open_store
    from rein.core.states import ApprovalStatus
    from rein.engine.approvals import expire_due

    store = open_store(resolve_workspace(workspace), create=False)
    # No background timer: a due timeout is applied whenever the queue is looked at.
    expired = [] if store is None else expire_due(store, dt.datetime.now(dt.UTC))
    rows = [] if store is None else store.approvals(
        status=None if show_all else ApprovalStatus.PENDING)
    if run_id is not None and store is not None:
        family = _family(store, run_id)
        rows = [r for r in rows if r.run_id in family]
    if as_json:
        emit_json({"approvals": [{"approval_id": r.approval_id, "run_id": r.run_id,
                                  "kind": r.kind.value, "status": r.status.value,
                                  "digest": r.digest, "request": dict(r.request),
                                  "created_at": r.created_at} for r in rows],
                   "timed_out": [{"approval_id": r.approval_id, "run_id": r.run_id,
                                  "status": r.status.value,
                                  "on_timeout": r.request.get("on_timeout")}
                                 for r in expired]})
        return int(ExitCode.OK)
    for r in expired:
        click.echo(f"{r.approval_id}  timed out (on_timeout {r.request.get('on_timeout')}); "
                   f"continue the run with `rein resume {r.run_id}`")
    if not rows:
        click.echo("no pending approvals")
    else:
        for r in rows:
            node = r.request.get("node") or "graph"
            click.echo(f"{r.approval_id}  {r.status.value:<9} {r.kind.value:<10} {node}  "
                       f"{r.request.get('prompt') or ''}".rstrip())
            # What the person is asked to look at, so that they need not dig in the JSON.
            shown = [str(p) for p in r.request.get("present") or []]
            roles = [str(x) for x in r.request.get("roles") or []]
            click.echo(f"    run {r.run_id}" + (f" · shows: {', '.join(shown)}" if shown else "")
                       + (f" · for: {' or '.join(roles)}" if roles else ""))
    return int(ExitCode.OK)


def _family(store: Any, run_id: str) -> set[str]:
    out, stack = {run_id}, [run_id]
    while stack:
        for child in store.child_runs(stack.pop()):
            out.add(child.run_id)
            stack.append(child.run_id)
    return out


def _answer(approval_id: str, status: Any, *, note: str | None, actor: str | None,
            values: dict[str, Any], digest: str | None, go_on: bool, workspace: Path | None,
            as_json: bool) -> int:
    from rein.engine.approvals import answer

    ws = resolve_workspace(workspace)
    approver = approver_for(ws, actor)
    # Continuing streams every event it stores, the answer's first; --no-continue prints
    # one object (the answer), so nothing streams.
    engine = open_engine(ws, create=False, listeners=[Progress(as_json)] if go_on else [])
    try:
        row = engine.store.get_approval(approval_id)
        if row is None:
            raise ReinError(f"no approval {approval_id!r}", code="APPROVAL404",
                            hint="list the queue with `rein approvals list`")
        if digest is not None and digest != row.digest:
            raise Refused(f"approval {approval_id} shows material with digest {row.digest}, "
                          f"not {digest}", code="APPROVAL_STALE",
                          hint="look at the approval again with `rein approvals list --json`")
        top = row.run_id
        while True:
            run = engine.store.get_run(top)
            if run is None or run.parent_run_id is None:
                break
            top = run.parent_run_id
        if go_on and run is not None:
            _held_to_binding(engine, run, approval_id)
        # The answer is one transaction of its own; advancing takes the run lock. When
        # another process holds it, that process picks the answer up before it pauses.
        updated, changed = answer(engine.store, ws, row, status, approver=approver,
                                  now=engine.now(), note=note, values=values)
        if not as_json:
            word = "recorded" if changed else "already recorded"
            click.echo(f"approval {approval_id}: {updated.status.value} ({word}, as "
                       f"{approver.id})")
        if not go_on:
            if as_json:
                emit_json({"approval_id": approval_id, "status": updated.status.value,
                           "actor": approver.id})
            return int(ExitCode.OK)
        try:
            outcome = engine.proceed(top)
        except Refused as exc:
            if exc.code != "RUN_LOCKED":
                raise
            raise Refused(f"approval {approval_id} is recorded; {exc.message}",
                          code=exc.code, hint="the process advancing the run takes the "
                          "answer into account; nothing more to do") from exc
    finally:
        engine.store.close()
    return _finish(outcome, as_json)


def approver_for(workspace: Path, actor: str | None) -> Any:
    """The approver rein knows here; APPROVAL_ACTOR when ``--actor`` names someone else."""
    from rein.config import load_config

    approver = load_config(workspace).approver
    if actor is not None and actor != approver.id:
        raise Refused(f"--actor {actor} is not who answers here: rein knows you as "
                      f"{approver.id} ({approver.source})", code="APPROVAL_ACTOR",
                      hint="[approver] id in the managed or user rein.toml names who answers; "
                           "--actor only checks it")
    return approver


def _held_to_binding(engine: Any, run: Any, approval_id: str) -> None:
    """RT053 before the answer is recorded: an answer that continues a run must not continue
    one whose graph, params or children changed since it was approved."""
    try:
        engine.check_binding(run, force=False)
    except Refused as exc:
        raise Refused(f"{exc.message}; the answer to {approval_id} was not recorded",
                      code=exc.code, location=exc.location,
                      hint=f"restore the approved files or start a new run; or record the "
                           f"answer with --no-continue, then `rein resume {run.run_id} "
                           "--force` (the override is recorded)") from exc


def _values(pairs: tuple[str, ...], values_file: str | None) -> dict[str, Any]:
    import json

    from rein.engine.params import parse_assignments, read_params_file

    out: dict[str, Any] = read_params_file(values_file) if values_file else {}
    for name, text in parse_assignments(pairs).items():
        try:
            out[name] = json.loads(text)
        except json.JSONDecodeError:
            out[name] = text
    return out


_common = [
    click.option("--note", default=None, help="A note recorded as the evidence."),
    click.option("--actor", default=None, help="Refuse unless rein knows you by this name "
                 "([approver] id in the managed or user rein.toml; the OS account without)."),
    click.option("--digest", default=None, help="Refuse unless the material has this digest."),
    click.option("--no-continue", "no_continue", is_flag=True,
                 help="Record the answer only; continue later with `rein resume`."),
    workspace_option,
    json_option,
]


def _with_common(func: Any) -> Any:
    for option in reversed(_common):
        func = option(func)
    return func


@approvals.command("accept")
@click.argument("approval_id")
@click.option("--value", "value_pairs", multiple=True, metavar="NAME=VALUE",
              help="A value for an input gate, a review edit or a takeover (JSON or text).")
@click.option("--values", "values_file", type=click.Path(dir_okay=False), default=None,
              help="A YAML or JSON file of values.")
@_with_common
def accept(approval_id: str, value_pairs: tuple[str, ...], values_file: str | None,
           note: str | None, actor: str | None, digest: str | None, no_continue: bool,
           workspace: Path | None, as_json: bool) -> int:
    """Approve; the run continues in this process.

    \b
    Example:
      rein approvals accept apv-1 --note "read it, fine"
      rein approvals accept apv-2 --value reviewer=ana --value count=3

    \b
    Exit codes: 0 run succeeded, 1 failed, 3 still waiting, 4 refused, 64 usage error.
    """
    from rein.core.states import ApprovalStatus

    return _answer(approval_id, ApprovalStatus.ACCEPTED, note=note, actor=actor,
                   values=_values(value_pairs, values_file), digest=digest,
                   go_on=not no_continue, workspace=workspace, as_json=as_json)


@approvals.command("decline")
@click.argument("approval_id")
@_with_common
def decline(approval_id: str, note: str | None, actor: str | None, digest: str | None,
            no_continue: bool, workspace: Path | None, as_json: bool) -> int:
    """Refuse this one action; the run goes on and handles the refusal.

    \b
    Example:
      rein approvals decline apv-1 --note "not this version"

    \b
    Exit codes: 0 run succeeded, 1 failed, 3 still waiting, 4 refused, 64 usage error.
    """
    from rein.core.states import ApprovalStatus

    return _answer(approval_id, ApprovalStatus.DECLINED, note=note, actor=actor, values={},
                   digest=digest, go_on=not no_continue, workspace=workspace,
                   as_json=as_json)


@approvals.command("cancel")
@click.argument("approval_id")
@_with_common
def cancel(approval_id: str, note: str | None, actor: str | None, digest: str | None,
           no_continue: bool, workspace: Path | None, as_json: bool) -> int:
    """Stop the whole run (compensation runs; the run ends cancelled).

    \b
    Example:
      rein approvals cancel apv-1 --note "wrong repository"

    \b
    Exit codes: 0 ok, 1 run ended cancelled, 4 refused, 64 usage error.
    """
    from rein.core.states import ApprovalStatus

    return _answer(approval_id, ApprovalStatus.CANCELLED, note=note, actor=actor, values={},
                   digest=digest, go_on=not no_continue, workspace=workspace,
                   as_json=as_json)
