"""Claude Code transcripts read for usage: a transcript whose last message was never written.

Claude Code records each answer in the background, and the flush it runs at exit can miss
one still on its way: the transcript then lacks the session's last answer, while the
``last-prompt`` record written after that flush names it (``leafUuid``). The reader counts such a message
as unwritten, where it would belong. The transcripts here are the test's own, in Claude
Code's format (tests/agents reads the real ones, and makes one that lost its last answer).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rein.telemetry.agent_logs import Unwritten, read_claude

TOKEN = "drv-" + "a1" * 10
USAGE = {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 0,
         "cache_creation_input_tokens": 0}


def assistant(uuid: str, parent: str | None, mid: str, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "assistant", "uuid": uuid, "parentUuid": parent, "sessionId": "s-1",
            "message": {"id": mid, "model": "claude-opus-4-8", "usage": USAGE,
                        "content": [block]}}


def result(uuid: str, parent: str, tool: str, text: str) -> dict[str, Any]:
    return {"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": "s-1",
            "message": {"content": [{"type": "tool_result", "tool_use_id": tool,
                                     "content": text}]}}


def bash(tool: str, command: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool, "name": "Bash", "input": {"command": command}}


def last_prompt(leaf: str) -> dict[str, Any]:
    return {"type": "last-prompt", "lastPrompt": "go", "leafUuid": leaf, "sessionId": "s-1"}


# A session: `rein dev` gives the turn, the agent submits, `rein dev` says done, the final
# answer. A last-prompt mid-file names the message before it, as Claude Code writes them.
SESSION = [
    {"type": "user", "uuid": "u0", "parentUuid": None, "sessionId": "s-1",
     "message": {"role": "user", "content": "go"}},
    assistant("a1", "u0", "m1", bash("t1", ".rein/bin/rein dev --json")),
    result("u1", "a1", "t1", f'{{"instruction": {{"status": "instruction", "token": "{TOKEN}"}}}}'),
    assistant("a2", "u1", "m2", bash("t2", ".rein/bin/rein submit")),
    last_prompt("a2"),
    result("u2", "a2", "t2", "submit: accepted"),
    assistant("a3", "u2", "m3", bash("t3", ".rein/bin/rein dev --json")),
    result("u3", "a3", "t3", '{"status": "done"}'),
    assistant("a4", "u3", "m4", {"type": "text", "text": "Finished."}),
    last_prompt("a4"),
]


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_last_answer_named_but_never_written_is_counted_unwritten_where_it_belongs(
        tmp_path: Path) -> None:
    # What a `claude -p` that exited before writing its last answer leaves: the answer's
    # record gone, the last-prompt written at exit naming it.
    lost = [r for r in SESSION if r.get("uuid") != "a4"]
    session = read_claude(write(tmp_path / "s-1.jsonl", lost), {TOKEN})
    assert [c.index for c in session.calls] == [1, 3, 6]  # the three answers written
    assert session.unwritten == [Unwritten(message="a4", turn=TOKEN, command="dev")]
    assert session.to_json()["unwritten_messages"] == 1


def test_a_transcript_that_holds_its_last_answer_has_nothing_unwritten(tmp_path: Path) -> None:
    session = read_claude(write(tmp_path / "s-1.jsonl", SESSION), {TOKEN})
    assert [(c.turn, c.command) for c in session.calls] == [
        (None, None), (TOKEN, "dev"), (TOKEN, "submit"), (TOKEN, "dev")]
    assert session.unwritten == []
    assert session.to_json()["unwritten_messages"] == 0


def test_only_the_latest_last_prompt_says_which_message_is_last(tmp_path: Path) -> None:
    # An earlier last-prompt naming a message written after it, or none at all, is no loss:
    # the latest one names the last message, and the transcript holds it.
    ahead = [*SESSION[:4], last_prompt("a3"), *SESSION[5:]]
    assert read_claude(write(tmp_path / "ahead.jsonl", ahead), {TOKEN}).unwritten == []
    without = [r for r in SESSION if r.get("type") != "last-prompt"][:-1]
    assert read_claude(write(tmp_path / "none.jsonl", without), {TOKEN}).unwritten == []
