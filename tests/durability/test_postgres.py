"""The same run through the CLI on PostgreSQL (``--store``) gives the SQLite record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.durability import graphs
from tests.durability.support import normalized, record, rein, runs, write_graph
from tests.store.conftest import pg_url  # noqa: F401 - the fixture


def test_run_resume_and_inspect_on_postgresql(tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    graph, answers = graphs.chain()
    lite, pg = tmp_path / "lite", tmp_path / "pg"
    lite.mkdir()
    pg.mkdir()
    digest = write_graph(lite, graph, answers)
    write_graph(pg, graph, answers)
    assert rein(lite, "run", "g.agraph.yaml", "--approve", digest).returncode == 0
    [row] = runs(lite)
    expected = record(lite, row["run_id"])

    done = rein(pg, "run", "g.agraph.yaml", "--approve", digest, "--store", pg_url, "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["status"] == "succeeded"
    assert not (pg / ".rein" / "rein.db").exists()  # nothing went to SQLite
    listed = json.loads(rein(pg, "runs", "list", "--json", "--store", pg_url).stdout)
    assert [r["run_id"] for r in listed["runs"]] == [summary["run_id"]]
    got = json.loads(rein(pg, "runs", "record", summary["run_id"], "--store", pg_url).stdout)
    assert normalized(got) == normalized(expected)
    again = rein(pg, "resume", summary["run_id"], "--store", pg_url)
    assert again.returncode == 0, again.stderr


def test_the_store_url_can_come_from_rein_toml(tmp_path: Path, pg_url: str,  # noqa: F811
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from rein.config.trusting import trust_project

    graph, answers = graphs.gated()
    digest = write_graph(tmp_path, graph, answers)
    (tmp_path / "rein.toml").write_text(f'[store]\nurl = "{pg_url}"\n')
    # A project file's store URL counts only once the user trusts the file.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "user-config"))
    trust_project(tmp_path)
    assert rein(tmp_path, "run", "g.agraph.yaml", "--approve", digest).returncode == 3
    listed = json.loads(rein(tmp_path, "approvals", "list", "--json").stdout)
    [ask] = listed["approvals"]
    done = rein(tmp_path, "approvals", "accept", ask["approval_id"])
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / ".rein" / "rein.db").exists()
