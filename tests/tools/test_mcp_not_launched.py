"""A profile session does not start an MCP server it could use no tool of, and asks nobody
about it: the attempt runs on, and its trace says which rule denied the server's tools."""

from __future__ import annotations

import json
import sys
from typing import Any

from tests.scenarios.model_env import ModelScenario, graph, ms_fixture, task

__all__ = ["ms_fixture"]

TOML = ('[providers.script]\nkind = "scripted"\n'
        'options = { script = "turns.json", position = "conversation" }\n\n'
        '[tiers.standard]\nprovider = "script"\nmodel = "s"\n\n'
        '[policy]\ndeny_tools = ["mcp/time/**"]\n')
PROFILE = f"""\
oap: "1.0"
kind: AgentProfile
metadata:
  name: clerk
  description: Keeps the time of a project. Use for small chores.
spec:
  role:
    instructions: You keep the time of this project.
  tools:
    policy: allowlist
    allow: [read, "mcp/time/*"]
    mcp_servers:
      - name: time
        transport: stdio
        command: sh
        args: ["-c", "touch launched && exec {sys.executable} -m mcp_server_time"]
  permissions:
    default: allow
"""


def test_a_session_does_not_launch_or_ask_about_a_server_it_may_use_no_tool_of(
        ms: ModelScenario) -> None:
    ms.file("profiles/clerk.agent.yaml", PROFILE)
    ms.toml(TOML)
    ms.turns("turns.json", [{"tool_calls": [{"name": "submit_outputs",
                                             "arguments": {"summary": "done"}}],
                             "usage": {"input": 10, "output": 1}}])
    tools: list[Any] = ["file_read", {"name": "mcp/time/get_current_time", "optional": True}]
    node = task("Keep the time", tools=tools, permissions=["fs:read:**"],
                outputs={"summary": "what was done"})
    node["x-rein-profile"] = "profiles/clerk.agent.yaml"
    code, out = ms.run(ms.graph("g.agraph.yaml", graph("clerk", {"keep": node}, "keep")))
    assert code == 0, out  # no launch approval to wait for
    assert ms.record()["status"] == "succeeded"
    assert not (ms.root / "launched").exists()
    code, out = ms.rein("approvals", "list", "--json")
    assert json.loads(out)["approvals"] == []
    [note] = [n for n in ms.items("notice") if n.get("mcp_server") == "time"]
    assert note["text"] == ("MCP server 'time' not launched: no tool of it may be used "
                            "(rein's policy deny_tools denies 'mcp/time/**')")
