"""What `rein runs show|events|record|watch` and `rein approvals show` tell a person after
(or during) a run, and that they take the newest run when none is named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.cli import main
from rein.cli.event_text import render_all
from rein.store.base import Event
from tests.cli.live_graphs import ANSWERS, RETRIED
from tests.cli.test_run_commands import GATED
from tests.scenarios.harness import Scenario

REIN = str(Path(sys.executable).parent / "rein")


@pytest.fixture
def scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Scenario:
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    return Scenario(tmp_path, monkeypatch, capsys)


def _gated(scenario: Scenario) -> str:
    """A run paused at the gate `ok`; its id."""
    scenario.file("gated.agraph.yaml", yaml.safe_dump(GATED, sort_keys=False))
    scenario.answers({"nodes": {"work": [{"outputs": {}}], "undo": [{"outputs": {}}]}})
    code, _ = scenario.run("gated.agraph.yaml")
    assert code == 3
    return scenario.last_run()


def _retried(scenario: Scenario) -> str:
    scenario.file("g.agraph.yaml", yaml.safe_dump(RETRIED, sort_keys=False))
    scenario.answers(ANSWERS)
    code, _ = scenario.run("g.agraph.yaml")
    assert code == 0
    return scenario.last_run()


def test_show_without_an_argument_shows_the_newest_run(scenario: Scenario) -> None:
    older = _gated(scenario)
    newest = _retried(scenario)
    code, out = scenario.rein("runs", "show")
    assert code == 0
    assert out.startswith(f"run      {newest} (succeeded)")
    assert older not in out
    for command in (["runs", "record"], ["runs", "events", "--json"]):
        code, out = scenario.rein(*command)
        assert code == 0 and newest in out and older not in out, command
    _, as_json = scenario.rein("runs", "show", "--json")
    assert json.loads(as_json)["run_id"] == newest


def test_show_with_no_runs_says_how_to_start_one(scenario: Scenario) -> None:
    code = main(["runs", "show"])
    err = scenario.capsys.readouterr().err
    assert code == 1
    assert "RUN404: no runs in this workspace yet" in err and "rein run GRAPH" in err


def test_show_lists_failed_attempts_with_reasons_and_who_approved(scenario: Scenario
                                                                   ) -> None:
    run_id = _retried(scenario)
    code, out = scenario.rein("runs", "show", run_id)
    assert code == 0
    lines = out.splitlines()
    build = next(i for i, line in enumerate(lines) if " build (task)" in line)
    assert "2 attempts" in lines[build]
    assert "attempt 1 criteria_failed" in lines[build + 1]
    assert lines[build + 1].endswith(": criteria_failed: tests failed: 2 of 10")
    assert any(line.startswith("usage    $0.05 · 950 tokens") for line in lines)
    approval = next(line for line in lines if " graph the graph: accepted by " in line)
    assert " at 20" in approval  # when


def test_show_says_who_cancelled_and_why_and_lists_nothing_as_running(scenario: Scenario
                                                                       ) -> None:
    run_id = _gated(scenario)
    code, _ = scenario.rein("runs", "cancel", run_id, "--note", "wrong branch")
    assert code == 1
    code, out = scenario.rein("runs", "show", run_id)
    assert code == 0
    actor = json.loads(scenario.rein("runs", "events", run_id, "--json")[1].splitlines()[-1])
    assert actor["status"] == "cancelled"
    assert "stopped  cancelled by " in out and ": wrong branch" in out
    nodes = out.split("\nnodes\n")[1]
    statuses = [line.split()[1] for line in nodes.splitlines() if line.startswith("  ")
                and line.split()[0] in "✓✗-·…⏸"]
    assert statuses and not {"running", "awaiting_human", "waiting"} & set(statuses)
    assert any(line.split()[1:3] == ["cancelled", "ok"] for line in nodes.splitlines()
               if len(line.split()) > 2)
    # The gate's question was closed with the run: not shown as something it waits for.
    assert "waiting: approval" not in out and "cancelled by rein" in out
    assert "the run was cancelled" in out


def test_events_for_a_person_leave_out_the_noise_and_cut_nothing(scenario: Scenario) -> None:
    run_id = _retried(scenario)
    _, raw = scenario.rein("runs", "events", run_id, "--json")
    code, text = scenario.rein("runs", "events", run_id)
    assert code == 0
    stored = raw.strip().splitlines()[:-1]  # the last line is the summary
    lines = text.strip().splitlines()
    assert len(lines) < len(stored)
    assert lines[-1].startswith("(") and "--all shows them" in lines[-1]
    assert any("build #1" in line and line.endswith(
        "attempt criteria_failed: criteria_failed: tests failed: 2 of 10") for line in lines)
    assert not any("edge/resolved" in line or "→" in line for line in lines)
    _, everything = scenario.rein("runs", "events", run_id, "--all")
    assert len(everything.strip().splitlines()) == len(stored)


def test_a_notice_repeated_on_every_attempt_is_said_once() -> None:
    long = "x" * 400
    events = [Event(run_id="r", seq=i + 1, type="item", at="2026-01-01T00:00:00Z",
                    payload={"node": "a", "attempt": i + 1, "kind": "notice",
                             "data": {"text": f"profile narrowed: {long}"}})
              for i in range(3)]
    lines = render_all(events)
    assert len(lines) == 1 and lines[0].endswith(long)  # once, and whole


def test_watch_of_a_paused_run_shows_what_it_waits_for_and_exits_3(scenario: Scenario
                                                                    ) -> None:
    run_id = _gated(scenario)
    [pending] = scenario.pending()
    code, out = scenario.rein("runs", "watch")
    assert code == 3
    assert out.startswith(f"run {run_id}  tests/gated\n")
    assert f"  ? approval {pending['approval_id']} (gate) ok: Ship it, ana?" in out
    assert out.endswith(f"  resume:  rein resume {run_id}  (after --no-continue)\n")


def test_watch_of_an_ended_run_exits_with_its_code_and_json_ends_with_the_summary(
        scenario: Scenario) -> None:
    run_id = _retried(scenario)
    code, out = scenario.rein("runs", "watch", run_id)
    assert code == 0
    assert "  ✗ build attempt 1: criteria_failed: tests failed: 2 of 10" in out
    assert out.endswith(f"run {run_id}: succeeded\n")
    code, out = scenario.rein("runs", "watch", "--json")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and lines[-1]["run_id"] == run_id and lines[-1]["status"] == "succeeded"
    assert [e["seq"] for e in lines[:-1]] == list(range(1, len(lines)))


def test_watch_follows_a_run_another_process_advances(scenario: Scenario) -> None:
    data = json.loads(json.dumps(GATED))
    data["nodes"]["slow"] = {"title": "slow", "description": "Takes a while.",
                             "depends_on": ["ok"]}
    scenario.file("gated.agraph.yaml", yaml.safe_dump(data, sort_keys=False))
    scenario.answers({"nodes": {"work": [{"outputs": {}}], "undo": [{"outputs": {}}],
                                "slow": [{"outputs": {}, "delay_seconds": 2}]}})
    code, _ = scenario.run("gated.agraph.yaml")
    assert code == 3
    run_id = scenario.last_run()
    [pending] = scenario.pending()
    answer = subprocess.Popen([REIN, "approvals", "accept", pending["approval_id"]],
                              cwd=scenario.root, stderr=subprocess.PIPE, text=True,
                              stdout=subprocess.DEVNULL)
    try:
        assert answer.stderr is not None
        for line in answer.stderr:  # the other process says when the slow node began
            if "… slow started" in line:
                break
        code, out = scenario.rein("runs", "watch", run_id, "--interval", "0.05")
    finally:
        assert answer.wait(timeout=60) == 0
    assert code == 0
    assert "  ✓ slow succeeded" in out and out.endswith(f"run {run_id}: succeeded\n")


def test_approvals_show_prints_what_is_approved(scenario: Scenario) -> None:
    data = json.loads(json.dumps(GATED))
    data["nodes"]["work"]["outputs"] = {"notes": {"type": "file", "description": "Notes."}}
    data["nodes"]["work"]["requirements"] = {"workspace": "read_write",
                                             "permissions": ["fs:write:notes.md"]}
    data["nodes"]["ok"]["gate"]["present"] = ["nodes.work.outputs.notes"]
    scenario.file("g.agraph.yaml", yaml.safe_dump(data, sort_keys=False))
    scenario.answers({"nodes": {"work": [{"outputs": {"notes": "notes.md"},
                                          "files": {"notes.md": "reviewed text\n"}}]}})
    code, _ = scenario.run("g.agraph.yaml", "--param", "who=bo")
    assert code == 3
    [pending] = scenario.pending()
    code, out = scenario.rein("approvals", "show", pending["approval_id"])
    assert code == 0
    run = scenario.rein("runs", "show", "--json")[1]
    digest = json.loads(run)["digest"]
    assert f"approval {pending['approval_id']} (gate, pending)" in out
    assert f"graph digest {digest}" in out
    assert "asks     Ship it, bo?" in out
    assert "presents notes.md" in out  # the presented values, resolved
    # The files block names each file with its bound digest, and whether it still holds it.
    [file_line] = [line for line in out.splitlines()
                   if line.strip().startswith("notes.md ") and "since it was presented" in line]
    assert file_line.split()[1] == pending["request"]["files"]["notes.md"]
    assert "unchanged since it was presented" in file_line
    assert f"digest   {pending['digest']}" in out
    code, out = scenario.rein("approvals", "show", pending["approval_id"], "--json")
    shown = json.loads(out)
    assert shown["request"]["files"] == pending["request"]["files"]
    assert shown["run"]["graph_digest"] == digest
    assert main(["approvals", "show", "apv-nope"]) == 1


def test_watch_of_a_run_no_process_advances_says_how_to_continue_it(scenario: Scenario
                                                                     ) -> None:
    import os
    import signal

    data = json.loads(json.dumps(GATED))
    data["nodes"]["work"]["failure"] = {}
    scenario.file("slow.agraph.yaml", yaml.safe_dump(data, sort_keys=False))
    scenario.answers({"nodes": {"work": [{"outputs": {}, "delay_seconds": 60}]}})
    _, digest = scenario.rein("graph", "digest", "slow.agraph.yaml")
    started = subprocess.Popen([REIN, "run", "slow.agraph.yaml", "--approve", digest.strip()],
                               cwd=scenario.root, stderr=subprocess.PIPE, text=True,
                               stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        assert started.stderr is not None
        for line in started.stderr:
            if "… work started" in line:
                break
    finally:
        os.killpg(started.pid, signal.SIGKILL)  # the run is left `running`, its lock freed
        started.wait(timeout=30)
    code, out = scenario.rein("runs", "watch", "--interval", "0.01")
    run_id = scenario.last_run()
    assert code == 3
    assert f"run {run_id}: running\n" in out
    assert out.endswith(f"no rein process is advancing it (it was interrupted): "
                        f"`rein resume {run_id}` continues it\n")
