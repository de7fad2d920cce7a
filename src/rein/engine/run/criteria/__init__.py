"""Success criteria (AGS §10): the harness decides whether a node's work is done.

The engine calls :func:`evaluate_success` once per attempt with a :class:`CriterionContext`
and gets a :class:`SuccessOutcome`: whether the block passed, every criterion's
:class:`CriterionResult` (``to_record()`` gives the run record's shape), and the feedback for
the next attempt. One module per concern: :mod:`.evaluate` (modes, order, short-circuit),
:mod:`.command`, :mod:`.files` (``file_exists``, ``artifact_present``), :mod:`.matching`
(``json_schema``, ``regex``, ``expression``), :mod:`.judge`, :mod:`.human`, :mod:`.external`,
:mod:`.evidence` (redaction and truncation).
"""

from __future__ import annotations

from rein.engine.run.criteria.evaluate import evaluate_criterion, evaluate_success
from rein.engine.run.criteria.model import (
    KINDS,
    Checker,
    CheckRequest,
    CheckResult,
    CriterionContext,
    CriterionResult,
    HarnessFault,
    HumanAnswer,
    HumanRequest,
    JudgeRequest,
    JudgeVerdict,
    SuccessOutcome,
)

__all__ = [
    "KINDS",
    "CheckRequest",
    "CheckResult",
    "Checker",
    "CriterionContext",
    "CriterionResult",
    "HarnessFault",
    "HumanAnswer",
    "HumanRequest",
    "JudgeRequest",
    "JudgeVerdict",
    "SuccessOutcome",
    "evaluate_criterion",
    "evaluate_success",
]
