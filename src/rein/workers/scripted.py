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

A test double obeys what a real worker obeys. Each ``files:`` entry is written as the model
worker's ``write`` tool would write it: the path is resolved inside the workspace (no
absolute path elsewhere, no ``..``, no symlink out), the node's ``fs:write`` grants narrowed
by rein's ``[policy]`` must cover it, the sandbox must allow it (nothing on a read-only node,
never ``.git`` or ``.rein``). One refused entry fails the attempt as ``permission_denied``
before any file is written. From a project ``rein.toml``, ``[workers.scripted]`` is honoured
only once the user trusts the file (:mod:`rein.config.trust`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Mapping
from pathlib import Path
from typing import Any

from rein.core.failures import FailureClass
from rein.core.usage import Usage
from rein.errors import ConfigError
from rein.formats.loader import load_path
from rein.profiles.policy import Policy
from rein.tools.catalog import ToolCall
from rein.tools.files import MAX_WRITE_BYTES
from rein.tools.gate import ToolPolicy, Verdict
from rein.tools.sandbox import SandboxPolicy
from rein.tools.toolbox import Toolbox
from rein.workers.base import AttemptRequest, AttemptResult, Item, ItemKind
from rein.workers.grants import attempt_grants


class ScriptedWorker:
    """Answers from a mapping (usually loaded from a file with :meth:`from_file`)."""

    name = "scripted"
    deterministic = True  # the same file gives the same answers: determinism: strict is met

    def __init__(self, script: Mapping[str, Any], *, policy: Policy | None = None,
                 protected: Iterable[str] = ()) -> None:
        nodes = script.get("nodes") or {}
        judges = script.get("judges") or {}
        if not isinstance(nodes, Mapping) or not isinstance(judges, Mapping):
            raise ConfigError("a scripted answers file needs mappings under 'nodes' and "
                              "'judges'", code="SCRIPT001")
        self.nodes = dict(nodes)
        self.judges = dict(judges)
        self.policy = policy  # rein.toml [policy]: a ceiling on the node's grants, as for models
        self.protected = tuple(protected)  # paths no node writes (sandbox.protected_paths)
        self.calls: list[tuple[str, int]] = []  # (node key, attempt), for tests

    @classmethod
    def from_file(cls, path: str | Path, *, policy: Policy | None = None,
                  protected: Iterable[str] = ()) -> ScriptedWorker:
        doc = load_path(path)
        if not isinstance(doc.data, Mapping):
            raise ConfigError(f"{path}: a scripted answers file holds one mapping",
                              code="SCRIPT001")
        return cls(doc.data, policy=policy, protected=protected)

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
        files = answer.get("files") or {}
        if files:
            refused = await self._write(request, files)
            if refused is not None:
                yield Item(kind=ItemKind.TOOL_RESULT, data=refused)
                yield AttemptResult(failure=FailureClass.PERMISSION_DENIED,
                                    message=str(refused["content"]))
                return
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

    def toolbox(self, request: AttemptRequest) -> Toolbox:
        """The one ``write`` tool, under the node's grants, rein's policy and the sandbox:
        the same check a model's ``write`` call goes through."""
        ceilings = (("rein.toml", self.policy),) if self.policy is not None else ()
        grants = attempt_grants(("write",), request.permissions, ceilings)
        sandbox = SandboxPolicy.for_attempt(request.workspace, request.workspace_access,
                                            request.network, protected=self.protected)
        policy = ToolPolicy.build(grants.grants, sandbox=sandbox, denied=grants.denied,
                                  ask=grants.ask)
        return Toolbox(tools=("write",), policy=policy)

    async def _write(self, request: AttemptRequest, files: Any) -> dict[str, Any] | None:
        """Write an answer's files, all checked before the first is written; the refusal
        of the first one refused (``None`` when every file was written)."""
        if not isinstance(files, Mapping):
            return {"tool": "write", "ok": False, "refused": True,
                    "content": "refused: 'files' in a scripted answer must map paths to text"}
        box = self.toolbox(request)
        calls = [ToolCall(id=f"scripted_{i}", name="write",
                          arguments={"path": name, "content": str(text)})
                 for i, (name, text) in enumerate(files.items())]
        for call in calls:
            why = self._refusal(box, call)
            if why is not None:
                return {"tool": "write", "path": str(call.arguments["path"]), "ok": False,
                        "refused": True,
                        "content": f"scripted answer for {request.node_id}: {why}"}
        for call in calls:
            _, result = await box.run(call)
            if not result.ok:
                return {"tool": "write", "path": str(call.arguments["path"]), "ok": False,
                        "refused": result.refused, "content": result.content}
        return None

    @staticmethod
    def _refusal(box: Toolbox, call: ToolCall) -> str | None:
        """Why ``call`` may not run (``None``: it may). An ``ask`` is refused too, since a
        test double has nobody to ask; an oversized file is refused before any is written."""
        decision = box.check(call)
        if decision.verdict is not Verdict.ALLOW:
            return decision.message or f"refused {decision.permission}"
        if len(str(call.arguments["content"]).encode()) > MAX_WRITE_BYTES:
            return f"content is larger than {MAX_WRITE_BYTES} bytes"
        return None
