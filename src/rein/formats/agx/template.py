"""Templates: literal text with ``${{ expr }}`` interpolations (AGS §16.1, template position).

Everything outside ``${{`` … ``}}`` is literal, including a ``$`` or ``{{`` that does not form
``${{``. AGS defines no escape for a literal ``${{``.

An interpolation ends at the first ``}}`` outside a quoted string, so ``${{ "}}" }}`` works.
The reference validator uses a non-greedy regular expression and would cut that one at the
first ``}}``; the two agree on every template without ``}}`` inside a string literal.
An empty ``${{ }}`` is an error here (the reference skips it silently): it renders nothing
and is almost always an unfinished edit.
"""

from __future__ import annotations

from functools import lru_cache

from rein.formats.agx.errors import AgxEvalError, AgxSyntaxError, Fault
from rein.formats.agx.evaluate import evaluate_at
from rein.formats.agx.parser import parse
from rein.formats.agx.scope import Scope
from rein.formats.agx.tree import Interpolation, Template
from rein.formats.agx.values import stringify

OPEN = "${{"
CLOSE = "}}"


def has_interpolation(text: str) -> bool:
    """True when ``text`` contains ``${{`` (in expression position that is AG211)."""
    return OPEN in text


def parse_template(text: str) -> Template:
    """Split a template into literal text and parsed interpolations. Raises AgxSyntaxError
    with offsets into ``text``. Results are cached by text."""
    if not isinstance(text, str):
        raise TypeError(f"an AGX template is a string, not {type(text).__name__}")
    return _parse_template_cached(text)


@lru_cache(maxsize=4096)
def _parse_template_cached(text: str) -> Template:
    parts: list[str | Interpolation] = []
    pos = 0
    while True:
        opening = text.find(OPEN, pos)
        if opening < 0:
            if pos < len(text):
                parts.append(text[pos:])
            return Template(source=text, parts=tuple(parts))
        if opening > pos:
            parts.append(text[pos:opening])
        start = opening + len(OPEN)
        closing = _find_close(text, start)
        if closing < 0:
            raise AgxSyntaxError("unterminated '${{'", offset=opening, text=text,
                                 hint="close the interpolation with '}}'")
        inner = text[start:closing]
        if not inner.strip():
            raise AgxSyntaxError("empty interpolation '${{ }}'", offset=opening, text=text,
                                 hint="put an expression inside, e.g. ${{ params.name }}, "
                                      "or remove it")
        try:
            expr = parse(inner)
        except AgxSyntaxError as exc:
            raise AgxSyntaxError(exc.reason, offset=start + exc.offset, text=text,
                                 hint=exc.hint, suffix=exc.suffix) from None
        parts.append(Interpolation(expr=expr, offset=start))
        pos = closing + len(CLOSE)


def _find_close(text: str, start: int) -> int:
    """Index of the ``}}`` ending an interpolation that starts at ``start``, or -1.

    Quoted strings are skipped. If a quote never closes, fall back to the first ``}}`` so
    the expression parser can report the unterminated string precisely.
    """
    quote = ""
    i = start
    size = len(text)
    while i < size:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch == '"' or ch == "'":
            quote = ch
        elif ch == "}" and text.startswith(CLOSE, i):
            return i
        i += 1
    return text.find(CLOSE, start) if quote else -1


def render(template: Template, scope: Scope) -> str:
    """The template's text with each interpolation evaluated and stringified: scalars as
    text, ``null`` as "", arrays and objects as compact JSON. Raises AgxEvalError."""
    out: list[str] = []
    for part in template.parts:
        if isinstance(part, str):
            out.append(part)
            continue
        value = evaluate_at(part.expr, scope, text=template.source, base=part.offset)
        try:
            out.append(stringify(value))
        except Fault as fault:  # a non-JSON value reached the scope
            raise AgxEvalError(fault.message, offset=part.offset, text=template.source,
                               kind=fault.kind) from None
        except RecursionError:
            raise AgxEvalError("a value is nested too deeply to render", offset=part.offset,
                               text=template.source, kind="limit") from None
    return "".join(out)
