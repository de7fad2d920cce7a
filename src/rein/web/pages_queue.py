"""The approval queue and the plan view: what a person is asked, and what a graph will do.

Each answer form carries the digest of the material it shows; the Harness refuses an answer
whose digest is not the entry's, so a page left open while the material changed cannot
approve the new material (APPROVAL_STALE), and an answer that would continue a run whose
files changed is refused before it is recorded (RT053). Cancel stops the whole run; decline
refuses this one action and lets the run handle it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rein.engine.service import ApprovalRow
from rein.formats.redaction import NO_SECRETS, Secrets
from rein.web import review, views
from rein.web.html import e, error_box, form, hidden, moment, page, status, table

MAX_GRAPHS = 500  # files listed on the plans page; a workspace with more is searched by path
TEXT_KINDS = ("string", "text", "markdown")  # parameters typed as text: a textarea each
MAX_ROWS = 12  # a textarea's height in lines, at most (it scrolls beyond)
SKIPPED_DIRS = frozenset({".git", ".rein", ".venv", "node_modules", "__pycache__"})



def input_fields(req: Mapping[str, Any]) -> str:
    """Fields from what an entry's request declares: a gate's ``collect`` (input mode), a
    review's outputs; each is sent as ``value.NAME`` and typed by its declared type."""
    fields: list[tuple[str, Mapping[str, Any]]] = []
    if req.get("mode") == "input":
        fields = [(str(k), v if isinstance(v, Mapping) else {})
                  for k, v in (req.get("collect") or {}).items()]
    elif req.get("mode") == "review":
        fields = [(str(k), {"type": "any", "description": "leave empty to keep what is shown"})
                  for k in req.get("outputs") or []]
    out = []
    for name, spec in fields:
        kind = str(spec.get("type", "string"))
        desc = spec.get("description") or ""
        out.append(f"<label>{e(name)} <span class='muted'>({e(kind)}) {e(desc)}</span><br>"
                   f"<input type='text' name='value.{e(name)}' data-type='{e(kind)}'></label><br>")
    return "".join(out)


def answer_values(form: Mapping[str, str], request: Mapping[str, Any]) -> dict[str, Any]:
    """``value.NAME`` fields, typed by the entry's declared inputs: a non-string input is
    read as JSON (``3``, ``true``, ``["a"]``); an empty field is left out."""
    collect = request.get("collect") or {}
    out: dict[str, Any] = {}
    for key, text in form.items():
        if not key.startswith("value.") or text == "":
            continue
        name = key[len("value."):]
        spec = collect.get(name) if isinstance(collect, Mapping) else None
        kind = spec.get("type", "string") if isinstance(spec, Mapping) else "any"
        if kind == "string":
            out[name] = text
            continue
        try:
            out[name] = json.loads(text)
        except ValueError:
            out[name] = text
    return out


def _risk(row: ApprovalRow) -> str:
    risk = row.request.get("risk")
    return f" · risk <b>{e(risk)}</b>" if risk else ""


def _owner(row: ApprovalRow) -> str:
    """What the question belongs to: its run, or, for a question asked before any run
    exists (a graph turn's digest, an editor's MCP launch), its thread."""
    thread = row.request.get("thread")
    if isinstance(thread, str) and thread and row.run_id in (thread, row.request.get("turn")):
        return f"thread <a href='/threads/{e(thread)}'><code>{e(thread)}</code></a>"
    return f"run <a href='/runs/{e(row.run_id)}'><code>{e(row.run_id)}</code></a>"


def given_html(row: ApprovalRow) -> str:
    """Who answered and how (the surface, the identity and how it was established, confined
    or not, a terminal or not, the driver turn it followed), for an answered entry."""
    answer = row.answer if isinstance(row.answer, Mapping) else {}
    who = f"{status(row.status.value)} by <b>{e(answer.get('actor') or 'someone')}</b>" + (
        f" at {moment(row.answered_at)}" if row.answered_at else "")
    how = answer.get("given")
    if not isinstance(how, Mapping):
        return f"<div class='given muted' data-given>{who}</div>"
    identity = how.get("identity") if isinstance(how.get("identity"), Mapping) else {}
    assert isinstance(identity, Mapping)
    method = str(identity.get("method") or "unknown")
    proof = identity.get("fingerprint") or identity.get("session")
    facts = [f"via <b>{e(how.get('surface'))}</b>",
             f"{e(method)}" + (f" <code>{e(proof)}</code>" if proof else "")
             + f" (account {e(identity.get('account'))})",
             "<b>confined</b>" if how.get("confined") else "not confined",
             "a terminal" if how.get("terminal") else "no terminal"]
    if how.get("standing"):
        facts.append(f"by standing instruction {e(how['standing'])}")
    turn = how.get("after_driver_turn")
    if isinstance(turn, Mapping):
        seconds = turn.get("seconds_after")
        when = f"{seconds:g} s after" if isinstance(seconds, int | float) else "after"
        facts.append(f"{e(when)} the driver's turn on <code>{e(turn.get('node'))}</code>")
    return f"<div class='given muted' data-given>{who} · {' · '.join(facts)}</div>"


def approval_card(row: ApprovalRow, *, csrf: str, read_only: bool,
                  workspace: Path | None = None, back: str = "",
                  secrets: Secrets = NO_SECRETS) -> str:
    """One question: which gate of which node, what it asks, the material as a person
    reviews it (:mod:`rein.web.review`: each bound file as the approval presented it,
    ``secrets`` redacted), and the digest an answer binds, written as ``rein approvals
    show`` writes it. ``back``: the run page the card is shown on, where the answer
    returns (else to the page of the question's run)."""
    req = dict(row.request)
    head = (f"<div class='card' data-approval='{e(row.approval_id)}'>"
            f"<div>{review.heading(row)} "
            f"{status(row.status.value)} · {_owner(row)}{_risk(row)}</div>"
            f"<p class='asks'>{e(req.get('prompt') or req.get('node') or row.key)}</p>"
            f"{review.material(row, workspace, secrets=secrets)}"
            f"<div class='muted'>digest <code data-digest>{e(row.digest)}</code> (what an "
            "answer binds)</div>")
    if row.status.value != "pending":
        return head + given_html(row) + "</div>"
    if read_only:
        return head + "</div>"
    buttons = ("<button class='accept' name='action' value='accept'>Accept</button> "
               "<button class='decline' name='action' value='decline'>Decline</button> "
               "<button class='cancel' name='action' value='cancel' title='stops the whole "
               "run'>Cancel the run</button>")
    inner = (hidden("digest", row.digest) + (hidden("back", back) if back else "")
             + input_fields(row.request)
             + "<input type='text' name='note' placeholder='note (optional)'> " + buttons)
    return head + form(f"/approvals/{row.approval_id}", csrf, inner, cls="answer") + "</div>"


def approvals_page(rows: Sequence[ApprovalRow], *, csrf: str, read_only: bool,
                   error: tuple[str, str, str | None] | None = None, run_id: str = "",
                   workspace: Path | None = None, secrets: Secrets = NO_SECRETS) -> str:
    top = error_box(*error) if error else ""
    scope = f" of <code>{e(run_id)}</code>" if run_id else ""
    cards = "".join(approval_card(r, csrf=csrf, read_only=read_only, workspace=workspace,
                                  secrets=secrets) for r in rows) or \
        "<p class='muted'>Nothing waits for an answer.</p>"
    return page("Approvals", f"{top}<h1>Approval queue{scope}</h1>{cards}", read_only=read_only)


def graph_files(workspace: Path) -> list[str]:
    """The graph documents in the workspace, relative paths, sorted (at most MAX_GRAPHS)."""
    found: list[str] = []
    stack = [workspace]
    while stack and len(found) < MAX_GRAPHS:
        folder = stack.pop()
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink():
                continue  # a link could lead out of the workspace
            if entry.is_dir() and entry.name not in SKIPPED_DIRS:
                stack.append(entry)
            elif entry.name.endswith((".agraph.yaml", ".agraph.yml", ".agraph.json")):
                found.append(entry.relative_to(workspace).as_posix())
    return sorted(found)[:MAX_GRAPHS]


def plans_page(workspace: Path, *, read_only: bool) -> str:
    rows = [[f"<a href='/plan?path={e(p)}'><code>{e(p)}</code></a>"]
            for p in graph_files(workspace)]
    return page("Plans", "<h1>Graphs in this workspace</h1>"
                + table(("Graph file",), rows), read_only=read_only)


def _text(value: Any) -> str:
    """A value as a field shows it: strings as they are, anything else as JSON (the way
    ``rein run --param`` reads it back)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def param_fields(specs: Mapping[str, Any], values: Mapping[str, str]) -> str:
    """One field per declared parameter, sent as ``param.NAME``: a choice for an ``enum``
    or a boolean, a textarea for text (its lines kept), else a one-line field for JSON;
    each prefilled with the default; an empty field takes the default.
    The server checks what comes back with rein's own parameter binding (AG301/AG302)."""
    out = []
    for name, spec in specs.items():
        spec = spec if isinstance(spec, Mapping) else {}
        kind = str(spec.get("type", "string"))
        has_default = "default" in spec
        needed = spec.get("required", True) and not has_default
        shown = values.get(name, _text(spec["default"]) if has_default else "")
        choices = spec.get("enum") if isinstance(spec.get("enum"), list) else (
            [True, False] if kind == "boolean" else None)
        if choices is not None:
            options = ([""] if not needed and not has_default else []) + [
                _text(c) for c in choices]
            field = (f"<select name='param.{e(name)}' data-type='{e(kind)}'>" + "".join(
                f"<option value='{e(o)}'{' selected' if o == shown else ''}>{e(o)}</option>"
                for o in options) + "</select>")
        elif kind in TEXT_KINDS:
            # Text may span lines: a textarea keeps them (a one-line input drops them). The
            # newline after the tag is the one HTML drops, so a value that starts with a
            # newline keeps it.
            lines = min(MAX_ROWS, max(2, shown.count("\n") + 1))
            field = (f"<textarea name='param.{e(name)}' rows='{lines}' data-type='{e(kind)}'"
                     f"{' required' if needed else ''}>\n{e(shown)}</textarea>")
        else:
            field = (f"<input type='text' name='param.{e(name)}' value='{e(shown)}' "
                     f"data-type='{e(kind)}' placeholder='JSON'{' required' if needed else ''}>")
        flag = " <b>required</b>" if needed else (
            f" default <code>{e(_text(spec['default']))}</code>" if has_default else
            " optional")
        out.append(f"<label class='param'><code>{e(name)}</code> <span class='muted'>"
                   f"({e(kind)}){flag} {e(spec.get('description') or '')}</span><br>"
                   f"{field}</label><br>")
    return "".join(out)


def plan_page(path: str, plan: Any, digest: str, findings: Sequence[Any], *, csrf: str,
              read_only: bool, errors: Sequence[tuple[str, str, str | None]] = (),
              params: Mapping[str, Any] | None = None,
              values: Mapping[str, str] | None = None) -> str:
    """``params``: the graph's declared parameters (a field each); ``values``: what was
    typed, shown again beside the ``errors`` that refused it."""
    from rein.formats.ags import render

    scope = plan.root
    pic = views.picture(scope)
    top = "".join(error_box(*err) for err in errors)
    notes = "".join(f"<li>{e(f.render() if hasattr(f, 'render') else f)}</li>"
                    for f in findings)
    fields = param_fields(params or {}, values or {})
    if fields:
        fields = f"<fieldset class='params'><legend>Parameters</legend>{fields}</fieldset>"
    run = "" if read_only else form(
        "/plan/run", csrf, hidden("path", path) + hidden("digest", digest) + fields
        + "<button class='primary'>Approve and run</button> <span class='muted'>approves "
          "exactly this digest with these parameters; if the file changes first, the run "
          "is refused</span>",
        cls="card")
    body = (f"{top}<h1>{e(plan.title)}</h1><div class='card'>file <code>{e(path)}</code> · "
            f"graph <code>{e(plan.graph_id)}</code> · digest <code data-digest>{e(digest)}"
            f"</code></div>{run}<div class='dagwrap' tabindex='0'>{pic}</div>"
            + (f"<h2>Findings</h2><ul>{notes}</ul>" if notes else "")
            + f"<h2>Plan</h2><pre tabindex='0' class='plan'>{e(render.render_text(plan))}</pre>")
    return page(f"Plan {path}", body, read_only=read_only)


__all__ = ["answer_values", "approval_card", "approvals_page", "given_html", "graph_files", "input_fields",
           "param_fields", "plan_page", "plans_page"]
