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
from support import EXAMPLES, account_files

from rein import config
from rein.cli import main
from rein.cli.quick import next as quick
from rein.config import load_config
from rein.core.config_rules import MAX_CONFIG_BYTES
from rein.core.states import NodeStatus, RunStatus
from rein.engine.service import Harness
from rein.errors import ExitCode, ReinError
from rein.formats import redaction
from rein.store import sqlite as sqlite_store
from rein.store import sqlite_errors, workspace_id
from rein.workers.driver import answers, glance, glance_config
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
    (ws / "rein.toml").write_text("[store]\nurl = 'other.db'\n")  # another store's answer
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


# ---------------------------------------------------------------- beside a rein.toml

# A project driven by an IDE agent, as its rein.toml may be: nothing in it changes where
# the answer is read from, and rein.config refuses none of it.
DRIVER_TOML = """\
# rein.toml of a project an IDE agent drives
[driver]
enabled = true
tiers = ["standard", "deep"]   # the driver serves both
max_instruction_bytes = 65536

[tiers.standard]
provider = "openai"
model = "gpt-4.1-mini"
context_tokens = 128_000

[routing]
allow_route_up = true

[policy]
shell = "ask"
network = "deny"
tools = [
  "read",
  "edit",   # no shell tools
]
max_turns = 20
max_cost_usd = 2.5
project_hooks = false

[limits]            # the smallest there are: the answer reads no document
max_bytes = 1
max_depth = 1

[profiles]
plugins = ["vendor/agents"]

[telemetry]
otel = false

[usage]
agent_logs = ["~/agent-records"]

[executor]
kind = "in_process"
rate_limit = { limit = 50, period = 60 }
"""

# Files by place (see `put`), which leave the answer to the cold read.
SETTLED: dict[str, dict[str, str]] = {
    "an empty file": {"project": ""},
    "an empty [store]": {"project": "[store]\n"},
    "a driver's project file": {"project": DRIVER_TOML},
    "TOML only tomllib reads": {
        "project": '[tiers]\nstandard = { provider = "openai", model = "m" }\n'
                   '[x-notes]\nwhen = 2026-01-01\ntext = """two\nlines"""\nesc = "a\\tb"\n'},
    "a misspelt [store]": {"project": '[stor]\nurl = "postgresql://nobody@nowhere/db"\n'},
    "what only the account's files say": {
        "project": '[approver]\nid = "mallory"\n[mcp]\ntrusted = ["sh"]\n'
                   '[dev]\nplan_roles = ["intern"]\n'},
    "the user's providers and policy": {
        "user": '[providers.openai]\nkind = "openai"\napi_key_env = "MY_OPENAI_KEY"\n'
                '[policy]\nshell = "deny"\n[usage.prices."m"]\ninput = 1.25\n',
        "project": '[policy]\nshell = "allow"\n'},
    "a managed file": {
        "managed": '[policy]\nproject_trust = false\nmax_turns = 10\n'
                   '[mcp]\ntrusted = ["mcp-server-time"]\n',
        "project": "[store]\n"},
    "the account's approver files": {
        "account-managed": '[approver]\nid = "ana@example.org"\n'
                           'roles = ["release-manager", "maintainer"]\n',
        "account-user": '[approver]\nroles = ["maintainer"]\nsigning_key = "~/.ssh/id"\n'
                        'answer_when_confined = false\n[dev]\nplan_roles = ["maintainer"]\n'},
}


@pytest.fixture
def account(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The account's own approver files (managed, user), where both reads look for them."""
    managed, user = account_files(monkeypatch, tmp_path)
    monkeypatch.setattr(glance, "authority_files",
                        lambda: [("managed", str(managed)), ("user", str(user))])
    return managed, user


def put(ws: Path, files: dict[str, str] | dict[str, bytes]) -> list[Path]:
    """Write ``files`` where rein reads them (the places the fixtures name): their paths."""
    tmp = ws.parent
    places = {"project": ws / "rein.toml", "user": tmp / "user.toml",
              "managed": tmp / "etc" / "rein.toml",
              "account-managed": tmp / "account" / "etc-rein.toml",
              "account-user": tmp / "account" / "home" / ".config" / "rein" / "rein.toml"}
    written = []
    for place, text in files.items():
        path = places[place]
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        written.append(path)
    return written


@pytest.mark.parametrize("files", SETTLED.values(), ids=SETTLED)
def test_a_rein_toml_that_leaves_the_answer_alone(ws: Path, account: tuple[Path, Path],
                                                  files: dict[str, str],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Answered by the cold read in every state it answers, equal to the Harness's, which
    reads and merges the files (the runs advance without them: they are about `next`)."""
    def beside() -> dict[str, Any]:
        written = put(ws, files)
        try:
            read_there = {path for _scope, path in load_config(ws).files}
            assert {str(p) for p in written} <= read_there  # where rein reads them
            return same(ws)
        finally:
            for path in written:
                path.unlink()

    run_id = start(capsys)
    assert beside()["status"] == "instruction"
    submit(ws, same(ws), capsys)
    assert beside()["for"] == "approval"
    assert main(["runs", "cancel", run_id]) == 1
    assert beside()["reason"] == "cancelled"
    sql(ws, "UPDATE runs SET status = 'succeeded'")
    assert beside()["status"] == "done"


# Project files the cold read leaves to the Harness, and what the Harness makes of them:
# an error code, or None when it answers (the cold read cannot prove that answer its own).
TO_THE_HARNESS: dict[str, tuple[str | bytes, str | None]] = {
    "a store of its own": ('[store]\nurl = "other.db"\n', "STORE404"),
    "the embedded store by its path": ('[store]\nurl = ".rein/rein.db"\n', None),
    "a typo in [policy]": ('[policy]\nshel = "ask"\n', "CFG004"),
    "a decision [policy] does not know": ('[policy]\nshell = "sometimes"\n', "CFG004"),
    "[policy] that is no table": ('policy = "strict"\n', "CFG004"),
    "a limit of zero": ("[limits]\nmax_bytes = 0\n", "CFG004"),
    "[limits] that is no table": ("limits = 5\n", "CFG004"),
    "an [approver] key it does not know": ('[approver]\nname = "ana"\n', "CFG004"),
    "plan roles that are no list": ('[dev]\nplan_roles = "lead"\n', "CFG004"),
    "an [mcp] trusted that is no list": ('[mcp]\ntrusted = "mcp-server-time"\n', "CFG004"),
    "not TOML": ("[policy\n", "CFG003"),
    "TOML only tomllib refuses": ('[x]\nwhen = 2026-02-30\n', "CFG003"),
    "an integer JSON cannot carry": ("[x]\nn = 9007199254740993\n", "CFG003"),
    "an infinity": ("[x]\nn = inf\n", "CFG003"),
    "a number too large for a float": ("[x]\nn = 1e400\n", "CFG003"),
    "not UTF-8": (b"[x]\nn = '\xff'\n", "CFG002"),
    "larger than a rein.toml may be": ("# " + "x" * MAX_CONFIG_BYTES + "\n", "CFG002"),
    "a hook": ('[hooks.lint]\ncommand = ["true"]\n', None),
    "a command worker": ('[workers.command.x]\nargv = ["x"]\n', None),
    "the project's own provider": ('[providers.openai]\nkind = "openai"\n', None),
    "the project's own prices": ('[usage.prices."m"]\ninput = 1.0\n', None),
    "a value at the top": ('name = "x"\n', None),
}


def _left_to_the_harness(ws: Path, harness_says: str | None) -> None:
    """The cold read declines; the Harness answers (the instruction) or refuses with the
    code ``harness_says``."""
    assert read(str(ws)) is None
    if harness_says is None:
        assert harness(ws)["status"] == "instruction"
    else:
        with pytest.raises(ReinError) as info:
            harness(ws)
        assert info.value.code == harness_says


@pytest.mark.parametrize("text,harness_says", TO_THE_HARNESS.values(), ids=TO_THE_HARNESS)
def test_a_rein_toml_it_leaves_to_the_harness(ws: Path, text: str | bytes,
                                              harness_says: str | None,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    start(capsys)
    put(ws, {"project": text})
    _left_to_the_harness(ws, harness_says)


def test_a_store_url_of_postgresql_is_the_harnesss(ws: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    start(capsys)
    put(ws, {"project": '[store]\nurl = "postgresql://nobody@127.0.0.1:1/none"\n'})
    assert read(str(ws)) is None  # the Harness reads that store (no server: its error)


@pytest.mark.parametrize("place,text,harness_says", [
    ("user", '[policy]\nmax_turns = -1\n', "CFG004"),
    ("managed", '[limits]\nmax_depth = "deep"\n', "CFG004"),
    ("user", '[workers.command.claude]\nargv = ["claude", "-p", "{prompt}"]\n', None),
    ("account-user", '[approver]\nid = ""\n', "CFG004"),
    ("account-managed", "[approver\n", "CFG003"),
    ("account-user", '[approver]\nid = "ana"\n[hooks.x]\ncommand = "true"\n', None),
])
def test_the_users_and_the_accounts_files_are_held_to_the_same(
        ws: Path, account: tuple[Path, Path], place: str, text: str,
        harness_says: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    start(capsys)
    put(ws, {place: text})
    _left_to_the_harness(ws, harness_says)


def test_a_rein_toml_that_is_no_file_is_the_harnesss(ws: Path,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    start(capsys)
    (ws / "rein.toml").mkdir()
    assert read(str(ws)) is None
    with pytest.raises(ReinError) as info:
        harness(ws)
    assert info.value.code == "CFG002"


def test_it_knows_every_section_rein_knows() -> None:
    # A section rein.config comes to know is classified here before a file holding it is
    # answered beside: until then it would pass for one rein does not read.
    assert set(glance_config.SECTIONS) == config.KNOWN_SECTIONS
