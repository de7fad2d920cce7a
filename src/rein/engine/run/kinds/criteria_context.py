"""What the success criteria of one attempt may look at, and the two ways they ask others.

A ``human`` criterion asks through the run's approval queue (the run waits for the answer);
an ``llm_judge`` criterion's sample is a worker attempt of kind ``judge``, counted against
the run's budget like any other.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from rein.core.states import ApprovalKind, ApprovalStatus
from rein.engine.run import approvals
from rein.engine.run.criteria.base import CriterionProblem
from rein.engine.run.criteria.model import (
    CriterionContext,
    HumanAnswer,
    HumanRequest,
    JudgeRequest,
    JudgeVerdict,
)
from rein.engine.run.evaluation import diagnostic
from rein.engine.run.graph import node_tier
from rein.engine.run.kinds.worker_call import drive, node_env, pick_worker
from rein.engine.run.runtime import NodeAt
from rein.workers.base import AttemptRequest, OutputSpec


def criterion_context(here: NodeAt, node: Mapping[str, Any],
                      n: int, outputs: Mapping[str, Any], commands: Any = None
                      ) -> CriterionContext:
    """What the criteria of one attempt may look at, with the approval queue and judges;
    ``commands``: where command criteria run when the attempt ran on another machine."""
    state = here.state
    key = here.key
    env, _ = node_env(here.run, node)
    scope = here.inst.scope().with_self(
        {"id": here.nid, "attempt": n, "inputs": state.inputs or {}, "outputs": dict(outputs)})

    async def ask_human(req: HumanRequest) -> HumanAnswer:
        return await _ask_human(here, n, req, outputs)

    async def judge(req: JudgeRequest) -> JudgeVerdict:
        return await judge_through_worker(here, node, req)

    return CriterionContext(
        workspace=here.env.workspace, node_id=key, attempt=n, outputs=dict(outputs),
        output_specs=dict(node.get("outputs") or {}), scope=scope,
        permissions=tuple((node.get("requirements") or {}).get("permissions") or ()),
        env={**({"PATH": os.environ["PATH"]} if "PATH" in os.environ else {}), **env},
        secret_values=here.env.secret_values, ask_human=ask_human, judge=judge,
        checkers=here.env.checkers, clock=here.env.clock.now, commands=commands,
    )


async def _ask_human(here: NodeAt, n: int,
                     req: HumanRequest, outputs: Mapping[str, Any]) -> HumanAnswer:
    """A ``human`` criterion through the approval queue, recorded as a human event."""
    key = here.key
    row = await approvals.ask(
        here.run, key=f"criterion:{key}#{n}:{req.criterion_id}", kind=ApprovalKind.CRITERION,
        request={"node": key, "criterion": req.criterion_id, "prompt": req.prompt,
                 "description": req.description, "roles": list(req.roles),
                 "attempt": n, "digest": req.digest},
        shows=dict(outputs))
    answer = row.answer or {}
    here.state.record = here.state.record.with_human(approvals.human_event(
        row, stage="success", mode="approve", checkpoint_id=req.criterion_id))
    return HumanAnswer(approved=row.status is ApprovalStatus.ACCEPTED,
                       note=answer.get("note"), reviewer=answer.get("actor"))


async def judge_through_worker(here: NodeAt,
                               node: Mapping[str, Any], req: JudgeRequest) -> JudgeVerdict:
    """An ``llm_judge`` sample as a worker attempt of kind ``judge``."""
    intel = req.judge_intelligence or node.get("intelligence") or {}
    tier = str(intel.get("tier", node_tier(node)))
    request = AttemptRequest(
        run_id=here.env.run_id, node_id=f"{here.key}:{req.criterion_id}", attempt=req.attempt,
        kind="judge", title=f"judge {req.criterion_id} (sample {req.sample}/{req.samples})",
        brief=req.rubric, inputs={"material": list(req.inputs)}, outputs=(
            OutputSpec(name="score", type="number", description="score in [0, 1]",
                       schema={"type": "number", "minimum": 0, "maximum": 1}),
            OutputSpec(name="reasoning", type="text", description="why")),
        permissions=(), tools=(), workspace=str(here.env.workspace),
        tier=tier,  # type: ignore[arg-type]
    )
    worker = pick_worker(here.run, request)
    if worker is None:
        # A failed criterion, not a wait: nothing here can judge. The judge is routed like
        # a node (§11.4), so a tier nobody serves is the spec's RT011.
        message = f"no configured worker can judge {req.criterion_id!r} at tier {tier!r}"
        diagnostic(here.run, "RT011", "error", f"node {here.nid}: {message}", node=here.key)
        raise CriterionProblem(message, code="RT011", hint="configure a model worker for "
                               "that tier, or make the criterion advisory")
    result = await drive(here, worker, request)
    here.run.spend(result.usage)
    score = result.outputs.get("score")
    if result.failure is not None or not isinstance(score, (int, float)):
        raise CriterionProblem(f"judge worker {worker.name!r} gave no score in [0, 1]"
                               + (f" ({result.message})" if result.message else ""),
                               code="CRIT005")
    return JudgeVerdict(score=float(score), reasoning=str(result.outputs.get("reasoning", "")),
                        instance=f"{worker.name}:{tier}")
