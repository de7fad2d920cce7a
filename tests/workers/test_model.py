"""The model worker's loop, with the scripted provider and with both providers' wire fixtures."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from support import ROOT

from rein.core.failures import FailureClass
from rein.core.usage import Budget
from rein.providers.anthropic_messages import AnthropicProvider
from rein.providers.config import ProviderConfig
from rein.providers.openai_chat import OpenAIChatProvider
from rein.providers.pricing import Price, PriceTable
from rein.providers.replay import WireReplay
from rein.providers.scripted import ScriptedProvider
from rein.workers.base import AttemptRequest, AttemptResult, Item, ItemKind, OutputSpec, Worker
from rein.workers.model import SUBMIT, ApprovalAsk, ModelWorker, submit_schema

WIRE = ROOT / "tests" / "fixtures" / "wire"
KEYS = {
    "OPENAI_API_KEY": "sk-test-rein-0123456789abcdef",
    "ANTHROPIC_API_KEY": "sk-ant-test-rein-0123456789abcdef",
}


def attempt(ws: Path, **kw: Any) -> AttemptRequest:
    base: dict[str, Any] = {
        "run_id": "run-1",
        "node_id": "write_note",
        "attempt": 1,
        "kind": "task",
        "title": "Write the note",
        "brief": "Write NOTE.md with a heading.",
        "inputs": {"topic": "rein"},
        "outputs": (OutputSpec(name="summary", type="string", description="what was done"),),
        "permissions": ("fs:read:**", "fs:write:NOTE.md"),
        "tools": ("file_read", "file_write"),
        "workspace": str(ws),
        "workspace_access": "read_write",
    }
    base.update(kw)
    return AttemptRequest(**base)


def check_note(ws: Path) -> AttemptRequest:
    return attempt(
        ws,
        node_id="check_note",
        kind="decision",
        title="Check the note",
        brief="Read NOTE.md and decide.",
        workspace_access="read_only",
        permissions=("fs:read:**",),
        tools=("file_read",),
        outputs=(OutputSpec(name="reason", type="string", description="why"),),
        branches=(
            {"label": "ship", "description": "good"},
            {"label": "revise", "description": "needs work"},
        ),
    )


def drive(worker: ModelWorker, request: AttemptRequest) -> tuple[list[Item], AttemptResult]:
    async def go() -> tuple[list[Item], AttemptResult]:
        items: list[Item] = []
        async for out in worker.run(request):
            if isinstance(out, AttemptResult):
                return items, out
            if "permissions" not in out.data:  # the first notice; tested on its own
                items.append(out)
        raise AssertionError("no result")

    return asyncio.run(go())


def scripted(*turns: Any, **kw: Any) -> ModelWorker:
    return ModelWorker(provider=ScriptedProvider(list(turns)), model="scripted", **kw)


def write_call(path: str = "NOTE.md", content: str = "# Note\n") -> dict[str, Any]:
    return {
        "tool_calls": [{"name": "file_write", "arguments": {"path": path, "content": content}}],
        "usage": {"input": 100, "output": 20},
    }


def submit(**outputs: Any) -> dict[str, Any]:
    return {
        "tool_calls": [{"name": SUBMIT, "arguments": outputs}],
        "usage": {"input": 120, "output": 10},
    }


def test_model_worker_is_a_worker() -> None:
    assert isinstance(scripted(), Worker)


def test_submit_schema_from_declared_outputs_and_branches() -> None:
    schema = submit_schema(
        (
            OutputSpec(name="summary", type="markdown", description="d"),
            OutputSpec(name="count", type="integer", description="n", required=False),
            OutputSpec(name="report", type="file", description="r", path_hint="out/report.md"),
        ),
        ({"label": "ship"}, {"label": "revise"}),
    )
    assert schema["required"] == ["decision", "summary", "report"]
    assert schema["properties"]["decision"]["enum"] == ["ship", "revise"]
    assert schema["properties"]["count"]["type"] == "integer"
    assert "out/report.md" in schema["properties"]["report"]["description"]
    assert schema["additionalProperties"] is False


def test_two_step_attempt_with_a_tool_call(tmp_path: Path) -> None:
    worker = scripted(write_call(), submit(summary="wrote it"))
    items, result = drive(worker, attempt(tmp_path))
    assert result.failure is None and result.outputs == {"summary": "wrote it"}
    assert (tmp_path / "NOTE.md").read_text() == "# Note\n"
    kinds = [i.kind for i in items]
    assert kinds == [
        ItemKind.USAGE,
        ItemKind.TOOL_CALL,
        ItemKind.TOOL_RESULT,
        ItemKind.USAGE,
        ItemKind.TOOL_CALL,
        ItemKind.TOOL_RESULT,
    ]
    assert items[2].data["ok"] is True and items[2].data["content"] == "created NOTE.md (7 bytes)"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (220, 30)
    assert (result.usage.tool_calls, result.usage.agent_steps) == (1, 2)
    assert result.routed is not None and result.routed.provider == "scripted"


def test_tools_offered_are_the_effective_tools_plus_submit(tmp_path: Path) -> None:
    provider = ScriptedProvider([submit(summary="x")])
    drive(ModelWorker(provider=provider, model="m"), attempt(tmp_path))
    offered = [t.name for t in provider.requests[0].tools]
    assert offered == ["file_read", "file_write", SUBMIT]
    brief = provider.requests[0].messages[0].content
    assert "Write NOTE.md with a heading." in brief and "- fs:write:NOTE.md" in brief


def test_call_outside_permissions_is_refused_and_the_model_recovers(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [write_call(path="src/other.py"), write_call(), submit(summary="ok")]
    )
    items, result = drive(ModelWorker(provider=provider, model="m"), attempt(tmp_path))
    refusal = items[2].data
    assert refusal["refused"] is True and refusal["ok"] is False
    assert refusal["content"] == (
        "refused fs:write:src/other.py: not covered by this node's "
        "permissions; allowed for fs:write: fs:write:NOTE.md"
    )
    # The model saw the refusal as a tool error, and the attempt still finished.
    tool_msg = provider.requests[1].messages[-1]
    assert tool_msg.role == "tool" and tool_msg.is_error and tool_msg.content == refusal["content"]
    assert not (tmp_path / "src/other.py").exists()
    assert result.failure is None


def test_bad_submission_goes_back_to_the_model(tmp_path: Path) -> None:
    provider = ScriptedProvider([submit(summary=3), submit(summary="fixed")])
    items, result = drive(ModelWorker(provider=provider, model="m"), attempt(tmp_path))
    assert 'summary: 3 is not of type "string"' in items[2].data["content"]
    assert result.outputs == {"summary": "fixed"}


def test_decision_node_returns_the_label(tmp_path: Path) -> None:
    (tmp_path / "NOTE.md").write_text("# Note\n")
    worker = scripted(
        {"tool_calls": [{"name": "file_read", "arguments": {"path": "NOTE.md"}}]},
        submit(decision="ship", reason="has a heading"),
    )
    _, result = drive(worker, check_note(tmp_path))
    assert result.decision == "ship" and result.outputs == {"reason": "has a heading"}


def test_a_label_outside_the_branches_is_rejected(tmp_path: Path) -> None:
    worker = scripted(submit(decision="maybe", reason="?"), submit(decision="revise", reason="r"))
    items, result = drive(worker, check_note(tmp_path))
    assert '"maybe" is not one of "ship" or "revise"' in items[2].data["content"]
    assert result.decision == "revise"


def test_stopping_without_submitting_twice_is_output_missing(tmp_path: Path) -> None:
    provider = ScriptedProvider([{"text": "done!"}, {"text": "really done"}])
    items, result = drive(ModelWorker(provider=provider, model="m"), attempt(tmp_path))
    assert result.failure is FailureClass.OUTPUT_MISSING
    assert (
        provider.requests[1].messages[-1].content == f"Call `{SUBMIT}` with the outputs to finish."
    )
    assert [i.data["text"] for i in items if i.kind is ItemKind.MESSAGE] == ["done!", "really done"]


def test_max_agent_steps_is_checked_before_each_call(tmp_path: Path) -> None:
    provider = ScriptedProvider([write_call(), write_call(), submit(summary="late")])
    _, result = drive(
        ModelWorker(provider=provider, model="m"),
        attempt(tmp_path, budget=Budget(max_agent_steps=2)),
    )
    assert result.failure is FailureClass.TIMEOUT
    assert result.message == "max_agent_steps 2 reached"
    assert len(provider.requests) == 2  # the third call was never made


def test_max_tool_calls(tmp_path: Path) -> None:
    worker = scripted(write_call(), write_call(), submit(summary="x"))
    _, result = drive(worker, attempt(tmp_path, budget=Budget(max_tool_calls=1)))
    assert result.failure is FailureClass.BUDGET_EXCEEDED
    assert result.message == "max_tool_calls 1 reached"


def test_token_budget(tmp_path: Path) -> None:
    worker = scripted(write_call(), submit(summary="x"))
    _, result = drive(worker, attempt(tmp_path, budget=Budget(max_total_tokens=100)))
    assert result.failure is FailureClass.BUDGET_EXCEEDED
    assert result.message == "max_total_tokens 100 reached (120)"


def test_cost_budget_with_prices_and_notice_without(tmp_path: Path) -> None:
    config = ProviderConfig(
        name="scripted",
        kind="scripted",
        prices=PriceTable(prices={"scripted": Price(input=1000.0, output=1000.0)}),
    )
    provider = ScriptedProvider([write_call(), submit(summary="x")], config=config)
    _, result = drive(
        ModelWorker(provider=provider, model="scripted"),
        attempt(tmp_path, budget=Budget(max_cost_usd=0.05)),
    )
    assert result.failure is FailureClass.BUDGET_EXCEEDED
    assert result.message == "max_cost_usd 0.05 reached (0.12)"
    items, result = drive(
        scripted(write_call(), submit(summary="x")),
        attempt(tmp_path, budget=Budget(max_cost_usd=0.05)),
    )
    assert result.failure is None and result.usage.cost_usd is None
    assert "max_cost_usd is not enforced" in items[0].data["text"]


def test_wall_clock_uses_the_injected_clock(tmp_path: Path) -> None:
    ticks = iter([0.0, 0.0, 100.0])
    worker = scripted(write_call(), submit(summary="x"), clock=lambda: next(ticks))
    _, result = drive(worker, attempt(tmp_path, budget=Budget(max_wall_clock_seconds=60)))
    assert result.failure is FailureClass.TIMEOUT
    assert result.message == "max_wall_clock_seconds 60 reached"


def test_ask_without_an_approval_channel_is_denied_with_a_reason(tmp_path: Path) -> None:
    worker = scripted(write_call(), submit(summary="x"), ask=("fs:write:**",))
    items, result = drive(worker, attempt(tmp_path))
    assert items[2].data["refused"] is True
    assert "needs a person's approval" in items[2].data["content"]
    assert not (tmp_path / "NOTE.md").exists() and result.failure is None


@pytest.mark.parametrize(
    ("answer", "written", "failure"),
    [
        ("accept", True, None),
        ("decline", False, None),
        ("cancel", False, FailureClass.PERMISSION_DENIED),
    ],
)
def test_ask_goes_to_the_approver(
    tmp_path: Path, answer: str, written: bool, failure: FailureClass | None
) -> None:
    asked: list[ApprovalAsk] = []

    async def approver(ask: ApprovalAsk) -> Any:
        asked.append(ask)
        return answer

    worker = scripted(write_call(), submit(summary="x"), ask=("fs:write:**",), approver=approver)
    _, result = drive(worker, attempt(tmp_path))
    assert (tmp_path / "NOTE.md").exists() is written
    assert result.failure is failure
    (ask,) = asked
    assert ask.permission == "fs:write:NOTE.md" and ask.action_digest.startswith("sha256:")
    assert (ask.node_id, ask.tool) == ("write_note", "file_write")


def test_provider_error_fails_the_attempt_with_its_class(tmp_path: Path) -> None:
    replay = WireReplay.from_files([(WIRE / "openai" / "error_401.json", 401)])
    provider = OpenAIChatProvider(
        ProviderConfig(name="openai", kind="openai"), http_client=replay.client(), environ=KEYS
    )
    _, result = drive(ModelWorker(provider=provider, model="gpt-4.1-mini"), attempt(tmp_path))
    assert result.failure is FailureClass.MODEL_ERROR
    assert result.message is not None and result.message.startswith("PRV001: openai: HTTP 401")
    assert KEYS["OPENAI_API_KEY"] not in result.message


def test_secrets_never_reach_items(tmp_path: Path) -> None:
    (tmp_path / "cfg.txt").write_text("token: hunter2-secret\n")
    worker = scripted(
        {"tool_calls": [{"name": "file_read", "arguments": {"path": "cfg.txt"}}]},
        {"text": "I saw hunter2-secret", **submit(summary="x")},
    )
    items, _ = drive(
        worker,
        attempt(tmp_path, env={"TOKEN": "hunter2-secret"}, secret_names=frozenset({"TOKEN"})),
    )
    dumped = json.dumps([i.data for i in items])
    assert "hunter2-secret" not in dumped and "[secret:TOKEN]" in dumped


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_two_node_graph_against_wire_fixtures(tmp_path: Path, kind: str) -> None:
    """Node 1 writes NOTE.md (whole responses); node 2 reads it and decides (streamed)."""
    cls: Any = OpenAIChatProvider if kind == "openai" else AnthropicProvider
    replay = WireReplay.from_files(
        [
            WIRE / kind / n
            for n in ("write_note.json", "submit_note.json", "read_note.sse", "decide_ship.sse")
        ]
    )
    provider = cls(ProviderConfig(name=kind, kind=kind), http_client=replay.client(), environ=KEYS)

    _, first = drive(ModelWorker(provider=provider, model="m1"), attempt(tmp_path))
    assert first.failure is None, first.message
    assert first.outputs == {"summary": "Wrote NOTE.md with a heading and one line."}
    assert (tmp_path / "NOTE.md").read_text() == "# Note\n\nrein was here.\n"

    items, second = drive(
        ModelWorker(provider=provider, model="m1", stream=True), check_note(tmp_path)
    )
    assert second.failure is None, second.message
    assert second.decision == "ship"
    assert second.outputs == {"reason": "NOTE.md has a heading and a body."}
    read_result = next(i for i in items if i.kind is ItemKind.TOOL_RESULT)
    assert read_result.data["content"] == "# Note\n\nrein was here.\n"
    assert [i.data["text"] for i in items if i.kind is ItemKind.MESSAGE] == [
        "The note looks complete."
    ]
    assert replay.remaining == 0

    # What went over the wire: the tool result of node 2's read, in the vendor's shape.
    last = replay.bodies()[3]
    if kind == "openai":
        assert last["messages"][-1] == {
            "role": "tool",
            "tool_call_id": "call_read_0003",
            "content": "# Note\n\nrein was here.\n",
        }
        assert [t["function"]["name"] for t in last["tools"]] == ["file_read", SUBMIT]
    else:
        assert last["messages"][-1]["content"][0]["tool_use_id"] == "toolu_read_0003"
        assert [t["name"] for t in last["tools"]] == ["file_read", SUBMIT]
        assert last["tools"][1]["input_schema"]["properties"]["decision"]["enum"] == [
            "ship",
            "revise",
        ]


def test_a_commit_through_the_shell_fails_the_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    # Without bubblewrap nothing stops the commit itself; the ref check still catches it.
    monkeypatch.setattr(
        "rein.tools.sandbox.bubblewrap_status", lambda: (None, "disabled in this test")
    )
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    commit = "git -c user.email=a@b -c user.name=a commit -q --allow-empty -m sneaky"
    worker = scripted(
        {"tool_calls": [{"name": "shell_exec", "arguments": {"command": commit}}]},
        submit(summary="x"),
    )
    items, result = drive(
        worker, attempt(tmp_path, tools=("shell_exec",), permissions=("shell:exec",))
    )
    assert items[0].kind is ItemKind.NOTICE and "not a security boundary" in items[0].data["text"]
    assert result.failure is FailureClass.PERMISSION_DENIED
    assert (
        result.message is not None
        and "workers never commit" in result.message
        and result.outputs == {}
    )


def test_model_workers_from_rein_toml_routes(tmp_path: Path) -> None:
    from rein.errors import ConfigError
    from rein.workers.model_setup import model_workers

    replay = WireReplay.from_files([])
    config = {
        "providers": {
            "local": {
                "kind": "openai",
                "base_url": "http://127.0.0.1:8000/v1",
                "options": {"stream": True},
            },
            "claude": {"kind": "anthropic"},
        },
        "tiers": {
            "frontier": {"provider": "claude", "model": "claude-opus-4-6"},
            "minimal": {"provider": "local", "model": "qwen2.5-coder:7b"},
        },
    }
    workers = model_workers(config, http_client=replay.client())
    assert [(w.provider.name, w.model, sorted(w.tiers), w.stream) for w in workers] == [
        ("local", "qwen2.5-coder:7b", ["minimal"], True),
        ("claude", "claude-opus-4-6", ["frontier"], False),
    ]
    assert workers[0].can_serve(attempt(tmp_path, tier="minimal"))
    assert not workers[0].can_serve(attempt(tmp_path, tier="standard"))
    assert model_workers({}) == ()
    with pytest.raises(ConfigError) as info:
        model_workers({"tiers": {"standard": {"provider": "nope", "model": "m"}}})
    assert info.value.code == "PROVCFG005"


@pytest.mark.parametrize("backend", ["bubblewrap", "process"])
def test_a_shell_write_outside_fs_write_fails_the_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    from rein.tools.sandbox import bubblewrap_status

    if backend == "bubblewrap" and bubblewrap_status()[0] is None:
        pytest.skip(f"bubblewrap unusable here: {bubblewrap_status()[1]}")
    if backend == "process":  # the probe says no namespaces, as in some containers
        monkeypatch.setattr(
            "rein.tools.sandbox.bubblewrap_status", lambda: (None, "no namespaces (forced)")
        )
    (tmp_path / "src").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "src" / "app.py").write_text("app\n")
    worker = scripted(
        {"tool_calls": [{"name": "shell_exec", "arguments": {"command": "echo hi > src/app.py"}}]},
        submit(summary="x"),
    )
    items, result = drive(worker, attempt(
        tmp_path, tools=("shell_exec",),
        permissions=("shell:exec", "fs:read:**", "fs:write:docs/**")))
    notes = [i.data for i in items if i.kind is ItemKind.NOTICE and "fs_write" in i.data]
    assert len(notes) == 1 and notes[0]["sandbox"] == backend
    if backend == "process":
        assert "before/after check of the whole workspace alone" in notes[0]["fs_write"]
        assert result.failure is FailureClass.PERMISSION_DENIED and result.outputs == {}
        assert result.message == (
            "a command wrote outside this node's fs:write grants: src/app.py "
            "(allowed: fs:write:docs/**)"
        )
    else:
        assert "bubblewrap" in notes[0]["fs_write"]
        assert (tmp_path / "src" / "app.py").read_text() == "app\n"  # never written
        results = [i.data for i in items if i.kind is ItemKind.TOOL_RESULT]
        assert results and not results[0]["ok"] and "Read-only file system" in results[0][
            "content"]


def test_a_model_that_reports_no_usage_leaves_the_attempt_unmeasured(tmp_path: Path) -> None:
    """Zero tokens would be a count the vendor never gave, and would pass every budget."""
    config = ProviderConfig(name="scripted", kind="scripted",
                            prices=PriceTable(prices={"scripted": Price(input=1.0, output=1.0)}))
    silent = {**write_call(), "usage": None}  # a server that says nothing of tokens
    provider = ScriptedProvider([silent, submit(summary="x")], config=config)
    items, result = drive(ModelWorker(provider=provider, model="scripted"),
                          attempt(tmp_path, budget=Budget(max_total_tokens=10_000)))
    assert result.failure is None
    assert (result.usage.input_tokens, result.usage.output_tokens) == (None, None)
    assert result.usage.cost_usd is None
    notes = [i.data["text"] for i in items if "text" in i.data]
    assert notes.count("model scripted reported no token usage: tokens and cost are not "
                       "accounted, so the attempt's token and cost budgets are not "
                       "enforced") == 1
