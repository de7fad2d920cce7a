"""Gates met during a trial, answered by the answers the scenario declares, and by nothing
else.

Approvals come from a person (DESIGN.md, decision 6). An evaluation runs many unattended
trials of scenarios that may contain gates, so a scenario may declare how each of its gates
is answered (``[gates]`` in ``scenario.toml``). This module is the only place such an answer
is recorded, and it is reachable only from a trial of an evaluation:

* :class:`TrialSeal` is made by the evaluation for one trial, and only for a workspace that
  lies inside that evaluation's own trial folder (:meth:`TrialSeal.open` refuses any other);
  no flag, setting or environment variable of a normal run leads here;
* the answer is recorded with its origin, never as a person's: the actor is
  ``scenario:NAME`` and the identity says "declared by scenario NAME inside evaluation ID
  (trial T)"; the run record and ``rein approvals show`` show it as such;
* only gate approvals are answered. A tool call in ``ask``, a profile proposal or an MCP
  launch is never answered here: the trial stops waiting and is graded not solved.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.core.frozen import Frozen
from rein.engine.service import Harness
from rein.errors import Refused
from rein.eval.scenarios import GateAnswer

ORIGIN_SURFACE = "evaluation"
STANDING = "declared-by-scenario"


class TrialSeal(Frozen):
    """What allows a trial's gates to be answered: one evaluation, one trial, one workspace."""

    evaluation: str
    trial: str
    scenario: str
    workspace: Path

    @classmethod
    def open(cls, *, evaluation: str, trials_root: Path, trial: str, scenario: str,
             workspace: Path) -> TrialSeal:
        """The seal of ``trial``; EVAL020 unless ``workspace`` lies in ``trials_root``."""
        if not workspace.resolve().is_relative_to(trials_root.resolve()):
            raise Refused(f"{workspace} is not a trial workspace of evaluation {evaluation}",
                          code="EVAL020", hint="declared gate answers apply only inside an "
                                               "evaluation's own trials")
        return cls(evaluation=evaluation, trial=trial, scenario=scenario,
                   workspace=workspace.resolve())

    def origin(self) -> str:
        return (f"declared by scenario {self.scenario} inside evaluation {self.evaluation} "
                f"(trial {self.trial})")


class Unanswered(Frozen):
    """An approval a trial met and no declared answer covers."""

    approval_id: str
    kind: str
    node: str | None

    def text(self) -> str:
        """What the trial waits for, and what would answer it."""
        if self.kind == "gate":  # the fix first: a progress line shows 120 characters
            return (f"gate {self.node} has no answer declared by its scenario.toml ([gates] "
                    f'{self.node} = "accept"): {self.approval_id}')
        fix = (": let the configuration's [policy] allow the call"
               if self.kind == "tool_call" else "")
        return (f"{self.kind} approval ({self.approval_id}) is never answered inside an "
                f"evaluation{fix}")


async def answer_declared(harness: Harness, run_id: str, seal: TrialSeal,
                          declared: Mapping[str, GateAnswer]
                          ) -> tuple[list[dict[str, Any]], list[Unanswered]]:
    """Answer every pending gate of ``run_id`` (and its child runs) that ``declared`` covers:
    (what was answered, what is left without an answer). The caller continues the run."""
    from rein.core.states import ApprovalKind, ApprovalStatus
    from rein.engine.run.approvals import record_answer

    if harness.workspace.resolve() != seal.workspace:
        raise Refused(f"the seal of trial {seal.trial} is for {seal.workspace}, not "
                      f"{harness.workspace}", code="EVAL020",
                      hint="declared gate answers apply only to their own trial")
    answered: list[dict[str, Any]] = []
    left: list[Unanswered] = []
    for row in harness.approvals(run_id=run_id, pending_only=True):
        node = row.request.get("node")
        spec = declared.get(str(node)) if row.kind is ApprovalKind.GATE else None
        if spec is None:
            left.append(Unanswered(approval_id=row.approval_id, kind=row.kind.value,
                                   node=str(node) if node is not None else None))
            continue
        status = ApprovalStatus.ACCEPTED if spec.answer == "accept" else \
            ApprovalStatus.DECLINED
        payload: dict[str, Any] = {
            "actor": f"scenario:{seal.scenario}", "identity": seal.origin(),
            "given": given_by(seal), "note": seal.origin()}
        if spec.values:
            payload["values"] = dict(spec.values)
        record_answer(harness.store, row, status, payload, harness.engine.now())
        answered.append({"approval": row.approval_id, "node": node, "answer": spec.answer,
                         "origin": seal.origin()})
    return answered, left


def given_by(seal: TrialSeal) -> dict[str, Any]:
    """How a declared answer was given, in the shape every answer's record keeps (so
    ``rein approvals show``, the run record and the console show it as what it is): the
    evaluation surface, a standing instruction (the person ran the suite that declares it),
    the scenario as the identity, and the process's own confinement and terminal."""
    from rein.config.approver import os_account
    from rein.core.confinement import confinement, has_terminal

    return {"surface": ORIGIN_SURFACE, "approver": f"scenario:{seal.scenario}",
            "identity": {"method": STANDING, "account": os_account(),
                         "scenario": seal.scenario, "evaluation": seal.evaluation,
                         "trial": seal.trial},
            "confined": confinement().confined, "terminal": has_terminal(),
            "after_driver_turn": None, "standing": STANDING, "declared": True}


__all__ = ["ORIGIN_SURFACE", "STANDING", "TrialSeal", "Unanswered", "answer_declared",
           "given_by"]
