"""rein.toml's ``[limits]`` bound every graph rein reads, and a project file only lowers them.

The loader's errors tell a person to raise ``[limits]`` in their own rein.toml: that must
change what ``rein graph validate``, ``plan``, ``digest`` and a run (its graph and its
subgraph children) accept. A cloned repository's own rein.toml cannot raise them: it
could otherwise make rein read as much of its own documents as it likes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rein.cli import main
from rein.config import load_config, loader_limits
from rein.core.states import RunStatus
from rein.formats.loader import DEFAULT_LIMITS
from rein.testing import run_graph, scripted_harness

DEPTH = DEFAULT_LIMITS.max_depth + 12  # deeper than the loader reads by default


def nested(depth: int) -> str:
    """A JSON value ``depth`` containers deep."""
    return '{"a": ' * depth + "1" + "}" * depth


def deep_graph(path: Path, *, child: str | None = None) -> Path:
    """A valid graph of one notify gate whose parameter's default nests ``DEPTH`` deep,
    or, with ``child``, whose only node runs that file as a subgraph."""
    body = ({"subgraph": {"ref": {"uri": child}}} if child else
            {"gate": {"mode": "notify", "prompt": "deep enough"}})
    node = {"type": "subgraph" if child else "gate", "title": "Only",
            "description": "The only node.", **body}
    graph = {"ags_version": "1.0", "kind": "AgenticGraph", "id": f"t/{path.stem}",
             "title": "Deep", "version": "1.0.0", "objective": "read a deep document",
             "constraints": {"max_cost_usd": 0.01},
             "params": {"deep": {"type": "object", "description": "Deep.", "required": False,
                                 "default": "@@"}},
             "nodes": {"only": node}, "edges": [], "entrypoints": ["only"]}
    text = json.dumps(graph).replace('"@@"', nested(DEPTH))
    path.write_text(text)
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A workspace (the current directory), and the user's own rein.toml beside it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    user = tmp_path / "xdg" / "rein" / "rein.toml"
    user.parent.mkdir(parents=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(tmp_path / "none" / "rein.toml"))
    monkeypatch.delenv("REIN_USER_CONFIG", raising=False)
    monkeypatch.chdir(ws)
    return {"ws": ws, "user": user, "project": ws / "rein.toml"}


def test_a_project_file_lowers_the_limits_and_cannot_raise_them(
        home: dict[str, Path]) -> None:
    home["project"].write_text("[limits]\nmax_depth = 500\nmax_alias_nodes = 10\n")
    config = load_config(home["ws"])
    assert config.limits.max_depth == DEFAULT_LIMITS.max_depth  # the raise is dropped
    assert config.limits.max_alias_nodes == 10  # the lowering holds
    assert any("limits.max_depth = 500 cannot raise 128" in n for n in config.notes)
    home["user"].write_text("[limits]\nmax_depth = 300\n")
    config = load_config(home["ws"])
    assert config.limits.max_depth == 300  # the person's own file raises it, and only it
    assert any("limits.max_depth = 500 cannot raise 300" in n for n in config.notes)


def test_without_any_file_the_defaults_hold_without_reading(home: dict[str, Path]) -> None:
    assert loader_limits(home["ws"]) is DEFAULT_LIMITS
    home["project"].write_text("[limits]\nmax_bytes = 100\n")
    assert loader_limits(home["ws"]).max_bytes == 100


def test_graph_validate_plan_and_digest_read_under_the_users_limits(
        home: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    graph = deep_graph(home["ws"] / "deep.agraph.json")
    assert main(["graph", "validate", str(graph)]) == 1
    assert "nests deeper than 128" in capsys.readouterr().out
    home["project"].write_text(f"[limits]\nmax_depth = {DEPTH + 5}\n")  # not the project's
    assert main(["graph", "validate", str(graph)]) == 1
    capsys.readouterr()
    home["user"].write_text(f"[limits]\nmax_depth = {DEPTH + 5}\n")
    assert main(["graph", "validate", str(graph)]) == 0  # the quick path
    assert main(["graph", "validate", "--strict", "--json", str(graph)]) == 0
    assert main(["graph", "plan", "--json", str(graph)]) == 0
    assert main(["graph", "digest", str(graph)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("=")  # the digest, as it prints


def test_the_loader_hint_names_the_persons_own_file(home: dict[str, Path],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    graph = deep_graph(home["ws"] / "deep.agraph.json")
    main(["graph", "validate", str(graph)])
    assert "raise [limits] max_depth in your own rein.toml" in capsys.readouterr().out


def test_a_run_and_its_child_read_under_the_users_limits(home: dict[str, Path]) -> None:
    deep_graph(home["ws"] / "child.agraph.json")
    parent = deep_graph(home["ws"] / "parent.agraph.json", child="child.agraph.json")
    with pytest.raises(Exception, match="nests deeper than 128"):
        run_graph(scripted_harness(home["ws"]), parent)
    home["user"].write_text(f"[limits]\nmax_depth = {DEPTH + 5}\n")
    harness = scripted_harness(home["ws"])
    outcome = run_graph(harness, parent)
    assert outcome.status is RunStatus.SUCCEEDED
    assert [r.status.value for r in harness.nodes(outcome.run_id)] == ["succeeded"]
    resumed = harness.resume_plan(str(outcome.run_id))  # the run's graph read again
    assert resumed.refusal is None and not resumed.changed
