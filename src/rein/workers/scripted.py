"""The scripted worker: a test double that answers attempts from a file. Never a default.

It exists so that graphs can be run end to end without a model: scenario tests, demos and
benchmarks. It implements :class:`rein.workers.base.Worker` and is enabled only explicitly
(``[workers.scripted] answers = "answers.yaml"`` in ``rein.toml``, or the
``REIN_SCRIPTED_ANSWERS`` environment variable, or by constructing it in code).

The file (YAML or JSON) maps node ids to a list of answers, one per attempt; the last answer
repeats for later attempts. A key may be a plain node id (every scope instance of it) or a
scoped key such as ``refresh_pages[3].refresh_page`` (one instance), which wins::

    nodes:
      draft_contributing:
        - failure: criteria_failed      # attempt 1 fails as the worker's own report...
          message: gave up
        - outputs: {contributing: CONTRIBUTING.md}
          files: {CONTRIBUTING.md: "# Contributing\\n..."}   # written into the workspace
          usage: {input_tokens: 1200, output_tokens: 800, cost_usd: 0.02}
      release_readiness:
        - decision: ready_to_release
          outputs: {reasoning: all checks passed}
      refresh_page:
        - outputs: {summary: done, updated_path: docs/a.md}
          delay_seconds: 0.05           # simulated work time
    judges:
      addresses_gaps: {score: 0.9, reasoning: every blocker is named}

A node the file does not name is not served, so the run pauses for a worker (exit 3).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from rein.errors import ConfigError
from rein.formats.loader import load_path
from rein.workers.base import (
    AttemptRequest,
    AttemptResult,
    FailureClass,
    Item,
    ItemKind,
    Usage,
)


class ScriptedWorker:
    """Answers from a mapping (usually loaded from a file with :meth:`from_file`)."""

    name = "scripted"
    deterministic = True  # the same file gives the same answers: determinism: strict is met

    def __init__(self, script: Mapping[str, Any]) -> None:
        nodes = script.get("nodes") or {}
        judges = script.get("judges") or {}
        if not isinstance(nodes, Mapping) or not isinstance(judges, Mapping):
            raise ConfigError("a scripted answers file needs mappings under 'nodes' and "
                              "'judges'", code="SCRIPT001")
        self.nodes = dict(nodes)
        self.judges = dict(judges)
        self.calls: list[tuple[str, int]] = []  # (node key, attempt), for tests

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedWorker:
        doc = load_path(path)
        if not isinstance(doc.data, Mapping):
            raise ConfigError(f"{path}: a scripted answers file holds one mapping",
                              code="SCRIPT001")
        return cls(doc.data)

    def _answers(self, request: AttemptRequest) -> Any:
        if request.kind == "judge":
            criterion = request.node_id.rsplit(":", 1)[-1]
            return self.judges.get(criterion)
        key = request.node_id
        if key in self.nodes:
            return self.nodes[key]
        plain = key.rsplit(".", 1)[-1].rsplit("~", 1)[-1]
        return self.nodes.get(plain)

    def can_serve(self, request: AttemptRequest) -> bool:
        return self._answers(request) is not None

    async def run(self, request: AttemptRequest) -> AsyncIterator[Item | AttemptResult]:
        answers = self._answers(request)
        self.calls.append((request.node_id, request.attempt))
        if request.kind == "judge":
            yield AttemptResult(outputs=dict(answers))
            return
        if isinstance(answers, Mapping):
            answers = [answers]
        answer = answers[min(request.attempt, len(answers)) - 1]
        delay = float(answer.get("delay_seconds", 0))
        if delay:
            await asyncio.sleep(delay)
        for name, text in (answer.get("files") or {}).items():
            target = Path(request.workspace) / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(str(text), encoding="utf-8")
        if answer.get("message"):
            yield Item(kind=ItemKind.MESSAGE, data={"text": str(answer["message"])})
        u = answer.get("usage") or {}
        usage = Usage(input_tokens=int(u.get("input_tokens", 0)),
                      output_tokens=int(u.get("output_tokens", 0)),
                      cost_usd=float(u.get("cost_usd", 0.0)),
                      tool_calls=int(u.get("tool_calls", 0)))
        failure = answer.get("failure")
        yield AttemptResult(
            outputs=dict(answer.get("outputs") or {}),
            usage=usage,
            failure=FailureClass(failure) if failure else None,
            message=answer.get("message"),
            decision=answer.get("decision"),
        )
