"""``turn/start`` overrides take effect for the turn and the turns after it (model by tier,
cwd inside the workspace, sandbox, approval policy), and the ones rein cannot honour are
refused by name instead of being accepted without effect."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.appserver.serve import reply
from tests.appserver.test_wire import Raw

models = pytest.importorskip("openai_codex.generated.v2_all",
                             reason="the openai-codex SDK is not installed "
                                    "(scripts/codex-sdk.sh installs it)")

TOML = """[providers.script]
kind = "scripted"
options = { script = "turns.json" }

[providers.deep]
kind = "scripted"
options = { script = "deep.json" }

[tiers.standard]
provider = "script"
model = "scripted-1"

[tiers.advanced]
provider = "deep"
model = "scripted-deep"
"""
SAY = [{"type": "text", "text": "say something"}]


@pytest.fixture(name="raw")
def raw_fixture(tmp_path: Path) -> Any:
    (tmp_path / "rein.toml").write_text(TOML)
    (tmp_path / "turns.json").write_text(json.dumps([reply("standard answer")]))
    write = {"tool_calls": [{"name": "file_write", "arguments": {"path": "sub/out.txt",
                                                                 "content": "x"}}]}
    (tmp_path / "deep.json").write_text(json.dumps([reply("deep one"), write,
                                                    reply("deep two")]))
    (tmp_path / "sub").mkdir()
    server = Raw(tmp_path)
    yield server
    if server.proc.poll() is None:
        server.proc.kill()
        server.proc.wait()


def _request(raw: Raw, ident: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    raw.send({"id": ident, "method": method, "params": params})
    return raw.until("id", ident)


def _final(raw: Raw) -> str:
    texts = []
    while True:
        message = raw.read()
        if message.get("method") == "item/completed" and \
                message["params"]["item"].get("phase") == "final_answer":
            texts.append(message["params"]["item"]["text"])
        if message.get("method") == "turn/completed":
            assert message["params"]["turn"]["status"] == "completed"
            return texts[-1]


def test_overrides_take_effect_or_are_refused_by_name(raw: Raw, tmp_path: Path) -> None:
    _request(raw, "i", "initialize", {"clientInfo": {"name": "t", "version": "1"}})
    raw.send({"method": "initialized"})
    thread = _request(raw, "t", "thread/start", {})["result"]["thread"]["id"]
    start = {"threadId": thread, "input": SAY}

    ephemeral = _request(raw, "p", "thread/start", {"ephemeral": True})["error"]
    assert ephemeral["data"]["code"] == "THREAD007" and "ephemeral" in ephemeral["message"]
    effort = _request(raw, "e", "turn/start", {**start, "effort": "high"})["error"]
    assert effort["data"]["code"] == "THREAD007" and "effort" in effort["message"]
    schema = _request(raw, "o", "turn/start", {**start, "outputSchema": {}})["error"]
    assert schema["data"]["code"] == "THREAD007" and "outputSchema" in schema["message"]
    reviewer = _request(raw, "r", "turn/start", {**start, "approvalsReviewer": "auto_review"})
    assert reviewer["error"]["data"]["code"] == "THREAD007"
    unknown = _request(raw, "m", "turn/start", {**start, "model": "gpt-9"})["error"]
    assert unknown["data"]["code"] == "THREAD007"
    assert "'gpt-9'" in unknown["message"] and "scripted-1, scripted-deep" in unknown["message"]
    outside = _request(raw, "c", "turn/start", {**start, "cwd": "/"})["error"]
    assert outside["data"]["code"] == "THREAD002" and "cwd /" in outside["message"]
    # Nothing refused was recorded: the thread has no turn yet.
    read = _request(raw, "x", "thread/read", {"threadId": thread, "includeTurns": True})
    assert read["result"]["thread"]["turns"] == []

    started = _request(raw, "d", "turn/start", {**start, "model": "scripted-deep",
                                                "cwd": "sub", "clientUserMessageId": "m1"})
    models.TurnStartResponse.model_validate(started["result"])
    assert _final(raw) == "deep one"  # the advanced tier's model answered
    second = _request(raw, "n", "turn/start", {
        **start, "sandboxPolicy": {"type": "readOnly"}, "approvalPolicy": "never"})
    assert _final(raw) == "deep two"  # the model override held for the next turn
    assert not (tmp_path / "sub" / "out.txt").exists()
    graph = yaml.safe_load((tmp_path / ".rein" / "threads" / thread /
                            f"{second['result']['turn']['id']}.agraph.yaml").read_text())
    node = graph["nodes"]["turn"]  # what the run was bound to by digest
    assert node["intelligence"] == {"tier": "advanced"}
    assert node["requirements"]["workspace"] == "read_only"
    assert "file_write" not in node["requirements"]["tools"]
    assert graph["x-rein"]["approvalPolicy"] == "never"

    resumed = _request(raw, "s", "thread/resume", {"threadId": thread})["result"]
    models.ThreadResumeResponse.model_validate(resumed)
    assert resumed["model"] == "scripted-deep" and resumed["modelProvider"] == "deep"
    assert resumed["cwd"] == str(tmp_path / "sub")
    assert resumed["sandbox"] == {"type": "readOnly", "networkAccess": False}
    assert resumed["approvalPolicy"] == "never"
    assert raw.close() == 0
