"""The earlier turns a conversation turn carries (``AttemptRequest.transcript``), at the model
worker, with the scripted provider (a test double): read before the brief, never unsealed,
and compacted after ``PreCompact`` when they would not fit the context window."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rein.providers.scripted import ScriptedProvider
from rein.providers.types import Message
from rein.tools.hooks import Hook
from rein.workers.base import ItemKind
from rein.workers.model import ModelWorker
from tests.workers.test_model import attempt, drive, submit

EARLIER = (
    {"role": "user", "content": "print the token"},
    {"role": "assistant", "content": "",
     "tool_calls": [{"id": "call-1", "name": "shell_exec",
                     "arguments": {"command": "echo $API_KEY"}, "raw_arguments": ""}]},
    {"role": "tool", "content": "[secret:API_KEY]\n", "tool_call_id": "call-1"},
    {"role": "assistant", "content": "It printed the key."},
)


def worker(provider: ScriptedProvider, *hooks: Hook, **kw: Any) -> ModelWorker:
    return ModelWorker(provider=provider, model="scripted", hooks=hooks, **kw)


def test_the_earlier_turns_come_before_the_brief_as_messages(tmp_path: Path) -> None:
    provider = ScriptedProvider([submit(summary="done")])
    rules = Hook(name="rules", command="echo 'House rule: tabs.'", events=("SessionStart",))
    request = attempt(tmp_path, transcript=EARLIER, env={"API_KEY": "sk-live-123"},
                      secret_names=frozenset({"API_KEY"}))
    _, result = drive(worker(provider, rules), request)
    assert result.failure is None
    sent = provider.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert sent[0] == Message(role="user", content="print the token")  # untouched
    assert sent[1].tool_calls[0].arguments == {"command": "echo $API_KEY"}
    # What is carried stays redacted: the value is never put back.
    assert sent[2].content == "[secret:API_KEY]\n" and sent[2].tool_call_id == "call-1"
    assert "sk-live-123" not in json.dumps([m.content for m in sent])
    # SessionStart context joins this turn's brief, not the oldest carried message.
    assert sent[4].content.startswith("# Write the note") and "House rule: tabs." in sent[4].content


def test_carried_turns_that_would_overflow_are_compacted_after_pre_compact(
        tmp_path: Path) -> None:
    log = tmp_path / "compact.json"
    long = [{"role": "user", "content": "x" * 4000}, {"role": "assistant", "content": "ok"}]
    provider = ScriptedProvider([{"text": "The user sent a long text; I said ok.",
                                  "usage": {"input": 1100, "output": 10}},
                                 submit(summary="done")])
    pre = Hook(name="pre", command=f"cat > {log}", events=("PreCompact",))
    items, result = drive(worker(provider, pre, context_tokens=1000),
                          attempt(tmp_path, transcript=tuple(long)))
    assert result.failure is None
    assert json.loads(log.read_text())["trigger"] == "auto"  # the hook ran first
    summary_request = provider.requests[0]
    assert summary_request.tools == () and len(summary_request.messages) == 4
    after = provider.requests[1].messages
    assert len(after) == 2 and after[0].content.startswith("# Write the note")
    assert after[1].content.endswith("The user sent a long text; I said ok.")
    [compaction] = [i.data for i in items if i.kind is ItemKind.CONTEXT_COMPACTION]
    assert compaction["replaced_messages"] == 3


def test_carried_turns_that_fit_are_not_compacted(tmp_path: Path) -> None:
    provider = ScriptedProvider([submit(summary="done")])
    drive(worker(provider, context_tokens=100_000), attempt(tmp_path, transcript=EARLIER))
    assert len(provider.requests) == 1 and len(provider.requests[0].messages) == 5
