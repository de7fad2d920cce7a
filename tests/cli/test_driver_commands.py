"""``rein next`` / ``rein submit`` end to end on ``examples/driver-demo.agraph.yaml``.

Each test drives a real run in a temporary git repository through the command line only,
doing the driver's work itself (writing greet.py) the way an IDE agent would, once on each
store (``--store``: the SQLite file, then PostgreSQL when ``REIN_TEST_POSTGRES_URL`` names a
server), through the store contract suite's own parametrized fixture.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support import EXAMPLES, account_files

from rein.cli import main
from rein.engine.run.record import record_problems
from tests.store.conftest import pg_url, store_url  # noqa: F401 - the fixtures

DEMO = EXAMPLES / "driver-demo.agraph.yaml"
WRONG = 'def greet(name):\n    """Greet."""\n    return "Hi " + name\n'
RIGHT = 'def greet(name):\n    """Greet."""\n    return f"Hello, {name}!"\n'


class Drive:
    """A workspace (a git repository holding the demo graph) and the rein command line."""

    # The commands that read or write runs, and so take --store.
    STORED = ("run", "next", "submit", "runs", "approvals", "resume", "driver")

    def __init__(self, root: Path, capsys: Any, store: str) -> None:
        self.root = root
        self.capsys = capsys
        self.store = store
        git(root, "init", "-q")
        git(root, "commit", "-q", "--allow-empty", "-m", "init")
        shutil.copyfile(DEMO, root / DEMO.name)

    def rein(self, *args: str) -> tuple[int, str]:
        self.capsys.readouterr()
        store = ["--store", self.store] if args and args[0] in self.STORED else []
        code = main([*args, *store])
        return code, self.capsys.readouterr().out

    def start(self) -> tuple[int, str]:
        code, digest = self.rein("graph", "digest", DEMO.name)
        assert code == 0
        return self.rein("run", DEMO.name, "--approve", digest.strip(), "--json")

    def next(self) -> tuple[int, dict[str, Any]]:
        code, out = self.rein("next", "--json")
        return code, json.loads(out)

    def envelope(self, **changes: Any) -> dict[str, Any]:
        _code, status = self.next()
        assert status["status"] == "instruction", status
        return {**status["example"], **changes}

    def submit(self, envelope: dict[str, Any] | str, *args: str) -> tuple[int, dict[str, Any]]:
        text = envelope if isinstance(envelope, str) else json.dumps(envelope)
        (self.root / ".rein" / "inbox.json").write_text(text)
        code, out = self.rein("submit", "--json", *args)
        return code, json.loads(out)

    @property
    def on_postgres(self) -> bool:
        return self.store.startswith("postgresql://")

    def write(self, name: str, text: str) -> None:
        (self.root / name).write_text(text)

    def events(self) -> list[str]:
        code, out = self.rein("runs", "events", self.run_id(), "--json")
        assert code == 0, out
        return [json.loads(line)["type"] for line in out.splitlines() if '"type"' in line]

    def run_id(self) -> str:
        _code, out = self.rein("runs", "list", "--json")
        return json.loads(out)["runs"][0]["run_id"]

    def record(self) -> dict[str, Any]:
        code, out = self.rein("runs", "record", self.run_id())
        assert code == 0, out
        return json.loads(out)


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                   cwd=root, check=True, capture_output=True)


@pytest.fixture
def drive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any,
          store_url: str) -> Drive:  # noqa: F811
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "t")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "t@example.org")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "t")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "t@example.org")
    _managed, approver = account_files(monkeypatch, tmp_path.parent / f"{tmp_path.name}-files")
    approver.parent.mkdir(parents=True)  # the demo's gate: a maintainer
    approver.write_text('[approver]\nid = "ann"\nroles = ["maintainer"]\n')
    monkeypatch.chdir(tmp_path)
    return Drive(tmp_path, capsys, store_url)


def test_the_demo_runs_to_success_through_next_submit_and_approvals(drive: Drive) -> None:
    code, _out = drive.start()
    assert code == 3
    code, first = drive.next()
    assert code == 0
    assert (first["status"], first["node"], first["attempt"]) == ("instruction", "write_module", 1)
    assert first["outputs"] == [{"name": "module", "type": "file", "required": True,
                                 "description": "The module that defines greet(name).",
                                 "path_hint": "greet.py"}]
    assert first["budget"] == {"enforced": {"max_wall_clock_seconds": 1800},
                               "on_reported_usage": {},
                               "unenforced": {"max_agent_steps": 10}}
    drive.write("greet.py", WRONG)
    code, second = drive.submit(first["example"])
    assert code == 0, second
    assert (second["status"], second["attempt"]) == ("instruction", 2)
    assert second["submitted"] == "accepted for write_module attempt 1"
    feedback = second["feedback"]
    assert feedback["failure_class"] == "criteria_failed"
    assert [c["id"] for c in feedback["failed_criteria"]] == ["greets"]
    assert "AssertionError: Hi rein" in str(feedback["failed_criteria"][0]["evidence"])
    drive.write("greet.py", RIGHT)
    code, waiting = drive.submit(second["example"])
    assert (code, waiting["status"], waiting["for"]) == (3, "waiting", "approval")
    [approval] = waiting["approvals"]
    assert approval["prompt"] == "Ship greet.py?"
    verb, sub, approval_id = approval["accept"].split()[1:]
    assert (verb, sub) == ("approvals", "accept")
    code, _ = drive.rein(verb, sub, approval_id)
    assert code == 0
    code, done = drive.next()
    assert (code, done["status"], done["reason"], done["exit_code"]) == (0, "done", "done", 0)
    record = drive.record()
    assert record["status"] == "succeeded"
    [attempt_1, attempt_2] = record["nodes"][0]["attempts"]
    assert (attempt_1["status"], attempt_2["status"]) == ("criteria_failed", "succeeded")
    assert attempt_2["routed"]["provider"] == "driver"
    assert record["outputs"] == {"module": "greet.py"}
    assert record_problems(record) == []
    # Everything went to the store named by --store, and only there.
    assert (drive.root / ".rein" / "rein.db").exists() == (not drive.on_postgres)


def test_submit_says_it_accepted_before_the_progress_it_causes(drive: Drive) -> None:
    drive.start()
    drive.write("greet.py", WRONG)
    (drive.root / ".rein" / "inbox.json").write_text(json.dumps(drive.envelope()))
    drive.capsys.readouterr()
    assert main(["submit", "--store", drive.store]) == 0
    captured = drive.capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines[0] == "submit: accepted for write_module attempt 1"
    # This turn's story only: the criteria's verdict, then what comes next; the node's
    # start and the answered attempt were told by the turn that began them.
    # The retry's reason names the criterion, its description and its evidence.
    assert lines[1:] == [("  ✗ write_module attempt 1: criteria_failed: criterion greets "
                          'failed (greet("rein") returns exactly "Hello, rein!".): exit 1: '
                          "AssertionError: Hi rein"), "  … write_module attempt 2",
                         "  ⏸ write_module waiting for driver"]
    assert captured.out.startswith("INSTRUCTION ")  # the next instruction, alone on stdout
    drive.write("greet.py", RIGHT)
    _, pending = drive.next()
    (drive.root / ".rein" / "inbox.json").write_text(json.dumps(pending["example"]))
    drive.capsys.readouterr()
    assert main(["submit", "--store", drive.store]) == 3
    lines = drive.capsys.readouterr().err.splitlines()
    assert lines[0] == "submit: accepted for write_module attempt 2"
    assert not any("write_module started" in line or "attempt 2" in line
               for line in lines[1:]), lines
    # The node's whole story is known: both attempts, timed from its first start.
    assert lines[1].startswith("  ✓ write_module succeeded  [2 attempts, ")
    assert lines[2:4] == ["  … review started", lines[3]] and "Ship greet.py?" in lines[3]


def test_next_repeats_the_instruction_and_changes_nothing(drive: Drive) -> None:
    drive.start()
    events = drive.events()
    _, one = drive.next()
    _, two = drive.next()
    assert one == two
    assert drive.events() == events
    code, text = drive.rein("next")
    assert code == 0
    assert text.startswith(f"INSTRUCTION {one['token']} ")
    assert ".rein/inbox.json" in text and "fs:write:greet.py" in text


@pytest.mark.parametrize("change, why", [
    ({"node": "review"}, 'node is "review", but the pending instruction has "write_module"'),
    ({"attempt": 2}, "attempt is 2, but the pending instruction has 1"),
    ({"token": "drv-00000000000000000000"}, "names no instruction"),
    ({"outputs": {}}, 'outputs: missing the required field(s) "module"'),
    ({"status": "finished"}, 'status: "finished" is not one of "done", "failed"'),
    ({"surprise": 1}, '(envelope): unexpected field(s) "surprise" (allowed: "protocol", '),
    ({"status": "dnoe"}, ('status: "dnoe" is not one of "done", "failed"; did you mean "done" '
                         'for "dnoe"?')),
    ({"outputs": {"modul": "greet.py", "module": "greet.py"}},
     ('outputs: unexpected field(s) "modul" (allowed: "module"); did you mean "module" for '
     '"modul"?')),
    ({"mesage": "hi"}, 'did you mean "message" for "mesage"?'),
])
def test_an_envelope_for_anything_else_is_refused_and_changes_nothing(
        drive: Drive, change: dict[str, Any], why: str) -> None:
    drive.start()
    drive.write("greet.py", RIGHT)
    events = drive.events()
    _, pending = drive.next()
    code, refused = drive.submit({**pending["example"], **change})
    assert code == 4
    assert refused["status"] == "refused"
    assert why in "\n".join([refused["error"]["message"], *refused["problems"]])
    assert refused["pending"] == pending  # the pending instruction is repeated
    assert drive.events() == events
    assert drive.next()[1] == pending


def test_an_envelope_without_its_token_is_told_every_other_problem_too(drive: Drive) -> None:
    # With no token (or one that names nothing) the envelope is still checked against the
    # instruction this workspace answers next: one refusal names everything to fix.
    drive.start()
    events = drive.events()
    _, pending = drive.next()
    code, refused = drive.submit({})
    assert code == 4 and refused["error"]["code"] == "DRIVER_ENVELOPE"
    assert "has no token" in refused["error"]["message"]
    assert refused["problems"] == [
        '(envelope): missing the required field(s) "token", "node", "attempt", "status"',
        '(envelope): missing the required field(s) "outputs"']
    code, refused = drive.submit({"token": "drv-00000000000000000000", "node": "review"})
    assert code == 4
    token = ('token is "drv-00000000000000000000", but the pending instruction has '
             f'"{pending["token"]}"')
    node = 'node is "review", but the pending instruction has "write_module"'
    assert refused["problems"][:2] == [token, node]
    assert drive.events() == events


@pytest.mark.parametrize("text, why", [
    ("", "the envelope is empty"),
    ("{not json", "the envelope is not JSON"),
    ("[1, 2]", "must be a JSON object"),
])
def test_malformed_envelopes_are_refused_with_the_reason(drive: Drive, text: str, why: str
                                                         ) -> None:
    drive.start()
    _, pending = drive.next()
    code, refused = drive.submit(text)
    assert code == 4
    assert why in refused["error"]["message"]
    assert refused["pending"]["token"] == pending["token"]


def test_a_fenced_envelope_is_accepted(drive: Drive) -> None:
    drive.start()
    drive.write("greet.py", RIGHT)
    envelope = drive.envelope()
    code, status = drive.submit("```json\n" + json.dumps(envelope) + "\n```")
    assert (code, status["status"]) == (3, "waiting")


def test_a_replayed_envelope_is_never_applied_twice(drive: Drive) -> None:
    drive.start()
    drive.write("greet.py", WRONG)
    first = drive.envelope()
    code, second = drive.submit(first)
    assert (code, second["attempt"]) == (0, 2)
    events = drive.events()
    code, again = drive.submit(first)
    assert code == 0
    assert "already applied" in again["submitted"]
    assert again["token"] == second["token"]  # still waiting for attempt 2
    assert drive.events() == events
    code, refused = drive.submit({**first, "message": "a different answer"})
    assert code == 4
    assert refused["error"]["code"] == "DRIVER_ANSWERED"
    assert drive.events().count("driver/answered") == 1


def test_a_write_outside_fs_write_is_refused_listed_and_can_be_undone(drive: Drive) -> None:
    drive.start()
    drive.write("greet.py", RIGHT)
    drive.write("notes.txt", "not allowed\n")
    _, pending = drive.next()
    code, refused = drive.submit(pending["example"])
    assert code == 4
    assert refused["error"]["code"] == "DRIVER_WRITES_OUTSIDE"
    assert refused["problems"] == ["written outside fs:write: notes.txt"]
    assert "1 more refusal(s) for this attempt" in refused["error"]["hint"]
    assert refused["pending"] == pending  # nothing changed: the same instruction waits
    assert "driver/answered" not in drive.events()
    (drive.root / "notes.txt").unlink()  # the agent undoes the slip
    code, status = drive.submit(pending["example"])
    assert (code, status["status"], status["for"]) == (3, "waiting", "approval")


def test_writes_outside_fs_write_fail_the_attempt_once_the_refusals_are_spent(drive: Drive
                                                                             ) -> None:
    drive.start()
    drive.write("greet.py", RIGHT)
    drive.write("notes.txt", "not allowed\n")
    envelope = drive.envelope()
    assert [drive.submit(envelope)[0] for _ in range(2)] == [4, 4]
    code, status = drive.submit(envelope)
    assert code == 1
    assert (status["status"], status["reason"], status["exit_code"]) == ("stopped", "failed", 1)
    assert "writes outside fs:write: notes.txt" in status["submitted"]
    assert drive.events().count("driver/refused") == 2
    [attempt] = drive.record()["nodes"][0]["attempts"]
    assert attempt["x-rein-failure-class"] == "permission_denied"
    assert "notes.txt" in attempt["error"]
    assert "success" not in attempt  # criteria are not evaluated for a failed worker
    code, text = drive.rein("next")
    assert code == 1 and text.startswith("STOPPED (failed): node(s) write_module failed "
                                         "(permission_denied: ")
    assert text.count("(failed)") == 1  # the run's status is said once, in the heading


def test_a_stopped_run_names_the_criteria_that_failed(drive: Drive) -> None:
    drive.start()
    drive.write("greet.py", WRONG)
    drive.submit(drive.envelope())
    code, status = drive.submit(drive.envelope())  # attempt 2, still wrong: no attempts left
    assert (code, status["status"], status["reason"]) == (1, "stopped", "failed")
    assert status["message"].startswith(
        "node(s) write_module failed (criteria_failed: criterion greets failed "
        '(greet("rein") returns exactly "Hello, rein!".): exit 1: AssertionError: Hi rein); '
        "the run ended failed; see `rein runs show run-")


def test_a_file_changed_before_the_instruction_does_not_count(drive: Drive) -> None:
    drive.write("notes.txt", "already dirty before the run\n")
    drive.start()
    drive.write("greet.py", RIGHT)
    code, status = drive.submit(drive.envelope())
    assert (code, status["status"]) == (3, "waiting")


def test_a_commit_by_the_driver_fails_the_attempt(drive: Drive) -> None:
    drive.start()
    drive.write("greet.py", RIGHT)
    git(drive.root, "add", "greet.py")
    git(drive.root, "commit", "-q", "-m", "greet")
    envelope = drive.envelope()
    code, refused = drive.submit(envelope)
    assert (code, refused["error"]["code"]) == (4, "DRIVER_WRITES_OUTSIDE")
    assert "git ref moved: HEAD" in refused["problems"]
    drive.submit(envelope)
    code, _status = drive.submit(envelope)
    assert code == 1
    [attempt] = drive.record()["nodes"][0]["attempts"]
    assert "moved git HEAD" in attempt["error"]


def test_a_driver_that_reports_failure_fails_the_attempt(drive: Drive) -> None:
    drive.start()
    code, _status = drive.submit(drive.envelope(status="failed", message="no Python here",
                                               outputs={}))
    assert code == 1
    [attempt] = drive.record()["nodes"][0]["attempts"]
    assert attempt["error"] == "model_error: no Python here"


def test_a_full_context_is_answered_with_a_clean_context_request(drive: Drive) -> None:
    drive.start()
    drive.write("greet.py", WRONG)
    _, status = drive.submit(drive.envelope(
        context_usage={"used_tokens": 90_000, "window_tokens": 100_000}))
    assert status["clean_context"] is True
    assert "90% of the context window" in status["clean_context_reason"]


def test_a_context_report_asks_for_a_clean_context_once(drive: Drive) -> None:
    """After the agent started clean, a later envelope without a report is not answered
    with the old one again ("your last envelope reported 90%" on every instruction)."""
    graph = drive.root / DEMO.name
    graph.write_text(graph.read_text().replace("max_attempts: 2", "max_attempts: 3"))
    drive.start()
    drive.write("greet.py", WRONG)
    _, status = drive.submit(drive.envelope(
        context_usage={"used_tokens": 90_000, "window_tokens": 100_000}))
    assert (status["attempt"], status["clean_context"]) == (2, True)
    _, status = drive.submit(drive.envelope())
    assert status["attempt"] == 3
    assert not status.get("clean_context"), status.get("clean_context_reason")


def test_a_refused_envelope_names_every_problem_at_once(drive: Drive) -> None:
    """One round trip names all that is wrong: the attempt, an unknown field, and the
    output file that is not there (greet.py is not written yet)."""
    drive.start()
    envelope = drive.envelope(attempt=7, extra=1)
    code, refused = drive.submit(envelope)
    assert (code, refused["error"]["code"]) == (4, "DRIVER_ENVELOPE")
    problems = refused["problems"]
    assert problems[0] == "attempt is 7, but the pending instruction has 1"
    assert any(p.startswith('(envelope): unexpected field(s) "extra"') for p in problems)
    assert "outputs/module: RT031 output 'module' names 'greet.py', which is not a file" \
        in problems
    assert len(problems) == 3, problems
    assert "(3 problems)" in refused["error"]["message"]


def test_submit_reads_stdin(drive: Drive, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    drive.start()
    drive.write("greet.py", RIGHT)
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(drive.envelope())))
    code, out = drive.rein("submit", "-", "--json")
    assert (code, json.loads(out)["for"]) == (3, "approval")


def test_without_an_envelope_submit_says_where_to_write_it(drive: Drive) -> None:
    drive.start()
    code, out = drive.rein("submit", "--json")
    assert code == 4
    body = json.loads(out)
    assert body["error"]["code"] == "DRIVER_NO_ENVELOPE"
    assert ".rein/inbox.json" in body["error"]["hint"]


def test_next_without_runs_is_a_clear_error(drive: Drive) -> None:
    code, out = drive.rein("next", "--json")
    assert code == 1
    assert json.loads(out)["error"]["code"] == "STORE404"


def test_driver_schema_describes_every_instruction_and_envelope(drive: Drive) -> None:
    code, out = drive.rein("driver", "schema")
    assert code == 0
    schemas = json.loads(out)
    assert sorted(schemas) == ["envelope", "instruction"]
    drive.start()
    _, status = drive.next()
    instruction = {k: v for k, v in status.items()
                   if k not in ("status", "graph_id", "run_status", "respond", "exit_code")}
    jsonschema.Draft202012Validator(schemas["instruction"]).validate(instruction)
    jsonschema.Draft202012Validator(schemas["envelope"]).validate(status["example"])
    jsonschema.Draft202012Validator(status["respond_with"]).validate(status["example"])


def test_concurrent_submits_apply_one_envelope_once(drive: Drive) -> None:
    drive.start()
    drive.write("greet.py", RIGHT)
    envelope = drive.envelope()
    (drive.root / ".rein" / "inbox.json").write_text(json.dumps(envelope))
    rein = Path(sys.executable).parent / "rein"
    store = ["--store", drive.store]
    procs = [subprocess.Popen([str(rein), "submit", "--json", *store], cwd=drive.root,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    peeks = [subprocess.run([str(rein), "next", "--json", *store], cwd=drive.root,
                            capture_output=True, text=True, check=False) for _ in range(3)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)  # reads both pipes: no writer blocks on a full one
        assert out.strip().startswith("{"), f"exit {p.returncode}: stdout {out!r} stderr {err!r}"
        results.append((p.returncode, json.loads(out)))
    accepted = [r for code, r in results if r.get("submitted", "").startswith("accepted")]
    assert len(accepted) == 1
    for code, body in results:
        assert code in (3, 4)
        if code == 4:
            assert body["error"]["code"] in ("RUN_LOCKED",)
    for peek in peeks:
        assert peek.stdout.strip().startswith("{"), (peek.stdout, peek.stderr)
        assert json.loads(peek.stdout)["status"] in ("instruction", "waiting")
    assert drive.events().count("driver/answered") == 1
    assert [a["status"] for a in drive.record()["nodes"][0]["attempts"]] == ["succeeded"]


def test_the_worked_example_shows_the_instruction_as_rein_prints_it(drive: Drive) -> None:
    doc = (EXAMPLES.parent / "docs" / "worked-example.md").read_text(encoding="utf-8")
    shown = doc.split("$ rein next\n", 1)[1].split("```", 1)[0]
    drive.start()
    code, printed = drive.rein("next")
    assert code == 0
    # Tokens and run ids differ on every run; every other line is printed as documented.
    volatile = ("INSTRUCTION ", '{"protocol"')
    expected = [line for line in shown.splitlines() if not line.startswith(volatile)]
    actual = [line for line in printed.splitlines() if not line.startswith(volatile)]
    assert actual == expected


def test_a_node_no_worker_serves_is_named(drive: Drive) -> None:
    """The driver serves only the frontier tier here: the demo's first node waits for a
    worker, and `rein next` names it (from its own node/waiting event)."""
    drive.write("rein.toml", '[driver]\ntiers = ["frontier"]\n')
    code, _out = drive.start()
    assert code == 3
    code, status = drive.next()
    assert (code, status["status"], status["for"], status["node"]) == \
        (3, "waiting", "worker", "write_module")
    assert status["message"].startswith("no worker serves node write_module: ")
