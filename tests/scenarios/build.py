"""Small graphs run through the engine API: builders, a recording sleep, queue answers.

Every run uses the scripted worker (a test double), a step clock and counted ids, so a
scenario gives the same record every time. Approvals are answered the way ``rein approvals``
answers them: an answer in the store, then the run continues.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from rein.config import load_config, with_layer
from rein.core.loops import run as run_loop
from rein.core.states import ApprovalStatus
from rein.engine.run.approvals import record_answer
from rein.engine.run.clock import StepClock
from rein.engine.run.record import build_record, record_problems
from rein.engine.run.routing import Router
from rein.engine.run.runner import RunOutcome
from rein.testing import run_graph, scripted_harness
from rein.workers.scripted import ScriptedWorker


def task(title: str, **extra: Any) -> dict[str, Any]:
    """A task node with a description (required by the schema)."""
    return {"title": title, "description": f"Do {title}.", **extra}


def out(*names: str, type: str = "string") -> dict[str, Any]:
    """Output specs of one type."""
    return {n: {"type": type, "description": n} for n in names}


def inp(expr: str, type: str = "string") -> dict[str, Any]:
    """An input bound from an expression."""
    return {"from": expr, "type": type, "description": expr}


def graph(nodes: dict[str, Any], entry: list[str], **extra: Any) -> dict[str, Any]:
    """A level-3 graph document around ``nodes``."""
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/scenario",
            "title": "scenario", "objective": "exercise one path", "requires_conformance": 3,
            "constraints": {"max_cost_usd": 1.0, **extra.pop("constraints", {})},
            "entrypoints": entry, "nodes": nodes, **extra}


class Sleeps:
    """An injected backoff sleep: records each delay, never waits."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


class Run:
    """One workspace, one engine, one graph: start it, answer its queue, read its record."""

    def __init__(self, root: Path, data: Mapping[str, Any], answers: Mapping[str, Any] | None,
                 *, router: Router | None = None, judges: Mapping[str, Any] | None = None,
                 clock: StepClock | None = None, **engine: Any) -> None:
        self.root = root
        self.path = root / "g.agraph.yaml"
        self.path.write_text(yaml.safe_dump(dict(data), sort_keys=False))
        self.sleeps = Sleeps()
        self.worker = ScriptedWorker({"nodes": dict(answers or {}),
                                      "judges": dict(judges or {})})
        self.clock = clock or StepClock()
        # The engine of the one test Harness (rein.testing), with this run's clock and sleep.
        given = {k: engine.pop(k) for k in ("checkers", "config", "env") if k in engine}
        # Only the scripted worker serves here: a node it does not serve has no worker.
        given.setdefault("config", with_layer(load_config(root), {"driver": {"enabled": False}},
                                              path="scenario.toml"))
        self.harness = scripted_harness(
            root, workers=(self.worker,) if answers is not None else (), clock=self.clock,
            sleep=self.sleeps, router=router, **given)
        self.engine = self.harness.engine
        for name, value in engine.items():  # what a test narrows on the engine (its policy)
            setattr(self.engine, name, value)
        self.run_id = ""

    def start(self, params: Mapping[str, Any] | None = None) -> RunOutcome:
        outcome = run_graph(self.harness, self.path, params)
        self.run_id = outcome.run_id
        return outcome

    def pending(self) -> list[Any]:
        return self.engine.store.approvals(status=ApprovalStatus.PENDING)

    def answer(self, status: ApprovalStatus = ApprovalStatus.ACCEPTED, *,
               values: Mapping[str, Any] | None = None, node: str | None = None) -> RunOutcome:
        """Answer the oldest pending approval (of ``node``) and continue the run."""
        rows = [r for r in self.pending() if node is None or r.request.get("node") == node]
        assert rows, "nothing is pending"
        answer: dict[str, Any] = {"actor": "ann"}
        if values is not None:
            answer["values"] = dict(values)
        record_answer(self.engine.store, rows[0], status, answer, self.engine.now())
        return run_loop(self.engine.proceed(self.run_id))

    def later(self, seconds: float) -> None:
        """Move the clock forward (gate timeouts are read when the run is next scheduled)."""
        self.clock.start += dt.timedelta(seconds=seconds)

    def record(self) -> dict[str, Any]:
        record = build_record(self.engine.store, self.run_id)
        assert record_problems(record) == []
        return record

    def node(self, key: str) -> dict[str, Any]:
        """The record entry of ``key`` (a node id, or a scope path such as ``m[1].x``)."""
        for n in self.record()["nodes"]:
            if n.get("scope_path", n["node_id"]) == key:
                return n
        raise KeyError(key)

    def codes(self) -> list[str]:
        return [d["code"] for d in self.record().get("diagnostics") or []]


def states(record: Mapping[str, Any]) -> dict[str, str]:
    return {n.get("scope_path", n["node_id"]): n["status"] for n in record["nodes"]}
