"""Trajectories exported as ATIF, checked against the format's rules (the checker is shown
to reject what ATIF rejects), and the mapping from rein's events."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from atif_schema import problems
from eval_support import SUITE, run_eval

from rein.cli import main

GOOD = {"schema_version": "ATIF-v1.8", "session_id": "s",
        "agent": {"name": "rein", "version": "0.1.0"},
        "steps": [{"step_id": 1, "source": "user", "message": "hi"},
                  {"step_id": 2, "source": "agent", "message": "",
                   "tool_calls": [{"tool_call_id": "c1", "function_name": "shell",
                                   "arguments": {}}],
                   "observation": {"results": [{"source_call_id": "c1", "content": ""}]},
                   "metrics": {"prompt_tokens": 1}}]}


@pytest.mark.parametrize("spoil", [
    lambda d: d["steps"][0].update(metrics={"prompt_tokens": 1}),
    lambda d: d["steps"][1]["observation"]["results"][0].update(source_call_id="c9"),
    lambda d: d["steps"][1].update(step_id=5),
    lambda d: d.update(unknown=1),
    lambda d: d.pop("agent"),
    lambda d: d.update(steps=[]),
    lambda d: d.update(schema_version="ATIF-v2.0"),
    lambda d: d["steps"][1].update(llm_call_count=0),
    lambda d: d["steps"][1].update(timestamp="yesterday"),
    lambda d: d["steps"][0].update(source="tool"),
    lambda d: d["steps"][1]["tool_calls"][0].pop("arguments"),
])
def test_the_checker_rejects_what_atif_rejects(spoil: Any) -> None:
    assert problems(GOOD) == []
    doc = copy.deepcopy(GOOD)
    spoil(doc)
    assert problems(doc) != []


def test_every_trajectory_of_the_suite_is_valid_atif(ws: Path, tmp_path: Path,
                                                     capsys: Any) -> None:
    out = tmp_path / "atif"
    code, result = run_eval(capsys, str(SUITE), "--config", "scripted", "--config", "nop",
                            "--atif", str(out))
    assert code == 0
    files = sorted(out.glob("*/agent/trajectory.json"))
    assert len(files) == len(result["trials"]) == 16
    for path in files:
        assert problems(json.loads(path.read_text())) == [], path


def test_a_model_turn_becomes_an_agent_step(ws: Path, tmp_path: Path, capsys: Any) -> None:
    code, result = run_eval(capsys, str(SUITE / "sort-names"), "--config", "scripted")
    assert code == 0
    [trial] = result["trials"]
    doc = json.loads((Path(trial["folder"]) / "agent" / "trajectory.json").read_text())
    assert [s["source"] for s in doc["steps"]] == ["user", "agent", "agent", "agent"]
    assert doc["steps"][0]["message"].startswith("Write the lines of names.txt")
    read, shell, submit = doc["steps"][1:]
    assert read["metrics"] == {"prompt_tokens": 230, "completion_tokens": 20}
    assert read["tool_calls"][0]["function_name"] == "file_read"
    assert "mallory" in read["observation"]["results"][0]["content"]
    assert read["observation"]["results"][0]["source_call_id"] == \
        read["tool_calls"][0]["tool_call_id"]
    assert shell["tool_calls"][0]["arguments"] == {"command": "sort names.txt > sorted.txt"}
    assert submit["tool_calls"][0]["function_name"] == "submit_outputs"
    assert doc["final_metrics"]["total_prompt_tokens"] == 230 + 280 + 310
    assert doc["agent"]["extra"] == {"configuration": "scripted"}


def test_a_harbor_trial_leaves_its_trajectory_where_harbor_reads_it(
        ws: Path, capsys: Any) -> None:
    code, result = run_eval(capsys, str(SUITE / "harbor-hello"), "--config", "scripted")
    assert code == 0
    [trial] = result["trials"]
    inside = Path(trial["folder"]) / "logs" / "agent" / "trajectory.json"
    assert problems(json.loads(inside.read_text())) == []


def test_show_reprints_a_finished_evaluation_and_exports_it(ws: Path, tmp_path: Path,
                                                            capsys: Any) -> None:
    code, result = run_eval(capsys, str(SUITE / "fix-greeting"), "--config", "oracle")
    assert code == 0
    capsys.readouterr()
    out = tmp_path / "again"
    assert main(["eval", "--show", result["evaluation"], "--atif", str(out), "-q"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"EVALUATION {result['evaluation']}")
    [path] = out.glob("*/agent/trajectory.json")
    doc = json.loads(path.read_text())
    assert problems(doc) == [] and doc["steps"][1]["llm_call_count"] == 0
