"""The two built-in workers of an evaluation: the oracle and nop.

* :class:`OracleWorker` does a node's work with the scenario's reference solution: a script
  run as a command worker would run a CLI agent (the same sandbox, the same check of what it
  wrote, the same outputs convention: a JSON object on the last line of its output or in
  ``$REIN_OUTPUTS_FILE``; it is given the node id and the attempt as ``$1`` and ``$2``), or a
  patch applied once per trial, after which the node's string outputs say so.
* :class:`NopWorker` does nothing and reports no outputs: the harness then checks an
  untouched workspace, exactly as Harbor's ``nop`` agent leaves it to its verifier.

Both serve every task and decision node, so a trial under them never waits for a driver.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from rein.core.failures import FailureClass
from rein.core.tiers import TIERS
from rein.core.usage import Usage
from rein.workers.base import AttemptRequest, AttemptResult, Item, ItemKind, Routed
from rein.workers.command import CommandTemplate, CommandWorker

PATCH_SUFFIXES = (".patch", ".diff")
# Applies the reference patch unless it is already in the tree (a later node of the same
# trial); what it prints is not a report, so the outputs are filled in afterwards.
_APPLY = ('if git apply --check "$1" 2>/dev/null; then git apply --whitespace=nowarn "$1"; '
          'elif git apply --reverse --check "$1" 2>/dev/null; then :; '
          'else git apply "$1"; fi')


class OracleWorker:
    """Serves every node with the scenario's reference solution (a script or a patch)."""

    name = "oracle"

    def __init__(self, solution: Path, *, timeout_seconds: float = 1800.0) -> None:
        self.solution = solution
        self.patch = solution.suffix in PATCH_SUFFIXES
        argv = (("sh", "-c", _APPLY, "oracle", str(solution)) if self.patch
                else ("bash", str(solution), "{node}", "{attempt}"))
        self.command = CommandWorker(CommandTemplate(
            argv=argv, name="oracle", model="reference solution",
            timeout_seconds=timeout_seconds), tiers=TIERS)

    def can_serve(self, request: AttemptRequest) -> bool:
        return request.kind in ("task", "decision")

    async def run(self, request: AttemptRequest) -> AsyncIterator[Item | AttemptResult]:
        served = request.worker
        if served is not None:  # a node naming its worker is served by the oracle all the same
            request = request.replace(worker=None)
        async for step in self.command.run(request):
            if isinstance(step, AttemptResult) and self.patch and \
                    step.failure is FailureClass.OUTPUT_MISSING:
                yield step.replace(failure=None, message="applied the reference patch",
                                   outputs=_patch_outputs(request))
                continue
            yield step


def _patch_outputs(request: AttemptRequest) -> dict[str, object]:
    """What a node reports after the reference patch: each string output says so, and a
    file output names the file it hints at."""
    out: dict[str, object] = {}
    for spec in request.outputs:
        if spec.type == "string":
            out[spec.name] = f"applied the reference patch for {request.node_id}"
        elif spec.type == "file" and spec.path_hint:
            out[spec.name] = spec.path_hint
    return out


class NopWorker:
    """Does nothing: the harness checks the workspace as the scenario left it."""

    name = "nop"

    def can_serve(self, request: AttemptRequest) -> bool:
        return request.kind in ("task", "decision")

    async def run(self, request: AttemptRequest) -> AsyncIterator[Item | AttemptResult]:
        yield Item(kind=ItemKind.MESSAGE, data={"role": "agent", "text": "nop: nothing done"})
        yield AttemptResult(
            usage=Usage(agent_steps=0),
            routed=Routed(requested_tier=request.tier, effective_tier=request.tier,
                          provider="nop", model="nop"))


__all__ = ["PATCH_SUFFIXES", "NopWorker", "OracleWorker"]
