"""The ``external`` criterion: delegate to a checker registered with the harness.

Checkers come from ``ctx.checkers`` when the engine gives a mapping, otherwise from the
``rein.checkers`` entry-point group of the installed packages. An unknown name fails the
criterion with the list of known names: AGS says never skip it. A checker may be a plain or
an async callable and returns a :class:`CheckResult` or a ``bool``; a checker that raises
fails the criterion with the error, since its author's bug must not stop the run; a
checker that raises :class:`HarnessFault` (rein's own failure, not the work's) stops the
advance instead, and the attempt runs again when the run is continued.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from rein.core.loops import within
from rein.engine.run.criteria.base import CriterionProblem, Verdict
from rein.engine.run.criteria.model import (
    Checker,
    CheckRequest,
    CheckResult,
    CriterionContext,
    HarnessFault,
)

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

GROUP = "rein.checkers"


def discover() -> dict[str, EntryPoint]:
    """The entry points registered under ``rein.checkers``, by name (not yet loaded)."""
    from importlib.metadata import entry_points  # only a run that names a checker pays

    return {ep.name: ep for ep in entry_points(group=GROUP)}


def resolve(name: str, ctx: CriterionContext) -> Checker:
    """The checker called ``name``, or a problem naming the ones that exist."""
    if ctx.checkers is not None:
        if name in ctx.checkers:
            return ctx.checkers[name]
        known = sorted(ctx.checkers)
    else:
        found = discover()
        if name in found:
            try:
                # The rein.checkers group's contract; a callable that does not fit it fails
                # when called, as that checker's own problem.
                return cast(Checker, found[name].load())
            except (ImportError, AttributeError) as exc:
                raise CriterionProblem(
                    f"checker {name!r} is registered but cannot be loaded: {exc}",
                    code="CRIT005",
                    hint=f"check the package that registers {found[name].value!r}",
                ) from exc
        known = sorted(found)
    listed = ", ".join(known) if known else "none"
    raise CriterionProblem(
        f"unknown checker {name!r} (registered: {listed})",
        code="CRIT004",
        hint=f"install the package that provides it under the {GROUP!r} entry-point group",
    )


async def check(criterion: Mapping[str, Any], ctx: CriterionContext) -> Verdict:
    """Call the named checker with the criterion's ``params``."""
    name = criterion.get("check")
    if not isinstance(name, str) or not name:
        raise CriterionProblem("external criterion needs a 'check' name")
    checker = resolve(name, ctx)
    request = CheckRequest(
        name=name,
        params=dict(criterion.get("params") or {}),
        workspace=ctx.workspace,
        node_id=ctx.node_id,
        attempt=ctx.attempt,
        outputs=ctx.outputs,
    )
    timeout = criterion.get("timeout_seconds")
    try:
        answer = checker(request)
        if inspect.isawaitable(answer):
            answer = await within(answer, timeout)
    except HarnessFault:
        raise  # not a verdict on the work: the attempt stays in flight
    except TimeoutError:
        return Verdict(
            passed=False,
            error=f"checker {name!r} took longer than {timeout} seconds",
            error_code="CRIT006",
            failure_class="timeout",
        )
    except Exception as exc:  # a plugin's bug is a failed check, not a crash
        raise CriterionProblem(
            f"checker {name!r} failed: {type(exc).__name__}: {exc}", code="CRIT005"
        ) from exc
    if isinstance(answer, bool):
        return Verdict(passed=answer, evidence=f"checker {name!r} returned {answer}")
    if isinstance(answer, CheckResult):
        return Verdict(passed=bool(answer.passed), evidence=answer.evidence, score=answer.score)
    raise CriterionProblem(
        f"checker {name!r} returned {type(answer).__name__}; expected CheckResult or bool",
        code="CRIT005",
    )
