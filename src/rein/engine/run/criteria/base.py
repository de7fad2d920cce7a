"""What every kind's check shares: the verdict it returns, the problem it raises, and the
bridges to AGX (expressions and templates) and to the workspace (confined paths).

A check returns a :class:`Verdict`. When the criterion cannot be evaluated at all (a bad
pattern, an AGX evaluation error, a path outside the workspace) it raises
:class:`CriterionProblem`; the evaluator turns that into a failed result with ``error`` set.
Nothing here catches broad exceptions: the engine's pause signal must pass through.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from rein.core.frozen import Frozen, field
from rein.engine.run.criteria.model import CriterionContext, FailureClassName


class Verdict(Frozen):
    """One kind's answer before hygiene (redaction, truncation) and timing are applied."""

    passed: bool
    evidence: str | dict[str, Any] | None = None
    evidence_truncated: bool = False
    score: float | None = None
    error: str | None = None
    error_code: str | None = None
    failure_class: FailureClassName = "criteria_failed"
    extra: Mapping[str, Any] = field(default_factory=dict)


# A verdict as JSON carries it (a command criterion checked on another machine).
VERDICT_FIELDS = ("passed", "evidence", "evidence_truncated", "score", "error", "error_code",
                  "failure_class", "extra")


def verdict_document(verdict: Verdict) -> dict[str, Any]:
    """``verdict`` as a JSON-ready mapping of :data:`VERDICT_FIELDS`."""
    return {name: getattr(verdict, name) for name in VERDICT_FIELDS[:-1]} | {
        "extra": dict(verdict.extra)}


def verdict_of(document: Mapping[str, Any]) -> Verdict:
    """The verdict a :func:`verdict_document` (or a part of one: the rest defaults) holds."""
    given = {name: document[name] for name in VERDICT_FIELDS if name in document}
    return Verdict(**{**given, "passed": bool(document["passed"])})


class CriterionProblem(Exception):
    """The criterion could not be evaluated; reported as an error result, never a pass.

    Codes: ``CRIT001`` the criterion is malformed (bad pattern, bad schema, missing field),
    ``CRIT002`` a path leaves the workspace, ``CRIT004`` unknown external checker,
    ``CRIT005`` the checker itself failed, ``CRIT006`` a timeout. Where AGS defines a code
    for the case it is used: ``RT011`` nobody can judge (the judge's tier cannot be served),
    ``RT015`` a ``human`` criterion cannot be presented (no approval queue); AGX errors keep
    their own codes (``AG204``, ``RT062``).
    """

    def __init__(self, message: str, *, code: str = "CRIT001", hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.hint = hint

    def text(self) -> str:
        """The message with its hint, as it goes into the result's ``error``."""
        return f"{self.message} (hint: {self.hint})" if self.hint else self.message


def to_text(value: Any) -> str:
    """Strings as they are; anything else as compact JSON (AGS: stringified JSON)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _agx() -> Any:
    # Imported late: the criteria package must import (and its non-AGX kinds work) on its own.
    from rein.formats import agx

    return agx


def evaluate_expression(text: str, ctx: CriterionContext, *, where: str) -> Any:
    """Evaluate an AGX expression in the attempt's scope."""
    agx = _agx()
    try:
        return agx.evaluate(agx.parse(text), ctx.scope)
    except (agx.AgxSyntaxError, agx.AgxEvalError) as exc:
        raise CriterionProblem(
            f"{where}: cannot evaluate {text!r}: {exc.message}", code=exc.code
        ) from exc


def evaluate_condition(text: str, ctx: CriterionContext, *, where: str) -> bool:
    """Evaluate an AGX expression that must yield a boolean (a non-boolean is an error)."""
    agx = _agx()
    try:
        return bool(agx.evaluate_bool(agx.parse(text), ctx.scope))
    except (agx.AgxSyntaxError, agx.AgxEvalError) as exc:
        raise CriterionProblem(
            f"{where}: cannot evaluate {text!r}: {exc.message}", code=exc.code
        ) from exc


def render_template(text: str, ctx: CriterionContext, *, where: str) -> str:
    """Render an AGS template (``${{ expr }}`` interpolation) in the attempt's scope."""
    if "${{" not in text:
        return text
    agx = _agx()
    try:
        return str(agx.render(agx.parse_template(text), ctx.scope))
    except (agx.AgxSyntaxError, agx.AgxEvalError) as exc:
        raise CriterionProblem(
            f"{where}: cannot render the template: {exc.message}", code=exc.code
        ) from exc


def confined(workspace: Path, relative: str, *, what: str) -> Path:
    """``relative`` resolved inside ``workspace``; anything that would leave it is refused.

    Absolute paths and ``..`` that climbs out are refused by name, and the resolved path
    (symlinks followed) must still be inside the workspace.
    """
    refuse_nul(relative, what=what)
    root = workspace.resolve()
    pure = PurePosixPath(relative.replace("\\", "/"))
    if pure.is_absolute() or (relative[1:3] == ":/" or relative[1:3] == ":\\"):
        raise CriterionProblem(
            f"{what} {relative!r} is absolute; it must be relative to the workspace",
            code="CRIT002",
            hint="write the path relative to the workspace root",
        )
    resolved = (root / pure).resolve()
    if resolved != root and root not in resolved.parents:
        raise CriterionProblem(
            f"{what} {relative!r} leaves the workspace",
            code="CRIT002",
            hint="criteria may only look inside the workspace",
        )
    return resolved


def refuse_nul(path: str, *, what: str) -> None:
    """A NUL byte names no file, and the OS raises rather than answer about one."""
    if "\x00" in path:
        raise CriterionProblem(f"{what} {path!r} contains a NUL byte", code="CRIT002",
                               hint="write the path without NUL (\\0) characters")


def inside(workspace_root: Path, path: Path) -> bool:
    """Whether ``path`` (symlinks followed) is inside the already-resolved workspace root."""
    resolved = path.resolve()
    return resolved == workspace_root or workspace_root in resolved.parents
