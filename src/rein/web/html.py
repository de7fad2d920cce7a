"""Small helpers for server-rendered HTML: escaping, the page frame, forms with CSRF.

Every value that came from a run, a file or a request goes through :func:`e`; there is no
template engine, so there is no second escaping rule to remember.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from html import escape
from typing import Any

from rein.core.version import VERSION
from rein.web import states


def e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def status(value: Any, *, attrs: str = "") -> str:
    """A state's badge, in the console's one vocabulary (:mod:`rein.web.states`)."""
    return states.badge(value, attrs=attrs)


def moment(at: Any, *, day: bool = True) -> str:
    """An instant as ``<time>``: its machine-readable value (ISO 8601, UTC) and the UTC wall
    time a person reads, with the date unless ``day`` is false. A value that is not a time
    is shown as it is."""
    text = "" if at is None else str(at)
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return e(text)
    when = (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)
    iso = when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    shown = when.strftime("%Y-%m-%d %H:%M:%S UTC" if day else "%H:%M:%S")
    return f'<time datetime="{iso}" title="{iso}">{shown}</time>'


def pretty(value: Any) -> str:
    return f"<pre tabindex=\"0\">{e(json.dumps(value, indent=2, ensure_ascii=False, default=str))}</pre>"


def page(title: str, body: str, *, read_only: bool = False,
         attrs: Mapping[str, str] | None = None) -> str:
    """A whole page: the navigation, ``body``, and the one script."""
    extra = "".join(f' {k}="{e(v)}"' for k, v in (attrs or {}).items())
    badge = '<span class="ro">read-only</span>' if read_only else ""
    return (
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{e(title)} · rein</title>"
        "<link rel=\"stylesheet\" href=\"/static/console.css\"></head>"
        f"<body{extra}><header class=\"top\"><a class=\"brand\" href=\"/\">rein</a>"
        "<nav aria-label=\"console\">"
        "<a href=\"/\">Runs</a><a href=\"/approvals\">Approvals</a>"
        "<a href=\"/plans\">Plans</a><a href=\"/threads\">Threads</a>"
        "<a href=\"/spec\">Spec flow</a><a href=\"/dev\">Dev flow</a>"
        "<a href=\"/evals\">Evals</a></nav>"
        f"{badge}<span class=\"muted\">{e(VERSION)}</span></header>"
        f"<main>{body}</main><script type=\"application/json\" id=\"rein-states\">"
        f"{states.table()}</script><script src=\"/static/console.js\"></script></body></html>")


def form(action: str, csrf: str, inner: str, *, cls: str = "inline") -> str:
    return (f'<form method="post" action="{e(action)}" class="{e(cls)}">'
            f'<input type="hidden" name="csrf" value="{e(csrf)}">{inner}</form>')


def hidden(name: str, value: Any) -> str:
    return f'<input type="hidden" name="{e(name)}" value="{e(value)}">'


def table(headers: Iterable[str], rows: Iterable[Iterable[str]], *, body_id: str = "") -> str:
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    tbody = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    ident = f' id="{e(body_id)}"' if body_id else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody{ident}>{tbody}</tbody></table>"


def error_box(code: str, message: str, hint: str | None) -> str:
    tip = f'<div class="muted">{e(hint)}</div>' if hint else ""
    return f'<div class="error" role="alert"><code>{e(code)}</code> {e(message)}{tip}</div>'


__all__ = ["e", "error_box", "form", "hidden", "moment", "page", "pretty", "status", "table"]
