"""Expressions evaluated on behalf of a run, and the diagnostics a run records.

Every AGX expression a node, an edge or a graph output declares is evaluated through
:func:`condition` or :func:`value`, so ``policy.on_expression_error`` is applied in one
place; :func:`diagnostic` is the one way an RT/AG finding enters the run record.
"""

from __future__ import annotations

from typing import Any

from rein.engine.events import EventType
from rein.engine.run import expressions
from rein.engine.run.runtime import RunContext


def condition(ctx: RunContext, scope: expressions.EvalScope, text: str, where: str) -> bool:
    """A boolean AGX expression under ``policy.on_expression_error``."""
    try:
        return expressions.evaluate_bool(text, scope)
    except Exception as exc:
        if not expressions.is_eval_error(exc):
            raise
        return bool(expression_failed(ctx, exc, text, where, default=False))


def value(ctx: RunContext, scope: expressions.EvalScope, text: str, where: str) -> Any:
    """An AGX value under ``policy.on_expression_error`` (``false`` policy yields ``None``)."""
    try:
        return expressions.evaluate(text, scope)
    except Exception as exc:
        if not expressions.is_eval_error(exc):
            raise
        return expression_failed(ctx, exc, text, where, default=None)


def expression_failed(ctx: RunContext, exc: Exception, text: str, where: str, *,
                      default: Any) -> Any:
    message = f"{where}: cannot evaluate {text!r}: {getattr(exc, 'message', exc)}"
    if ctx.env.policy.get("on_expression_error", "fail") == "false":
        diagnostic(ctx, "RT062", "warning", message)
        return default
    raise expressions.ExpressionFailed(
        message, hint="fix the expression, or set policy.on_expression_error: false"
    ) from exc


def diagnostic(ctx: RunContext, code: str, severity: str, message: str, *,
               node: str | None = None) -> None:
    """Record an RT/AG diagnostic for the run record (and as an event)."""
    entry: dict[str, Any] = {"code": code, "severity": severity, "message": message,
                             "at": ctx.now()}
    if node:
        entry["node_id"] = node
    ctx.state.diagnostics.append(entry)
    ctx.emit(EventType.DIAGNOSTIC, entry)


__all__ = ["condition", "diagnostic", "expression_failed", "value"]
