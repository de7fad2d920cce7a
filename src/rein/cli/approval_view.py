"""``rein approvals show ID``: exactly what an answer to one approval approves.

The run and its plan (graph, file, digest, the parameters and child documents a graph
approval binds), the node and the gate's prompt, what it presents, the files with the
content digests the answer is bound to (and whether each still holds it), who may answer,
the timeout, and the digest an answer names. Everything comes from the approval queue and
the run as stored: a graph file the approval shows is drawn from the copy the approval
keeps, the content an accept approves, never from the file as it is now
(:mod:`rein.cli.approval_shown`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from rein.cli.output import emit_json, json_option, shown
from rein.cli.workspace import open_harness, resolve_workspace, workspace_option
from rein.errors import ExitCode, ReinError


def how_given(answer: Mapping[str, Any] | None) -> str:
    """How an answer was given, in one line: the surface, the identity and how it was
    established, confined or not, a terminal or not, and the driver turn it followed."""
    how = (answer or {}).get("given")
    if not isinstance(how, Mapping):
        actor = (answer or {}).get("actor")
        return "given by rein itself" if actor == "rein" else "how it was given is not recorded"
    identity = how.get("identity") if isinstance(how.get("identity"), Mapping) else {}
    assert isinstance(identity, Mapping)
    method = str(identity.get("method") or "unknown")
    detail = {"ssh-signature": f" {identity.get('fingerprint')}",
              "web-session": f" {identity.get('session')}"}.get(method, "")
    parts = [f"via {how.get('surface')}",
             f"{method}{detail} (account {identity.get('account')})",
             "confined" if how.get("confined") else "not confined",
             "a terminal" if how.get("terminal") else "no terminal"]
    if how.get("standing"):
        parts.append(f"by standing instruction {how['standing']}")
    turn = how.get("after_driver_turn")
    if isinstance(turn, Mapping):
        seconds = turn.get("seconds_after")
        when = f"{seconds:g} s after" if isinstance(seconds, int | float) else "after"
        parts.append(f"{when} the driver's turn on {turn.get('node')} "
                     f"(attempt {turn.get('attempt')})")
    return ", ".join(parts)


def refused_of(row: Any) -> Mapping[str, Any] | None:
    """The refusal kept on an entry that waits again because the answer found for it in
    the store did not verify (where approvals are signed), if any."""
    found = (row.answer or {}).get("refused") if row.status.value == "pending" else None
    return found if isinstance(found, Mapping) else None


def refused_line(refused: Mapping[str, Any]) -> str:
    """That refusal, in one line."""
    found = refused.get("found") if isinstance(refused.get("found"), Mapping) else {}
    assert isinstance(found, Mapping)
    return (f"refused an answer found in the store ({refused.get('code')}: "
            f"{refused.get('why')}); it was {found.get('status')}, and was not acted on")


def unsigned_notice(harness: Any) -> str | None:
    """Where approvals are not signed and the run store lies in the workspace, the one line
    that says so (what signing adds is in docs/security.md)."""
    if harness.approver.allowed_signers is not None or not harness.store_in_workspace():
        return None
    return ("note: approvals here are not signed; signed approvals make every answer "
            "checked as the person's own before it is acted on (docs/security.md, \"Signed "
            "approvals\")")


def owner_of(row: Any) -> str:
    """Whose entry it is: ``run``, ``turn`` (a thread's graph turn asking for its plan's
    digest before its run exists: the entry is kept under the turn's id, see
    docs/app-server.md) or ``thread`` (an ACP client's MCP server launch, or an app-server
    client's ``command/exec``, kept under its thread, with no run at all)."""
    if row.kind.value == "graph" and row.run_id == row.request.get("turn"):
        return "turn"
    if row.kind.value in ("mcp_launch", "tool_call") and \
            row.run_id == row.request.get("thread"):
        return "thread"
    return "run"


def request_of(row: Any) -> dict[str, Any]:
    """The request as listings print it: without the copies of the files it shows (their
    digests stay; `rein approvals show` prints the copies)."""
    from rein.engine.service import KEPT

    return {k: v for k, v in row.request.items() if k != KEPT}


@click.command("show")
@click.argument("approval_id")
@click.option("--file", "file_name", default=None, metavar="NAME",
              help="Print the content of this file as the approval presented it (its "
                   "copy, the content an accept approves), and nothing else.")
@workspace_option
@json_option
def show_approval(approval_id: str, file_name: str | None, workspace: Path | None,
                  as_json: bool) -> int:
    """What one approval asks you to approve, in full.

    The plan it belongs to (graph, file and digest; for the graph's own approval, the
    parameters and child documents it binds), the gate's prompt, what it presents, each
    file with the content digest the answer is bound to and whether the file still holds
    it (a file edited since is refused at answer time), who may answer, and the digest
    `--digest` checks. A graph file the approval presents is drawn as `rein graph plan`
    draws it, from the copy the approval keeps: the content an accept approves, whatever
    the file holds now. `--file NAME` prints a presented file's copy.

    \b
    Example:
      rein approvals show apv-20260101T120000-1a2b3c
      rein approvals show apv-20260101T120000-1a2b3c --json
      rein approvals show apv-20260101T120000-1a2b3c --file notes.md | diff - notes.md

    \b
    Exit codes: 0 ok, 1 no such approval (or no copy of that file), 64 usage error.
    """
    from rein.cli.approval_shown import copy_of, file_views, turn_plan

    root = resolve_workspace(workspace)
    with open_harness(root, create=False) as harness:
        try:
            row = harness.approval(approval_id)
        except ReinError as exc:
            if exc.code != "STORE404":
                raise
            raise ReinError(f"no approval {approval_id!r}", code="APPROVAL404",
                            hint="list them with `rein approvals list --all`") from exc
        if file_name is not None:
            text = copy_of(row, file_name)
            if as_json:
                emit_json({"approval_id": row.approval_id, "file": file_name,
                           "digest": row.request["files"][file_name], "text": text})
            else:
                click.echo(shown(text), nl=False)
            return int(ExitCode.OK)
        run = None if owner_of(row) != "run" else harness.run(row.run_id)
        turn = turn_plan(harness, row) if owner_of(row) == "turn" else None
        views = file_views(row, root, key_variables=harness.key_variables())
    if as_json:
        emit_json({"approval_id": row.approval_id, "run_id": row.run_id,
                   "kind": row.kind.value, "status": row.status.value, "digest": row.digest,
                   "request": request_of(row), "created_at": row.created_at,
                   "answer": dict(row.answer) if row.answer else None,
                   "answered_at": row.answered_at,
                   "run": None if run is None else {
                       "graph_id": run.graph_id, "graph_path": run.graph_path,
                       "graph_digest": run.graph_digest, "status": run.status.value},
                   "files": views,
                   **({"plan": dict(turn)} if turn is not None else {})})
        return int(ExitCode.OK)
    for line in _lines(row, run, views, turn):
        click.echo(shown(line))
    return int(ExitCode.OK)


def _lines(row: Any, run: Any, views: list[dict[str, Any]],
           turn: Mapping[str, Any] | None) -> list[str]:
    from rein.cli.approval_shown import file_lines, shown_blocks

    request: Mapping[str, Any] = row.request
    out = [f"approval {row.approval_id} ({row.kind.value}, {row.status.value})"]
    if run is None and row.kind.value == "mcp_launch":  # an ACP client's server
        out += [(f"thread   {request.get('thread')} (no run: {request.get('origin')} asked "
                 f"at turn {request.get('turn')})"),
                f"launches MCP server {request.get('server')!r}: "
                + " ".join(map(str, request.get("command") or [])),
                "         variables (names only) "
                + (", ".join(map(str, request.get("variables") or [])) or "none")]
    elif run is None and row.kind.value == "tool_call":  # an app-server client's command
        out += [f"thread   {request.get('thread')} (no run: {request.get('origin')})",
                (f"runs     {(request.get('arguments') or {}).get('command')}  "
                 f"in {request.get('cwd')}"),
                f"         needs {request.get('permission')}"]
    elif run is None:  # a thread's graph turn, whose run starts once this is accepted
        graph = request.get("graph")
        out += [(f"turn     {request.get('turn')} of thread {request.get('thread')} (no run "
                 "yet: it starts once this is accepted)"),
                f"plan     {request.get('graph_id')}  {graph}",
                (f"         graph digest {row.digest} (the plan below, as the turn drew "
                 "it when it asked; an accept approves this digest only)"
                 if turn is not None else
                 f"         graph digest {row.digest} (what an accept approves: `rein "
                 f"graph plan {graph}` says whether the file still has it)")]
    else:
        out += [f"run      {run.run_id} ({run.status.value})",
                f"plan     {run.graph_id}  {run.graph_path}",
                (f"         graph digest {run.graph_digest} (`rein graph plan "
                 f"{run.graph_path}` prints the plan, and its digest: the run's is this "
                 "one)")]
    binding = request.get("binding")
    if isinstance(binding, Mapping):
        out.append(f"binds    graph {binding.get('graph_digest')}")
        for name, value in (binding.get("params") or {}).items():
            out.append(f"         param {name} = {json.dumps(value, ensure_ascii=False)}")
        for child, digest in (binding.get("children") or {}).items():
            out.append(f"         child {child} {digest}")
    if request.get("node"):
        mode = f" ({request['mode']})" if request.get("mode") else ""
        out.append(f"node     {request['node']}{mode}")
    if request.get("prompt"):
        out.append(f"asks     {request['prompt']}")
    for label, key in (("presents", "present"), ("outputs", "outputs"),
                       ("collects", "collect")):
        value = request.get(key)
        if value:
            text = ", ".join(map(str, value)) if isinstance(value, list) else \
                json.dumps(value, ensure_ascii=False)
            out.append(f"{label:<8} {text}")
    out.extend(file_lines(views, pending=row.status.value == "pending"))
    roles = [str(r) for r in request.get("roles") or []]
    if roles:
        out.append(f"for      {' or '.join(roles)}")
    if request.get("timeout_seconds"):
        out.append(f"timeout  {request['timeout_seconds']}s, then {request.get('on_timeout')}")
    out.append(f"digest   {row.digest} (what an answer binds; `--digest` checks it)")
    out.append(f"asked    {row.created_at}")
    blocks = shown_blocks(row.approval_id, views)
    if turn is not None:
        blocks += ["", f"the plan of graph digest {row.digest}, which an accept approves:",
                   "", *str(turn["plan"]).rstrip("\n").split("\n")]
    if blocks:
        out += [*blocks, ""]
    if row.answer and row.status.value != "pending":
        answer: Mapping[str, Any] = row.answer
        note = f' "{answer["note"]}"' if answer.get("note") else ""
        out.append(f"answer   {row.status.value} by {answer.get('actor') or 'someone'} at "
                   f"{row.answered_at}{note}")
        out.append(f"given    {how_given(answer)}")
    else:
        if (refused := refused_of(row)) is not None:
            out.append(f"refused  {refused_line(refused)}")
        out.append(f"answer   rein approvals accept|decline|cancel {row.approval_id}")
    return out


__all__ = ["how_given", "owner_of", "refused_line", "refused_of", "request_of",
           "show_approval", "unsigned_notice"]
