"""An evaluation is a durable run: killed with SIGKILL while a trial runs, it resumes with
no finished trial run again; the interrupted one runs again exactly once, as attempt 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from eval_support import SUITE, run_eval

from rein.eval.ledger import Ledger
from rein.eval.trial import Trial

GRAPH = """
ags_version: "1.0"
kind: AgenticGraph
id: rein/tests/{name}
title: {name}
version: 1.0.0
requires_conformance: 1
objective: DONE exists.
entrypoints: [work]
nodes:
  work:
    type: task
    title: Work
    description: Make DONE.
    intelligence: {{ tier: standard }}
    outputs:
      summary: {{ type: string, description: done }}
    requirements:
      permissions: ["fs:write:**"]
      workspace: read_write
    success:
      criteria:
        - {{ id: done, kind: file_exists, description: DONE exists., path: DONE }}
"""
# The barrier scenario's solution says it runs, then, in its first attempt, waits until
# the evaluation is killed; the attempt after the resume goes straight on. (It sees only its
# own workspace, where it runs: its sandbox binds nothing of the test's folders.)
BARRIER = """#!/bin/bash
touch RUNNING
case "$PWD" in */a1/workspace) while true; do sleep 0.05; done ;; esac
touch DONE
echo '{{"summary": "done"}}'
"""


def suite(root: Path) -> Path:
    for name in ("a", "b", "barrier", "c"):
        folder = root / "suite" / name
        (folder / "solution").mkdir(parents=True)
        (folder / "scenario.toml").write_text('[scenario]\nkind = "graph"\n')
        (folder / "graph.agraph.yaml").write_text(textwrap.dedent(GRAPH.format(name=name)))
        solve = BARRIER.format() if name == "barrier" else \
            "#!/bin/bash\ntouch DONE\necho '{\"summary\": \"done\"}'\n"
        (folder / "solution" / "solve.sh").write_text(solve)
    return root / "suite"


def test_a_kill_mid_evaluation_resumes_with_no_trial_run_twice(
        ws: Path, tmp_path: Path, capsys: Any) -> None:
    path = suite(tmp_path)
    rein = Path(sys.executable).parent / "rein"
    process = subprocess.Popen([str(rein), "eval", str(path), "--config", "oracle",
                                "--lanes", "1", "--json"], cwd=ws, start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        running = None
        for _ in range(1200):  # bounded: the barrier trial announces itself once it runs
            found = list(ws.glob(".rein/evals/*/trials/barrier__oracle__1/a1/workspace/RUNNING"))
            if found:
                running = found[0]
                break
            if process.poll() is not None:
                break
            time.sleep(0.05)
        assert running is not None, process.communicate()
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    evaluation = running.parents[4].name
    ledger = Ledger.open(ws, evaluation)
    before = ledger.entries()
    assert {k: (e.started, e.result is not None) for k, e in before.items()} == {
        "a__oracle__1": (1, True), "b__oracle__1": (1, True),
        "barrier__oracle__1": (1, False)}
    assert not (ledger.folder / "result.json").exists()

    code, result = run_eval(capsys, "--resume", evaluation)
    assert code == 0
    after = ledger.entries()
    assert {k: (e.started, e.result.attempt if e.result else None)
            for k, e in after.items()} == {
        "a__oracle__1": (1, 1), "b__oracle__1": (1, 1), "barrier__oracle__1": (2, 2),
        "c__oracle__1": (1, 1)}
    # Each trial's folders: one per attempt actually run; the finished ones untouched.
    folders = {p.parent.name: sorted(x.name for x in p.parent.iterdir())
               for p in ledger.trials_root.glob("*/a1")}
    assert folders == {"a__oracle__1": ["a1"], "b__oracle__1": ["a1"],
                       "barrier__oracle__1": ["a1", "a2"], "c__oracle__1": ["a1"]}
    finished = [json.loads(line)["trial"] for line in
                (ledger.folder / "journal.jsonl").read_text().splitlines()
                if json.loads(line)["event"] == "finished"]
    assert sorted(finished) == ["a__oracle__1", "b__oracle__1", "barrier__oracle__1",
                                "c__oracle__1"]
    [oracle] = result["configurations"]
    assert (oracle["solved"], oracle["trials"]) == (4, 4)
    # A finished evaluation resumed again runs nothing.
    code, again = run_eval(capsys, "--resume", evaluation)
    assert code == 0 and len(ledger.entries()) == 4
    assert again["configurations"] == result["configurations"]
    assert (ledger.folder / "journal.jsonl").read_text().count('"finished"') == 4


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_stops_the_running_trials_now_and_resume_runs_them_again(
        ws: Path, tmp_path: Path, capsys: Any, sent: signal.Signals) -> None:
    """Ctrl-C does not wait for the running trials (up to --timeout each): it stops them,
    their processes too, records them as stopped, and a resume runs them again in a fresh
    folder; a stopped attempt is not a kill, so it does not count towards the two. SIGTERM
    (`timeout`, a CI job's end, `kill`) stops them the same way."""
    path = suite(tmp_path)
    (path / "barrier" / "solution" / "solve.sh").write_text(
        BARRIER.format().replace("while true; do sleep 0.05; done",
                        "while true; do date +%s%N > BEAT; sleep 0.05; done"))
    rein = Path(sys.executable).parent / "rein"
    process = subprocess.Popen([str(rein), "eval", str(path), "--config", "oracle",
                                "--lanes", "1"], cwd=ws, start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        beat = None
        for _ in range(1200):  # bounded: the barrier trial beats once it runs
            found = list(ws.glob(".rein/evals/*/trials/barrier__oracle__1/a1/workspace/BEAT"))
            if found:
                beat = found[0]
                break
            if process.poll() is not None:
                break
            time.sleep(0.05)
        assert beat is not None, process.communicate()
        process.send_signal(sent)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 130, err
    evaluation = beat.parents[4].name
    assert ("stopping: 1 running trial(s) stopped before their end, not recorded; "
            f"`rein eval --resume {evaluation}` runs them again") in err
    last = beat.read_text()
    time.sleep(0.3)
    assert beat.read_text() == last  # its process is gone
    ledger = Ledger.open(ws, evaluation)
    entry = ledger.entries()["barrier__oracle__1"]
    assert (entry.started, entry.stopped, entry.result, entry.killed) == (1, 1, None, 0)
    assert "c__oracle__1" not in ledger.entries()  # not begun

    code, result = run_eval(capsys, "--resume", evaluation)
    assert code == 0, result
    trials = {t["trial"]: (t["attempt"], t["status"]) for t in result["trials"]}
    assert trials == {"a__oracle__1": (1, "solved"), "b__oracle__1": (1, "solved"),
                      "barrier__oracle__1": (2, "solved"), "c__oracle__1": (1, "solved")}
    assert sorted(x.name for x in (ledger.trials_root / "barrier__oracle__1").iterdir()) \
        == ["a1", "a2"]


def test_attempts_stopped_by_the_person_do_not_count_as_interrupted(ws: Path,
                                                                   tmp_path: Path) -> None:
    from rein.config import Config
    from rein.eval.approval import Review
    from rein.eval.configs import builtin
    from rein.eval.runner import Loaded, Options, run
    from rein.eval.scenarios import find_scenarios

    path = suite(tmp_path)
    scenarios = [s for s in find_scenarios([path]) if s.name == "a"]
    ledger = _ledger(ws, tmp_path)
    for attempt in (1, 2):  # stopped twice with Ctrl-C
        ledger.started("a__oracle__1", attempt, ledger.trials_root / "a__oracle__1" /
                       f"a{attempt}")
        ledger.stopped("a__oracle__1", attempt)
    loaded = Loaded(scenarios=scenarios, configs=[builtin("oracle")],
                    review=Review(digest=None))
    [trial] = run(ledger, loaded, options=Options(), base=Config(data={}, sources={}), env={},
                  say=[].append)
    assert (trial.status, trial.attempt) == ("solved", 3)


def _ledger(ws: Path, tmp_path: Path) -> Ledger:
    plan = {"evaluation": "eval-test", "paths": [], "scenarios": [], "configurations": [],
            "options": {"trials": 1}}
    return Ledger.create(ws, plan)


def test_a_trial_interrupted_twice_is_reported_and_not_run_again(ws: Path,
                                                                 tmp_path: Path) -> None:
    from rein.eval.approval import Review
    from rein.eval.configs import builtin
    from rein.eval.runner import Loaded, Options, run
    from rein.eval.scenarios import find_scenarios

    path = suite(tmp_path)
    scenarios = [s for s in find_scenarios([path]) if s.name == "a"]
    ledger = _ledger(ws, tmp_path)
    for attempt in (1, 2):
        ledger.started("a__oracle__1", attempt, ledger.trials_root / "a__oracle__1" /
                       f"a{attempt}")
    said: list[str] = []
    from rein.config import Config

    loaded = Loaded(scenarios=scenarios, configs=[builtin("oracle")],
                    review=Review(digest=None))
    [trial] = run(ledger, loaded, options=Options(), base=Config(data={}, sources={}), env={},
                  say=said.append)
    assert trial.status == "interrupted" and not trial.graded
    assert "interrupted twice" in said[0]
    assert not (ledger.trials_root / "a__oracle__1").exists()  # nothing ran


def test_a_line_cut_short_by_a_kill_is_not_read(ws: Path, tmp_path: Path) -> None:
    ledger = _ledger(ws, tmp_path)
    ledger.started("t", 1, tmp_path)
    done = Trial(trial="t", scenario="s", configuration="c", index=1, status="solved")
    ledger.finished(done)
    journal = ledger.folder / "journal.jsonl"
    text = journal.read_text()
    journal.write_text(text + text.splitlines()[-1][:40])  # a torn second "finished"
    entries = ledger.entries()
    assert entries["t"].started == 1 and entries["t"].result == done


def test_one_evaluation_runs_in_one_process(ws: Path, tmp_path: Path) -> None:
    from rein.errors import Refused

    ledger = _ledger(ws, tmp_path)
    ledger.acquire()
    try:
        other = Ledger.open(ws, "eval-test")
        with pytest.raises(Refused) as caught:
            other.acquire()
        assert caught.value.code == "EVAL008"
    finally:
        ledger.release()


def test_an_unknown_evaluation_is_named(ws: Path, capsys: Any) -> None:
    code, out = run_eval(capsys, "--resume", "eval-nope")
    assert code == 1 and out["error"]["code"] == "EVAL404"


def test_a_damaged_plan_is_not_called_a_missing_evaluation(ws: Path, tmp_path: Path,
                                                           capsys: Any) -> None:
    """It said "no evaluation X", listing X among the evaluations here."""
    ledger = _ledger(ws, tmp_path)
    plan = ledger.folder / "plan.json"
    plan.write_text(plan.read_text()[:40])
    code, out = run_eval(capsys, "--resume", ledger.id)
    assert (code, out["error"]["code"]) == (1, "EVAL015")
    assert out["error"]["message"].startswith("evaluation eval-test's plan cannot be read: ")
    assert out["error"]["location"]["file"] == str(plan)


def test_damaged_results_are_not_called_a_baseline(ws: Path, tmp_path: Path,
                                                   capsys: Any) -> None:
    """--show of an evaluation whose result.json was damaged said "cannot read the
    baseline"; a resume writes the results again from the journal."""
    code, result = run_eval(capsys, str(suite(tmp_path) / "a"), "--config", "oracle")
    evaluation = result["evaluation"]
    (ws / ".rein" / "evals" / evaluation / "result.json").write_text("{")
    code, out = run_eval(capsys, "--show", evaluation)
    assert (code, out["error"]["code"]) == (1, "EVAL015")
    assert out["error"]["message"].startswith(f"evaluation {evaluation}'s results cannot be "
                                              "read: ")
    assert f"rein eval --resume {evaluation}" in out["error"]["hint"]
    code, again = run_eval(capsys, "--resume", evaluation)
    assert code == 0 and again["configurations"] == result["configurations"]
    code, shown = run_eval(capsys, "--show", evaluation)
    assert code == 0 and shown["configurations"] == result["configurations"]


def test_resume_and_show_refuse_the_options_they_would_ignore(ws: Path, tmp_path: Path,
                                                             capsys: Any) -> None:
    """A resume runs as planned and --show runs nothing: an option they would drop is
    refused with the reason, not ignored."""
    path = suite(tmp_path)
    code, result = run_eval(capsys, str(path / "a"), "--config", "oracle")
    evaluation = result["evaluation"]
    for args, flag, mode in ((["--resume", evaluation, "--trials", "5"], "--trials", "--resume"),
                             (["--resume", evaluation, "--config", "nop"], "--config",
                              "--resume"),
                             (["--show", evaluation, "--lanes", "4"], "--lanes", "--show"),
                             (["--show", evaluation, "--approve", "sha256:0"], "--approve",
                              "--show")):
        code, out = run_eval(capsys, *args)
        assert (code, out["error"]["code"]) == (64, "EVAL012"), args
        assert out["error"]["message"].startswith(f"{flag} does not go with {mode}: ")
    # --show with --baseline compares the finished evaluation with it.
    code, scripted = run_eval(capsys, str(SUITE / "fix-greeting"), "--config", "scripted")
    code, shown = run_eval(capsys, "--show", scripted["evaluation"], "--baseline",
                           scripted["evaluation"])
    assert code == 0, shown
    assert shown["baseline"]["passed"] is True


def test_show_says_an_evaluation_has_not_finished(ws: Path, tmp_path: Path,
                                                 capsys: Any) -> None:
    ledger = _ledger(ws, tmp_path)
    code, out = run_eval(capsys, "--show", ledger.id)
    assert (code, out["error"]["code"]) == (1, "EVAL014")
    assert out["error"]["message"] == "evaluation eval-test has not finished: it has no " \
        "results yet"
    assert f"rein eval --resume {ledger.id}" in out["error"]["hint"]
    code, out = run_eval(capsys, "--show", "eval-nope")
    assert (code, out["error"]["code"]) == (1, "EVAL404")


def test_an_html_report_that_cannot_be_written_is_refused_before_any_trial_runs(
        ws: Path, tmp_path: Path, capsys: Any) -> None:
    """It was found once every trial had run: OS_ERROR, and no report printed."""
    path = suite(tmp_path)
    code, out = run_eval(capsys, str(path / "a"), "--config", "oracle", "--html",
                         str(tmp_path / "nowhere" / "report.html"))
    assert (code, out["error"]["code"]) == (64, "EVAL012")
    assert out["error"]["message"].startswith("--html ")
    assert not (ws / ".rein").exists()


def test_a_stopped_trial_has_no_result_even_when_what_it_ran_made_one_of_the_cancel() -> None:
    """Code inside a trial that turns the cancel into a result (a failure it records and
    returns) must not make Ctrl-C journal that as the trial's result."""
    import asyncio
    import threading

    from rein.core.loops import run as run_loop
    from rein.eval.runner import RunningTrials

    running = RunningTrials()
    began = threading.Event()
    outcome: list[object] = []

    async def swallows() -> Any:
        began.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            return "failed: cancelled"  # what a careless worker might do
        return "finished"

    def lane() -> None:
        try:
            outcome.append(run_loop(running.guard(swallows())))
        except asyncio.CancelledError:
            outcome.append("stopped")

    thread = threading.Thread(target=lane)
    thread.start()
    assert began.wait(10)
    assert running.stop() == 1
    thread.join(10)
    assert outcome == ["stopped"]
    # and a trial that begins after the stop does not run at all
    ran: list[bool] = []

    async def late() -> Any:
        ran.append(True)

    try:
        run_loop(running.guard(late()))
    except asyncio.CancelledError:
        pass
    assert ran == []
