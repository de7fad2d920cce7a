"""What an expression or template reads, parsed once per distinct text.

The validator needs, for every expression position, the reference chains and the function
calls (with their literal arguments). Large graphs hold tens of thousands of expressions,
most of them of two shapes: a bare reference (``nodes.build.outputs.log``) and a reference
compared with a literal (``nodes.review.outputs.decision == "approve"``). Those shapes are
recognised by one regular expression and need no parser; everything else goes through
:mod:`rein.formats.agx`. The shortcut is exact: it accepts only text the grammar (§16.2)
parses as that shape, and a property test checks it against the parser.
"""

from __future__ import annotations

import re
from functools import lru_cache

from rein.core.frozen import Frozen
from rein.formats.agx.extract import calls, references
from rein.formats.agx.parser import parse
from rein.formats.agx.template import parse_template

KEYWORDS = frozenset({"true", "false", "null", "and", "or", "not", "in"})
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_REF = rf"{_NAME}(?:\.{_NAME})*"
_LITERAL = r"""(?:"[^"\\\n]*"|'[^'\\\n]*'|[0-9]+(?:\.[0-9]+)?|true|false|null)"""
_SIMPLE = re.compile(rf"[ \t]*({_REF})[ \t]*(?:(?:==|!=|<=|>=|<|>)[ \t]*{_LITERAL}[ \t]*)?")
_SIMPLE_INTERPOLATION = re.compile(rf"\$\{{\{{[ \t]*({_REF})[ \t]*\}}\}}")

Path = tuple[str, ...]


class Reads(Frozen):
    """The reference chains of an expression or template, and its calls as
    ``(name, args)``: literal arguments as values, others as ``agx.NOT_LITERAL``."""

    refs: tuple[Path, ...]
    calls: tuple[tuple[str, tuple[object, ...]], ...] = ()



def _simple_path(text: str) -> Path | None:
    path = tuple(text.split("."))
    return path if KEYWORDS.isdisjoint(path) else None


@lru_cache(maxsize=16384)
def expression_reads(text: str) -> Reads:
    """What ``text`` reads as an expression. Raises AgxSyntaxError (AG204)."""
    m = _SIMPLE.fullmatch(text)
    if m is not None:
        path = _simple_path(m.group(1))
        if path is not None:
            return Reads(refs=(path,))
    expr = parse(text)
    return Reads(refs=tuple(r.path for r in references(expr)),
                 calls=tuple((c.name, c.args) for c in calls(expr)))


@lru_cache(maxsize=16384)
def template_reads(text: str) -> Reads:
    """What the ``${{ }}`` interpolations of a template read. Raises AgxSyntaxError."""
    opened = text.count("${{")
    if opened == 0:
        return Reads(refs=())
    found = _SIMPLE_INTERPOLATION.findall(text)
    if len(found) == opened:
        paths = [_simple_path(ref) for ref in found]
        if all(p is not None for p in paths):
            return Reads(refs=tuple(p for p in paths if p is not None))
    template = parse_template(text)
    return Reads(refs=tuple(r.path for r in references(template)),
                 calls=tuple((c.name, c.args) for c in calls(template)))
