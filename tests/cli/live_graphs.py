"""A small graph for the live-view tests: a retried task, a map and a loop, run by the
scripted worker (no model), so that every line the view shows is known in advance."""

from __future__ import annotations

from typing import Any

RETRIED: dict[str, Any] = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/live", "title": "live view",
    "objective": "Show a run while it advances.", "requires_conformance": 3,
    "constraints": {"max_cost_usd": 1.0, "max_node_executions": 40},
    "params": {"items": {"type": "array", "description": "What to sort.",
                         "default": ["docs/a", "tests/b", "c"]}},
    "entrypoints": ["plan"],
    "nodes": {
        "plan": {"title": "Plan", "description": "Write the plan."},
        "build": {"title": "Build", "description": "Build it.", "depends_on": ["plan"],
                  "failure": {"retry": {"max_attempts": 3, "backoff": "fixed",
                                        "initial_delay_seconds": 0,
                                        "retry_on": ["criteria_failed"],
                                        "feedback": "failure_summary"}}},
        "sort": {"type": "map", "title": "Sort", "description": "Sort each item.",
                 "depends_on": ["build"],
                 "map": {"over": "params.items", "as": "entry", "max_items": 10, "max_parallel": 2,
                         "body": {"title": "One item", "entrypoints": ["bucket"], "nodes": {
                             "bucket": {"type": "decision", "title": "Bucket",
                                        "description": "Docs or not.",
                                        "decision": {"evaluator": "expression", "branches": [
                                            {"label": "docs", "description": "docs",
                                             "when": 'startswith(entry, "docs/")'},
                                            {"label": "other", "description": "other",
                                             "when": "true"}],
                                            "default_branch": "other"}}}}}},
        "count": {"type": "loop", "title": "Count", "description": "Three passes.",
                  "depends_on": ["build"],
                  "loop": {"mode": "repeat", "max_iterations": 3,
                           "body": {"title": "Tick", "entrypoints": ["tick"], "nodes": {
                               "tick": {"type": "decision", "title": "Tick",
                                        "description": "A tick.",
                                        "decision": {"evaluator": "expression", "branches": [
                                            {"label": "tick", "description": "t",
                                             "when": "true"}],
                                            "default_branch": "tick"}}}}}},
    },
}

ANSWERS: dict[str, Any] = {"nodes": {
    "plan": [{"outputs": {}, "usage": {"input_tokens": 100, "output_tokens": 50,
                                       "cost_usd": 0.01}}],
    "build": [{"failure": "criteria_failed", "message": "tests failed: 2 of 10",
               "usage": {"input_tokens": 300, "output_tokens": 100, "cost_usd": 0.02}},
              {"outputs": {}, "usage": {"input_tokens": 300, "output_tokens": 100,
                                        "cost_usd": 0.02}}],
}}

FINAL = {"plan": "succeeded", "build": "succeeded", "sort": "succeeded", "count": "succeeded"}
