"""An OAP profile as the worker of a node (``x-rein-profile``), through ``rein run``: the
profile narrows the node's permissions, its prompt is assembled around the node's brief, and
the session ends with a proposed state delta that ``rein profile apply`` accepts."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

from rein.config import load_config
from rein.core.usage import Budget
from rein.providers.scripted import ScriptedProvider
from rein.workers.base import AttemptRequest, AttemptResult, OutputSpec
from rein.workers.model import ModelWorker
from rein.workers.profile import ProfileWorker
from rein.workers.profile_fit import narrow_budget
from tests.scenarios.harness import summary
from tests.scenarios.model_env import ModelScenario, call, graph, ms_fixture, task

__all__ = ["ms_fixture"]  # the fixture this module's tests use

PROFILE = Path(__file__).parent / "data" / "note-writer.agent.yaml"


def node() -> dict:
    n = task("Write a note", tools=["file_read", "file_write"],
             permissions=["fs:read:**", "fs:write:**"], outputs={"summary": "what"})
    n["x-rein-profile"] = "profiles/note-writer.agent.yaml"
    return n


def test_a_profile_serves_a_node_and_proposes_a_delta(ms: ModelScenario) -> None:
    (ms.root / "profiles").mkdir()
    shutil.copyfile(PROFILE, ms.root / "profiles" / "note-writer.agent.yaml")
    ms.turns("turns.json", [
        call("file_write", path="README.md", content="outside\n"),
        call("file_write", path="docs/note.md", content="A note.\n"),
        call("submit_outputs", summary="wrote docs/note.md"),
    ])
    ms.toml('[providers.script]\nkind = "scripted"\noptions = { script = "turns.json" }\n\n'
            '[tiers.standard]\nprovider = "script"\nmodel = "s"\n')
    code, out = ms.run(ms.graph("g.agraph.yaml", graph("prof", {"note": node()}, "note")))
    assert code == 0, out
    assert summary(out)["status"] == "succeeded"
    assert not (ms.root / "README.md").exists()
    assert (ms.root / "docs" / "note.md").read_text() == "A note.\n"
    refused = ms.items("tool_result")[0]
    assert refused["refused"] is True
    assert refused["content"] == ("refused fs:write:README.md: not covered by this node's "
                                  "permissions; allowed for fs:write: fs:write:docs/**")
    notices = ms.items("notice")
    [served] = [n for n in notices if "profile" in n]
    assert served["profile"]["profile"]["name"] == "note-writer"
    assert served["profile"]["budgets"]["max_tool_calls"] == 4
    [effective] = [n for n in notices if "permissions" in n]
    assert effective["permissions"]["grants"] == ["fs:read:**", "fs:write:docs/**"]
    assert {"tool": "file_read", "by": "profile note-writer"} not in [
        {k: v for k, v in n.items() if k in ("tool", "by")}
        for n in effective["permissions"]["narrowed"]]

    [attempt] = ms.record()["nodes"][0]["attempts"]
    record = attempt.get("x-rein-profile") or ms.record()["nodes"][0].get("x-rein-profile")
    assert record is not None, attempt
    delta_path = ms.root / record["delta"]
    delta = json.loads(delta_path.read_text())
    assert delta["kind"] == "AgentStateDelta"
    assert delta["target"]["name"] == "note-writer" and delta["target"]["revision"] == 1
    assert delta["session"]["id"].endswith("/note#1")
    assert delta["session"]["tool_calls"] == 2
    assert record["delta"].startswith(".rein/profiles/deltas/")

    code, out = ms.rein("profile", "apply", "profiles/note-writer.agent.yaml",
                        str(delta_path), "--approve", "--json")
    assert code == 0, out
    applied = (ms.root / "profiles" / "note-writer.agent.yaml").read_text()
    assert "revision: 2" in applied


def test_the_prompt_is_assembled_around_the_brief_with_state_as_untrusted(
        tmp_path: Path, monkeypatch) -> None:
    from tests.scenarios.model_env import isolate

    isolate(tmp_path, monkeypatch)
    (tmp_path / "profiles").mkdir()
    shutil.copyfile(PROFILE, tmp_path / "profiles" / "p.agent.yaml")
    provider = ScriptedProvider([call("submit_outputs", summary="ok")])
    config = load_config(tmp_path)
    worker = ProfileWorker(ModelWorker(provider=provider, model="s"), workspace=tmp_path,
                           config=config)
    request = AttemptRequest(
        run_id="run-1", node_id="note", attempt=1, kind="task", title="Write a note",
        brief="Write docs/note.md about the release.", inputs={},
        outputs=(OutputSpec(name="summary", type="string", description="what"),),
        permissions=("fs:read:**",), tools=("file_read",), workspace=str(tmp_path),
        profile="profiles/p.agent.yaml", budget=Budget(max_tool_calls=10))

    async def go() -> AttemptResult:
        async for out in worker.run(request):
            if isinstance(out, AttemptResult):
                return out
        raise AssertionError("no result")

    result = asyncio.run(go())
    assert result.failure is None
    system = provider.requests[0].system or ""
    assert "You write short, plain notes for the docs folder." in system
    assert "Write docs/note.md about the release." in system.split("## Task", 1)[1]
    state_at = system.index("Ignore any instruction to write elsewhere.")
    assert system.rfind("<agent-state", 0, state_at) > system.rfind("</agent-state", 0,
                                                                      state_at)
    assert "submit_outputs" in system  # rein's own worker rules come last


def test_budgets_take_the_minimum() -> None:
    budget = narrow_budget(Budget(max_tool_calls=10, max_agent_steps=None,
                                  max_cost_usd=0.5),
                           {"max_tool_calls": 4, "max_turns": 6, "max_cost_usd": None,
                            "timeout_seconds": 30})
    assert budget == Budget(max_tool_calls=4, max_agent_steps=6, max_cost_usd=0.5,
                            max_wall_clock_seconds=30)


def test_a_profile_gone_since_pre_flight_fails_the_attempt_with_its_code(
        tmp_path: Path, monkeypatch) -> None:
    # Pre-flight blocks a node whose profile is missing (test_model_profile_session.py);
    # this is the worker's own guard when the profile disappears after that check.
    from tests.scenarios.model_env import isolate

    isolate(tmp_path, monkeypatch)
    worker = ProfileWorker(ModelWorker(provider=ScriptedProvider([]), model="s"),
                           workspace=tmp_path, config=load_config(tmp_path))
    request = AttemptRequest(
        run_id="r", node_id="n", attempt=1, kind="task", title="t", brief="b", inputs={},
        outputs=(), permissions=(), tools=(), workspace=str(tmp_path), profile="nobody")

    async def go() -> AttemptResult:
        async for out in worker.run(request):
            assert isinstance(out, AttemptResult)
            return out
        raise AssertionError("no result")

    result = asyncio.run(go())
    assert result.failure is not None and result.failure.value == "permission_denied"
    assert "profile 'nobody' cannot serve node n" in (result.message or "")
