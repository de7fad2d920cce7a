"""Whatever happens inside a trial stays inside it: a broken scenario is that trial's
error, a trial past its time fails for it, and the evaluation goes on."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path
from typing import Any

from eval_support import SUITE, run_approved, run_eval


def test_a_broken_scenario_is_an_error_and_the_others_run(ws: Path, tmp_path: Path,
                                                          capsys: Any) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(SUITE / "eval.toml", suite / "eval.toml")
    shutil.copytree(SUITE / "fix-greeting", suite / "fix-greeting")
    shutil.copytree(SUITE / "count-lines", suite / "count-lines")
    (suite / "count-lines" / "model.json").unlink()  # the test double has nothing to play
    broken = suite / "fix-greeting" / "graph.agraph.yaml"
    shutil.copytree(suite / "fix-greeting", suite / "bad-graph")
    (suite / "bad-graph" / "graph.agraph.yaml").write_text(
        broken.read_text().replace("entrypoints: [fix]", "entrypoints: [nowhere]"))
    code, result = run_eval(capsys, str(suite), "--config", "scripted")
    assert code == 0
    trials = {t["scenario"]: t for t in result["trials"]}
    assert trials["fix-greeting"]["status"] == "solved"
    assert trials["count-lines"]["status"] == "error"
    assert "model.json" in trials["count-lines"]["reason"]
    assert trials["bad-graph"]["status"] == "error"
    graph = suite / "bad-graph" / "graph.agraph.yaml"
    # The code, where, the fix, and how to see every finding: no other place says them.
    assert trials["bad-graph"]["reason"] == (
        "the scenario's graph cannot start: AG115: entrypoint 'nowhere' is not a node of this "
        f"graph, at {graph}:12:15; name a node declared under the graph's nodes (every "
        f"finding: `rein graph validate {graph}`)")
    [config] = result["configurations"]
    assert (config["solved"], config["trials"], config["errors"]) == (1, 3, 2)


def test_a_trial_past_its_time_fails_for_it(ws: Path, tmp_path: Path, capsys: Any) -> None:
    folder = tmp_path / "suite" / "slow"
    shutil.copytree(SUITE / "fix-greeting", folder)
    (folder / "solution" / "solve.sh").write_text(textwrap.dedent("""\
        #!/bin/bash
        while true; do sleep 1; done
        """))
    code, result = run_eval(capsys, str(folder.parent), "--config", "oracle",
                            "--timeout", "2")
    [trial] = result["trials"]
    assert code == 1 and trial["status"] == "failed"
    assert trial["failures"][0]["criterion"] == "time"
    assert "ran past its 2 s" in trial["reason"]


def test_trials_keep_their_own_store_whatever_the_persons_rein_toml_says(
        ws: Path, tmp_path: Path, capsys: Any) -> None:
    """A user rein.toml naming a shared store and the DBOS executor: each trial still keeps
    its runs in its own workspace and runs its attempts in process."""
    user = tmp_path / "home" / ".config" / "rein" / "rein.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[store]\nurl = "postgresql://nobody@127.0.0.1:9/none"\n\n'
                    '[executor]\nkind = "dbos"\n')
    code, result = run_eval(capsys, str(SUITE / "fix-greeting"), "--config", "oracle",
                            "--config", "scripted")
    assert code == 0
    assert [t["status"] for t in result["trials"]] == ["solved", "solved"]
    for trial in result["trials"]:
        assert (Path(trial["folder"]) / "workspace" / ".rein").is_dir()


COMMAND_CONFIG = """
[configurations.cli-agent]
description = "a command worker running an agent CLI (a script here)"
[configurations.cli-agent.rein.workers.command.agent]
argv = ["bash", "{suite}/agent.sh", "{prompt_file}"]
[configurations.cli-agent.rein.tiers.standard]
provider = "agent"
model = "agent-cli"
"""
AGENT = """#!/bin/bash
# Stands in for an agent CLI: reads its prompt, does the greeting's fix, reports.
grep -q "hello.txt" "$1" || exit 9
printf 'hello\\n' > hello.txt
echo '{"summary": "fixed by the agent CLI"}'
"""


def test_a_command_worker_configuration(ws: Path, tmp_path: Path, capsys: Any) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(SUITE / "fix-greeting", suite / "fix-greeting")
    (suite / "eval.toml").write_text(COMMAND_CONFIG)
    (suite / "agent.sh").write_text(AGENT)
    code, result = run_approved(capsys, str(suite), "--config", "cli-agent")
    assert code == 0
    [config] = result["configurations"]
    assert config["worker"] == "command" and "test_double" not in config
    assert (config["solved"], config["trials"]) == (1, 1)
    assert config["tokens"] is None and config["cost_usd"] is None  # the CLI reported none


def test_a_brief_runs_whatever_plan_roles_the_person_requires(
        ws: Path, tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    """[dev] plan_roles guards a person's real plans; a trial's plan gate is its scenario's
    declared answer, in a repository made for the trial."""
    from support import account_files

    _managed, user = account_files(monkeypatch, tmp_path)
    user.parent.mkdir(parents=True)
    user.write_text('[approver]\nid = "bo"\n[dev]\nplan_roles = ["tech-lead"]\n')
    code, result = run_eval(capsys, str(SUITE / "tempconv"), "--config", "oracle")
    [trial] = result["trials"]
    assert code == 0 and trial["status"] == "solved", trial["reason"]


# The scripted model writes a wrong module: only the scenario's own verify can tell.
WRONG = [{"tool_calls": [{"name": "file_write", "arguments": {
             "path": "tempconv.py", "content": "def c_to_f(c):\n    return c\n"}}]},
         {"tool_calls": [{"name": "submit_outputs", "arguments": {"summary": "done"}}]}]
PASSES = '["python3", "-c", "import sys; sys.exit(0)"]'


def test_a_briefs_check_is_its_scenarios_whatever_the_persons_dev_table_says(
        ws: Path, tmp_path: Path, capsys: Any) -> None:
    """[dev] verify overrides every feature's verify command in rein dev, and smoke runs
    before it in the same tree: from the person's rein.toml they graded a brief trial (a
    wrong module was solved); a trial's check is the scenario's."""
    import json

    user = tmp_path / "home" / ".config" / "rein" / "rein.toml"
    user.parent.mkdir(parents=True)
    user.write_text(f"[dev]\nverify = {PASSES}\nsmoke = {PASSES}\n")
    suite = tmp_path / "suite"
    shutil.copytree(SUITE / "tempconv", suite / "tempconv")
    (suite / "tempconv" / "model.json").write_text(json.dumps(WRONG))
    shutil.copy(SUITE / "eval.toml", suite / "eval.toml")
    code, result = run_eval(capsys, str(suite), "--config", "scripted")
    [trial] = result["trials"]
    assert code == 0 and trial["status"] == "failed", trial["reason"]
    assert "check_tempconv.py" in trial["reason"]


def test_a_configuration_cannot_set_a_briefs_check(ws: Path, tmp_path: Path,
                                                   capsys: Any) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(SUITE / "tempconv", suite / "tempconv")
    (suite / "eval.toml").write_text((SUITE / "eval.toml").read_text() + f"""
[configurations.lenient]
extends = "scripted"
[configurations.lenient.rein.dev]
verify = {PASSES}
""")
    code, out = run_eval(capsys, str(suite), "--config", "lenient")
    assert (code, out["error"]["code"]) == (64, "EVAL005")
    assert out["error"]["message"].startswith("configurations.lenient.rein.dev.verify cannot "
                                              "be set by a configuration")
    assert not (ws / ".rein").exists()
