"""Progress off a terminal: plain lines on stderr (the run id first, once; a failed attempt
with its reason; a node started again said once), nothing with --quiet, and --json
unchanged. The view is folded from the events alone: the same events give the same view."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.cli import main
from rein.cli.live import render
from rein.cli.live_state import RunView
from rein.store.base import Event
from tests.cli.live_graphs import ANSWERS, FINAL, RETRIED
from tests.scenarios.harness import Scenario


@pytest.fixture
def live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Scenario:
    monkeypatch.delenv("NO_COLOR", raising=False)
    scenario = Scenario(tmp_path, monkeypatch, capsys)
    scenario.file("g.agraph.yaml", yaml.safe_dump(RETRIED, sort_keys=False))
    scenario.answers(ANSWERS)
    return scenario


def _run(live: Scenario, *extra: str) -> tuple[int, str, str]:
    _, digest = live.rein("graph", "digest", "g.agraph.yaml")
    live.capsys.readouterr()
    code = main(["run", "g.agraph.yaml", "--approve", digest.strip(), *extra])
    captured = live.capsys.readouterr()
    return code, captured.out, captured.err


def test_plain_lines_put_the_run_id_first_and_show_the_failed_attempt(live: Scenario
                                                                      ) -> None:
    code, out, err = _run(live)
    assert code == 0
    run_id = live.last_run()
    lines = err.splitlines()
    assert lines[0] == f"run {run_id}  tests/live"
    assert sum(line.startswith("run ") for line in lines) == 1  # the header, once
    assert "  ✗ build attempt 1: criteria_failed: tests failed: 2 of 10" in lines
    assert "  … build attempt 2" in lines
    assert any(line.startswith("  ✓ build succeeded  [2 attempts, ") for line in lines)
    assert any(line.startswith("  ✓ sort succeeded  [3/3 items, ") for line in lines)
    assert any(line.startswith("  ✓ count succeeded  [3 iterations, ") for line in lines)
    assert out.endswith(f"run {run_id}: succeeded\n")


def test_quiet_prints_the_outcome_alone(live: Scenario) -> None:
    code, out, err = _run(live, "--quiet")
    assert code == 0
    assert err == ""
    assert out == f"run {live.last_run()}: succeeded\n"  # not even the plan


def test_json_is_still_one_event_per_line_then_the_outcome(live: Scenario) -> None:
    code, out, err = _run(live, "--json")
    assert code == 0 and err == ""
    lines = [json.loads(line) for line in out.splitlines()]
    assert set(lines[-1]) == {"run_id", "status", "digest"}
    events = lines[:-1]
    assert all(set(e) == {"run_id", "seq", "type", "at", "payload"} for e in events)
    failed = [e["payload"] for e in events if e["type"] == "attempt/finished"
              and e["payload"]["result"] != "succeeded"]
    # The event carries the reason and the usage the view shows.
    assert failed == [{"attempt": 1, "node": "build", "result": "criteria_failed",
                       "failure": "criteria_failed", "status": "running",
                       "error": "criteria_failed: tests failed: 2 of 10",
                       "usage": {"cost_usd": 0.02, "input_tokens": 300, "output_tokens": 100,
                                 "tool_calls": 0, "total_tokens": 400}}]


def _events(live: Scenario) -> list[Event]:
    code, out, _ = _run(live, "--json")
    assert code == 0
    return [Event(run_id=e["run_id"], seq=e["seq"], type=e["type"], payload=e["payload"],
                  at=e["at"]) for e in map(json.loads, out.splitlines()[:-1])]


def test_the_view_is_a_fold_of_the_events(live: Scenario) -> None:
    events = _events(live)
    view = RunView(run_id=events[0].run_id, limits=RETRIED["constraints"])
    for event in events:
        view.apply(event)
    assert view.status == "succeeded"
    assert {n.key: n.status for n in view.shown_nodes()} == FINAL
    build = view.nodes["build"]
    assert [(a.number, a.result) for a in build.attempts] == [(1, "criteria_failed"),
                                                              (2, "succeeded")]
    assert view.nodes["sort"].counts() == "3/3 items"
    assert view.nodes["count"].counts() == "3 iterations"
    # 4 nodes + 3 map items + 3 loop ticks + the retry: the record's node_executions.
    assert view.budget() == ["$0.05 of $1.00", "950 tokens", "11 of 40 node executions"]
    assert live.record()["usage"]["node_executions"] == 11
    again = RunView(run_id=view.run_id, limits=RETRIED["constraints"])
    for event in events + events:  # a replay overlapping a tail: each event counts once
        again.apply(event)
    assert again.budget() == view.budget()


def test_a_node_started_again_is_said_once() -> None:
    view = RunView(run_id="run-1")
    started = {"node": "a", "status": "running", "type": "task", "title": "A"}
    first = view.apply(Event(run_id="run-1", seq=1, type="node/started", payload=started,
                             at="2026-01-01T00:00:00Z"))
    second = view.apply(Event(run_id="run-1", seq=2, type="node/started", payload=started,
                              at="2026-01-01T00:00:01Z"))
    assert first == ["  … a started"] and second == []
    assert view.nodes["a"].started_at == "2026-01-01T00:00:00Z"


def test_an_attempt_continued_after_a_pause_is_said_and_counted_once() -> None:
    view = RunView(run_id="run-1")
    at = "2026-01-01T00:00:00Z"
    said = [view.apply(Event(run_id="run-1", seq=seq, type=kind, at=at,
                             payload={"node": "a", "attempt": 2, **extra}))
            for seq, (kind, extra) in enumerate([
                ("node/started", {"type": "task"}), ("attempt/started", {}),
                ("node/waiting", {"token": "drv-1", "status": "running"}),
                ("driver/answered", {}), ("node/started", {}), ("attempt/started", {})], 1)]
    assert said == [["  … a started"], ["  … a attempt 2"], ["  ⏸ a waiting for driver"],
                    [], [], []]
    assert view.node_executions == 2  # the node's execution and its second attempt


def test_a_view_taken_up_mid_run_is_primed_without_the_items(live: Scenario) -> None:
    from rein.cli.live import history
    from rein.cli.live_state import HISTORY_TYPES

    asked: list[Any] = []

    class Reads:  # a stand-in for the Harness's two reads that counts what is asked
        def top_run_id(self, run_id: str) -> str:
            return run_id

        def child_runs(self, run_id: str) -> list[Any]:
            return []

        def events(self, run_id: str, *, types: Any = None) -> list[Any]:
            asked.append(types)
            return []

    assert history(Reads(), Event(run_id="run-1", seq=9, type="driver/answered",
                                  payload={}, at="2026-01-01T00:00:00Z")) == ("run-1", [])
    assert asked == [sorted(HISTORY_TYPES)] and "item" not in HISTORY_TYPES


def test_the_screen_renders_what_the_view_holds(live: Scenario) -> None:
    from rich.console import Console

    events = _events(live)
    view = RunView(run_id=events[0].run_id, limits=RETRIED["constraints"])
    for event in events:
        view.apply(event)
    console = Console(record=True, width=100, color_system=None)
    console.print(render(view))
    text = console.export_text().splitlines()
    assert text[0].startswith(f"run {view.run_id}  tests/live  succeeded")
    assert {line.split()[1]: line.split()[2] for line in text
            if line[:1] in "✓✗"} == FINAL
    assert re.search(r"attempt 1 +criteria_failed", text[3])


def _gated(scenario: Scenario) -> tuple[str, str]:
    from tests.cli.test_run_commands import GATED

    scenario.file("gated.agraph.yaml", yaml.safe_dump(GATED, sort_keys=False))
    scenario.answers({"nodes": {"work": [{"outputs": {}}], "undo": [{"outputs": {}}]}})
    code, _ = scenario.run("gated.agraph.yaml")
    assert code == 3
    [pending] = scenario.pending()
    return scenario.last_run(), pending["approval_id"]


def test_an_answer_that_continues_the_run_tells_only_what_follows(live: Scenario) -> None:
    run_id, approval = _gated(live)
    live.capsys.readouterr()
    assert main(["approvals", "accept", approval]) == 0
    lines = live.capsys.readouterr().err.splitlines()
    # The view starts from what the run did before the pause: it knows the graph, and
    # what had happened already is not told again.
    assert lines[0] == f"run {run_id}  tests/gated"
    assert not any("work" in line for line in lines)
    assert any(line.startswith("  ✓ ok succeeded") for line in lines)


def test_a_node_left_waiting_by_a_cancelled_run_is_shown_cancelled(live: Scenario) -> None:
    run_id, _ = _gated(live)
    assert live.rein("runs", "cancel", run_id, "--note", "wrong branch")[0] == 1
    code, events, _ = _run_events(live, run_id)
    assert code == 0
    view = RunView(run_id=run_id)
    for event in events:
        view.apply(event)
    assert view.status == "cancelled"
    ok = view.nodes["ok"]
    assert ok.status == "cancelled"
    assert ok.reason == "the run was cancelled"  # the engine ends it, with the reason
    assert view.cancel_note == "wrong branch" and view.cancelled_by  # who, and why


def _run_events(live: Scenario, run_id: str) -> tuple[int, list[Event], str]:
    code, out = live.rein("runs", "events", run_id, "--json")
    rows = [json.loads(line) for line in out.splitlines()[:-1]]
    return code, [Event(run_id=e["run_id"], seq=e["seq"], type=e["type"],
                        payload=e["payload"], at=e["at"]) for e in rows], out


def test_a_small_screen_folds_the_nodes_that_ended_well_and_keeps_the_rest() -> None:
    from rich.console import Console

    view = RunView(run_id="run-1", graph_id="g")
    at = "2026-01-01T00:00:00Z"
    seq = 0
    for i in range(20):
        for kind, payload in (("node/started", {"type": "task"}),
                              ("node/finished", {"status": "succeeded"})):
            seq += 1
            view.apply(Event(run_id="run-1", seq=seq, type=kind, at=at,
                             payload={"node": f"n{i:02d}", **payload}))
    view.apply(Event(run_id="run-1", seq=seq + 1, type="node/started", at=at,
                     payload={"node": "slow", "type": "task"}))

    def text(rows: int | None) -> list[str]:
        console = Console(record=True, width=100, color_system=None)
        console.print(render(view, max_rows=rows))
        return console.export_text().splitlines()

    small = text(5)
    assert "16 more ended" in small[1]
    assert [line.split()[1] for line in small[2:7]] == ["n16", "n17", "n18", "n19", "slow"]
    assert len(text(None)) == 1 + 21 + 1  # the last view is printed whole
