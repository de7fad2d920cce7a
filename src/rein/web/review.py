"""What an approval card shows a person: which question of which node, and the material
itself as a person reviews it, not the request's JSON.

Text is shown as text; Markdown (a presented string, a ``.md`` file) is rendered with raw
HTML turned off, so nothing a run wrote can add markup or script to the page; each file the
answer is bound to by content digest is shown as its change against the workspace's last
commit when it has one, else as its content; anything structured stays JSON. Digests are
written exactly as ``rein approvals show`` writes them.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.engine.service import ApprovalRow
from rein.web.html import e, pretty

MAX_SHOWN = 200_000  # characters of one file or value rendered into a card
GIT_SECONDS = 10

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


def _git_diff(workspace: Path, name: str) -> str | None:
    """The file's change against the last commit, or None (no repository, not tracked, no
    change, git missing)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(workspace), "diff", "--no-color", "--no-ext-diff", "HEAD",
             "--", name], capture_output=True, text=True, timeout=GIT_SECONDS, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 and done.stdout.strip() else None


def diff_html(text: str) -> str:
    lines = []
    for line in text[:MAX_SHOWN].splitlines():
        cls = ("add" if line.startswith("+") and not line.startswith("+++") else
               "del" if line.startswith("-") and not line.startswith("---") else "")
        lines.append(f"<span class='{cls}'>{e(line)}</span>" if cls else e(line))
    return "<pre tabindex='0' class='diff'>" + "\n".join(lines) + "</pre>"


def _file(workspace: Path | None, name: str, digest: str) -> str:
    head = (f"<div class='file-head'><code>{e(name)}</code> "
            f"<code class='muted' data-file-digest>{e(digest)}</code></div>")
    body = "<p class='muted'>not readable from this console</p>"
    if workspace is not None:
        root = workspace.resolve()
        path = (root / name).resolve()
        if root in path.parents and path.is_file():
            change = _git_diff(root, name)
            if change is not None:
                body = diff_html(change)
            else:
                try:
                    text = path.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    text = None
                if text is None:
                    pass
                elif path.suffix.lower() in (".md", ".markdown"):
                    body = markdown(text)
                else:
                    body = f"<pre tabindex='0' class='file'>{e(text[:MAX_SHOWN])}</pre>"
        elif root in path.parents and path.is_dir():
            body = "<p class='muted'>a directory: its digest covers every file under it</p>"
    return f"<div class='file' data-file='{e(name)}'>{head}{body}</div>"


def material(row: ApprovalRow, workspace: Path | None) -> str:
    """What the person reviews: the presented values, then each bound file."""
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
    out.extend(_file(workspace, str(name), str(d)) for name, d in files.items())
    binding = req.get("binding")
    if isinstance(binding, Mapping):
        rows = [f"<li>graph <code>{e(binding.get('graph_digest'))}</code></li>"]
        rows += [f"<li>param <code>{e(k)}</code> = <code>{e(json.dumps(v, ensure_ascii=False))}"
                 "</code></li>" for k, v in (binding.get("params") or {}).items()]
        rows += [f"<li>child <code>{e(k)}</code> <code>{e(v)}</code></li>"
                 for k, v in (binding.get("children") or {}).items()]
        out.append(f"<ul class='binds'>{''.join(rows)}</ul>")
    return f"<div class='material'>{''.join(out)}</div>" if out else ""


__all__ = ["WHAT", "diff_html", "heading", "markdown", "material"]
