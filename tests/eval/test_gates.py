"""Gates met during a trial are answered only by the answers the scenario declares, are
recorded as such (never as a person's), and only inside an evaluation."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
from eval_support import SUITE, run_eval

from rein.cli import main
from rein.errors import Refused
from rein.eval.gates import TrialSeal
from rein.store.sqlite import SQLiteStore

GRAPH = """
ags_version: "1.0"
kind: AgenticGraph
id: rein/tests/gated
title: Gated
version: 1.0.0
requires_conformance: 2
objective: A gate collects a value, then a check reads the value.
constraints: { max_cost_usd: 1.0 }
entrypoints: [ask]
nodes:
  ask:
    type: gate
    title: Which release?
    description: A person names the release.
    gate:
      mode: input
      prompt: Which release?
      collect:
        release: { type: string, description: The release name. }
      on_reject: fail
  check:
    type: task
    title: Record it
    description: Write the release to RELEASE.
    depends_on: [ask]
    intelligence: { tier: standard }
    inputs:
      release: { type: string, description: The release., from: nodes.ask.outputs.release }
    outputs:
      summary: { type: string, description: done }
    requirements:
      permissions: ["fs:write:RELEASE"]
      workspace: read_write
    success:
      criteria:
        - id: recorded
          kind: command
          description: RELEASE names the release.
          run: grep -qx 2.0 RELEASE
          expect_exit_code: 0
          timeout_seconds: 30
"""


def scenario(root: Path, gates: str) -> Path:
    folder = root / "suite" / "gated"
    (folder / "solution").mkdir(parents=True)
    (folder / "graph.agraph.yaml").write_text(textwrap.dedent(GRAPH))
    (folder / "scenario.toml").write_text('[scenario]\nkind = "graph"\n\n' + gates)
    (folder / "solution" / "solve.sh").write_text(
        "#!/bin/bash\necho 2.0 > RELEASE\necho '{\"summary\": \"recorded\"}'\n")
    return folder.parent


def approvals_of(trial: dict[str, Any]) -> list[Any]:
    store = SQLiteStore.open(Path(trial["folder"]) / "workspace", create=False)
    assert store is not None
    try:
        return store.approvals()
    finally:
        store.close()


def test_a_declared_answer_is_given_and_recorded_as_the_scenarios(
        ws: Path, tmp_path: Path, capsys: Any) -> None:
    suite = scenario(tmp_path, '[gates]\nask = { answer = "accept", values = '
                               '{ release = "2.0" } }\n')
    code, result = run_eval(capsys, str(suite), "--config", "oracle")
    assert code == 0
    [trial] = result["trials"]
    assert trial["status"] == "solved"
    [given] = trial["gates"]
    evaluation = result["evaluation"]
    origin = f"declared by scenario gated inside evaluation {evaluation} (trial {trial['trial']})"
    assert (given["node"], given["answer"], given["origin"]) == ("ask", "accept", origin)
    gates = [a for a in approvals_of(trial) if a.kind.value == "gate"]
    [row] = gates
    assert row.status.value == "accepted"
    assert row.answer["actor"] == "scenario:gated" and row.answer["identity"] == origin
    how = row.answer["given"]
    assert (how["surface"], how["standing"], how["approver"], how["declared"]) == (
        "evaluation", "declared-by-scenario", "scenario:gated", True)
    assert {k: how["identity"][k] for k in ("method", "scenario", "evaluation", "trial")} == {
        "method": "declared-by-scenario", "scenario": "gated", "evaluation": evaluation,
        "trial": trial["trial"]}
    assert row.answer["values"] == {"release": "2.0"}
    # What `rein approvals show` says of it: the scenario's standing answer, not a person's.
    from rein.cli.approval_view import how_given

    said = how_given(row.answer)
    assert said.startswith("via evaluation, declared-by-scenario (account ")
    assert said.endswith("by standing instruction declared-by-scenario")


def test_a_declared_decline_is_given_too(ws: Path, tmp_path: Path, capsys: Any) -> None:
    suite = scenario(tmp_path, '[gates]\nask = "decline"\n')
    code, result = run_eval(capsys, str(suite), "--config", "oracle")
    [trial] = result["trials"]
    assert code == 1 and trial["status"] == "failed"  # the oracle misses: the gate said no
    assert trial["gates"][0]["answer"] == "decline"
    assert [a.status.value for a in approvals_of(trial) if a.kind.value == "gate"] == [
        "declined"]


def test_a_gate_without_a_declared_answer_is_never_answered(ws: Path, tmp_path: Path,
                                                           capsys: Any) -> None:
    suite = scenario(tmp_path, "")
    code, result = run_eval(capsys, str(suite), "--config", "oracle")
    [trial] = result["trials"]
    assert code == 1 and trial["status"] == "failed" and trial["gates"] == []
    # What would answer it (a brief's plan gate is the one a scenario most often misses):
    assert trial["reason"].startswith('gate ask has no answer declared by its scenario.toml '
                                      '([gates] ask = "accept"): apv-')
    assert trial["failures"][-1]["criterion"] == "waiting"
    assert [a.status.value for a in approvals_of(trial) if a.kind.value == "gate"] == [
        "pending"]


def test_a_tool_call_in_ask_is_not_a_gate_and_is_not_answered(ws: Path, tmp_path: Path,
                                                              capsys: Any) -> None:
    """Without [policy] shell = "allow", the scripted model's shell call asks a person:
    nothing in an evaluation answers it."""
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copytree(SUITE / "count-lines", suite / "count-lines")
    text = (SUITE / "eval.toml").read_text().replace('policy = { shell = "allow" }\n', "")
    (suite / "eval.toml").write_text(text)
    code, result = run_eval(capsys, str(suite), "--config", "scripted")
    [trial] = result["trials"]
    assert code == 0 and trial["status"] == "failed"
    assert "tool_call approval" in trial["reason"]
    assert trial["reason"].endswith("is never answered inside an evaluation: let the "
                                    "configuration's [policy] allow the call")


def test_outside_an_evaluation_the_declarations_mean_nothing(ws: Path, tmp_path: Path,
                                                            capsys: Any) -> None:
    """The same graph, run as any run (its scenario.toml beside it): it waits for a person."""
    suite = scenario(tmp_path, '[gates]\nask = "accept"\n')
    graph = suite / "gated" / "graph.agraph.yaml"
    code = main(["run", str(graph), "--approve", _digest(graph), "--json"])
    assert code == 3
    store = SQLiteStore.open(ws, create=False)
    assert store is not None
    try:
        assert [a.status.value for a in store.approvals() if a.kind.value == "gate"] == [
            "pending"]
    finally:
        store.close()


def test_the_seal_is_only_for_a_trial_of_its_own_evaluation(tmp_path: Path) -> None:
    trials = tmp_path / ".rein" / "evals" / "e1" / "trials"
    inside = trials / "t__c__1" / "a1" / "workspace"
    inside.mkdir(parents=True)
    seal = TrialSeal.open(evaluation="e1", trials_root=trials, trial="t__c__1",
                          scenario="t", workspace=inside)
    assert seal.origin() == "declared by scenario t inside evaluation e1 (trial t__c__1)"
    with pytest.raises(Refused) as caught:
        TrialSeal.open(evaluation="e1", trials_root=trials, trial="t__c__1", scenario="t",
                       workspace=tmp_path)
    assert caught.value.code == "EVAL020"


def test_a_seal_does_not_answer_another_workspaces_gates(tmp_path: Path) -> None:
    import asyncio

    from rein.config import Config
    from rein.engine.service import Harness
    from rein.eval.gates import answer_declared

    trials = tmp_path / "trials"
    (trials / "a").mkdir(parents=True)
    seal = TrialSeal.open(evaluation="e1", trials_root=trials, trial="a", scenario="s",
                          workspace=trials / "a")
    with Harness.open(tmp_path, Config(data={}, sources={})) as harness, \
            pytest.raises(Refused) as caught:
        asyncio.run(answer_declared(harness, "run-x", seal, {}))
    assert caught.value.code == "EVAL020"


def _digest(graph: Path) -> str:
    from rein.formats.ags import validate_path

    digest = validate_path(graph).digest
    assert digest is not None
    return digest


def test_a_trials_graph_is_recorded_as_started_from_an_evaluation(
        ws: Path, tmp_path: Path, capsys: Any) -> None:
    suite = scenario(tmp_path, '[gates]\nask = { answer = "accept", values = '
                               '{ release = "2.0" } }\n')
    _code, result = run_eval(capsys, str(suite), "--config", "oracle")
    [trial] = result["trials"]
    [graph] = [a for a in approvals_of(trial) if a.kind.value == "graph"]
    assert graph.answer["given"]["surface"] == "evaluation"
