"""What an approval card shows a person: which question of which node, and the material
itself as a person reviews it, not the request's JSON.

Text is shown as text; Markdown (a presented string, a ``.md`` file) is rendered with raw
HTML turned off, so nothing a run wrote can add markup or script to the page; anything
structured stays JSON. Digests are written exactly as ``rein approvals show`` writes them.

A file the answer is bound to by content digest is shown as the approval presented it, from
the copy it keeps (:func:`rein.web.bound.copy_of`), never from the file as it is now:
whoever can write the workspace can put other content in the file while a person reads the
card and the bound content back before the accept, which then finds the file unchanged. The
card says whether the file still holds that content (an accept is refused while it does
not). Where no copy was kept (a directory, a file not text or beyond the copies kept, a
question asked before copies were kept), the file is shown only when the bytes read for the
page have the bound digest, and is said to be the file as it is now. A change against the
workspace's last commit is drawn from the text shown. The secret values the run store
redacts are redacted from every file shown.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.engine.service import ApprovalRow, Harness
from rein.formats.redaction import NO_SECRETS, Secrets, known_secrets, redact
from rein.web import bound
from rein.web.html import e, pretty

MAX_SHOWN = 200_000  # characters of one file or value rendered into a card

WHAT = {
    "graph": "Approve the graph", "gate": "Gate", "checkpoint": "Checkpoint",
    "criterion": "Human criterion", "escalation": "Escalation",
    "tool_call": "A tool call under an ask permission", "mcp_launch": "Launch an MCP server",
    "profile": "A proposed change to an agent profile",
}


def heading(row: ApprovalRow) -> str:
    """The card's title: the kind of question, the gate (or criterion) and its node."""
    req = row.request
    kind = row.kind.value
    node = req.get("node")
    parts = [f"<b data-what>{e(WHAT.get(kind, kind))}</b>"]
    if kind == "criterion" and req.get("criterion"):
        parts.append(f"<code data-criterion>{e(req['criterion'])}</code>")
    if node:
        parts.append(("" if kind == "gate" else "of node ") + f"<code data-node>{e(node)}</code>")
    elif kind == "criterion":
        parts.append("of the graph")
    mode = req.get("mode")
    if mode and kind in ("gate", "checkpoint", "escalation"):
        parts.append(f"<span class='muted'>({e(mode)})</span>")
    return " ".join(parts)


def markdown(text: str) -> str:
    """CommonMark with raw HTML off (it is shown as text) and unsafe link schemes refused."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False})
    return f"<div class='md'>{md.render(text[:MAX_SHOWN])}</div>"


def _value(value: Any) -> str:
    if isinstance(value, str):
        return markdown(value)
    return pretty(value)


def diff_html(text: str) -> str:
    lines = []
    for line in text[:MAX_SHOWN].splitlines():
        cls = ("add" if line.startswith("+") and not line.startswith("+++") else
               "del" if line.startswith("-") and not line.startswith("---") else "")
        lines.append(f"<span class='{cls}'>{e(line)}</span>" if cls else e(line))
    return "<pre tabindex='0' class='diff'>" + "\n".join(lines) + "</pre>"


STALE = "an accept is refused while it differs (APPROVAL_STALE)"
NO_COPY = ("no copy of it is kept (a directory, a file that is not text or larger than the "
           "copies an approval keeps, or a question asked before copies were kept): the "
           "content as it was presented cannot be shown, only its digest above")
ALTERED = ("warning APPROVAL009: the copy this approval keeps is not the content it binds "
           "(edited in the run store, or a secret's value redacted from it): it is not shown; "
           "compare the file's digest with the one above before you answer")


def secrets_of(h: Harness) -> Secrets:
    """The secret values a card redacts from the files it shows: those the run store
    redacts (``REIN_SECRET_*``, the provider keys ``rein.toml`` names), from this
    console's environment."""
    return known_secrets(os.environ, h.key_variables())


def _now(now: bound.Now | None, digest: str) -> str:
    """Whether the file still holds the content the approval binds."""
    if now is None:
        return ("<p class='muted' data-file-now='unknown'>the file as it is now is not "
                "readable from this console</p>")
    if now.kind == "directory":
        return ("<p class='muted' data-file-now='directory'>a directory: its digest covers "
                "every file under it, and an accept is refused while any of them differs "
                "(APPROVAL_STALE)</p>")
    if now.digest == digest:
        return ("<p class='muted' data-file-now='same'>the file is unchanged since it was "
                "presented</p>")
    if now.digest is None:
        return ("<p class='stale' data-file-now='gone'><b>the file is gone (or unreadable) "
                f"since it was presented</b>: {STALE}</p>")
    return (f"<p class='stale' data-file-now='changed'><b>the file now holds other content"
            f"</b> (<code>{e(now.digest)}</code>, not shown): that is not what an accept "
            f"approves, and {STALE}</p>")


def _body(workspace: Path | None, name: str, text: str, secrets: Secrets) -> str:
    """``text`` (the bound content of ``name``) as its change against the last commit when
    it has one, else as its content; secret values redacted."""
    shown = str(redact(text, secrets))
    note = ("<p class='muted' data-redacted>secret values are redacted from what is shown"
            "</p>" if shown != text else "")
    before = bound.committed(workspace, name) if workspace is not None else None
    diff = (bound.change(name, str(redact(before, secrets)), shown) if before is not None
            else None)
    if diff is not None:
        return note + diff_html(diff)
    if name.lower().endswith((".md", ".markdown")):
        return note + markdown(shown)
    return note + f"<pre tabindex='0' class='file'>{e(shown[:MAX_SHOWN])}</pre>"


def _file(row: ApprovalRow, workspace: Path | None, name: str, digest: str,
          secrets: Secrets) -> str:
    """One bound file: its digest, the content the approval binds (from its copy, never
    from the file as it is now), and whether the file still holds it."""
    head = (f"<div class='file-head'><code>{e(name)}</code> "
            f"<code class='muted' data-file-digest>{e(digest)}</code></div>")
    state, copy = bound.copy_of(row, name)
    now = bound.read_now(workspace, name) if workspace is not None else None
    if copy is not None:
        body = ("<p class='muted' data-file-shown='presented'>as it was presented: the "
                "content an accept approves</p>" + _now(now, digest)
                + _body(workspace, name, copy, secrets))
    elif state == "altered":
        body = f"<p class='stale' data-file-shown='altered'>{e(ALTERED)}</p>" + _now(
            now, digest)
    elif now is not None and now.text is not None and now.digest == digest:
        # Read once: the text shown is the very bytes whose digest is the bound one.
        body = (f"<p class='muted' data-file-shown='none'>{e(NO_COPY)}</p>"
                "<p class='muted' data-file-now='same'>the file as it is now, read for this "
                "page, has that digest: this is the content an accept approves</p>"
                + _body(workspace, name, now.text, secrets))
    else:
        body = f"<p class='muted' data-file-shown='none'>{e(NO_COPY)}</p>" + _now(now, digest)
    return f"<div class='file' data-file='{e(name)}'>{head}{body}</div>"


def material(row: ApprovalRow, workspace: Path | None, *,
             secrets: Secrets = NO_SECRETS) -> str:
    """What the person reviews: the presented values, then each bound file as the approval
    presented it (``secrets``: values redacted from the files shown)."""
    req = row.request
    files = req.get("files") if isinstance(req.get("files"), Mapping) else {}
    assert isinstance(files, Mapping)
    out: list[str] = []
    present = req.get("present")
    if isinstance(present, list):
        shown = [v for v in present if not (isinstance(v, str) and v in files)]
        out.extend(f"<div class='presented'>{_value(v)}</div>" for v in shown)
    for key in ("command", "reason", "server"):
        if req.get(key):
            value = req[key]
            text = " ".join(map(str, value)) if isinstance(value, list) else value
            out.append(f"<div class='presented'><span class='muted'>{e(key)}</span> "
                       f"<code>{e(text)}</code></div>")
    out.extend(_file(row, workspace, str(name), str(d), secrets)
               for name, d in files.items())
    binding = req.get("binding")
    if isinstance(binding, Mapping):
        rows = [f"<li>graph <code>{e(binding.get('graph_digest'))}</code></li>"]
        rows += [f"<li>param <code>{e(k)}</code> = <code>{e(json.dumps(v, ensure_ascii=False))}"
                 "</code></li>" for k, v in (binding.get("params") or {}).items()]
        rows += [f"<li>child <code>{e(k)}</code> <code>{e(v)}</code></li>"
                 for k, v in (binding.get("children") or {}).items()]
        out.append(f"<ul class='binds'>{''.join(rows)}</ul>")
    return f"<div class='material'>{''.join(out)}</div>" if out else ""


__all__ = ["WHAT", "diff_html", "heading", "markdown", "material", "secrets_of"]
