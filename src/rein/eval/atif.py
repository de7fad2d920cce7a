"""Trajectories as ATIF (the Agent Trajectory Interchange Format of Harbor), so that Harbor's
tools read what a trial did.

The document follows ATIF v1.8 as Harbor's models define it: every object is closed (rein's
own data goes in ``extra``), steps are numbered 1, 2, 3… in order, and only ``agent`` steps
carry model fields. The mapping from rein's event stream:

==========================  =============================================================
the node's instruction      a ``user`` step
a model call                an ``agent`` step: its text, its tool calls (rein's call ids),
                            the results of those calls as ``observation.results`` (each
                            ``source_call_id`` one of the step's calls), and the call's usage
                            as ``metrics``
work done without a model   an ``agent`` step with ``llm_call_count: 0`` and no metrics (the
                            oracle's script, a command worker's run, nop)
the configuration, the run  ``agent.extra`` and the root ``extra``
==========================  =============================================================
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.core.version import VERSION

if TYPE_CHECKING:
    from rein.engine.service import Harness

SCHEMA_VERSION = "ATIF-v1.8"


def trajectory(events: Iterable[Any], *, run_id: str, instruction: str, configuration: str,
               model: str | None = None) -> dict[str, Any]:
    """The ATIF document of one run's events (items in order)."""
    steps: list[dict[str, Any]] = [{"step_id": 1, "source": "user", "message": instruction,
                                    "extra": {"rein": "the node's instruction"}}]
    current: dict[str, Any] | None = None
    totals: dict[str, Any] = {"prompt": 0, "completion": 0, "cost": 0.0, "cost_known": True,
                              "calls": 0}
    models: set[str] = set()
    for event in events:
        if event.type != "item":
            continue
        kind, data = event.payload.get("kind"), dict(event.payload.get("data") or {})
        stamp = _stamp(getattr(event, "at", None))
        if kind == "usage":
            current = _agent_step(len(steps) + 1, stamp)
            metrics: dict[str, Any] = {"prompt_tokens": int(data.get("input_tokens") or 0),
                                       "completion_tokens": int(data.get("output_tokens")
                                                                or 0)}
            if data.get("cost_usd") is not None:
                metrics["cost_usd"] = float(data["cost_usd"])
                totals["cost"] += float(data["cost_usd"])
            else:
                totals["cost_known"] = False
            current["metrics"] = metrics
            current["llm_call_count"] = 1
            if data.get("model"):
                current["model_name"] = str(data["model"])
                models.add(str(data["model"]))
            totals["prompt"] += metrics["prompt_tokens"]
            totals["completion"] += metrics["completion_tokens"]
            totals["calls"] += 1
            steps.append(current)
        elif kind == "message":
            if current is None:  # work done without a model call
                current = _agent_step(len(steps) + 1, stamp)
                current["llm_call_count"] = 0
                steps.append(current)
            text = str(data.get("text") or "")
            current["message"] = (current["message"] + "\n" + text).strip() \
                if current["message"] else text
        elif kind == "reasoning" and current is not None and "metrics" in current:
            current["reasoning_content"] = str(data.get("text") or "")
        elif kind == "tool_call":
            if current is None:
                current = _agent_step(len(steps) + 1, stamp)
                current["llm_call_count"] = 0
                steps.append(current)
            arguments = data.get("arguments")
            current.setdefault("tool_calls", []).append({
                "tool_call_id": str(data.get("id")), "function_name": str(data.get("name")),
                "arguments": arguments if isinstance(arguments, dict) else {}})
        elif kind == "tool_result" and current is not None:
            ids = {c["tool_call_id"] for c in current.get("tool_calls", [])}
            result: dict[str, Any] = {"content": str(data.get("content") or "")}
            if str(data.get("id")) in ids:
                result["source_call_id"] = str(data.get("id"))
            if data.get("ok") is False:
                result["extra"] = {"ok": False, "refused": bool(data.get("refused"))}
            current.setdefault("observation", {"results": []})["results"].append(result)
    agent: dict[str, Any] = {"name": "rein", "version": VERSION,
                             "extra": {"configuration": configuration}}
    if model or len(models) == 1:
        agent["model_name"] = model or next(iter(models))
    final: dict[str, Any] = {"total_prompt_tokens": totals["prompt"],
                             "total_completion_tokens": totals["completion"],
                             "total_steps": len(steps)}
    if totals["cost_known"] and totals["calls"]:
        final["total_cost_usd"] = round(float(totals["cost"]), 6)
    return {"schema_version": SCHEMA_VERSION, "session_id": run_id, "agent": agent,
            "steps": steps, "final_metrics": final,
            "extra": {"rein_run_id": run_id, "configuration": configuration}}


def _agent_step(step_id: int, stamp: str | None) -> dict[str, Any]:
    step: dict[str, Any] = {"step_id": step_id, "source": "agent", "message": ""}
    if stamp:
        step["timestamp"] = stamp
    return step


def _stamp(value: Any) -> str | None:
    if not value:
        return None
    text = str(value)
    return text if "T" in text else None


def write_trajectory(harness: Harness, run_id: str, path: Path, *, configuration: str,
                     instruction: str) -> Path:
    """The run's trajectory (its child runs' items included) written to ``path``."""
    events = list(harness.events(run_id))
    for child in harness.child_runs(run_id):
        events += harness.events(child.run_id)
    document = trajectory(events, run_id=run_id, instruction=instruction,
                          configuration=configuration)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def script_trajectory(*, trial: str, configuration: str, instruction: str,
                      output: str) -> dict[str, Any]:
    """The trajectory of a trial whose work was a script (the oracle) or nothing (nop)."""
    message = output if output else f"{configuration}: nothing done"
    return {"schema_version": SCHEMA_VERSION, "session_id": trial,
            "agent": {"name": "rein", "version": VERSION,
                      "extra": {"configuration": configuration}},
            "steps": [{"step_id": 1, "source": "user", "message": instruction},
                      {"step_id": 2, "source": "agent", "message": message,
                       "llm_call_count": 0}],
            "final_metrics": {"total_prompt_tokens": 0, "total_completion_tokens": 0,
                              "total_steps": 2},
            "extra": {"trial": trial, "configuration": configuration}}


def first_instruction(graph: Mapping[str, Any]) -> str:
    """The first entry node's description, the instruction a trajectory opens with."""
    nodes = graph.get("nodes") or {}
    for entry in graph.get("entrypoints") or []:
        node = nodes.get(entry) or {}
        if node.get("description"):
            return str(node["description"])
    return str(graph.get("objective") or graph.get("title") or "")


__all__ = ["SCHEMA_VERSION", "first_instruction", "script_trajectory", "trajectory",
           "write_trajectory"]
