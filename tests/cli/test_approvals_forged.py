"""Where approvals are signed, nothing written into the store without rein is acted on.

The attack, for real: the run store is ``.rein/rein.db`` in the workspace, which an agent's
sandbox makes writable. A process confined as agent sandboxes confine (``setpriv
--no-new-privs``, bubblewrap: no-new-privileges, the workspace writable) skips rein and
writes into SQLite with Python's ``sqlite3``: an accepted answer to the gate a run waits at,
a person's signed decline flipped to an accept, a timeout the gate never had, a run's
approved digest rewritten to a graph it wrote. Then the agent's own turn (``rein submit``,
``rein next``, confined) and a person's ``rein resume`` continue the run: the gate still
waits and nothing after it runs. A person's signed answer is acted on (the control).

Real keys and the real ``ssh-keygen`` throughout. The run is a driver run: ``draft`` (done
before the forging), then the gate ``ok`` and ``notes`` side by side, and ``ship`` after
the gate: an instruction for ``ship`` is what acting on a forged answer would hand out.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import account_files

from rein.cli import main
from tests.cli.test_approvals_signed import keypair

SSH_KEYGEN = shutil.which("ssh-keygen")
BWRAP = shutil.which("bwrap")
SETPRIV = shutil.which("setpriv")
BWRAP_ARGS = ["--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--die-with-parent"]

GRAPH = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/forged",
    "title": "forged answers", "objective": "test", "requires_conformance": 3,
    "entrypoints": ["draft"],
    "nodes": {
        "draft": {"title": "draft", "description": "Write the draft."},
        "ok": {"type": "gate", "title": "ok", "description": "Approve.",
               "depends_on": ["draft"], "gate": {"mode": "approve", "prompt": "Ship it?"}},
        "notes": {"title": "notes", "description": "Write notes.", "depends_on": ["draft"]},
        "ship": {"title": "ship", "description": "Ship it.", "depends_on": ["ok"]},
    },
}
# The agent's own graph: the same work with no gate before `ship`.
UNGATED = {**GRAPH, "nodes": {k: v for k, v in GRAPH["nodes"].items() if k != "ok"}}
UNGATED["nodes"]["ship"] = {**GRAPH["nodes"]["ship"], "depends_on": ["draft"]}


def _works(argv: Sequence[str]) -> bool:
    try:
        done = subprocess.run([*argv, "true"], capture_output=True, timeout=60, check=False)
    except OSError:
        return False
    return done.returncode == 0


SANDBOXES = {
    "setpriv": [SETPRIV or "setpriv", "--no-new-privs"],
    "bwrap": [BWRAP or "bwrap", *BWRAP_ARGS, "--"],
}
pytestmark = pytest.mark.skipif(SSH_KEYGEN is None, reason="ssh-keygen (OpenSSH) is missing")


def sandbox_param(name: str) -> Any:
    usable = _works(SANDBOXES[name])
    return pytest.param(name, marks=pytest.mark.skipif(
        not usable, reason=f"{name} is missing or cannot confine here"))


ALL_SANDBOXES = [sandbox_param("setpriv"), sandbox_param("bwrap")]

# What the agent runs: Python's sqlite3 on the store, and nothing of rein. It first shows
# that it is confined the way agent sandboxes confine.
FORGE = r"""
import json, sqlite3, sys
assert "NoNewPrivs:\t1" in open("/proc/self/status").read(), "not confined"
db = sqlite3.connect(".rein/rein.db")
for statement, values in json.loads(sys.argv[1]):
    db.execute(statement, values)
db.commit()
db.close()
print("forged")
"""


class Forged:
    """A workspace where approvals are signed (ana's key), a driver run of :data:`GRAPH`
    started by ana, and ``draft`` done: the gate waits, and so does ``notes``."""

    def __init__(self, root: Path, files: tuple[Path, Path], capsys: Any) -> None:
        self.root, self.files, self.capsys = root, files, capsys
        self.run_id = ""
        self.gate = ""

    # -- the person, in this process --------------------------------------------------

    def rein(self, *args: str) -> tuple[int, str]:
        self.capsys.readouterr()
        code = main(list(args))
        return code, self.capsys.readouterr().out

    def json(self, *args: str) -> tuple[int, dict[str, Any]]:
        code, out = self.rein(*args, "--json")
        return code, one_json(out)

    # -- the agent, in its sandbox ----------------------------------------------------

    def forge(self, sandbox: str, statement: str, values: Sequence[Any]) -> None:
        """The agent writes ``statement`` into the store, from ``sandbox``."""
        done = subprocess.run([*SANDBOXES[sandbox], sys.executable, "-c", FORGE,
                               json.dumps([[statement, list(values)]])], cwd=self.root,
                              capture_output=True, text=True, timeout=120, check=False)
        assert (done.returncode, done.stdout.strip()) == (0, "forged"), done.stderr

    def confined(self, sandbox: str, *args: str) -> tuple[int, dict[str, Any]]:
        """``rein ARGS --json`` as the agent runs it: a process of its own in ``sandbox``,
        reading the same account files as the person's (their stand-ins)."""
        managed, user = self.files
        stand_in = ("import sys; from pathlib import Path; import rein.config.files as f; "
                    f"f.authority_paths = lambda: [('managed', Path({str(managed)!r})), "
                    f"('user', Path({str(user)!r}))]; from rein.cli import main; "
                    "sys.exit(main())")
        env = {k: v for k, v in os.environ.items() if k != "REIN_SCRIPTED_ANSWERS"}
        done = subprocess.run([*SANDBOXES[sandbox], sys.executable, "-c", stand_in, *args,
                               "--json"], cwd=self.root, env=env, capture_output=True,
                              text=True, timeout=300, check=False, start_new_session=True)
        return done.returncode, one_json(done.stdout) or {"stderr": done.stderr}

    def answer_instruction(self, node: str) -> None:
        """The agent's envelope for ``node``'s pending instruction, in the inbox."""
        code, status = self.json("next")
        assert (code, status.get("status"), status.get("node")) == (0, "instruction", node), \
            status
        (self.root / ".rein" / "inbox.json").write_text(json.dumps(status["example"]))

    # -- what the store holds ---------------------------------------------------------

    def shown(self) -> dict[str, Any]:
        return self.json("approvals", "show", self.gate)[1]

    def instructed(self) -> list[str]:
        """The nodes the driver was handed an instruction for, in order."""
        code, out = self.rein("runs", "events", self.run_id, "--json")
        assert code == 0, out
        return [e["payload"]["node"] for e in map(json.loads, out.splitlines())
                if e.get("type") == "driver/instructed"]

    def read(self, query: str, *values: Any) -> Any:
        with sqlite3.connect(self.root / ".rein" / "rein.db") as db:
            return db.execute(query, values).fetchone()


def one_json(out: str) -> dict[str, Any]:
    """The one JSON object a command printed (the last line of a stream of them)."""
    if not out.strip():
        return {}
    try:
        return dict(json.loads(out))
    except json.JSONDecodeError:
        return dict(json.loads(out.strip().splitlines()[-1]))


ACCEPT = ("UPDATE approvals SET status = 'accepted', answer = ?, answered_at = created_at "
          "WHERE approval_id = ?")
CANCEL = ("UPDATE approvals SET status = 'cancelled', answer = ?, answered_at = created_at "
          "WHERE approval_id = ?")
REBIND = "UPDATE runs SET graph_path = ?, graph_digest = ?, binding = ? WHERE run_id = ?"
RUN_COLUMNS = ("parent_run_id, parent_node_key, graph_id, graph_path, graph_digest, status, "
               "started_at, finished_at, binding, summary, created")
COPY_RUN = (f"INSERT INTO runs (run_id, {RUN_COLUMNS}) SELECT 'run-mine', {RUN_COLUMNS} "
            "FROM runs WHERE run_id = ?")


@pytest.fixture
def forged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Forged:
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(tmp_path / "no-managed.toml"))
    monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "no-user.toml"))
    key = keypair(tmp_path / "keys", "ana")
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"ana {Path(f'{key}.pub').read_text().strip()}\n")
    files = account_files(monkeypatch, tmp_path / "account")
    files[1].parent.mkdir(parents=True)
    files[1].write_text(f'[approver]\nid = "ana"\nallowed_signers = "{allowed}"\n'
                        f'signing_key = "{key}"\n')
    root = tmp_path / "ws"
    root.mkdir()
    monkeypatch.chdir(root)
    (root / "g.agraph.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    f = Forged(root, files, capsys)
    code, digest = f.rein("graph", "digest", "g.agraph.yaml")
    assert code == 0
    code, started = f.json("run", "g.agraph.yaml", "--approve", digest.strip())
    assert code == 3, started
    f.run_id = started["run_id"]
    f.answer_instruction("draft")
    code, out = f.json("submit")
    assert code == 0, out  # the next instruction (notes); the gate waits beside it
    [gate] = [a for a in f.json("approvals", "list")[1]["approvals"]]
    f.gate = gate["approval_id"]
    f.answer_instruction("notes")  # the agent's next turn, submitted after the forging
    return f


def still_waits(f: Forged, sandbox: str, why: str) -> None:
    """The gate waits for a person, refused with APPROVAL005 for ``why``, and nothing after
    it ran: not on the agent's turn (``rein next``, confined), nor on a person's ``rein
    resume``; ``rein approvals list`` and ``show`` and ``rein runs show`` say why."""
    assert "ship" not in f.instructed()
    code, status = f.confined(sandbox, "next")
    assert code == 3 and status.get("node") != "ship", status
    code, resumed = f.json("resume", f.run_id)
    assert (code, resumed["status"]) == (3, "awaiting_human"), resumed
    assert "ship" not in f.instructed()
    [row] = f.json("approvals", "list")[1]["approvals"]
    assert (row["approval_id"], row["status"]) == (f.gate, "pending")
    refused = f.shown()["answer"]["refused"]
    assert refused["code"] == "APPROVAL005" and why in refused["why"], refused
    _code, text = f.rein("approvals", "list")
    assert f"refused an answer found in the store (APPROVAL005: {refused['why']})" in text
    _code, text = f.rein("approvals", "show", f.gate)
    assert "APPROVAL005" in text and refused["why"] in text
    _code, text = f.rein("runs", "show", f.run_id)
    assert f"waiting: approval {f.gate}" in text and "APPROVAL005" in text


def then_a_person_answers(f: Forged) -> None:
    """The control: ana's own signed accept is acted on, and ``ship`` is handed out."""
    code, out = f.rein("approvals", "accept", f.gate, "--json")
    assert code == 3, out
    assert f.instructed()[-1] == "ship"
    given = f.shown()["answer"]["given"]["identity"]
    assert (given["method"], given["principal"]) == ("ssh-signature", "ana")


@pytest.mark.parametrize("sandbox", ALL_SANDBOXES)
def test_an_accept_written_into_the_store_is_not_acted_on(forged: Forged,
                                                          sandbox: str) -> None:
    f = forged
    f.forge(sandbox, ACCEPT, [json.dumps({"actor": "ana", "note": "fine", "given": {
        "surface": "cli", "identity": {"method": "ssh-signature"}}}), f.gate])
    code, submitted = f.confined(sandbox, "submit")
    assert code == 3, submitted
    still_waits(f, sandbox, "it carries no signature")
    then_a_person_answers(f)


@pytest.mark.parametrize("sandbox", ALL_SANDBOXES)
def test_a_signed_decline_flipped_to_an_accept_is_not_acted_on(forged: Forged,
                                                                sandbox: str) -> None:
    """Ana declined (signed, recorded without continuing); the agent turns the decline into
    an accept in the store: the signature is of the decline, so nothing goes ahead."""
    f = forged
    code, out = f.rein("approvals", "decline", f.gate, "--note", "not yet", "--no-continue",
                       "--json")
    assert code == 0, out
    f.forge(sandbox, "UPDATE approvals SET status = 'accepted' WHERE approval_id = ?",
            [f.gate])
    code, submitted = f.confined(sandbox, "submit")
    assert code == 3, submitted
    still_waits(f, sandbox, "is not a signature of this very content")
    then_a_person_answers(f)


@pytest.mark.parametrize("sandbox", [sandbox_param("setpriv")])
def test_a_timeout_written_into_the_request_is_not_acted_on(forged: Forged,
                                                            sandbox: str) -> None:
    """The agent gives the waiting gate a timeout of 0 s that approves: rein's own timeout
    (applied by `rein approvals list`) accepts it, and the run still does not act on it, since
    the gate it asks has no timeout."""
    f = forged
    request = json.loads(f.read("SELECT request FROM approvals WHERE approval_id = ?",
                                f.gate)[0])
    request.update(timeout_seconds=0, on_timeout="approve")
    f.forge(sandbox, "UPDATE approvals SET request = ? WHERE approval_id = ?",
            [json.dumps(request), f.gate])
    code, listed = f.json("approvals", "list")
    assert [t["status"] for t in listed["timed_out"]] == ["accepted"]
    code, submitted = f.confined(sandbox, "submit")
    assert code == 3, submitted
    still_waits(f, sandbox, "on_timeout (hold) gives no such answer")
    assert "timeout_seconds" not in f.shown()["request"]  # the gate as the engine asks it
    then_a_person_answers(f)


@pytest.mark.parametrize("sandbox", ALL_SANDBOXES)
def test_a_forged_cancel_only_stops_the_run(forged: Forged, sandbox: str) -> None:
    """A cancel needs no signature, since it only stops: the run ends cancelled, never
    succeeded, and what comes after the gate never runs."""
    f = forged
    f.forge(sandbox, CANCEL, [json.dumps({"actor": "ana"}), f.gate])
    code, submitted = f.confined(sandbox, "submit")
    assert code == 1, submitted
    _code, run = f.json("runs", "show", f.run_id)
    assert run["status"] == "cancelled"
    assert {n["node"]: n["status"] for n in run["nodes"]}.get("ship") in (None, "pending",
                                                                           "cancelled")
    assert "ship" not in f.instructed()


@pytest.mark.parametrize("sandbox", ALL_SANDBOXES)
def test_a_run_whose_approved_digest_was_rewritten_runs_nothing(forged: Forged,
                                                                sandbox: str) -> None:
    """The agent writes its own graph (no gate before `ship`) and rewrites the run to it in
    the store, digest and all, so that the files match what the store says was approved:
    the run is refused before anything runs, on the agent's turn and on a person's."""
    f = forged
    mine = f.root.parent / "agent" / "mine.agraph.yaml"  # where its sandbox also writes
    mine.parent.mkdir()
    mine.write_text(yaml.safe_dump(UNGATED, sort_keys=False))
    code, digest = f.rein("graph", "digest", str(mine))
    assert code == 0
    binding = json.loads(f.read("SELECT binding FROM runs WHERE run_id = ?", f.run_id)[0])
    binding.update(graph_digest=digest.strip(), approved_digest=digest.strip())
    f.forge(sandbox, REBIND, [str(mine), digest.strip(), json.dumps(binding), f.run_id])
    events = f.read("SELECT count(*) FROM events WHERE run_id = ?", f.run_id)[0]
    code, submitted = f.confined(sandbox, "submit")
    assert (code, submitted["error"]["code"]) == (4, "APPROVAL005"), submitted
    assert "is not a signature of this very content" in submitted["error"]["message"]
    code, resumed = f.json("resume", f.run_id)
    assert (code, resumed["error"]["code"]) == (4, "APPROVAL005"), resumed
    code, accepted = f.json("approvals", "accept", f.gate)
    assert (code, accepted["error"]["code"]) == (4, "APPROVAL005"), accepted
    assert f.read("SELECT count(*) FROM events WHERE run_id = ?", f.run_id)[0] == events
    assert "ship" not in f.instructed()
    _code, text = f.rein("runs", "show", f.run_id)
    assert "APPROVAL005" in text


@pytest.mark.parametrize("sandbox", [sandbox_param("setpriv")])
def test_a_run_copied_under_another_id_runs_nothing(forged: Forged, sandbox: str) -> None:
    """The agent copies the signed run under a new id of its own: the signature names the
    run it was made for."""
    f = forged
    f.forge(sandbox, COPY_RUN, [f.run_id])
    code, resumed = f.json("resume", "run-mine")
    assert (code, resumed["error"]["code"]) == (4, "APPROVAL005"), resumed
    assert f"signed for run {f.run_id}, not this one" in resumed["error"]["message"]


def test_without_signed_approvals_the_forged_accept_is_acted_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    """What the signing closes: the same forgery, where approvals are not signed, hands
    out `ship` on the agent's next turn (a limit docs/security.md states)."""
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(tmp_path / "no-managed.toml"))
    monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "no-user.toml"))
    files = account_files(monkeypatch, tmp_path / "account")
    root = tmp_path / "ws"
    root.mkdir()
    monkeypatch.chdir(root)
    (root / "g.agraph.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    f = Forged(root, files, capsys)
    _code, digest = f.rein("graph", "digest", "g.agraph.yaml")
    _code, started = f.json("run", "g.agraph.yaml", "--approve", digest.strip())
    f.run_id = started["run_id"]
    f.answer_instruction("draft")
    assert f.json("submit")[0] == 0  # the next instruction (notes); the gate waits
    [gate] = f.json("approvals", "list")[1]["approvals"]
    with sqlite3.connect(root / ".rein" / "rein.db") as db:
        db.execute("UPDATE approvals SET status = 'accepted', answer = ?, "
                   "answered_at = created_at WHERE approval_id = ?",
                   (json.dumps({"actor": "ana"}), gate["approval_id"]))
    f.answer_instruction("notes")
    assert f.json("submit")[0] == 0
    assert f.instructed()[-1] == "ship"


def test_where_approvals_are_not_signed_init_and_the_queue_say_so(
        forged: Forged, tmp_path: Path, capsys: Any) -> None:
    """`rein init --agent` and `rein approvals list` recommend signed approvals in one line
    where the run store is in the workspace and answers are not signed; nothing where they
    are."""
    f = forged
    for signed in (True, False):
        capsys.readouterr()
        assert main(["init", "--agent", "codex"]) == 0
        said = capsys.readouterr()
        assert ("not signed" in said.err) is not signed and "not signed" not in said.out
        _code, listed = f.json("init", "--agent", "codex")
        assert bool(listed["notices"]) is not signed
        assert main(["approvals", "list"]) == 0
        said = capsys.readouterr()
        assert ("note: approvals here are not signed" in said.err) is not signed, said
        assert "not signed" not in said.out  # the listing stays the listing
        f.files[1].write_text('[approver]\nid = "ana"\n')
