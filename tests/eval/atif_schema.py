"""ATIF v1.x as Harbor's models define it (closed objects, numbered steps, agent-only
fields), written from the format's documented rules: a checker for the tests. It returns
every problem found, so a test can also show that it rejects what ATIF rejects."""

from __future__ import annotations

import datetime as dt
from typing import Any

VERSIONS = {f"ATIF-v1.{n}" for n in range(9)}
ROOT = {"schema_version", "session_id", "trajectory_id", "agent", "steps", "notes",
        "final_metrics", "continued_trajectory_ref", "extra", "subagent_trajectories"}
AGENT = {"name", "version", "model_name", "tool_definitions", "extra"}
STEP = {"step_id", "timestamp", "source", "message", "model_name", "reasoning_effort",
        "reasoning_content", "tool_calls", "metrics", "observation", "is_copied_context",
        "llm_call_count", "extra"}
AGENT_ONLY = {"model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics"}
TOOL_CALL = {"tool_call_id", "function_name", "arguments", "extra"}
RESULT = {"source_call_id", "content", "subagent_trajectory_ref", "extra"}
METRICS = {"prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd",
           "prompt_token_ids", "completion_token_ids", "logprobs", "extra"}
FINAL = {"total_prompt_tokens", "total_completion_tokens", "total_cached_tokens",
         "total_cost_usd", "total_steps", "extra"}


def problems(doc: Any) -> list[str]:
    out: list[str] = []

    def closed(value: Any, allowed: set[str], where: str) -> bool:
        if not isinstance(value, dict):
            out.append(f"{where} is not an object")
            return False
        out.extend(f"{where}.{k} is not allowed" for k in sorted(set(value) - allowed))
        return True

    if not closed(doc, ROOT, "root"):
        return out
    if doc.get("schema_version", "ATIF-v1.8") not in VERSIONS:
        out.append(f"schema_version {doc.get('schema_version')!r}")
    agent = doc.get("agent")
    if agent is None:
        out.append("agent is missing")
    elif closed(agent, AGENT, "agent"):
        out += [f"agent.{k} is missing" for k in ("name", "version")
                if not isinstance(agent.get(k), str)]
    steps = doc.get("steps")
    if not isinstance(steps, list) or not steps:
        out.append("steps must be a non-empty list")
        steps = []
    for index, step in enumerate(steps, 1):
        where = f"steps[{index}]"
        if not closed(step, STEP, where):
            continue
        if step.get("step_id") != index:
            out.append(f"{where}.step_id is {step.get('step_id')}, not {index}")
        if step.get("source") not in ("system", "user", "agent"):
            out.append(f"{where}.source {step.get('source')!r}")
        if not isinstance(step.get("message"), (str, list)):
            out.append(f"{where}.message is missing")
        if step.get("source") != "agent":
            out += [f"{where}.{k} only on agent steps" for k in AGENT_ONLY if k in step]
        if "timestamp" in step:
            try:
                dt.datetime.fromisoformat(str(step["timestamp"]))
            except ValueError:
                out.append(f"{where}.timestamp {step['timestamp']!r}")
        if step.get("llm_call_count") == 0 and ("metrics" in step or
                                                "reasoning_content" in step):
            out.append(f"{where}: llm_call_count 0 with metrics")
        ids = set()
        for call in step.get("tool_calls") or []:
            if closed(call, TOOL_CALL, f"{where}.tool_calls"):
                if not isinstance(call.get("arguments"), dict):
                    out.append(f"{where}: a tool call without arguments")
                ids.add(call.get("tool_call_id"))
        if "metrics" in step:
            closed(step["metrics"], METRICS, f"{where}.metrics")
        observation = step.get("observation")
        if observation is not None and closed(observation, {"results"}, f"{where}.observation"):
            for result in observation.get("results") or []:
                if closed(result, RESULT, f"{where}.observation.results") and \
                        "source_call_id" in result and result["source_call_id"] not in ids:
                    out.append(f"{where}: source_call_id {result['source_call_id']!r} names no "
                               "tool call of the step")
    if "final_metrics" in doc:
        closed(doc["final_metrics"], FINAL, "final_metrics")
    return out
