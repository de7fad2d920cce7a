"""The task.toml fields Harbor resolves per phase (network, user, time limits), what makes a
task unsupported rather than failed, and an agent past its time (the verifier still runs).
Read against Harbor's own models where the harbor package is installed."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest
from eval_support import SUITE, run_approved, run_eval
from harbor_tasks import write_task

from rein.errors import ConfigError
from rein.eval.container import commands
from rein.eval.harbor import read_task
from rein.eval.placement import place


def test_each_phase_has_the_network_harbor_resolves(tmp_path: Path) -> None:
    plain = read_task(write_task(tmp_path, "plain"))
    assert (plain.network, plain.agent_network, plain.verifier_network) == (True, True, True)
    closed = read_task(write_task(tmp_path, "closed", toml="""
        [environment]
        network_mode = "no-network"
        [verifier]
        network_mode = "public"
        """))
    assert (closed.network, closed.agent_network, closed.verifier_network) == (
        False, False, True)
    legacy = read_task(write_task(tmp_path, "legacy", toml="""
        [environment]
        allow_internet = false
        [agent]
        network_mode = "public"
        """))
    assert (legacy.network, legacy.agent_network, legacy.verifier_network) == (
        False, True, False)


def test_time_limits_and_users(tmp_path: Path) -> None:
    task = read_task(write_task(tmp_path, "t", toml="""
        [environment]
        build_timeout_sec = 90
        [agent]
        timeout_sec = 30
        user = "agent"
        [verifier]
        user = 0
        """))
    assert (task.build_timeout, task.agent_timeout, task.verifier_timeout) == (90.0, 30.0,
                                                                                600.0)
    assert (task.agent_user, task.verifier_user) == ("agent", "0")
    assert read_task(write_task(tmp_path, "d")).build_timeout == 600.0


@pytest.mark.parametrize(("toml", "says"), [
    ('[environment]\nnetwork_mode = "offline"\n', "is not a network mode"),
    ('[agent]\nallowed_hosts = ["example.com"]\n', "only valid with"),
    ('[verifier]\nuser = true\n', "user name or a UID"),
    ('[environment]\nbuild_timeout_sec = 0\n', "positive number"),
])
def test_what_harbor_rejects_is_refused(tmp_path: Path, toml: str, says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        read_task(write_task(tmp_path, "t", toml=toml))
    assert refused.value.code == "EVAL003" and says in refused.value.message


@pytest.mark.parametrize(("toml", "why"), [
    ('[[verifier.collect]]\ncommand = "cat /x"\nservice = "db"\n', "compose services"),
    ('[environment]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org"]\n',
     "agent network is an allowlist"),
    (('[environment]\nnetwork_mode = "allowlist"\n[agent]\nnetwork_mode = "public"\n'
     '[verifier]\nnetwork_mode = "no-network"\n'), None),  # no phase uses the allowlist
    ('[environment]\ngpus = 1\n', "GPUs"),
])
def test_what_rein_cannot_provide_is_unsupported(tmp_path: Path, toml: str,
                                                 why: str | None) -> None:
    task = read_task(write_task(tmp_path, "t", toml=toml))
    assert task.unsupported == why or (why is not None and why in (task.unsupported or ""))
    where = place(task, host=True, runtime=None, bubblewrap=True, agent_in_container=True)
    assert where.where == ("host" if why is None else "unsupported")


def test_what_only_rein_s_own_agents_cannot_take_leaves_the_task_to_oracle_and_nop(
        tmp_path: Path) -> None:
    task = read_task(write_task(tmp_path, "t", toml="""
        [[environment.mcp_servers]]
        name = "search"
        url = "http://localhost:9/sse"
        """))
    assert task.unsupported is None and "MCP servers" in (task.agent_unsupported or "")
    oracle = place(task, host=False, runtime=None, bubblewrap=True, agent_in_container=True)
    agent = place(task, host=False, runtime=None, bubblewrap=True, agent_in_container=False)
    assert (oracle.where, agent.where) == ("host", "unsupported")


def test_containers_run_each_phase_as_its_user_and_build_within_the_limit(
        tmp_path: Path) -> None:
    path = write_task(tmp_path, "imaged", toml="""
        [agent]
        user = "builder"
        [verifier]
        user = "0"
        """, environment={"Dockerfile": "FROM ubuntu:24.04\n"}, solve="#!/bin/bash\n")
    task = read_task(path)
    plan = commands(task, runtime="docker", container="c1", logs=tmp_path / "logs",
                    oracle=True)
    solve, verify = plan.solve[1], plan.verify[2]
    assert solve[solve.index("--user") + 1] == "builder"
    assert verify[verify.index("--user") + 1] == "0"
    assert "--user" not in plan.verify[0]  # removing stale rewards: the image's user
    split = read_task(write_task(tmp_path, "split", toml="""
        [verifier]
        network_mode = "no-network"
        """, environment={"Dockerfile": "FROM ubuntu:24.04\n"}, solve="#!/bin/bash\n"))
    where = place(split, host=False, runtime="/usr/bin/docker", bubblewrap=True,
                  agent_in_container=True)
    assert where.where == "unsupported" and "networks of their own" in where.reason


# The oracle (the agent phase) notes whether it had a network; the verifier solves the task
# only when it has none itself and the agent phase had one: each phase its own network.
NETS = "grep -c : /proc/net/dev"
PHASES_SOLVE = f"#!/bin/bash\n{NETS} > /app/agent-interfaces\n"
PHASES_TEST = f"""#!/bin/bash
if [ "$({NETS})" = 1 ] && [ "$(cat /app/agent-interfaces)" != 1 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "verifier: $({NETS}) agent: $(cat /app/agent-interfaces)"
  echo 0 > /logs/verifier/reward.txt
fi
"""


def test_on_the_host_each_phase_runs_with_its_own_network(ws: Path, tmp_path: Path,
                                                          capsys: Any) -> None:
    suite = tmp_path / "suite"
    write_task(suite, "phases", toml="""
        [environment]
        network_mode = "no-network"
        [agent]
        network_mode = "public"
        [verifier]
        network_mode = "no-network"
        """, solve=PHASES_SOLVE, test=PHASES_TEST)
    code, result = run_eval(capsys, str(suite), "--config", "oracle")
    [trial] = result["trials"]
    assert (code, trial["status"]) == (0, "solved"), trial


TIMED_CONFIG = """
[configurations.slow-agent]
description = "a command worker that writes the answer, or not, then hangs"
[configurations.slow-agent.rein.workers.command.agent]
argv = ["bash", "{suite}/agent.sh"]
[configurations.slow-agent.rein.tiers.standard]
provider = "agent"
model = "agent-cli"
"""
# Writes the answer when the task asks for one, then never finishes on its own.
SLOW_AGENT = """#!/bin/bash
[ -f answer-wanted ] && echo 42 > answer.txt
exec sleep 600
"""
ANSWER_TEST = """#!/bin/bash
[ "$(cat /app/answer.txt 2>/dev/null)" = 42 ] && echo 1 > /logs/verifier/reward.txt \
  || echo 0 > /logs/verifier/reward.txt
"""


def test_an_agent_past_its_time_is_stopped_and_the_tests_still_decide(
        ws: Path, tmp_path: Path, capsys: Any) -> None:
    suite = tmp_path / "suite"
    for name, wanted in (("answered", True), ("silent", False)):
        task = write_task(suite, name, toml="[agent]\ntimeout_sec = 2\n", test=ANSWER_TEST)
        if wanted:
            (task / "environment" / "answer-wanted").write_text("yes\n")
    (suite / "eval.toml").write_text(TIMED_CONFIG)
    (suite / "agent.sh").write_text(SLOW_AGENT)
    code, result = run_approved(capsys, str(suite), "--config", "slow-agent",
                                "--timeout", "120")
    assert code == 0
    trials = {t["scenario"]: t for t in result["trials"]}
    assert trials["answered"]["status"] == "solved"
    assert trials["answered"]["reason"] == "solved, though the agent ran past its time"
    silent = trials["silent"]
    assert silent["status"] == "failed"
    assert [f["criterion"] for f in silent["failures"]] == ["agent_timeout", "reward"]
    assert "agent.timeout_sec (2 s)" in silent["failures"][0]["evidence"]




def _harbor(module: str) -> Any:
    return pytest.importorskip(module, reason="the harbor package is not installed")


def test_the_shipped_tasks_are_valid_harbor_tasks() -> None:
    config = _harbor("harbor.models.task.config")
    for task in ("harbor-hello", "harbor-checksum"):
        data = tomllib.loads((SUITE / task / "task.toml").read_text())
        parsed = config.TaskConfig.model_validate(data)
        ours = read_task(SUITE / task)
        assert parsed.environment.workdir == ours.workdir
        assert parsed.verifier.timeout_sec == ours.verifier_timeout
        assert parsed.agent.timeout_sec == ours.agent_timeout


def test_exported_trajectories_are_valid_for_harbor(ws: Path, tmp_path: Path,
                                                    capsys: Any) -> None:
    trajectories = _harbor("harbor.models.trajectories")
    suite = tmp_path / "suite"
    for name in ("fix-greeting", "harbor-hello"):
        shutil.copytree(SUITE / name, suite / name)
    shutil.copy(SUITE / "eval.toml", suite / "eval.toml")
    code, result = run_eval(capsys, str(suite), "--config", "scripted")
    assert code == 0
    found = sorted(Path(result["folder"]).glob("trials/*/a1/agent/trajectory.json"))
    assert len(found) == 2
    for path in found:
        document = json.loads(path.read_text())
        parsed = trajectories.Trajectory.model_validate(document)
        assert len(parsed.steps) == len(document["steps"]) > 0
