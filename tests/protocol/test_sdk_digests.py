"""One notation for digests: each question the SDK gives carries its digest exactly as
``rein approvals show ID`` prints it (a graph's ``sha256-`` and base64, ``sha256:`` and hex
for what a tool call or a gate shows), so a program compares and binds the same string a
person reads."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

import rein
from rein.cli import main
from rein.protocol import ServerRequest
from tests.appserver.serve import reply, shell, workspace
from tests.appserver.test_graph_turn import GRAPH, MENTION
from tests.scenarios.model_env import isolate


def shown(root: Path, approval_id: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["approvals", "show", approval_id, "--json", "--workspace", str(root)]) == 0
    return str(json.loads(capsys.readouterr().out)["digest"])


def test_each_question_shows_its_digest_as_approvals_show_prints_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    isolate(tmp_path, monkeypatch)
    root = workspace(tmp_path, [shell("echo hello"), reply("it said hello")],
                     position="conversation")
    (root / "gated.agraph.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))

    async def scenario() -> list[tuple[str, str, str]]:
        asked = []
        with rein.Harness.open(root) as harness:
            thread = harness.start_thread(approval_policy="on-request")
            for items in ([{"type": "text", "text": "say hello"}], MENTION):
                turn = await thread.run(items)
                async for message in turn.stream():
                    if isinstance(message, ServerRequest):
                        asked.append((message.method, message.id, message.digest))
                        await turn.answer(message.id, "accept")
                assert turn.result().status == "completed"
        return asked

    asked = asyncio.run(scenario())
    assert [method for method, _, _ in asked] == [
        "item/commandExecution/requestApproval", "item/tool/requestUserInput",
        "item/tool/requestUserInput"]
    assert [(digest, digest[:7]) for _, _, digest in asked] == [
        (shown(root, approval_id, capsys), prefix) for (_, approval_id, _), prefix
        in zip(asked, ["sha256:", "sha256-", "sha256:"], strict=True)]
