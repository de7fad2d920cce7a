"""A recording ACP client (the SDK's client side) and a workspace for ``rein acp``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

acp = pytest.importorskip("acp", reason="agent-client-protocol is not installed "
                                        "(pip install -e '.[test]')")
from acp import schema

from tests.appserver.serve import environment, workspace  # noqa: F401

# What the client does with a permission request: an option id, or None to cancel.
Decide = Callable[[Any, list[Any]], str | None]


def agent_args(root: Path) -> tuple[str, ...]:
    return ("-c", "import sys; from rein.cli import run; sys.exit(run())",
            "acp", "--workspace", str(root))


class Recorder:
    """Every ``session/update`` as JSON, and every permission request with its answer."""

    def __init__(self, decide: Decide) -> None:
        self.decide = decide
        self.updates: list[dict[str, Any]] = []
        self.asked: list[dict[str, Any]] = []
        self.conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update.model_dump(mode="json", by_alias=True,
                                              exclude_none=True))

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> schema.RequestPermissionResponse:
        picked = self.decide(tool_call, options)
        shown = next((c.get("status") for c in self.calls()
                      if c["toolCallId"] == tool_call.tool_call_id), None)
        self.asked.append({"title": tool_call.title, "toolCallId": tool_call.tool_call_id,
                           "statusShown": shown,  # the call's status the editor shows now
                           "kind": tool_call.kind, "rawInput": tool_call.raw_input,
                           "options": [o.kind for o in options], "picked": picked})
        if picked is None:
            await self.conn.cancel(session_id=session_id)
            return schema.RequestPermissionResponse(
                outcome=schema.DeniedOutcome(outcome="cancelled"))
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=picked))

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def kinds(self) -> list[str]:
        return [u["sessionUpdate"] for u in self.updates]

    def calls(self) -> list[dict[str, Any]]:
        """Tool calls folded from their tool_call and tool_call_update messages."""
        out: dict[str, dict[str, Any]] = {}
        for u in self.updates:
            if u["sessionUpdate"] in ("tool_call", "tool_call_update"):
                out.setdefault(u["toolCallId"], {}).update(
                    {k: v for k, v in u.items() if k != "sessionUpdate"})
        return list(out.values())

    def text(self) -> str:
        return "".join(u["content"]["text"] for u in self.updates
                       if u["sessionUpdate"] == "agent_message_chunk")


def spawn(root: Path, recorder: Recorder, **env: str) -> Any:
    """``async with spawn(...) as (conn, proc)``: ``rein acp`` on ``root``."""
    # The agent's stderr goes where the test's goes (pytest shows it with a failure): the
    # SDK's default is a pipe nobody reads, which a chatty agent could fill and block on.
    return acp.spawn_agent_process(recorder, sys.executable, *agent_args(root),
                                   env={**environment(root), "PATH": "/usr/bin:/bin", **env},
                                   cwd=str(root), transport_kwargs={"stderr": None})


async def start(conn: Any, root: Path) -> str:
    init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                 client_capabilities=schema.ClientCapabilities())
    assert init.protocol_version == 1 and init.agent_capabilities.load_session
    session = await conn.new_session(cwd=str(root), mcp_servers=[])
    return str(session.session_id)
