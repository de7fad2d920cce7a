"""Small graph documents for plan tests, built as data."""

from __future__ import annotations

from typing import Any


def task(title: str = "a task", **extra: Any) -> dict[str, Any]:
    """A task node with the required fields and whatever else is given."""
    return {"type": "task", "title": title, "description": title, **extra}


def graph(nodes: dict[str, Any], *, entrypoints: list[str] | None = None,
          **extra: Any) -> dict[str, Any]:
    """A graph document at level 3 (so that level notices stay out of the way unless a test
    asks for them); entrypoints default to the first node."""
    return {
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "test/graph", "title": "t",
        "objective": "o", "requires_conformance": 3,
        "entrypoints": entrypoints or [next(iter(nodes))], "nodes": nodes, **extra,
    }


def fragment(nodes: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"title": "body", "entrypoints": [next(iter(nodes))], "nodes": nodes, **extra}


def retry(n: int) -> dict[str, Any]:
    return {"retry": {"max_attempts": n}}
