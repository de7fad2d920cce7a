"""Graphs for the live-page tests: a map whose items start only after a gate is answered."""

from __future__ import annotations

from typing import Any

DECIDE = {"evaluator": "expression", "default_branch": "x",
          "branches": [{"label": "x", "when": "true", "description": "x"}]}

MAPPED: dict[str, Any] = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/web-map", "title": "mapped",
    "objective": "test", "requires_conformance": 3, "entrypoints": ["go"],
    "params": {"pages": {"type": "array", "description": "what to fan out over"}},
    "nodes": {
        "go": {"type": "gate", "title": "go", "description": "Approve.",
               "gate": {"mode": "approve", "prompt": "Fan out?"}},
        "fan": {"type": "map", "title": "fan", "description": "One body per page.",
                "depends_on": ["go"],
                "map": {"over": "params.pages", "as": "page", "max_items": 10,
                        "collect": {"seen": "page"},
                        "body": {"title": "one page", "entrypoints": ["label"], "nodes": {
                            "label": {"type": "decision", "title": "label",
                                      "description": "Label it.", "decision": DECIDE}}}}},
    },
}

__all__ = ["MAPPED"]
