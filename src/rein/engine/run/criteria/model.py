"""The values that cross the criteria boundary: what the engine hands in, what comes back.

The engine builds one :class:`CriterionContext` per attempt and calls
:func:`rein.engine.run.criteria.evaluate_success`. Each criterion produces a
:class:`CriterionResult`; the block as a whole produces a :class:`SuccessOutcome`, whose
``feedback()`` is what the next attempt sees (AGS §10.3: the failed criteria's descriptions
and evidence) and whose results go into the run record through ``to_record()``.

Two kinds need the engine's help: ``human`` asks through the approval queue
(:class:`HumanRequest` → :class:`HumanAnswer`) and ``llm_judge`` asks a model routed through
the worker layer (:class:`JudgeRequest` → :class:`JudgeVerdict`). ``external`` calls a
registered :class:`Checker` with a :class:`CheckRequest`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from rein.core.frozen import Frozen, field
from rein.errors import RunError

Severity = Literal["required", "advisory"]
FailureClassName = Literal["criteria_failed", "timeout"]

# The nine kinds of AGS §10.2, in declaration order of the spec.
KINDS: tuple[str, ...] = (
    "command",
    "file_exists",
    "artifact_present",
    "json_schema",
    "regex",
    "expression",
    "llm_judge",
    "human",
    "external",
)


class HumanRequest(Frozen):
    """A ``human`` criterion asking a person to confirm, through the approval queue.

    ``digest`` binds the answer to exactly what was shown: the prompt and the outputs under
    review (canonical JSON, see :func:`rein.engine.run.criteria.human.request_digest`).
    """

    node_id: str
    criterion_id: str
    attempt: int
    prompt: str
    description: str
    roles: tuple[str, ...] = ()
    digest: str


class HumanAnswer(Frozen):
    """A reviewer's answer: ``approved`` passes the criterion; ``note`` is the evidence."""

    approved: bool
    note: str | None = None
    reviewer: str | None = None


class JudgeRequest(Frozen):
    """One independent judgement for an ``llm_judge`` criterion.

    ``sample`` counts from 1 to ``samples``; each call must be independent of the others.
    ``judge_intelligence`` is the criterion's block, or ``None`` (route at the node's tier).
    """

    node_id: str
    criterion_id: str
    attempt: int
    rubric: str
    inputs: tuple[Any, ...]
    description: str
    sample: int
    samples: int
    judge_intelligence: Mapping[str, Any] | None = None
    producer_instance: str | None = None


class JudgeVerdict(Frozen):
    """A judge's answer: a score in [0, 1], its reasoning, and which model instance judged."""

    score: float
    reasoning: str
    instance: str | None = None


class CheckRequest(Frozen):
    """What an ``external`` checker receives."""

    name: str
    params: Mapping[str, Any]
    workspace: Path
    node_id: str
    attempt: int
    outputs: Mapping[str, Any]


class CheckResult(Frozen):
    """What an ``external`` checker returns (a plain ``bool`` is accepted too)."""

    passed: bool
    evidence: str | dict[str, Any] | None = None
    score: float | None = None


class HarnessFault(RunError):
    """Raised by a checker that cannot do its check for a reason of rein's own (its git,
    its disk, a lock), not of the work under check: the work is not judged.

    It is not a failed criterion, so it costs the node no attempt: it stops the advance
    with the attempt still in flight, the run is left as a killed rein leaves it, and the
    next continuation (``rein resume``, ``rein dev``) runs that same attempt again under
    its number. The message says what failed and the hint how to fix it.
    """

    default_code = "CRIT007"


class Checker(Protocol):
    """An external checker: plain or async callable, registered under a name.

    Register one in a package's metadata under the ``rein.checkers`` entry-point group,
    e.g. ``[project.entry-points."rein.checkers"] license_ok = "mypkg.checks:license_ok"``.
    """

    def __call__(
        self, request: CheckRequest
    ) -> CheckResult | bool | Awaitable[CheckResult | bool]: ...


class CriterionContext(Frozen):
    """Everything a criterion may look at, for one attempt of one node."""

    workspace: Path
    node_id: str
    attempt: int
    outputs: Mapping[str, Any]  # what the attempt produced
    output_specs: Mapping[str, Mapping[str, Any]]  # the node's declared outputs (raw output_spec)
    scope: Any  # an AGX Scope in which self.outputs is visible
    permissions: tuple[str, ...] = ()  # effective AGS permission strings
    env: Mapping[str, str] = field(default_factory=dict)  # declared env + secrets, for commands
    secret_values: frozenset[str] = frozenset()  # redacted from every piece of evidence
    # The engine's approval queue. It may raise the engine's pause signal, so nothing here
    # wraps it in a broad ``except``.
    ask_human: Callable[[HumanRequest], Awaitable[HumanAnswer]] | None = None
    judge: Callable[[JudgeRequest], Awaitable[JudgeVerdict]] | None = None
    checkers: Mapping[str, Checker] | None = None  # None: discover the "rein.checkers" group
    default_timeout_seconds: float = 600.0
    producer_instance: str | None = None  # the model instance that produced the outputs
    # Injected wall clock: gives ``evaluated_at`` and durations that tests can pin down.
    # Without it, durations come from the monotonic clock and ``evaluated_at`` is left out.
    clock: Callable[[], datetime] | None = None
    sandbox: Any = None  # handed to rein.tools.process.run_process for command criteria
    # Where a ``command`` criterion's command runs when not here: the worker that ran the
    # attempt on another machine (the DBOS executor). ``None``: in this process.
    commands: Callable[[Mapping[str, Any], CriterionContext], Awaitable[Any]] | None = None


class CriterionResult(Frozen):
    """The outcome of one criterion.

    ``severity`` is the effective one: a required criterion relaxed by the failure ladder
    is recorded as ``advisory`` with ``extra["x-rein-relaxed"] = True``. ``error`` is set
    when the criterion could not be evaluated (a bad pattern, an AGX evaluation error, no
    judge configured); such a criterion never passes.
    """

    id: str
    kind: str
    severity: Severity
    passed: bool
    description: str = ""
    evidence: str | dict[str, Any] | None = None
    evidence_truncated: bool = False
    score: float | None = None
    error: str | None = None
    error_code: str | None = None
    failure_class: FailureClassName = "criteria_failed"
    duration_seconds: float = 0.0
    evaluated_at: str | None = None
    record_evidence: bool = True
    extra: Mapping[str, Any] = field(default_factory=dict)  # x- fields for the run record

    def evidence_text(self) -> str | None:
        """The evidence as one string (structured evidence as compact JSON)."""
        if self.evidence is None or isinstance(self.evidence, str):
            return self.evidence
        return json.dumps(self.evidence, ensure_ascii=False, separators=(",", ":"))

    def to_record(self) -> dict[str, Any]:
        """This result in the run record's ``criterion_result`` shape (AGS run schema)."""
        out: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "severity": self.severity,
            "passed": self.passed,
        }
        if self.score is not None:
            out["score"] = self.score
        text = self.evidence_text()
        if self.record_evidence and text is not None:
            out["evidence"] = text
            if self.evidence_truncated:
                out["evidence_truncated"] = True
        if self.evaluated_at is not None:
            out["evaluated_at"] = self.evaluated_at
        out["duration_seconds"] = max(0.0, self.duration_seconds)
        if self.error is not None:
            out["error"] = self.error
        if self.failure_class != "criteria_failed":
            out["x-rein-failure-class"] = self.failure_class
        for key, value in self.extra.items():
            # The run schema is closed apart from x- members; anything else is a bug here.
            if not key.startswith("x-"):
                raise ValueError(f"extra field {key!r} must start with 'x-'")
            out[key] = value
        return out

    def feedback(self) -> dict[str, Any]:
        """What the next attempt is told about this criterion."""
        out: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "severity": self.severity,
            "description": self.description,
            "evidence": self.evidence,
        }
        if self.error is not None:
            out["error"] = self.error
        return out


class SuccessOutcome(Frozen):
    """The outcome of a whole success block.

    ``results`` are in declared order. ``short_circuited`` names the criteria that
    ``evaluation_order: cheapest_first`` did not evaluate because the outcome was already
    decided. ``failed_required`` are the failed criteria that counted towards the mode.
    """

    passed: bool
    mode: Literal["all", "any", "n_of"] = "all"
    results: tuple[CriterionResult, ...] = ()
    failed_required: tuple[CriterionResult, ...] = ()
    short_circuited: tuple[str, ...] = ()

    @property
    def timed_out(self) -> bool:
        """Whether a required failure was a timeout (the attempt's class is then ``timeout``)."""
        return any(r.failure_class == "timeout" for r in self.failed_required)

    def feedback(self) -> tuple[dict[str, Any], ...]:
        """Each failed criterion's id, description and evidence, required ones first."""
        counted = {id(r) for r in self.failed_required}
        required = [r.feedback() for r in self.failed_required]
        advisory = [r.feedback() for r in self.results if not r.passed and id(r) not in counted]
        return tuple(required + advisory)

    def to_record(self) -> dict[str, Any]:
        """The run record's ``criteria_results`` shape."""
        return {
            "passed": self.passed,
            "mode": self.mode,
            "results": [r.to_record() for r in self.results],
        }
