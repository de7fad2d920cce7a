"""The driver worker: inverted orchestration, the default when no model is configured.

rein does not call a model. For each attempt it writes an instruction to the run store and
pauses the run (exit 3); an external agent (Claude Code, Codex, Copilot, a person) reads it
with ``rein next``, does the work with its own tools, and answers with ``rein submit``. The
next process that advances the run finds the answer and this worker turns it into the
attempt's result; the engine then checks outputs and criteria exactly as for any worker.

Resumption replays a run from the start, so :meth:`DriverWorker.run` is called again for an
attempt it has already seen. It is a pure function of the stored turn: no turn yet → issue
the instruction and pause; pending → pause again (same instruction, same token); answered →
the result built from the envelope and from what rein measured when it was submitted
(writes outside ``fs:write``, refs moving, wall-clock time). What the driver says it spent
(the envelope's ``usage``, or ``REIN_USAGE_JSON``) is the attempt's usage, labelled
self-reported (``x-rein-usage-source``); without it, tokens and cost are unmeasured
(``None``), never zero. Tool calls and agent steps are spent out of rein's sight and
reported as unenforced.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.core.failures import FailureClass
from rein.core.frozen import Frozen, field
from rein.core.ids import RunId
from rein.core.tiers import TIERS
from rein.core.usage import Usage
from rein.workers.base import AttemptRequest, AttemptResult, Item, ItemKind, Routed, WorkerPaused
from rein.workers.driver.protocol import (
    INBOX,
    SELF_REPORTED,
    USAGE_LIMITS,
    Limits,
    build_instruction,
    token_for,
)
from rein.workers.driver.store import Turn, TurnStatus, get_turn, put_turn, turns

if TYPE_CHECKING:
    from rein.config import Config

PROVIDER = "driver"


class DriverSettings(Frozen):
    """``[driver]`` in rein.toml."""

    enabled: bool = True
    tiers: tuple[str, ...] = TIERS  # which tiers the driver serves (default: all)
    clean_context_at: float = 0.7  # context usage ratio from which a clean context is asked
    limits: Limits = field(default_factory=Limits)
    # Submits refused for writes outside fs:write (or refs moved) that an attempt may have
    # to undo them; the next such submit is accepted and fails the attempt.
    max_write_refusals: int = 2
    # ``[usage] prices`` of rein.toml, as written: what self-reported tokens are priced at
    # over the package's table (parsed only when a report needs pricing).
    prices: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_config(cls, section: Mapping[str, Any] | None,
                    usage: Mapping[str, Any] | None = None) -> DriverSettings:
        """Read ``[driver]`` (and ``[usage] prices``); unknown tiers and out-of-range values
        are configuration errors."""
        from rein.errors import ConfigError

        s = dict(section or {})
        tiers = tuple(str(t) for t in s.get("tiers", TIERS))
        unknown = [t for t in tiers if t not in TIERS]
        if unknown:
            from rein.core.suggest import with_suggestion

            raise ConfigError(f"[driver] tiers names unknown tier(s) {unknown}",
                              code="DRIVERCFG001",
                              hint=with_suggestion(f"tiers are {', '.join(TIERS)}", unknown[0],
                                                   TIERS))
        ratio = float(s.get("clean_context_at", 0.7))
        if not 0 < ratio <= 1:
            raise ConfigError(f"[driver] clean_context_at must be in (0, 1], not {ratio}",
                              code="DRIVERCFG002", hint="for example 0.7")
        limits = Limits(
            max_instruction_bytes=int(s.get("max_instruction_bytes", 16_000)),
            max_inline_input_bytes=int(s.get("max_inline_input_bytes", 2_000)))
        refusals = s.get("max_write_refusals", 2)
        if isinstance(refusals, bool) or not isinstance(refusals, int) or refusals < 0:
            raise ConfigError(f"[driver] max_write_refusals must be a whole number from 0, "
                              f"not {refusals!r}", code="DRIVERCFG003", hint="for example 2")
        prices = (usage or {}).get("prices") if isinstance(usage, Mapping) else None
        if isinstance(prices, Mapping) and prices:
            from rein.providers.pricing import PriceTable

            PriceTable.parse(prices, where="usage.prices")  # PRICE001 now, not mid-run
        return cls(enabled=bool(s.get("enabled", True)), tiers=tiers,
                   clean_context_at=ratio, limits=limits, max_write_refusals=refusals,
                   prices=prices if isinstance(prices, Mapping) else {})


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


class DriverWorker:
    """Serves task, decision and judge attempts by handing them to an external agent."""

    name = "driver"
    deterministic = False  # an external agent answers: determinism: strict is not met

    def __init__(self, workspace: str | Path, *, settings: DriverSettings | None = None,
                 store: Any = None, clock: Callable[[], dt.datetime] = _utc_now,
                 snapshot: Callable[[Path], Mapping[str, Any]] | None = None) -> None:
        self.workspace = Path(workspace).resolve()
        self.settings = settings or DriverSettings()
        self._store = store
        self.clock = clock
        self._snapshot = snapshot

    @property
    def store(self) -> Any:
        if self._store is None:  # the workspace's store: rein.toml's [store] url, or .rein/
            from rein.store.open import open_store

            self._store = open_store(self.workspace)
        return self._store

    def can_serve(self, request: AttemptRequest) -> bool:
        return (self.settings.enabled and request.kind in ("task", "decision", "judge")
                and request.tier in self.settings.tiers)

    def provides_tool(self, name: str, node: Mapping[str, Any]) -> bool:
        """Any tool: the driver brings its own. The instruction lists the tools a node needs
        and the driver answers ``failed`` when it lacks one; rein cannot check either way."""
        return True

    async def run(self, request: AttemptRequest) -> AsyncIterator[Item | AttemptResult]:
        token = token_for(request)
        turn = get_turn(self.store, token)
        if turn is None:
            turn = self._issue(request, token)
            yield Item(kind=ItemKind.NOTICE, data={
                "driver": "instruction issued", "token": token,
                "clean_context": turn.instruction.get("clean_context", False)})
        if turn.status is TurnStatus.PENDING:
            raise WorkerPaused("driver", token, {"attempt": request.attempt})
        for item in notices(turn):
            yield item
        yield result_of(turn, request, prices=self.settings.prices)

    def _issue(self, request: AttemptRequest, token: str) -> Turn:
        root = self._root_run(request.run_id)
        reason = None
        if request.kind == "judge":
            reason = ("this is an llm_judge criterion: judge from a clean context, not the "
                      "one that did the work (rein cannot verify it and records the verdict "
                      "as possibly from the same model instance)")
        elif request.attempt == 1 or not request.constraints.get(KEEP_CONTEXT_ON_RETRY):
            # A node may ask that its repairs (attempt 2 on) keep the context that holds
            # the work their feedback is about (the development flow's features do), and
            # may fix its first attempt's reset: always (a policy without telemetry) or never.
            policy = request.constraints.get(CLEAN_CONTEXT)
            if policy == "always" and request.attempt == 1:
                reason = ("the node's context policy asks for a clean session at its "
                          "start: start this instruction from a clean context")
            elif policy != "never":
                reason = self._context_reason(root)
        instruction = build_instruction(request, token=token, limits=self.settings.limits,
                                        clean_context=reason)
        if self._snapshot is not None:
            baseline = dict(self._snapshot(self.workspace))
        else:
            from rein.workers.driver.current import latest_snapshot
            from rein.workers.driver.fs import snapshot

            # The newest snapshot of the run lends its hashes: only changed files are read.
            baseline = snapshot(self.workspace, previous=latest_snapshot(self.store, root))
        # The inbox the instruction points at must be writable, whichever store holds the
        # run (on PostgreSQL nothing else creates .rein/).
        (self.workspace / INBOX).parent.mkdir(parents=True, exist_ok=True)
        turn = Turn(token=token, run_id=RunId(request.run_id), root_run_id=RunId(root),
                    node_key=request.node_id, attempt=request.attempt, kind=request.kind,
                    status=TurnStatus.PENDING, instruction=instruction, baseline=baseline,
                    created_at=iso(self.clock()))
        return put_turn(self.store, turn)

    def _root_run(self, run_id: str) -> str:
        from rein.store.lineage import top_run_id

        return top_run_id(self.store, run_id)

    def _context_reason(self, root: str) -> str | None:
        answered = turns(self.store, root, status=TurnStatus.ANSWERED)
        # Only the last envelope speaks for the context now: an older report was answered
        # already (the agent started clean, or chose not to), and repeating it would ask
        # for a clean context on every later instruction.
        last = max(answered, key=lambda t: (t.answered_at or "", t.created_at), default=None)
        reports: list[tuple[str, Any]] = []
        if last is not None:
            reports.append(("your last envelope",
                            ((last.answer or {}).get("envelope") or {}).get("context_usage")))
        # The agent's own environment may report it too (an IDE hook that knows the window):
        # the newest report, so it is read first.
        reports.append(("REIN_CONTEXT_USAGE_JSON", _env_usage()))
        for where, usage in reversed(reports):
            if not isinstance(usage, Mapping):
                continue
            used, window = usage.get("used_tokens"), usage.get("window_tokens")
            if isinstance(used, int) and isinstance(window, int) and window > 0:
                ratio = used / window
                if ratio >= self.settings.clean_context_at:
                    return (f"{where} reported {ratio:.0%} of the context window "
                            f"used (threshold {self.settings.clean_context_at:.0%}): start "
                            "this instruction from a clean context")
                return None
        return None


KEEP_CONTEXT_ON_RETRY = "x-rein-keep-context-on-retry"
CLEAN_CONTEXT = "x-rein-clean-context"  # "always" or "never": the first attempt's reset


def _env_usage() -> Any:
    """``REIN_CONTEXT_USAGE_JSON`` (``{"used_tokens": N, "window_tokens": M}``) of the
    process issuing the instruction, or None; a malformed value is no report."""
    import json
    import os

    text = os.environ.get("REIN_CONTEXT_USAGE_JSON")
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def notices(turn: Turn) -> list[Item]:
    """What is recorded with an answered turn: unenforced budgets and the submit checks."""
    out: list[Item] = []
    budget = turn.instruction.get("budget") or {}
    unenforced = dict(budget.get("unenforced") or {})
    # An instruction from before on_reported_usage listed the usage limits as unenforced.
    on_usage = {k: v for k, v in {**unenforced, **(budget.get("on_reported_usage") or {})}
                .items() if k in USAGE_LIMITS}
    unenforced = {k: v for k, v in unenforced.items() if k not in USAGE_LIMITS}
    if on_usage and not isinstance((turn.answer or {}).get("usage"), Mapping):
        unenforced.update(on_usage)  # nothing reported: nothing to enforce them on
    if unenforced:
        out.append(Item(kind=ItemKind.NOTICE, data={
            "driver": "budgets not enforced", "limits": unenforced,
            "why": "the driver's own loop spends steps and tool calls out of rein's sight, "
                   "and tokens and cost unless it reports its usage"}))
    checks = dict((turn.answer or {}).get("checks") or {})
    if checks:
        out.append(Item(kind=ItemKind.NOTICE, data={"driver": "submit checks", **checks}))
    return out


def result_of(turn: Turn, request: AttemptRequest,
              prices: Mapping[str, Any] | None = None) -> AttemptResult:
    """The attempt's result from an answered turn (a pure function of the stored row and
    the price overrides of rein.toml)."""
    answer = dict(turn.answer or {})
    envelope = dict(answer.get("envelope") or {})
    checks = dict(answer.get("checks") or {})
    named = envelope.get("agent")
    agent: Mapping[str, Any] = named if isinstance(named, Mapping) else {}
    spent = answer.get("usage")
    reported: Mapping[str, Any] = spent if isinstance(spent, Mapping) else {}
    model = agent.get("model") or reported.get("model") or agent.get("name") or "unreported"
    routed = Routed(requested_tier=request.tier, effective_tier=request.tier,
                    provider=PROVIDER, model=str(model))
    extra: dict[str, Any] = {"x-rein-driver-token": turn.token}
    usage = Usage(input_tokens=None, output_tokens=None, cost_usd=None)
    if reported:
        usage = Usage(input_tokens=int(reported["input_tokens"]),
                      output_tokens=int(reported["output_tokens"]),
                      cost_usd=reported_cost(reported, prices))
        extra["x-rein-usage-source"] = SELF_REPORTED
    outputs = dict(envelope.get("outputs") or {})

    def failed(failure: FailureClass, message: str) -> AttemptResult:
        return AttemptResult(outputs=outputs, usage=usage, routed=routed, failure=failure,
                             message=message, extra=extra)

    outside = list(checks.get("writes_outside") or [])
    if outside:
        return failed(FailureClass.PERMISSION_DENIED,
                      "the driver wrote outside the node's fs:write permissions: "
                      + ", ".join(outside[:20]) + (" …" if len(outside) > 20 else ""))
    if checks.get("head_moved") and not checks.get("commit_allowed"):
        refs = ", ".join(checks.get("refs_moved") or []) or "HEAD"
        return failed(FailureClass.PERMISSION_DENIED,
                      f"the driver moved git HEAD or a ref ({refs}: a commit, reset, "
                      "checkout or stash); workers never commit unless the node grants "
                      "git:commit")
    if checks.get("timed_out"):
        return failed(FailureClass.TIMEOUT,
                      f"the envelope came {checks.get('elapsed_seconds')} s after the "
                      f"instruction; the limit was {checks.get('limit_seconds')} s")
    if envelope.get("status") == "failed":
        return failed(FailureClass.MODEL_ERROR,
                      str(envelope.get("message") or "the driver reported a failure"))
    return AttemptResult(outputs=outputs, usage=usage, routed=routed,
                         message=envelope.get("message"), decision=envelope.get("decision"),
                         extra=extra)


def reported_cost(reported: Mapping[str, Any], prices: Mapping[str, Any] | None
                  ) -> float | None:
    """The cost of a self-reported turn: the one it states, else its tokens at the price of
    its model (``None`` for a model no table knows)."""
    stated = reported.get("cost_usd")
    if isinstance(stated, int | float) and not isinstance(stated, bool):
        return round(float(stated), 6)
    from rein.providers.pricing import agent_prices  # only when a turn needs pricing

    price = agent_prices(prices).price(str(reported.get("model") or ""))
    if price is None:
        return None
    return round(price.cost_of(input_tokens=int(reported["input_tokens"]),
                               output_tokens=int(reported["output_tokens"]),
                               cached_input_tokens=int(reported.get("cached_input_tokens")
                                                       or 0)), 6)


def default_driver(workspace: str | Path, store: Any, config: Config | None = None
                   ) -> tuple[DriverWorker, ...]:
    """The driver worker for a workspace (``[driver] enabled = false`` gives none).

    Placed after every other worker, it serves what no configured model or test double
    takes, on the tiers ``[driver] tiers`` lists. ``config``: the merged ``rein.toml`` (a
    :class:`rein.config.Config` or its data; read here when not given).
    """
    if config is None:
        from rein.config import load_config

        config = load_config(Path(workspace))
    settings = DriverSettings.from_config(config.get("driver"), config.get("usage"))
    if not settings.enabled:
        return ()
    return (DriverWorker(workspace, settings=settings, store=store),)


__all__ = ["PROVIDER", "DriverSettings", "DriverWorker", "default_driver", "notices",
           "reported_cost", "result_of"]
