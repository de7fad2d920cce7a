"""``rein next``'s cold read (rein.workers.driver.glance) gives the Harness's answer
(``status_of``) to the byte in every state it answers, and gives up (``None``) in every
other, which the Harness then answers.

Each state is a real run of the driver demo, driven through the command line; a few states
a test cannot reach quickly (a run that succeeded, failed or whose turn is answered but not
taken up) are written into the store the way the engine writes them, and both reads read
that same store.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support import EXAMPLES

from rein.cli import main
from rein.cli.quick import next as quick
from rein.core.states import NodeStatus, RunStatus
from rein.engine.service import Harness
from rein.errors import ExitCode
from rein.formats import redaction
from rein.store import sqlite as sqlite_store
from rein.store import sqlite_errors, workspace_id
from rein.workers.driver import answers, glance
from rein.workers.driver.glance import glance as read

DEMO = EXAMPLES / "driver-demo.agraph.yaml"
RIGHT = 'def greet(name):\n    """Greet."""\n    return f"Hello, {name}!"\n'


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
       ) -> Path:
    """A git repository holding the demo graph, as the working directory, with no
    ``rein.toml`` anywhere rein looks."""
    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    shutil.copyfile(DEMO, root / DEMO.name)
    monkeypatch.chdir(root)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "user.toml"))
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(tmp_path / "etc" / "rein.toml"))
    monkeypatch.setattr(glance, "authority_files", list)
    capsys.readouterr()
    return root


def start(capsys: pytest.CaptureFixture[str]) -> str:
    """A demo run waiting for the driver: its id."""
    assert main(["graph", "digest", DEMO.name]) == 0
    digest = capsys.readouterr().out.strip()
    assert main(["run", DEMO.name, "--approve", digest, "--json"]) == 3
    return str(json.loads(capsys.readouterr().out.strip().splitlines()[-1])["run_id"])


def harness(ws: Path, run_id: str | None = None) -> dict[str, Any]:
    with Harness.open(ws, create=False) as h:
        return h.driver_status(run_id)


def same(ws: Path, run_id: str | None = None) -> dict[str, Any]:
    """The answer both reads give, checked equal as printed."""
    got = read(str(ws), run_id)
    assert got is not None
    expected = harness(ws, run_id)
    assert json.dumps(got, ensure_ascii=False, indent=2) == \
        json.dumps(expected, ensure_ascii=False, indent=2)
    return got


def sql(ws: Path, statement: str, *values: object) -> None:
    db = sqlite3.connect(ws / ".rein" / "rein.db", isolation_level=None)
    try:
        db.execute(statement, values)
    finally:
        db.close()


def submit(ws: Path, status: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    (ws / "greet.py").write_text(RIGHT)
    (ws / ".rein" / "inbox.json").write_text(json.dumps(status["example"]))
    capsys.readouterr()
    assert main(["submit", "--json"]) == 3  # the gate waits
    capsys.readouterr()


def test_an_instruction(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    start(capsys)
    got = same(ws)
    assert got["status"] == "instruction" and got["exit_code"] == 0


def test_an_instruction_with_others_waiting_behind_it(ws: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    first = start(capsys)
    second = start(capsys)
    got = same(ws)
    assert got["run_id"] == first and got["also_pending"] == [f"write_module (run {second})"]
    assert same(ws, first) == got
    got = same(ws, second)  # not the current one: a wait for it
    assert got["for"] == "driver" and got["current"]["run_id"] == first


def test_a_wait_for_a_person(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    start(capsys)
    submit(ws, same(ws), capsys)
    got = same(ws)
    assert got["for"] == "approval" and got["exit_code"] == 3


def test_a_run_cancelled_and_one_that_succeeded(ws: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    run_id = start(capsys)
    assert main(["runs", "cancel", run_id]) == 1  # the run ended, cancelled
    assert same(ws)["reason"] == "cancelled"
    for graph_id in ("rein/examples/driver-demo", "rein/dev/plan"):  # a flow's run says more
        sql(ws, "UPDATE runs SET status = 'succeeded', graph_id = ?", graph_id)
        got = same(ws)
        assert got["status"] == "done" and ("next" in got) == graph_id.startswith("rein/dev/")


def test_what_it_leaves_to_the_harness(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert read(str(ws)) is None  # no store: STORE404, with its hint
    run_id = start(capsys)
    assert read(str(ws), "run-nope") is None  # RUN404, with its hint
    (ws / "rein.toml").write_text("")  # a configuration: read and checked by the Harness
    assert read(str(ws)) is None
    (ws / "rein.toml").unlink()
    same(ws)
    sql(ws, "UPDATE runs SET status = 'failed'")  # why: its nodes' and events' story
    assert read(str(ws)) is None and harness(ws)["status"] == "stopped"
    sql(ws, "UPDATE runs SET status = 'waiting'")
    sql(ws, "UPDATE driver_turns SET status = 'answered'")  # an answer not taken up
    assert read(str(ws)) is None and harness(ws)["for"] == "resume"
    sql(ws, "UPDATE driver_turns SET status = 'pending'")
    sql(ws, "UPDATE runs SET workspace_id = 'ws-0'")  # another workspace's run only
    assert read(str(ws)) is None  # STORE404, saying where the store's runs are
    assert read(str(ws), run_id) is None  # RUN010: its checks would run elsewhere
    sql(ws, "UPDATE runs SET workspace_id = NULL")  # stored before runs had a workspace
    same(ws)


def test_a_store_it_does_not_read(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    start(capsys)
    db = ws / ".rein" / "rein.db"
    damage = Path(f"{db}{sqlite_errors.DAMAGE_SUFFIX}")
    damage.write_text("{}")
    assert read(str(ws)) is None  # the Harness refuses it, and says why
    damage.unlink()
    sql(ws, "INSERT INTO schema_version (version) VALUES (?)", glance.SCHEMA_VERSION + 1)
    assert read(str(ws)) is None  # a newer rein's: refused by the Harness
    sql(ws, "DELETE FROM schema_version WHERE version > ?", glance.SCHEMA_VERSION)
    same(ws)
    identity = ws / ".rein" / "workspace.json"
    made = json.loads(identity.read_text())
    identity.write_text(json.dumps({**made, "path": "/elsewhere"}))  # moved here, or a copy
    assert read(str(ws)) is None
    identity.write_text("not json")
    assert read(str(ws)) is None


def test_a_workspace_reached_through_a_link_reads_the_same(ws: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    start(capsys)
    link = tmp_path / "link"
    link.symlink_to(ws)
    assert read(str(link)) == read(str(ws)) == harness(ws)


def test_its_constants_are_the_stores_and_the_states() -> None:
    assert glance.SCHEMA_VERSION == sqlite_store.SCHEMA_VERSION
    assert Path(glance.STORE) == sqlite_store.db_path(Path())
    assert Path(glance.IDENTITY) == workspace_id.FILE
    assert glance.DAMAGE_SUFFIX == sqlite_errors.DAMAGE_SUFFIX
    assert glance.RUN_STATUSES == {s.value for s in RunStatus}
    assert glance.NODE_STATUSES == {s.value for s in NodeStatus}
    assert glance.NODE_TERMINAL == {s.value for s in NodeStatus if s.terminal}
    assert set(answers.UNFINISHED) == {s.value for s in RunStatus if not s.terminal}
    assert (answers.EXIT_OK, answers.EXIT_FAILURE, answers.EXIT_WAITING) == \
        (ExitCode.OK, ExitCode.FAILURE, ExitCode.WAITING)
    assert quick.SECRET_PREFIX == redaction.SECRET_PREFIX
    assert set(quick.KEY_VARIABLES) == set(redaction.DEFAULT_KEY_VARIABLES.values())


@pytest.mark.parametrize("env", [{}, {"PATH": "/bin"}, {"REIN_SECRET_X": "v"},
                                 {"OPENAI_API_KEY": "sk-1234"}, {"ANTHROPIC_API_KEY": ""}])
def test_the_redaction_is_skipped_only_where_nothing_is_secret(env: dict[str, str]) -> None:
    found = bool(redaction.known_secrets(env)) or bool(
        redaction.known_secrets({k: v * 4 for k, v in env.items()}))
    assert quick.may_hold_secrets(env) == found


def test_the_places_of_the_configuration_are_pathlibs() -> None:
    from rein.core import config_places

    here = os.getcwd()
    for env in ({}, {"HOME": "/h"}, {"HOME": "", "XDG_CONFIG_HOME": "/x"},
                {"REIN_USER_CONFIG": "/u.toml", "REIN_MANAGED_CONFIG": "/m.toml"}):
        assert [(s, str(p)) for s, p in config_places.config_paths(here, env)] == \
            config_places.config_files(here, env)
    assert config_places.exists(here) and not config_places.exists(here + "/none/x")
    assert not config_places.exists("a\0b")


def test_a_wait_for_a_person_names_the_approval_a_node_waits_for(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An entry left pending by a node that has ended (a store an older rein wrote, where a
    replaced approval stayed pending) comes first in the queue; the message names the one
    the run waits for, and lists it first, in both reads."""
    run_id = start(capsys)
    submit(ws, same(ws), capsys)
    db = sqlite3.connect(ws / ".rein" / "rein.db")
    try:
        [(live, node)] = db.execute("SELECT approval_id, json_extract(request, '$.node')"
                                    " FROM approvals WHERE status = 'pending'").fetchall()
    finally:
        db.close()
    sql(ws, "INSERT INTO approvals (rowid, approval_id, run_id, key, kind, status, digest,"
            " request, created_at) SELECT 0, 'apv-left', run_id, key || '~old', kind, status,"
            " digest, json_set(request, '$.node', 'write_module', '$.prompt', 'old'),"
            " created_at FROM approvals WHERE approval_id = ?", live)
    got = same(ws)
    assert [a["approval_id"] for a in got["approvals"]] == [live, "apv-left"]
    assert got["message"].startswith(f"a person must answer gate {live} (")
    assert f"rein approvals accept {live}`" in got["message"]
    assert node != "write_module" and got["run_id"] == run_id
