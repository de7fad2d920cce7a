"""One trial: one scenario under one configuration, in a workspace of its own.

Every trial starts from a fresh copy of the scenario's fixture in its own folder
(``trials/<trial>/a<attempt>/``), runs under the configuration's overlay of the person's
``rein.toml``, and ends in one :class:`Trial` record: solved or not, why not (each failing
criterion with its evidence), and what it spent. The kinds differ only in how the work is
started and graded (:mod:`rein.eval.trial_runs` for graphs and briefs through the Harness,
:mod:`rein.eval.trial_harbor` for Harbor tasks).

A trial's status is one of:

``solved``       the scenario's success check passed
``failed``       it did not (criteria, reward, the worker, a budget or the trial's time)
``error``        rein could not run the trial (a broken scenario, a crash): graded as failed
``unsupported``  the scenario cannot run here (a container image and no runtime): not graded
``no_solution``  the oracle, for a scenario that declares no reference solution: not graded
``interrupted``  killed twice while running (see :mod:`rein.eval.ledger`): not graded
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rein.core.frozen import Frozen, Record, field
from rein.eval.configs import Configuration
from rein.eval.scenarios import Scenario

if TYPE_CHECKING:
    from rein.config import Config

Status = Literal["solved", "failed", "error", "unsupported", "no_solution", "interrupted"]
GRADED: frozenset[str] = frozenset({"solved", "failed", "error"})
# Variables that would change what a trial runs behind the configuration's back.
_SCRUBBED_ENV = ("REIN_SCRIPTED_ANSWERS", "REIN_DEV_TARGET", "REIN_DEV_VERIFY",
                 "REIN_CONTEXT_USAGE_JSON", "REIN_EXECUTOR")


class TrialSpec(Frozen):
    """Everything one trial needs; made by the evaluation, never from user input alone."""

    evaluation: str
    trial_id: str
    index: int  # 1..N within its scenario and configuration
    attempt: int  # 2: a rerun of a trial an earlier process left unfinished
    scenario: Scenario
    configuration: Configuration
    root: Path  # this attempt's folder
    trials_root: Path  # the evaluation's folder of trials
    base_config: Config  # the person's merged rein.toml, under the configuration's overlay
    host: bool = False  # --host: the host satisfies the tasks' images
    timeout: float = 900.0
    env: Mapping[str, str] = field(default_factory=dict)
    # "hooks.NAME" / "workers.command.NAME" -> {suite file: digest} as approved: a hook or
    # command worker whose files changed since is not run (rein.eval.approval).
    pins: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def clean_env(self) -> dict[str, str]:
        source = self.env or os.environ
        return {k: v for k, v in source.items() if k not in _SCRUBBED_ENV}


class Trial(Record):
    """How a trial ended (what the ledger records and the results read)."""

    trial: str
    scenario: str
    configuration: str
    index: int
    attempt: int = 1
    status: Status = "failed"
    reason: str | None = None
    failures: list[dict[str, Any]] = field(default_factory=list)
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    cost_usd: float | None = 0.0
    turns: int = 0  # model calls (0 for a worker that makes none)
    tool_calls: dict[str, int] = field(default_factory=dict)  # by tool name
    wall_seconds: float = 0.0
    run_id: str | None = None
    gates: list[dict[str, Any]] = field(default_factory=list)
    reward: Mapping[str, float] | None = None
    folder: str | None = None
    # What the configuration's prompt overlay changed (rein.eval.overlays.Applied.to_json).
    overlays: Mapping[str, Any] | None = None
    lane: str | None = None  # where it ran: None in process, "dbos:<worker>" on a DBOS lane

    @property
    def solved(self) -> bool:
        return self.status == "solved"

    @property
    def graded(self) -> bool:
        return self.status in GRADED

    @property
    def tokens(self) -> int | None:
        if self.input_tokens is None or self.output_tokens is None:
            return None
        return self.input_tokens + self.output_tokens

    def to_json(self) -> dict[str, Any]:
        return {"trial": self.trial, "scenario": self.scenario,
                "configuration": self.configuration, "index": self.index,
                "attempt": self.attempt, "status": self.status, "solved": self.solved,
                "reason": self.reason, "failures": self.failures,
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "tokens": self.tokens, "cost_usd": self.cost_usd, "turns": self.turns,
                "tool_calls": dict(sorted(self.tool_calls.items())),
                "wall_seconds": round(self.wall_seconds, 3), "run_id": self.run_id,
                "gates": self.gates, "reward": dict(self.reward) if self.reward else None,
                "folder": self.folder, "overlays": self.overlays, "lane": self.lane}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Trial:
        return cls(trial=data["trial"], scenario=data["scenario"],
                   configuration=data["configuration"], index=int(data["index"]),
                   attempt=int(data.get("attempt", 1)), status=data["status"],
                   reason=data.get("reason"), failures=list(data.get("failures") or []),
                   input_tokens=data.get("input_tokens"),
                   output_tokens=data.get("output_tokens"), cost_usd=data.get("cost_usd"),
                   turns=int(data.get("turns") or 0),
                   tool_calls=dict(data.get("tool_calls") or {}),
                   wall_seconds=float(data.get("wall_seconds") or 0.0),
                   run_id=data.get("run_id"), gates=list(data.get("gates") or []),
                   reward=data.get("reward"), folder=data.get("folder"),
                   overlays=data.get("overlays"), lane=data.get("lane"))


def blank(spec: TrialSpec, status: Status, reason: str | None = None) -> Trial:
    return Trial(trial=spec.trial_id, scenario=spec.scenario.name,
                 configuration=spec.configuration.name, index=spec.index,
                 attempt=spec.attempt, status=status, reason=reason, folder=str(spec.root))


# A trial keeps its runs in its own workspace's store and runs its attempts in process:
# the person's store URL and executor are the evaluation's surroundings, not the harness.
# So is who may approve a real plan ([dev] plan_roles): a trial's plan gate is answered by
# its scenario's declaration, recorded as such, in a repository made for the trial. And a
# brief's check is its scenario's: [dev] verify would replace the scenario's verify command,
# smoke runs before it in the same tree and target moves where it runs (as REIN_DEV_VERIFY
# and REIN_DEV_TARGET, scrubbed from the environment, would).
_EVALUATION_OWNS = frozenset({"store", "executor"})
_EVALUATION_OWNS_DEV = frozenset({"plan_roles", "verify", "smoke", "target"})


def trial_config(spec: TrialSpec) -> Config:
    """The person's ``rein.toml`` with the configuration's overlay laid over it, less its
    store, its executor and its plan roles; its hooks and command workers run their suite
    files only as they were approved (``spec.pins``)."""
    from types import MappingProxyType

    from rein.config import Config, with_layer

    config = spec.base_config
    if not spec.configuration.builtin:
        overlay = spec.configuration.for_scenario(spec.scenario.path)
        config = with_layer(config, overlay, path=f"{spec.configuration.source}"
                                                  f"#configurations.{spec.configuration.name}")
    data = {k: v for k, v in config.data.items() if k not in _EVALUATION_OWNS}
    if isinstance(data.get("dev"), Mapping):
        data["dev"] = {k: v for k, v in data["dev"].items() if k not in _EVALUATION_OWNS_DEV}
    return Config(data=MappingProxyType(data),
                  sources=config.sources, files=config.files, notes=config.notes,
                  project_trust=config.project_trust,
                  pinned={**config.pinned, **spec.pins})


def copy_fixture(source: Path | None, target: Path, *, skip: Iterable[str] = ()) -> Path:
    """A fresh copy of ``source`` at ``target`` (an empty folder when there is none);
    ``skip``: top-level names left out (a task's Dockerfile)."""
    left_out = {".rein", *skip}
    if source is None:
        target.mkdir(parents=True)
        return target
    shutil.copytree(source, target, symlinks=True,
                    ignore=lambda folder, names: [n for n in names
                                                  if Path(folder) == source and n in left_out])
    return target


def with_overlays(graph: Mapping[str, Any], configuration: Configuration) -> dict[str, Any]:
    """The scenario's graph with the configuration's prompt text and profile applied to
    every task and decision node (a harness change, recorded in the graph's digest)."""
    import copy

    data = copy.deepcopy(dict(graph))
    text = configuration.definition.get("instructions")
    profile = configuration.definition.get("profile")
    for node in (data.get("nodes") or {}).values():
        if not isinstance(node, dict) or node.get("type") not in ("task", "decision"):
            continue
        if text:
            node["instructions"] = (str(node.get("instructions") or "") + "\n\n" + text).strip()
        if profile:
            node["x-rein-profile"] = profile
    return data


def count_tools(events: Iterable[Any]) -> tuple[int, dict[str, int]]:
    """(model calls, tool calls by name) from a run's events; ``submit_outputs`` is how a
    model finishes, not a tool it uses, so it is not counted."""
    turns, calls = 0, dict[str, int]()
    for event in events:
        if event.type != "item":
            continue
        kind, data = event.payload.get("kind"), event.payload.get("data") or {}
        if kind == "usage":
            turns += 1
        elif kind == "tool_call" and data.get("name") != "submit_outputs":
            name = str(data.get("name"))
            calls[name] = calls.get(name, 0) + 1
    return turns, calls


__all__ = ["GRADED", "Status", "Trial", "TrialSpec", "blank", "copy_fixture", "count_tools",
           "trial_config", "with_overlays"]
