"""Small graphs whose nodes do real subprocess work, for the durability tests."""

from __future__ import annotations

from typing import Any


def _task(title: str, depends: list[str], check: str, **extra: Any) -> dict[str, Any]:
    node: dict[str, Any] = {
        "title": title, "description": f"{title}.",
        "requirements": {"workspace": "read_write", "permissions": [f"fs:write:{title}.txt"]},
        "success": {"criteria": [{"id": "check", "kind": "command",
                                  "description": f"{title} left its file", "run": check,
                                  "timeout_seconds": 30}]},
    }
    if depends:
        node["depends_on"] = depends
    node.update(extra)
    return node


def chain() -> tuple[dict[str, Any], dict[str, Any]]:
    """Four tasks in a row; ``c`` fails its first attempt and passes its second."""
    graph = {
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/durable-chain",
        "title": "durable chain", "objective": "survive kill -9", "requires_conformance": 3,
        "entrypoints": ["a"],
        "nodes": {
            "a": _task("a", [], "sleep 0.05; grep -q a a.txt"),
            "b": _task("b", ["a"], "sleep 0.05; grep -q b b.txt"),
            "c": _task("c", ["b"], "sleep 0.05; grep -q good c.txt",
                       failure={"retry": {"max_attempts": 2, "backoff": "none",
                                          "retry_on": ["criteria_failed"]}}),
            "d": _task("d", ["c"], "sleep 0.05; test -f d.txt"),
        },
    }
    answers = {"nodes": {
        "a": [{"outputs": {}, "files": {"a.txt": "a\n"}, "delay_seconds": 0.02}],
        "b": [{"outputs": {}, "files": {"b.txt": "b\n"}, "delay_seconds": 0.02}],
        "c": [{"outputs": {}, "files": {"c.txt": "bad\n"}, "delay_seconds": 0.02},
              {"outputs": {}, "files": {"c.txt": "good\n"}, "delay_seconds": 0.02}],
        "d": [{"outputs": {}, "files": {"d.txt": "d\n"}, "delay_seconds": 0.02}],
    }}
    return graph, answers


def gated() -> tuple[dict[str, Any], dict[str, Any]]:
    """A gate, then a task whose check appends one line per execution to ``count.log``."""
    graph = {
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/durable-gate",
        "title": "gated", "objective": "one advancer at a time", "requires_conformance": 3,
        "entrypoints": ["ok"],
        "nodes": {
            "ok": {"type": "gate", "title": "ok", "description": "Approve.",
                   "gate": {"mode": "approve", "prompt": "Go on?"}},
            "work": _task("work", ["ok"], "echo once >> count.log; sleep 0.5"),
        },
    }
    return graph, {"nodes": {"work": [{"outputs": {}}]}}


def hanging_check() -> tuple[dict[str, Any], dict[str, Any]]:
    """One task whose first check hangs (recording its pid); the next passes at once."""
    check = ("if [ -f seen ]; then exit 0; fi; touch seen; "
             "sleep 60 & echo $! > child.pid; echo $$ > check.pid; wait")
    graph = {
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/durable-orphan",
        "title": "orphan", "objective": "no orphaned group", "requires_conformance": 3,
        "entrypoints": ["t"],
        "nodes": {"t": _task("t", [], check)},
    }
    return graph, {"nodes": {"t": [{"outputs": {}}]}}


def irreversible() -> tuple[dict[str, Any], dict[str, Any]]:
    """One irreversible task whose check hangs the first time."""
    graph, answers = hanging_check()
    graph["id"] = "tests/durable-irreversible"
    graph["nodes"]["t"]["x-rein-irreversible"] = True
    return graph, answers
