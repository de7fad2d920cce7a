"""The OpenTelemetry GenAI semantic conventions, as rein's events fill them.

A model call is a span named ``chat <model>`` (``gen_ai.operation.name = "chat"``), from
the end of the attempt's previous step to the ``usage`` item that reports its answer, with
``gen_ai.request.model``, ``gen_ai.response.model``, ``gen_ai.usage.input_tokens`` and
``gen_ai.usage.output_tokens``. A tool call is a span named ``execute_tool <tool>``
(``gen_ai.operation.name = "execute_tool"``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
``gen_ai.tool.type``) from the model's ``tool_call`` item to its ``tool_result``. A model
worker's attempt is an agent invocation (``invoke_agent``, ``gen_ai.agent.name`` = the node
id). A conversation's runs carry ``gen_ai.conversation.id`` (the thread). Names hold no ids:
every id is an attribute.

The request model is the model the answer reports (rein's events keep the one name);
the vendor's price, when known, is ``rein.cost_usd``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

OPERATION = "gen_ai.operation.name"
CONVERSATION = "gen_ai.conversation.id"


def model_call(data: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The name and attributes of the span of the model call a ``usage`` item reports."""
    model = str(data.get("model") or "unknown")
    attributes: dict[str, Any] = {
        OPERATION: "chat",
        "gen_ai.request.model": model,
        "gen_ai.response.model": model,
        "gen_ai.usage.input_tokens": int(data.get("input_tokens") or 0),
        "gen_ai.usage.output_tokens": int(data.get("output_tokens") or 0),
    }
    if data.get("cost_usd") is not None:
        attributes["rein.cost_usd"] = float(data["cost_usd"])
    return f"chat {model}", attributes


def tool_call(data: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The name and attributes of the span of the tool call a ``tool_call`` item starts."""
    tool = str(data.get("name") or "unknown")
    return f"execute_tool {tool}", {
        OPERATION: "execute_tool", "gen_ai.tool.name": tool,
        "gen_ai.tool.call.id": str(data.get("id") or ""),
        "gen_ai.tool.type": "extension" if tool.startswith("mcp__") else "function"}


def tool_result(data: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """The attributes a ``tool_result`` item adds, and whether the call failed."""
    ok = bool(data.get("ok"))
    attributes: dict[str, Any] = {"rein.ok": ok}
    if data.get("refused"):
        attributes["rein.refused"] = True
    if data.get("hook"):
        attributes["rein.hook"] = str(data["hook"])
    return attributes, not ok


def agent(worker: str, node_id: str) -> dict[str, Any]:
    """What an attempt served by the model worker adds: it invokes an agent."""
    if worker != "model":
        return {}
    return {OPERATION: "invoke_agent", "gen_ai.agent.name": node_id}
