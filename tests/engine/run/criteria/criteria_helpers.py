"""Helpers for the criteria tests: a context builder and synchronous runners."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.engine.run.criteria import (
    CriterionContext,
    CriterionResult,
    SuccessOutcome,
    evaluate_criterion,
    evaluate_success,
)
from rein.formats.agx import MappingScope


def make_ctx(workspace: Path, outputs: Mapping[str, Any] | None = None, **kw: Any) -> CriterionContext:
    """A context for node ``build``, attempt 1; ``self.outputs`` is visible in the scope."""
    outs = dict(outputs or {})
    scope = kw.pop(
        "scope",
        MappingScope(
            {
                "self": {"id": "build", "attempt": 1, "outputs": outs, "inputs": {}},
                "params": kw.pop("params", {}),
            }
        ),
    )
    return CriterionContext(
        workspace=workspace,
        node_id="build",
        attempt=1,
        outputs=outs,
        output_specs=kw.pop("output_specs", {}),
        scope=scope,
        **kw,
    )


def check(criterion: Mapping[str, Any], ctx: CriterionContext, **kw: Any) -> CriterionResult:
    """Evaluate one criterion (``description`` filled in when the test leaves it out)."""
    full = {"description": f"{criterion.get('kind')} check", **criterion}
    return asyncio.run(evaluate_criterion(full, ctx, **kw))


def success(block: Mapping[str, Any] | None, ctx: CriterionContext, **kw: Any) -> SuccessOutcome:
    return asyncio.run(evaluate_success(block, ctx, **kw))
