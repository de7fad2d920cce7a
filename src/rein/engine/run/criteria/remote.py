"""A ``command`` criterion checked on the machine that ran its attempt, as the engine checks
it here.

The DBOS executor (below the engine) runs the command where the attempt wrote its tree and
carries the verdict back as JSON; the engine hands it :func:`check_command` for that, so the
executor imports nothing of the criteria. The coordinator reads the answer back with
:func:`~rein.engine.run.criteria.base.verdict_of`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.engine.run.criteria import command
from rein.engine.run.criteria.base import CriterionProblem, Verdict, verdict_document
from rein.engine.run.criteria.model import CriterionContext


async def check_command(criterion: Mapping[str, Any], *, workspace: Path, node_key: str,
                        attempt: int, env: Mapping[str, str], secret_values: frozenset[str],
                        timeout: float) -> dict[str, Any]:
    """Run ``criterion`` (a ``command`` criterion as the approved graph declares it) in
    ``workspace`` with ``env``, and answer its verdict as a JSON-ready mapping; a criterion
    that cannot be evaluated is a failed verdict with its code, as in process."""
    ctx = CriterionContext(
        workspace=workspace, node_id=node_key, attempt=attempt, outputs={}, output_specs={},
        scope=None, env=env, secret_values=secret_values, default_timeout_seconds=timeout)
    try:
        verdict = await command.check(criterion, ctx)
    except CriterionProblem as exc:
        verdict = Verdict(passed=False, error=exc.text(), error_code=exc.code)
    return verdict_document(verdict)


__all__ = ["check_command"]
