"""AGX as the engine uses it: parsed once and cached, evaluated in a node's scope.

:class:`EvalScope` implements the AGX ``Scope`` protocol over one scope instance: the
namespace roots of AGS §16 (``graph``, ``params``, ``context``, ``attachments``, ``nodes``,
``self``, ``loop``, ``outputs``, ``env`` and a map's item names). ``secrets`` is never a
root: the validator refuses it (AG205) and the engine has nothing to answer with.

The evaluation policy lives here too: under ``policy.on_expression_error: fail`` an
evaluation error is run-fatal (:class:`ExpressionFailed`); under ``false`` the expression
yields ``false`` and an RT062 warning is recorded by the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from typing import Any

from rein.core.frozen import Record, field
from rein.errors import RunError
from rein.formats.dotted import NotPlain, plain_reference, read


class ExpressionFailed(RunError):
    """An expression could not be evaluated under ``on_expression_error: fail``: run-fatal."""

    default_code = "RT062"


@lru_cache(maxsize=4096)
def _parsed(text: str) -> Any:
    from rein.formats import agx

    return agx.parse(text)


@lru_cache(maxsize=1024)
def _parsed_template(text: str) -> Any:
    from rein.formats import agx

    return agx.parse_template(text)


class _Overlaid(Mapping[str, Any]):
    """``top`` over ``base`` without copying either: a lookup reads one entry, so an
    expression that names one node builds that node's view only, however many the scope
    holds (copying ``base`` would build a view of every node, for every expression)."""

    __slots__ = ("_base", "_top")

    def __init__(self, top: Mapping[str, Any], base: Mapping[str, Any]) -> None:
        self._top = top
        self._base = base

    def __getitem__(self, key: str) -> Any:
        if key in self._top:
            return self._top[key]
        return self._base[key]

    def __contains__(self, key: object) -> bool:
        return key in self._top or key in self._base

    def __iter__(self) -> Iterator[str]:
        yield from self._base
        yield from (k for k in self._top if k not in self._base)

    def __len__(self) -> int:
        return len(self._base) + sum(1 for k in self._top if k not in self._base)


class EvalScope(Record):
    """One place where expressions are evaluated. Cheap to build; values are looked up lazily."""

    roots: Mapping[str, Any]  # fixed roots: graph, params, context, attachments, loop, ...
    nodes: Callable[[], Mapping[str, Any]]  # nodes.<id> views of the current scope instance
    statuses: Callable[[str], str | None]
    this: Mapping[str, Any] | None = None  # self.{id, attempt, inputs, outputs}
    extra: Mapping[str, Any] = field(default_factory=dict)  # map item names, outputs, env

    def lookup(self, root: str) -> Any:
        if root in self.extra:
            return self.extra[root]
        if root == "nodes":
            views = self.nodes()
            if self.this is None:
                return views
            overlay: dict[str, Any] = {} if "self" in views else {"self": self.this}
            own = self.this.get("id")
            if "outputs" in self.this and isinstance(own, str) and own in views:
                # Criteria run before the node's outputs are stored: `nodes.<own id>.outputs`
                # must read the attempt's outputs, exactly as `self.outputs` does.
                overlay[own] = {**views[own], "outputs": self.this["outputs"]}
            return _Overlaid(overlay, views) if overlay else views
        if root == "self":
            if self.this is None:
                raise KeyError(root)
            return self.this
        if root in self.roots:
            return self.roots[root]
        raise KeyError(root)

    def node_status(self, node_id: str) -> str | None:
        return self.statuses(node_id)

    def with_self(self, this: Mapping[str, Any], **extra: Any) -> EvalScope:
        """The same scope as seen from inside one node."""
        return EvalScope(
            roots=self.roots,
            nodes=self.nodes,
            statuses=self.statuses,
            this=this,
            extra={**self.extra, **extra},
        )


def evaluate(text: str, scope: EvalScope) -> Any:
    """The value of an AGX expression. Raises AGX's evaluation error untouched."""
    path = plain_reference(text)
    if path is not None:  # a dotted name alone: read without importing AGX
        try:
            return read(path, scope)
        except NotPlain:
            pass  # AGX raises its error, with the position and hint
    from rein.formats import agx

    return agx.evaluate(_parsed(text), scope)


def evaluate_bool(text: str, scope: EvalScope) -> bool:
    """An AGX condition; a non-boolean result is an evaluation error."""
    path = plain_reference(text)
    if path is not None:
        try:
            found = read(path, scope)
        except NotPlain:
            found = None
        if isinstance(found, bool):
            return found
    from rein.formats import agx

    return bool(agx.evaluate_bool(_parsed(text), scope))


def render(text: str, scope: EvalScope) -> str:
    """An AGS template with ``${{ expr }}`` interpolation."""
    if "${{" not in text:
        return text
    from rein.formats import agx

    return str(agx.render(_parsed_template(text), scope))


def is_eval_error(exc: BaseException) -> bool:
    """Whether ``exc`` is AGX's evaluation (or, for unchecked text, syntax) error."""
    from rein.formats import agx

    return isinstance(exc, (agx.AgxEvalError, agx.AgxSyntaxError))
