"""Harbor task directories: task.toml read as Harbor reads it, the reward read as Harbor
reads it, and a task written from the documented format run by `rein eval`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from eval_support import run_eval
from harbor_tasks import write_task

from rein.errors import ConfigError
from rein.eval.harbor import instruction_text, read_reward, read_task


def test_every_section_is_optional_and_the_defaults_are_harbors(tmp_path: Path) -> None:
    task = read_task(write_task(tmp_path, "plain"))
    assert (task.name, task.workdir, task.network) == ("plain", "/app", True)
    assert task.verifier_timeout == 600.0 and task.agent_timeout is None
    assert not task.needs_container and task.unsupported is None and task.solution is None


def test_the_keys_a_trial_needs_and_unknown_keys_ignored(tmp_path: Path) -> None:
    path = write_task(tmp_path, "full", toml="""
        schema_version = "1.1"
        future_key = 3
        [task]
        name = "org/full-task"
        [agent]
        timeout_sec = 120
        [verifier]
        timeout_sec = 30.5
        env = { MODE = "strict", WHO = "${REIN_TEST_WHO:-nobody}" }
        [solution]
        env = { SEED = "${REIN_TEST_SEED}" }
        [environment]
        workdir = "/srv/app/"
        allow_internet = false
        docker_image = "example/image:1"
        """, solve="#!/bin/bash\n")
    task = read_task(path, env={"REIN_TEST_SEED": "7"})
    assert task.name == "full-task"  # the last segment, as Harbor names its trials
    assert (task.workdir, task.network, task.agent_timeout, task.verifier_timeout) == (
        "/srv/app", False, 120.0, 30.5)
    assert task.verifier_env == {"MODE": "strict", "WHO": "nobody"}
    assert task.solution_env == {"SEED": "7"}
    assert task.needs_container and task.docker_image == "example/image:1"
    assert task.solution == path / "solution" / "solve.sh"


def test_network_mode_wins_over_the_deprecated_allow_internet(tmp_path: Path) -> None:
    path = write_task(tmp_path, "t", toml="""
        [environment]
        network_mode = "no-network"
        allow_internet = true
        """)
    assert read_task(path).network is False


def test_an_unset_variable_without_default_is_refused_with_the_name(tmp_path: Path) -> None:
    path = write_task(tmp_path, "t", toml='[verifier]\nenv = { KEY = "${REIN_TEST_UNSET}" }\n')
    with pytest.raises(ConfigError) as caught:
        read_task(path, env={})
    assert caught.value.code == "EVAL003"
    assert "REIN_TEST_UNSET" in caught.value.message


@pytest.mark.parametrize("missing", ["instruction.md", "tests/test.sh"])
def test_a_task_without_its_required_files_is_refused(tmp_path: Path, missing: str) -> None:
    path = write_task(tmp_path, "t")
    (path / missing).unlink()
    with pytest.raises(ConfigError) as caught:
        read_task(path)
    assert caught.value.code == "EVAL003" and missing in caught.value.message


@pytest.mark.parametrize(("toml", "why"), [
    ('[[steps]]\nname = "one"\n', "several steps"),
    ('[environment]\nos = "windows"\n', "windows"),
    ('[verifier]\nenvironment_mode = "separate"\n', "separate environment"),
])
def test_what_rein_does_not_run_is_said(tmp_path: Path, toml: str, why: str) -> None:
    assert why in (read_task(write_task(tmp_path, "t", toml=toml)).unsupported or "")


def test_canary_lines_are_removed_from_the_instruction() -> None:
    text = "<!-- BENCHMARK DATA canary GUID 123 -->\n# also a canary line\n\nDo the thing.\n"
    assert instruction_text(text) == "Do the thing.\n"
    assert instruction_text("# Title\n\nBody\n") == "# Title\n\nBody\n"


@pytest.mark.parametrize(("files", "rewards", "solved"), [
    ({"reward.txt": "1\n"}, {"reward": 1.0}, True),
    ({"reward.txt": " 0.5 "}, {"reward": 0.5}, False),
    ({"reward.json": '{"reward": 1, "style": 0.2}'}, {"reward": 1.0, "style": 0.2}, True),
    ({"reward.json": '{"tests": 1}'}, {"tests": 1.0}, True),
    ({"reward.json": '{"reward": true}'}, {"reward": 1.0}, True),
    ({"reward.json": '{"reward": 0}', "reward.txt": "1"}, {"reward": 0.0}, False),
])
def test_rewards_are_read_json_first(tmp_path: Path, files: dict[str, str],
                                     rewards: dict[str, float], solved: bool) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    reward = read_reward(tmp_path)
    assert (reward.rewards, reward.solved, reward.problem) == (rewards, solved, None)


@pytest.mark.parametrize(("files", "problem"), [
    ({}, "wrote no reward"),
    ({"reward.txt": "  \n"}, "reward.txt is empty"),
    ({"reward.txt": "nan"}, "not a finite number"),
    ({"reward.txt": "pass"}, "not a number"),
    ({"reward.json": "{}"}, "not a map"),
    ({"reward.json": '{"reward": 1e309}'}, "not a finite number"),
    ({"reward.json": '{"reward": "1"}'}, "not a finite number"),
])
def test_a_missing_or_bad_reward_is_no_reward(tmp_path: Path, files: dict[str, str],
                                              problem: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    reward = read_reward(tmp_path)
    assert reward.rewards is None and not reward.solved
    assert problem in (reward.problem or "")


HELLO_TEST = """#!/bin/bash
# Harbor's conventions: absolute paths, the working directory as cwd, the exit code ignored.
[ "$PWD" = /work/here ] || { echo "cwd is $PWD"; echo 0 > /logs/verifier/reward.txt; exit 3; }
if [ "$(cat /work/here/answer.txt 2>/dev/null)" = "$(cat /tests/expected.txt)" ] \\
   && [ "$MODE" = strict ] && [ -f /work/here/given.txt ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
exit 5
"""


def test_a_task_written_from_the_documented_format_runs(ws: Path, tmp_path: Path,
                                                        capsys: Any) -> None:
    suite = tmp_path / "suite"
    task = write_task(suite, "answer", toml="""
        [task]
        name = "tests/answer"
        [verifier]
        env = { MODE = "strict" }
        [solution]
        env = { ANSWER = "42" }
        [environment]
        workdir = "/work/here"
        network_mode = "no-network"
        """, test=HELLO_TEST, environment={"given.txt": "a file of the image\n"},
        solve="#!/bin/bash\nset -e\ntest -d /solution\necho \"$ANSWER\" > answer.txt\n")
    (task / "tests" / "expected.txt").write_text("42\n")
    code, result = run_eval(capsys, str(suite), "--config", "oracle", "--config", "nop")
    assert code == 0
    rates = {c["name"]: (c["solved"], c["trials"]) for c in result["configurations"]}
    assert rates == {"oracle": (1, 1), "nop": (0, 1)}
    trials = {t["configuration"]: t for t in result["trials"]}
    assert trials["oracle"]["reward"] == {"reward": 1.0}
    folder = Path(trials["oracle"]["folder"])
    # What Harbor leaves: the oracle's output, the test output, the reward; the stale
    # reward of the workspace never reaches the verifier's folder.
    assert (folder / "logs" / "agent" / "oracle.txt").is_file()
    assert (folder / "logs" / "verifier" / "test-stdout.txt").is_file()
    assert (folder / "workdir" / "answer.txt").read_text() == "42\n"
    assert trials["nop"]["failures"][0]["criterion"] == "reward"


def test_an_agent_cannot_plant_a_reward(ws: Path, tmp_path: Path, capsys: Any) -> None:
    """The oracle writes reward.txt = 1 itself; the verifier removes it before the tests
    run, and the tests (which write nothing) leave no reward: not solved."""
    suite = tmp_path / "suite"
    write_task(suite, "plant", test="#!/bin/bash\ntrue\n",
               solve="#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    code, result = run_eval(capsys, str(suite), "--config", "oracle")
    assert code == 1  # the oracle misses a scenario: the suite is not valid
    trial = result["trials"][0]
    assert trial["status"] == "failed" and "wrote no reward" in trial["reason"]


def test_a_name_that_cannot_name_a_folder_gives_way_to_the_folders(tmp_path: Path) -> None:
    path = write_task(tmp_path, "real-folder", toml='[task]\nname = "org/bad name\\u0000"\n')
    assert read_task(path).name == "real-folder"
