"""What a driving agent spent, through the command line: the envelope's ``usage``, unknown
usage read as unknown everywhere, ``rein runs report`` (steps, protocol errors by whose,
time split, text, JSON, HTML, side by side), the agent's own record winning over what it
reported, and the run's budgets counting it.

The demo graph is driven through ``rein next`` / ``rein submit`` in process, as in
test_driver_commands.py. Where an agent's own record is needed, the test writes one in
Claude Code's transcript format itself (a test double; tests/agents reads the real ones).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest
from support import EXAMPLES, account_files

from rein.cli import main
from rein.engine.run.record import record_problems
from tests.cli.test_driver_commands import RIGHT, WRONG, Drive

DEMO = EXAMPLES / "driver-demo.agraph.yaml"
USED = {"input_tokens": 1200, "output_tokens": 300, "cached_input_tokens": 200,
        "model": "gpt-5", "cost_usd": 0.0125}


@pytest.fixture
def drive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Drive:
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    monkeypatch.delenv("REIN_USAGE_JSON", raising=False)
    for name in ("CODEX_THREAD_ID", "CLAUDE_CODE_SESSION_ID", "CLAUDECODE"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path.parent / f"{tmp_path.name}-home"
    home.mkdir()
    # The agents' default places are this test's, never the account's.
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    for key, value in (("NAME", "t"), ("EMAIL", "t@example.org")):
        monkeypatch.setenv(f"GIT_AUTHOR_{key}", value)
        monkeypatch.setenv(f"GIT_COMMITTER_{key}", value)
    _managed, approver = account_files(monkeypatch, tmp_path.parent / f"{tmp_path.name}-files")
    approver.parent.mkdir(parents=True)
    approver.write_text('[approver]\nid = "ann"\nroles = ["maintainer"]\n')
    monkeypatch.chdir(tmp_path)
    return Drive(tmp_path, capsys, str(tmp_path / ".rein" / "rein.db"))


def finish(drive: Drive, usage: dict[str, Any] | None) -> None:
    """Write greet.py right the first time, answer with ``usage``, approve, run to the end."""
    drive.write("greet.py", RIGHT)
    extra = {} if usage is None else {"usage": usage}
    code, waiting = drive.submit(drive.envelope(**extra))
    assert (code, waiting["status"]) == (3, "waiting"), waiting
    code, _ = drive.rein("approvals", "accept", waiting["approvals"][0]["approval_id"])
    assert code == 0
    code, done = drive.next()
    assert done["reason"] == "done", done


def stamp(text: str | None) -> dt.datetime:
    assert text is not None
    return dt.datetime.fromisoformat(text)


def show_json(drive: Drive) -> dict[str, Any]:
    code, out = drive.rein("runs", "show", drive.run_id(), "--json")
    assert code == 0, out
    return dict(json.loads(out))


# -- unknown stays unknown -----------------------------------------------------------------


def test_a_driver_that_reports_no_usage_reads_unknown_everywhere(drive: Drive) -> None:
    drive.start()
    finish(drive, None)
    shown = show_json(drive)
    assert shown["usage"]["cost_usd"] is None and shown["usage"]["total_tokens"] is None
    assert shown["usage"]["input_tokens"] is None
    assert shown["usage"]["sources"] == ["unknown"]
    code, text = drive.rein("runs", "show", drive.run_id())
    assert code == 0
    assert "cost unknown" in text and "tokens unknown" in text, text
    assert "$0.00" not in text and "0 tokens" not in text
    # The AGS record admits no null in its usage: what is unknown is left out, not 0.
    record = drive.record()
    assert record_problems(record) == []
    assert not {"input_tokens", "output_tokens", "total_tokens", "cost_usd"} & set(
        record["usage"]), record["usage"]
    code, out = drive.rein("runs", "report", "--json")
    report = json.loads(out)
    assert report["totals"]["usage"] is None and report["totals"]["usage_source"] == "unknown"
    assert report["summary"]["cost_usd"] is None and report["summary"]["total_tokens"] is None
    code, text = drive.rein("runs", "report")
    assert code == 0
    row = next(line for line in text.splitlines() if line.startswith("total:"))
    assert "unknown tokens, unknown (unknown)" in row, row


def test_usage_in_the_envelope_is_recorded_as_self_reported(drive: Drive) -> None:
    drive.start()
    finish(drive, USED)
    shown = show_json(drive)
    assert (shown["usage"]["input_tokens"], shown["usage"]["output_tokens"],
            shown["usage"]["total_tokens"], shown["usage"]["cost_usd"]) == (1200, 300, 1500,
                                                                          0.0125)
    assert shown["usage"]["sources"] == ["self-reported"]
    _code, text = drive.rein("runs", "show", drive.run_id())
    assert "$0.01 · 1500 tokens · 2 node executions (self-reported by the agent)" in text
    record = drive.record()
    assert record_problems(record) == []
    assert record["usage"]["total_tokens"] == 1500
    [attempt] = record["nodes"][0]["attempts"]
    assert attempt["x-rein-usage-source"] == "self-reported"
    _code, out = drive.rein("runs", "report", "--json")
    report = json.loads(out)
    [turn] = report["turns"]
    assert (turn["usage_source"], turn["usage"]["total_tokens"]) == ("self-reported", 1500)
    assert report["totals"]["usage_source"] == "self-reported"


@pytest.mark.parametrize("usage, problem", [
    ({**USED, "input_tokens": -1}, "usage/input_tokens: -1 is less than the minimum of 0"),
    ({k: v for k, v in USED.items() if k != "model"}, "usage"),
    ({**USED, "cached_input_tokens": 5000}, "usage/cached_input_tokens: 5000 is more than"),
])
def test_a_usage_that_is_not_one_is_refused(drive: Drive, usage: dict[str, Any],
                                            problem: str) -> None:
    drive.start()
    drive.write("greet.py", RIGHT)
    _code, refused = drive.submit(drive.envelope(usage=usage))
    assert refused["status"] == "refused" and refused["error"]["code"] == "DRIVER_ENVELOPE"
    assert any(p.startswith(problem) for p in refused["problems"]), refused["problems"]


def test_usage_from_the_environment_is_validated(drive: Drive,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    drive.start()
    drive.write("greet.py", RIGHT)
    monkeypatch.setenv("REIN_USAGE_JSON", '{"input_tokens": 10}')
    _code, refused = drive.submit(drive.envelope())
    assert refused["error"]["code"] == "DRIVER001", refused
    monkeypatch.setenv("REIN_USAGE_JSON", json.dumps({**USED, "cost_usd": 0.5}))
    _code, waiting = drive.submit(drive.envelope())
    assert waiting["status"] == "waiting", waiting
    assert show_json(drive)["usage"]["cost_usd"] == 0.5


# -- the report ------------------------------------------------------------------------------


def test_the_report_counts_every_call_and_every_refusal_by_whose(drive: Drive) -> None:
    drive.start()
    drive.write("greet.py", WRONG)
    code, _ = drive.rein("next")
    code, refused = drive.submit("{not json")  # the agent's slip: a malformed envelope
    assert refused["status"] == "refused"
    code, refused = drive.submit(drive.envelope(node="review"))  # and a wrong one
    assert refused["status"] == "refused"
    code, second = drive.submit(drive.envelope())  # the criteria fail: attempt 2
    assert second["attempt"] == 2
    finish(drive, None)
    code, out = drive.rein("runs", "report", "--json")
    assert code == 0
    report = json.loads(out)
    calls = [json.loads(line) for line in
             (drive.root / ".rein" / "calls.jsonl").read_text().splitlines()]
    by = {c["command"]: c for c in report["commands"]}
    # Every invocation counted, as rein's record of calls has it.
    assert by["rein next"]["invocations"] == sum(1 for c in calls if c["command"] == "next")
    assert by["rein submit"]["invocations"] == 4
    assert report["errors"]["agent"] == {"DRIVER_ENVELOPE": 2}, report["errors"]
    assert report["errors"]["rein"] == {}
    assert by["rein submit"]["protocol_errors"] == 2
    assert report["summary"]["protocol_errors"] == 2
    assert report["totals"]["steps"] == len(calls)
    # Time: one definition each, and the parts make up no more than the whole.
    time = report["time"]
    assert set(report["definitions"]) == {"wall", "agent", "person", "verification", "other"}
    parts = time["agent_seconds"] + time["person_seconds"] + time["verification_seconds"]
    assert parts <= time["wall_seconds"] + 0.01
    # A person's time: each approval, from asked to answered, as the store has them.
    from rein.engine.service import Harness

    with Harness.open(drive.root, store_url=drive.store, create=False) as harness:
        asked = harness.approvals(run_id=drive.run_id(), pending_only=False)
        waited = sum((stamp(a.answered_at) - stamp(a.created_at)).total_seconds()
                     for a in asked)
    assert len(asked) == 2 and time["person_seconds"] == pytest.approx(waited, abs=0.002)
    assert [t["attempt"] for t in report["turns"]] == [1, 2]
    code, text = drive.rein("runs", "report")
    assert "protocol errors: the agent's 2 (DRIVER_ENVELOPE ×2); rein's own 0 (none)" in text
    for name in ("wall", "agent", "person", "verification"):
        assert re.search(rf"^  {name} +\S+ s  ", text, re.MULTILINE), (name, text)


def test_a_run_the_agent_names_wrongly_is_its_error_a_full_disk_reins(drive: Drive) -> None:
    from rein.workers.driver.calls import whose

    drive.start()
    code, _ = drive.rein("next", "--run", "run-20260101T000000-abcdef")  # no such run
    assert code == 1
    code, out = drive.rein("runs", "report", "--json")
    errors = json.loads(out)["errors"]
    assert (errors["agent"], errors["rein"]) == ({"RUN404": 1}, {}), errors
    assert [whose(c) for c in ("DISK_FULL", "OS_ERROR", "DEV009", "DRIVER_STALE")] == [
        "rein", "rein", "rein", "agent"]


def test_the_report_as_one_self_contained_html_file_and_side_by_side(
        drive: Drive, tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    drive.start()
    finish(drive, USED)
    page = tmp_path.parent / f"{tmp_path.name}-report.html"
    code, text = drive.rein("runs", "report", "--html", str(page))
    assert code == 0 and f"report: {page}" in text
    html = page.read_text()
    assert html.startswith("<!doctype html>") and "</html>" in html
    assert "<script" not in html and " src=" not in html and "<link" not in html
    assert "1,500" in html and "self-reported" in html
    # A second workspace, another driver on the same brief: the GF-V2 table, a row each.
    other = tmp_path.parent / f"{tmp_path.name}-other"
    other.mkdir()
    second = Drive(other, capsys, str(other / ".rein" / "rein.db"))
    monkeypatch.chdir(other)
    second.start()
    finish(second, None)
    monkeypatch.chdir(drive.root)
    code, out = drive.rein("runs", "report", "--beside", str(other), "--json")
    assert code == 0, out
    rows = json.loads(out)["compared"]
    assert [r["workspace"] for r in rows] == [str(drive.root), str(other)]
    assert (rows[0]["total_tokens"], rows[1]["total_tokens"]) == (1500, None)
    code, text = drive.rein("runs", "report", "--beside", str(other))
    assert text.startswith("USAGE SIDE BY SIDE")
    assert len([line for line in text.splitlines() if "unknown" in line]) >= 1


# -- the agent's own record wins -----------------------------------------------------------

TWO_STEPS = """\
ags_version: "1.0"
kind: AgenticGraph
id: rein/tests/two-steps
title: Two files, one after the other
version: 1.0.0
requires_conformance: 1
objective: Write a.txt, then b.txt.
entrypoints: [first]
constraints:
  max_total_tokens: 5000
nodes:
  first:
    type: task
    title: Write a.txt
    description: Write a.txt.
    outputs:
      a: {type: file, description: a.txt, path_hint: a.txt}
    intelligence: {tier: minimal}
    requirements:
      tools: [file_write]
      permissions: ["fs:write:a.txt"]
      workspace: read_write
  second:
    type: task
    title: Write b.txt
    description: Write b.txt.
    depends_on: [first]
    outputs:
      b: {type: file, description: b.txt, path_hint: b.txt}
    intelligence: {tier: minimal}
    requirements:
      tools: [file_write]
      permissions: ["fs:write:b.txt"]
      workspace: read_write
"""


def transcript(path: Path, cwd: Path, token: str, tokens: int) -> None:
    """A Claude Code transcript (the test's own, in its format): the agent runs `rein next`,
    receives ``token``, and makes one model call of ``tokens`` input tokens."""
    records = [
        {"type": "assistant", "sessionId": "s-1", "cwd": str(cwd), "message": {
            "id": "m1", "model": "claude-opus-4-8", "usage": {
                "input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0},
            "content": [{"type": "tool_use", "id": "t1",
                         "input": {"command": "rein next"}}]}},
        {"type": "user", "sessionId": "s-1", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1",
             "content": f"INSTRUCTION {token} first attempt 1"}]}},
        {"type": "assistant", "sessionId": "s-1", "message": {
            "id": "m2", "model": "claude-opus-4-8", "usage": {
                "input_tokens": tokens, "output_tokens": 100, "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0},
            "content": [{"type": "text", "text": "done"}]}},
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_the_agents_own_record_wins_over_what_it_reported_and_budgets_count_it(
        drive: Drive, monkeypatch: pytest.MonkeyPatch) -> None:
    (drive.root / "two.agraph.yaml").write_text(TWO_STEPS)
    code, digest = drive.rein("graph", "digest", "two.agraph.yaml")
    code, out = drive.rein("run", "two.agraph.yaml", "--approve", digest.strip(), "--json")
    assert code == 3, out
    _, first = drive.next()
    drive.write("a.txt", "a\n")
    # The agent under-reports: 100 tokens where its own record says 8,100 (and 15 more
    # before it received the turn: unattributed).
    low = {"input_tokens": 90, "output_tokens": 10, "cached_input_tokens": 0,
           "model": "claude-opus-4-8"}
    code, second = drive.submit({**first["example"], "usage": low})
    assert second["status"] == "instruction" and second["node"] == "second", second
    assert show_json(drive)["usage"]["total_tokens"] == 100
    from rein.telemetry.agent_logs import mangled

    where = Path(str(Path.cwd())).resolve()
    transcript(drive.root.parent / f"{drive.root.name}-home" / ".claude" / "projects"
               / mangled(where) / "s-1.jsonl", where, first["token"], 8000)
    code, out = drive.rein("runs", "report", "--json")
    report = json.loads(out)
    turn = next(t for t in report["turns"] if t["token"] == first["token"])
    assert (turn["usage_source"], turn["usage"]["total_tokens"]) == ("attributed", 8100)
    assert turn["self_reported"]["total_tokens"] == 100  # kept, and labelled
    # From then on the run counts what the record says, and its budget (5,000) is passed.
    assert show_json(drive)["usage"]["total_tokens"] == 8100
    drive.write("b.txt", "b\n")
    code, ended = drive.submit(second["example"])
    assert ended["status"] in ("done", "stopped", "failed"), ended
    code, shown = drive.rein("runs", "show", drive.run_id())
    assert "global budget reached (RT061)" in shown, shown
    assert "8100 tokens · 1 node executions (attributed from the agent's own records)" in shown
    assert show_json(drive)["status"] == "failed"


# -- durations: one definition, said where shown -------------------------------------------


def test_a_nodes_time_is_its_wall_time_and_says_so_wherever_shown(drive: Drive) -> None:
    drive.start()
    drive.write("greet.py", WRONG)
    drive.submit(drive.envelope())
    drive.write("greet.py", RIGHT)
    (drive.root / ".rein" / "inbox.json").write_text(json.dumps(drive.envelope()))
    drive.capsys.readouterr()
    assert main(["submit", "--store", drive.store]) == 3
    live = drive.capsys.readouterr().err.splitlines()[1]
    said = re.fullmatch(r"  ✓ write_module succeeded  \[2 attempts, wall (\S+)\]", live)
    assert said, live
    _code, text = drive.rein("runs", "show", drive.run_id())
    shown = re.search(r"write_module \(task\)  wall (\S+), 2 attempts", text)
    assert shown, text
    # The same node, the same time: from its first start to its end, waits included.
    assert shown.group(1) == said.group(1)


def test_no_part_of_the_time_split_is_larger_than_the_run(drive: Drive) -> None:
    """An approval left pending (superseded, never answered) counts up to the run's end,
    never after it; two approvals pending at once count once; an approval pending while
    the agent works is the agent's time. Read long after the run ended."""
    from rein.core.ids import ApprovalId, RunId
    from rein.core.states import ApprovalKind, ApprovalStatus
    from rein.engine.cases.usage_report import build
    from rein.engine.service import Harness
    from rein.store.base import ApprovalRow, Transition

    drive.start()
    finish(drive, None)
    run_id = RunId(drive.run_id())
    with Harness.open(drive.root, store_url=drive.store, create=False) as harness:
        store = harness.store
        run = store.get_run(run_id)
        assert run is not None and run.finished_at is not None
        turn = store.driver_turns(run_id)[0]
        for n, at in enumerate((run.started_at, run.started_at, turn.created_at)):
            store.transition(run_id, "approval/requested", {}, at, Transition(
                approval=ApprovalRow(approval_id=ApprovalId(f"apv-stale-{n}"), run_id=run_id,
                                     key=f"gate:stale-{n}", kind=ApprovalKind.GATE,
                                     status=ApprovalStatus.PENDING, digest="sha256:x",
                                     request={"prompt": "Go?"}, created_at=at)))
        later = stamp(run.finished_at) + dt.timedelta(hours=2)
        time = build(store, drive.root, [("run", run_id)], now=later)["time"]
        wall = (stamp(run.finished_at) - stamp(run.started_at)).total_seconds()
    assert time["wall_seconds"] == pytest.approx(wall, abs=0.002)
    parts = time["agent_seconds"] + time["person_seconds"] + time["verification_seconds"]
    assert parts + time["other_seconds"] == pytest.approx(wall, abs=0.01), time
    # The stale approvals cover the whole run: all of it that is not the agent's is a
    # person's wait (verification comes last in the split).
    assert time["person_seconds"] == pytest.approx(wall - time["agent_seconds"], abs=0.01)
    assert time["other_seconds"] == pytest.approx(0.0, abs=0.01)
