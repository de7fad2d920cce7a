"""An AGX expression that is a dotted name alone (``nodes.build.outputs.report``), known
and read without :mod:`rein.formats.agx`.

Many expressions a run evaluates are such names (a gate's ``present`` entries, a graph's
``from``). Recognising one takes string methods, and reading it is the evaluator's rule for
a reference (AGS §16.5): the root from the scope, then each member of an object, ``null``
once a step is ``null``. So a process that reads only names imports none of the tokenizer,
the parser, the function table or the evaluator: this module is outside the ``agx`` package
so that importing it does not import them. Errors are not its business: :func:`read` gives
up where the evaluator raises, and the caller evaluates with AGX, which raises its own
error with the position and the hint it always has.
"""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False  # not typing's: the point of this module is what it does not import
if TYPE_CHECKING:
    from typing import Any

    from rein.formats.agx.scope import Scope

# AGX's keywords (rein.formats.agx.lexer): never the root of a reference.
KEYWORDS = frozenset({"true", "false", "null", "and", "or", "not", "in"})


class NotPlain(Exception):
    """Reading the name failed where the evaluator raises: let AGX evaluate it."""


def plain_reference(text: str) -> tuple[str, ...] | None:
    """The path of ``text`` when it is a dotted name and nothing else (no space, no call,
    no keyword at its root): the tree's ``Reference.path`` the parser would build, else
    ``None``. A member may be a keyword (``nodes.a.in``), as the parser allows."""
    path = tuple(text.split("."))
    if path[0] in KEYWORDS or not all(p.isascii() and p.isidentifier() for p in path):
        return None
    return path


def read(path: tuple[str, ...], scope: Scope) -> Any:
    """The value of the reference ``path`` in ``scope``, exactly as the evaluator gives it;
    :class:`NotPlain` where the evaluator raises (an unknown root, a member of a value that
    is not an object)."""
    try:
        value = scope.lookup(path[0])
    except KeyError:
        raise NotPlain(path[0]) from None
    for member in path[1:]:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise NotPlain(member)
        value = value.get(member)
    return value


__all__ = ["KEYWORDS", "NotPlain", "plain_reference", "read"]
