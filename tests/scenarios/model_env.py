"""A workspace for driving model and command workers through ``rein run``: an isolated
configuration, a ``rein.toml``, small graphs, and the store to read events back from."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.store.sqlite import SQLiteStore
from tests.scenarios.harness import Scenario


def isolate(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No managed or user rein.toml from this machine takes part."""
    monkeypatch.setenv("HOME", str(root / ".home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(root / ".home" / ".config"))
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(root / ".etc" / "rein.toml"))
    monkeypatch.delenv("REIN_USER_CONFIG", raising=False)


def task(title: str, *, tools: Iterable[str], permissions: Iterable[str],
         outputs: Mapping[str, str], tier: str = "standard", write: bool = True,
         **extra: Any) -> dict[str, Any]:
    """A task node whose outputs are strings."""
    node: dict[str, Any] = {
        "type": "task", "title": title, "description": title + ".",
        "outputs": {k: {"type": "string", "description": v} for k, v in outputs.items()},
        "intelligence": {"tier": tier},
        "requirements": {"tools": list(tools), "permissions": list(permissions),
                         "workspace": "read_write" if write else "read_only"},
    }
    node.update(extra)
    return node


def graph(graph_id: str, nodes: Mapping[str, Any], entry: str) -> dict[str, Any]:
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": f"rein/tests/{graph_id}",
            "title": graph_id, "version": "1.0.0", "requires_conformance": 1,
            "objective": f"Test graph {graph_id}.", "entrypoints": [entry],
            "nodes": dict(nodes)}


class ModelScenario(Scenario):
    """A :class:`Scenario` with rein.toml, graphs and the event log at hand."""

    def toml(self, text: str) -> None:
        self.file("rein.toml", text)

    def graph(self, name: str, data: Mapping[str, Any]) -> str:
        self.file(name, yaml.safe_dump(dict(data), sort_keys=False))
        return name

    def turns(self, name: str, turns: list[Any]) -> str:
        self.file(name, json.dumps(turns))
        return name

    def events(self, run_id: str | None = None) -> list[Any]:
        store = SQLiteStore.open(self.root, create=False)
        assert store is not None
        try:
            return store.events(run_id or self.last_run())
        finally:
            store.close()

    def items(self, kind: str | None = None, run_id: str | None = None) -> list[dict[str, Any]]:
        """The data of the run's worker items (of ``kind``), in order."""
        return [dict(e.payload["data"]) for e in self.events(run_id)
                if e.type == "item" and (kind is None or e.payload["kind"] == kind)]


@pytest.fixture(name="ms")
def ms_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> ModelScenario:
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    isolate(tmp_path, monkeypatch)
    return ModelScenario(tmp_path, monkeypatch, capsys)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """One scripted model turn that calls one tool."""
    return {"tool_calls": [{"name": name, "arguments": arguments}],
            "usage": {"input": 100, "output": 10}}
