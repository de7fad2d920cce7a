"""A conversation turn as a graph: one task node that the model worker serves.

The turn's brief is the user's text; the thread's earlier turns are carried as the messages
they were made of (``x-rein-transcript``, :mod:`rein.engine.cases.sessions.carried`), which the
model worker puts before the brief. The node asks for the tools and permissions the thread's sandbox allows
(:func:`rein.engine.cases.sessions.policy.requirements`), which the engine narrows by the profile
and ``rein.toml``. The graph is written under ``.rein/threads/`` and run like any other,
so the run is durable, resumable and bound by digest to what it was asked to do; its
``x-rein`` member records the thread, the turn, the sandbox and the approval policy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rein.engine.cases.sessions import policy
from rein.formats import yaml_text

NODE = "turn"


def text_of(items: Sequence[Mapping[str, Any]]) -> str:
    """The text items of a turn's input, joined."""
    return "\n".join(str(i.get("text") or "") for i in items if i.get("type") == "text").strip()


def graph(*, thread: Mapping[str, Any], thread_id: str, turn_id: str, text: str,
          transcript: Sequence[Mapping[str, Any]], sandbox: Mapping[str, Any],
          approval_policy: str, compaction: bool = False) -> dict[str, Any]:
    """The one-node graph of a conversation turn. ``transcript``: the messages of the
    thread's earlier turns, oldest first (:func:`rein.engine.cases.sessions.carried.turn_messages`).
    ``compaction``: the turn asks for a summary of them and nothing else: no tool is
    offered (``thread/compact/start``)."""
    node: dict[str, Any] = {
        "type": "task", "title": "Conversation turn", "description": text,
        "outputs": {"reply": {"type": "string",
                              "description": "your answer to the user, in words"}},
        # `standard` unless the client picked another configured tier for the thread
        # (ACP's model option, or a turn/start `model` that another tier serves).
        "intelligence": {"tier": str(thread.get("tier") or "standard")},
        "requirements": policy.requirements(sandbox) if not compaction else
        {"tools": [], "permissions": [], "workspace": "read_only"},
    }
    if compaction:
        node["title"] = "Compaction of the conversation"
    if transcript:
        node["x-rein-transcript"] = [dict(m) for m in transcript]
    if thread.get("profile"):
        # The profile narrows the sandbox's tools further: what it does not grant is
        # dropped from the turn, not a reason to refuse the turn (PROFILE002).
        node["x-rein-profile"] = thread["profile"]
        reqs = node["requirements"]
        reqs["tools"] = [{"name": t, "optional": True} for t in reqs["tools"]]
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": f"rein/threads/{turn_id}",
            "title": "Conversation turn", "version": "1.0.0", "requires_conformance": 1,
            "objective": "Answer the user, using the tools when the request needs them.",
            "entrypoints": [NODE], "nodes": {NODE: node},
            "x-rein": {"thread": thread_id, "turn": turn_id, "sandbox": dict(sandbox),
                       "approvalPolicy": approval_policy}}


def write(workspace: Path, thread_id: str, turn_id: str, data: Mapping[str, Any]) -> Path:
    """Write the turn's graph under ``.rein/threads/<thread>/`` (kept: the run binds to it)."""
    folder = workspace / ".rein" / "threads" / thread_id
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{turn_id}.agraph.yaml"
    path.write_text(yaml_text.dump(dict(data)), encoding="utf-8")
    return path
