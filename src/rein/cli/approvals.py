"""``rein approvals list|accept|decline|cancel``: answer the one approval queue.

Accept approves the asked action (with values for input gates and takeovers), decline
refuses this one action (the run goes on and handles the refusal), cancel stops the whole
run. Answers are idempotent and bound to the digest of what was shown, file contents
included. Who answers is the approver the account's own files name (``[approver]``, see
:mod:`rein.config.approver`), never a name typed on the command line, and an approval that
names ``roles`` takes one of them. A confined process (an agent's sandbox) answers nothing
(APPROVAL003); where answers are signed, the approver's key signs each one here. After an
answer the run continues in the same process unless --no-continue.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rein.cli.approval_view import (
    owner_of,
    refused_line,
    refused_of,
    request_of,
    unsigned_notice,
)
from rein.cli.output import emit_json, json_option
from rein.cli.run import announce, progress_for, render_outcome
from rein.cli.sync import run_sync
from rein.cli.workspace import open_harness, resolve_workspace, workspace_option
from rein.errors import ExitCode, ReinError


@click.group("approvals")
def approvals() -> None:
    """The approval queue: gates, checkpoints, human criteria, escalations.

    \b
    Example:
      rein approvals list
      rein approvals show apv-20260101T120000-1a2b3c
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
    with open_harness(resolve_workspace(workspace), create=False) as harness:
        try:
            # No background timer: a due timeout is applied whenever the queue is looked at,
            # where the store can be written (read-only, it is listed as it is).
            try:
                expired = run_sync(harness.expire_due())
            except ReinError as exc:
                if exc.code != "STORE_READONLY":
                    raise
                expired = []
            rows = harness.approvals(run_id=run_id, pending_only=not show_all)
        except ReinError as exc:
            if exc.code != "STORE404":
                raise
            expired, rows = [], []  # no store yet: an empty queue
        notice = unsigned_notice(harness)
    if as_json:
        emit_json({"approvals": [{"approval_id": r.approval_id, "run_id": r.run_id,
                                  "kind": r.kind.value, "status": r.status.value,
                                  "digest": r.digest, "request": request_of(r),
                                  "created_at": r.created_at, "owner": owner_of(r),
                                  **({"refused": dict(why)} if (why := refused_of(r))
                                     else {})}
                                 for r in rows],
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
            node = r.request.get("node") or r.request.get("server") or "graph"
            click.echo(f"{r.approval_id}  {r.status.value:<9} {r.kind.value:<10} {node}  "
                       f"{r.request.get('prompt') or ''}".rstrip())
            # What the person is asked to look at, so that they need not dig in the JSON.
            shown = [str(p) for p in r.request.get("present") or []]
            roles = [str(x) for x in r.request.get("roles") or []]
            click.echo(f"    {_owner_line(r)}"
                       + (f" · shows: {', '.join(shown)}" if shown else "")
                       + (f" · for: {' or '.join(roles)}" if roles else ""))
            if (why := refused_of(r)) is not None:
                click.echo(f"    {refused_line(why)}")
    if notice is not None:  # to stderr: the listing stays the listing
        click.echo(notice, err=True)
    return int(ExitCode.OK)


def _owner_line(row: Any) -> str:
    """Who asks: the run, or (with no run yet) the thread and turn that asks."""
    match owner_of(row):
        case "turn":
            return (f"turn {row.run_id} of thread {row.request.get('thread')} · plan "
                    "approval (its run starts once this is accepted)")
        case "thread":
            return f"thread {row.run_id}"
        case _:
            return f"run {row.run_id}"


def _answer(approval_id: str, status: Any, *, note: str | None, actor: str | None,
            values: dict[str, Any], digest: str | None, go_on: bool, workspace: Path | None,
            as_json: bool) -> int:
    def recorded(text: str) -> None:
        if not as_json:
            click.echo(text)

    # Continuing streams every event it stores, the answer's first; --no-continue prints
    # one object (the answer), so nothing streams.
    progress = progress_for(as_json, False)
    with open_harness(resolve_workspace(workspace), create=False,
                      listeners=[progress] if go_on else []) as harness, progress:
        # APPROVAL_ACTOR and APPROVAL003 (a confined process) before anything else.
        harness.check_answerer(f"approval {approval_id}", actor)
        signature = _signature(harness, approval_id, status, note=note, values=values)
        announce(harness)
        if go_on:
            _prime(harness, progress, approval_id)
        answered = run_sync(harness.answer(approval_id, status, actor=actor, note=note,
                                           values=values, digest=digest, go_on=go_on,
                                           recorded=recorded, signature=signature))
        progress.close()
        if answered.outcome is None:
            if as_json:
                emit_json({"approval_id": approval_id,
                           "status": answered.approval.status.value,
                           "actor": answered.actor,
                           **({"not_continued": answered.left} if answered.left else {})})
            return int(ExitCode.OK)
        return render_outcome(answered.outcome, as_json, harness, progress)


def _signature(harness: Any, approval_id: str, status: Any, *, note: str | None,
               values: dict[str, Any]) -> str | None:
    """Where answers are signed ([approver] allowed_signers), the approver's signature of
    this answer, made by ssh-keygen with their key (it asks for a passphrase or a touch on
    the terminal); None where they are not."""
    message = harness.signing_message(approval_id, status, note=note, values=values)
    if message is None:
        return None
    from rein.config.signing import sign
    from rein.errors import Refused

    key = harness.approver.signing_key
    if key is None:
        raise Refused(f"approval {approval_id} was not answered: answers here are signed, and "
                      "no signing key is set for this account; nothing was recorded",
                      code="APPROVAL004",
                      hint="the approver answers from their own account, where their signing "
                           "key is set")
    click.echo(f"signing the answer with {key} (ssh-keygen may ask for the key's passphrase "
               "or a touch)", err=True)
    return sign(key, message)


def _prime(harness: Any, progress: Any, approval_id: str) -> None:
    """The view of the run the answer continues starts with what the run did so far."""
    from rein.cli.live import stored_events

    try:
        run_id = harness.top_run_id(harness.approval(approval_id).run_id)
    except ReinError:
        return  # the answer reports an unknown approval itself
    progress.prime(run_id, stored_events(harness, run_id))


def approver_for(workspace: Path, actor: str | None, *, approving: str | None = None) -> Any:
    """The approver rein knows here; APPROVAL_ACTOR when ``--actor`` names someone else,
    and with ``approving`` (what is approved) APPROVAL003 when this process is confined."""
    from rein.engine.service import Harness

    harness = Harness.open(workspace, surface="cli")
    if approving is None:
        return harness.check_actor(actor)
    return harness.check_answerer(approving, actor)


def _values(pairs: tuple[str, ...], values_file: str | None) -> dict[str, Any]:
    import json

    from rein.engine.run.params import parse_assignments, read_params_file

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
                 "(a check: it never changes who answers)."),
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


@approvals.command("verify")
@click.argument("approval_id")
@click.option("--allowed-signers", "allowed_signers", type=click.Path(dir_okay=False),
              default=None, help="The allowed-signers file to check against (default: "
              "[approver] allowed_signers).")
@workspace_option
@json_option
def verify(approval_id: str, allowed_signers: str | None, workspace: Path | None,
           as_json: bool) -> int:
    """Check a recorded answer's SSH signature against an allowed-signers file.

    The message is rebuilt from the answer as stored, so an answer edited in the store, or
    written there without rein, does not verify. Run it where the allowed-signers file is
    one the answering account cannot write.

    \b
    Example:
      rein approvals verify apv-20260101T120000-1a2b3c --allowed-signers /etc/rein/allowed_signers

    \b
    Exit codes: 0 the signature verifies, 1 no such approval, 4 it does not, 64 usage.
    """
    with open_harness(resolve_workspace(workspace), create=False) as harness:
        checked = harness.verify_answer(approval_id, allowed_signers=allowed_signers)
    if as_json:
        emit_json(checked)
    else:
        click.echo(f"approval {approval_id}: {checked['status']}, signed by "
                   f"{checked['principal']} with {checked['key']} key "
                   f"{checked['fingerprint']}")
    return int(ExitCode.OK)


def _more() -> None:
    # `show` lives in its own module (one concept each).
    from rein.cli.approval_view import show_approval

    approvals.add_command(show_approval)


_more()
