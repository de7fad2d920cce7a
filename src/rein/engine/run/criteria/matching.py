"""The value criteria: ``json_schema``, ``regex`` and ``expression``.

``json_schema`` validates a named output against an inline ``schema`` or a ``schema_ref``
(a workspace-relative YAML or JSON file; remote URIs are refused, a check must not depend
on the network). Evidence is the first schema error.

``regex`` searches (unanchored, as AGX ``matches`` does) the ``target`` expression's value,
or the named output's value; non-string values are matched as compact JSON. ``flags`` are
any of ``i m s x``; ``negate`` inverts the result. The search takes time linear in the text
(:mod:`rein.formats.agx.patterns`): a pattern that needs backtracking is CRIT008.

``expression`` must evaluate to boolean ``true``. A non-boolean result, or any evaluation
error, is reported as an error result (with the AGX code), never as a quiet failure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rein.engine.run.criteria.base import (
    CriterionProblem,
    Verdict,
    confined,
    evaluate_condition,
    evaluate_expression,
    to_text,
)
from rein.engine.run.criteria.model import CriterionContext
from rein.engine.run.outputs import SchemaInvalid, first_schema_error
from rein.errors import LoadError
from rein.formats.loader import load_path

if TYPE_CHECKING:
    from rein.formats.agx.patterns import Pattern


async def check_json_schema(criterion: Mapping[str, Any], ctx: CriterionContext) -> Verdict:
    """The named output validates against the schema."""
    name = criterion.get("output")
    if not isinstance(name, str) or not name:
        raise CriterionProblem("json_schema criterion needs an 'output' name")
    schema = _schema(criterion, ctx)
    if name not in ctx.outputs:
        return Verdict(passed=False, evidence=f"output {name!r} was not produced")
    try:
        error = first_schema_error(ctx.outputs[name], schema)
    except SchemaInvalid as exc:
        raise CriterionProblem(f"the schema is not a valid JSON Schema: {exc}") from exc
    if error is None:
        return Verdict(passed=True, evidence=f"output {name!r} matches the schema")
    return Verdict(passed=False, evidence=error)


def _schema(criterion: Mapping[str, Any], ctx: CriterionContext) -> Any:
    if "schema" in criterion:
        schema = criterion["schema"]
        if not isinstance(schema, (dict, bool)):
            raise CriterionProblem("'schema' must be a JSON Schema object")
        return schema
    ref = criterion.get("schema_ref")
    if not isinstance(ref, str) or not ref:
        raise CriterionProblem("json_schema criterion needs 'schema' or 'schema_ref'")
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", ref):
        raise CriterionProblem(
            f"schema_ref {ref!r} is a remote URI; criteria do not fetch from the network",
            hint="put the schema in the workspace and give its relative path",
        )
    path = confined(ctx.workspace, ref, what="schema_ref")
    try:
        return load_path(path).data
    except LoadError as exc:
        raise CriterionProblem(f"schema_ref {ref!r} could not be read: {exc.message}") from exc


async def check_regex(criterion: Mapping[str, Any], ctx: CriterionContext) -> Verdict:
    """``pattern`` searched in the target text; ``negate`` inverts."""
    pattern = criterion.get("pattern")
    if not isinstance(pattern, str):
        raise CriterionProblem("regex criterion needs a 'pattern' string")
    compiled = regex_of(pattern, str(criterion.get("flags", "")))

    if criterion.get("target") is not None:
        value = evaluate_expression(str(criterion["target"]), ctx, where="target")
        subject = f"target {criterion['target']!r}"
    else:
        name = criterion.get("output")
        if not isinstance(name, str) or not name:
            raise CriterionProblem("regex criterion needs an 'output' name or a 'target'")
        if name not in ctx.outputs:
            return Verdict(passed=False, evidence=f"output {name!r} was not produced")
        value = ctx.outputs[name]
        subject = f"output {name!r}"

    text = to_text(value)
    match = compiled.search(text)
    negate = bool(criterion.get("negate", False))
    if match is not None:
        found = f"/{pattern}/ matched {match.text!r} at offset {match.start} of {subject}"
        return Verdict(passed=not negate, evidence=found)
    missed = f"/{pattern}/ found no match in {subject}: {_preview(text)}"
    if _is_file_path(value, ctx):
        # The value of a file output is its path; authors often expect the file's content.
        missed += (" (a file output's value is its path, not its content; check the "
                   "content with a command criterion)")
    return Verdict(passed=negate, evidence=missed)


def regex_of(pattern: str, flags: str = "", *, what: str = "pattern") -> Pattern:
    """``pattern`` compiled for a linear-time search; CRIT001 when it is invalid, CRIT008
    when it needs a construct rein does not run (a backreference, lookaround)."""
    from rein.formats.agx.patterns import PatternError, compile_pattern, shown

    try:
        return compile_pattern(pattern, flags)
    except PatternError as exc:
        if exc.flags:  # not about the pattern itself (an unknown flag)
            raise CriterionProblem(exc.reason) from None
        if exc.phrase:
            said = f"{what} {shown(pattern)} {exc.detail}"
        else:
            said = f"{what} {shown(pattern)} is not a valid regular expression: {exc.detail}"
        raise CriterionProblem(said, code="CRIT008" if exc.refused else "CRIT001",
                               hint=exc.hint) from None


def _is_file_path(value: Any, ctx: CriterionContext) -> bool:
    """Whether ``value`` is the value of one of the node's declared ``file`` outputs."""
    return isinstance(value, str) and any(
        isinstance(spec, Mapping) and spec.get("type") == "file" and ctx.outputs.get(name) == value
        for name, spec in ctx.output_specs.items())


def _preview(text: str, limit: int = 400) -> str:
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f" (+{len(text) - limit} chars)"


async def check_expression(criterion: Mapping[str, Any], ctx: CriterionContext) -> Verdict:
    """``expr`` evaluates to boolean true."""
    expr = criterion.get("expr")
    if not isinstance(expr, str) or not expr.strip():
        raise CriterionProblem("expression criterion needs an 'expr'")
    value = evaluate_condition(expr, ctx, where="expr")
    return Verdict(passed=value, evidence=f"{expr} → {'true' if value else 'false'}")
