"""Two workspaces sharing one store: each acts only on its own runs.

"The run" that ``rein next`` and ``rein submit`` pick is a run of the workspace they run
in; a run of another workspace named with ``--run`` (or by an envelope's token, or by
``rein resume``, or by an approval that would continue it) is refused with RUN010 before
anything is recorded, and a run's checks run in its own workspace. Every command runs as
its own process in its own directory, on a SQLite file both name and on PostgreSQL.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.formats.canonical import ags_digest
from tests.durability.support import rein_argv
from tests.store.conftest import pg_url, store_url  # noqa: F401 - the fixtures

# The check passes only where a file named `marker` exists: in workspace A, not in B.
MARKED: dict[str, Any] = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/marked", "title": "marked",
    "objective": "a check that depends on the workspace's files", "entrypoints": ["t"],
    "nodes": {"t": {
        "type": "task", "title": "t", "description": "Do t.",
        "requirements": {"workspace": "read_write"},
        "failure": {"retry": {"max_attempts": 2, "retry_on": ["criteria_failed"],
                              "backoff": "none"}, "on_exhausted": "fail"},
        "success": {"criteria": [{"id": "marker", "kind": "command",
                                  "description": "the workspace has a marker",
                                  "run": "test -f marker", "timeout_seconds": 30}]},
    }},
}
GATED: dict[str, Any] = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/gated", "title": "gated",
    "objective": "a person approves", "entrypoints": ["review"],
    "nodes": {"review": {"type": "gate", "title": "review", "description": "Approve.",
                         "gate": {"mode": "approve", "prompt": "Go?"}}},
}


class Cli:
    """rein as a separate process in ``root``, on the store both workspaces share."""

    def __init__(self, root: Path, store: str) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root, self.store = root, store
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("REIN_")}
        self.env.update(REIN_ALLOW_MODEL_REQUESTS="0", HOME=str(root / "home"))
        self.env.pop("XDG_CONFIG_HOME", None)

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(rein_argv(*args, "--store", self.store), cwd=self.root,
                              env=self.env, capture_output=True, text=True, timeout=120,
                              check=False)

    def json(self, *args: str) -> tuple[int, Any]:
        done = self(*args, "--json")
        return done.returncode, json.loads(done.stdout)

    def start(self, graph: dict[str, Any]) -> str:
        (self.root / "g.agraph.yaml").write_text(yaml.safe_dump(graph, sort_keys=False))
        done = self("run", "g.agraph.yaml", "--approve", ags_digest(graph), "--json")
        assert done.returncode == 3, done.stderr
        return str(json.loads(done.stdout.splitlines()[-1])["run_id"])  # the summary line

    def inbox(self, envelope: dict[str, Any]) -> None:
        (self.root / ".rein").mkdir(exist_ok=True)
        (self.root / ".rein" / "inbox.json").write_text(json.dumps(envelope))

    def events(self, run_id: str) -> list[str]:
        out = self("runs", "events", run_id, "--json").stdout
        return [e["type"] for e in map(json.loads, out.splitlines()) if "type" in e]


@pytest.mark.timeout(300)
def test_a_workspace_never_takes_up_another_workspaces_run(tmp_path: Path,
                                                           store_url: str) -> None:  # noqa: F811
    a, b = Cli(tmp_path / "a", store_url), Cli(tmp_path / "b", store_url)
    (a.root / "marker").write_text("A's file, not B's\n")
    run_id = b.start(MARKED)
    code, shown = b.json("next")
    assert (code, shown["status"], shown["run_id"]) == (0, "instruction", run_id)

    # A has no run: it is not handed B's instruction, and is told where the others are.
    code, got = a.json("next")
    assert (code, got["error"]["code"]) == (1, "STORE404"), got
    assert "belong to other workspaces" in got["error"]["hint"]
    # B's envelope submitted in A is refused before anything is recorded.
    a.inbox(shown["example"])
    code, refused = a.json("submit")
    assert (code, refused["status"], refused["error"]["code"]) == (4, "refused", "RUN010")
    assert str(b.root.resolve()) in refused["error"]["message"]
    assert "driver/answered" not in b.events(run_id)
    # Naming B's run from A is refused as well: reading it is not, acting on it is.
    code, named = a.json("next", "--run", run_id)
    assert (code, named["error"]["code"]) == (4, "RUN010")
    resumed = a("resume", run_id)
    assert resumed.returncode == 4 and "RUN010" in resumed.stderr
    assert a("runs", "show", run_id).returncode == 0

    # In B the same envelope is taken, and its check runs in B, which has no marker.
    b.inbox(shown["example"])
    code, retry = b.json("submit")
    assert (code, retry["status"], retry["attempt"]) == (0, "instruction", 2), retry
    assert [c["id"] for c in retry["feedback"]["failed_criteria"]] == ["marker"]

    # The store's runs are listed everywhere, each with the workspace it belongs to.
    code, listed = a.json("runs", "list")
    [row] = listed["runs"]
    assert row["workspace"]["path"] == str(b.root.resolve())
    assert row["workspace"]["id"].startswith("ws-") and row["this_workspace"] is False
    code, mine = b.json("runs", "list")
    assert mine["runs"][0]["this_workspace"] is True


@pytest.mark.timeout(300)
def test_each_workspace_is_handed_its_own_instruction(tmp_path: Path,
                                                     store_url: str) -> None:  # noqa: F811
    a, b = Cli(tmp_path / "a", store_url), Cli(tmp_path / "b", store_url)
    in_b = b.start(MARKED)
    in_a = a.start(MARKED)  # newer, and its instruction was handed out later
    for cli, own in ((a, in_a), (b, in_b)):
        code, shown = cli.json("next")
        assert (code, shown["run_id"]) == (0, own)
        assert "also_pending" not in shown  # the other workspace's turn is not in line here
    # A copy of B (its .rein/ included) is a workspace of its own, with no run yet.
    import shutil

    shutil.copytree(b.root, tmp_path / "copy", symlinks=True)
    code, got = Cli(tmp_path / "copy", store_url).json("next")
    assert (code, got["error"]["code"]) == (1, "STORE404"), got


@pytest.mark.timeout(300)
def test_an_answer_that_would_continue_another_workspaces_run_is_not_recorded(
        tmp_path: Path, store_url: str) -> None:  # noqa: F811
    a, b = Cli(tmp_path / "a", store_url), Cli(tmp_path / "b", store_url)
    b.start(GATED)
    code, queue = a.json("approvals", "list")  # the queue of the store, B's entry in it
    assert code == 0
    [approval] = queue["approvals"]
    accepted = a("approvals", "accept", approval["approval_id"])
    assert accepted.returncode == 4 and "RUN010" in accepted.stderr, accepted.stderr
    assert "was not recorded" in accepted.stderr
    code, still = a.json("approvals", "list")
    assert (code, [x["status"] for x in still["approvals"]]) == (0, ["pending"])
    done = b("approvals", "accept", approval["approval_id"])
    assert done.returncode == 0, done.stderr


def test_a_run_stored_before_runs_had_a_workspace_is_taken_only_when_named(
        tmp_path: Path, store_url: str) -> None:  # noqa: F811
    """It belongs to no workspace of a shared store: no implicit pick takes it, the hint
    says how to name it, and named it is read as before."""
    from rein.core.ids import RunId
    from rein.core.states import RunStatus
    from rein.store.base import RunRow
    from rein.store.open import open_store

    store = open_store(tmp_path, url=store_url)
    try:
        store.create_run(RunRow(run_id=RunId("run-old"), graph_id="old", graph_path="g.yaml",
                                graph_digest="sha256-x=", status=RunStatus.WAITING,
                                started_at="2026-01-01T00:00:00Z"),
                         event_type="run/started", payload={})
    finally:
        store.close()
    a = Cli(tmp_path / "a", store_url)
    code, got = a.json("next")
    assert (code, got["error"]["code"]) == (1, "STORE404")
    assert "1 run(s) were stored before runs recorded their workspace" in got["error"]["hint"]
    code, named = a.json("next", "--run", "run-old")
    assert (code, named["status"], named["run_id"]) == (3, "waiting", "run-old"), named
