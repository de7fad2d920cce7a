"""Where a Harbor task runs: in a container where a runtime answers, on the host only when
the person says so (--host), and otherwise unsupported, never failed. This machine's
container client has no engine, so the container path is tested by its decisions and the
commands it would run, not by a fake container."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from eval_support import run_eval
from harbor_tasks import write_task

from rein.eval.container import commands
from rein.eval.harbor import read_task
from rein.eval.placement import TaskSandbox, place

IMAGE_TOML = '[environment]\nworkdir = "/app"\n'


def image_task(root: Path, name: str = "imaged") -> Path:
    return write_task(root, name, toml=IMAGE_TOML, environment={
        "Dockerfile": "FROM ubuntu:24.04\nWORKDIR /app\nCOPY data.txt /app/\n",
        "data.txt": "x\n"},
        test="#!/bin/bash\n[ -f /app/done ] && echo 1 > /logs/verifier/reward.txt "
             "|| echo 0 > /logs/verifier/reward.txt\n",
        solve="#!/bin/bash\ntouch /app/done\n")


@pytest.mark.parametrize(("host", "runtime", "agent_inside", "where"), [
    (False, "/usr/bin/docker", True, "container"),   # oracle, nop: act inside
    (False, "/usr/bin/docker", False, "unsupported"),  # rein's own workers act on the host
    (True, "/usr/bin/docker", False, "host"),
    (True, None, True, "host"),
    (False, None, True, "unsupported"),
])
def test_a_task_with_an_image(tmp_path: Path, host: bool, runtime: str | None,
                              agent_inside: bool, where: str) -> None:
    task = read_task(image_task(tmp_path))
    placed = place(task, host=host, runtime=runtime, bubblewrap=True,
                   agent_in_container=agent_inside)
    assert placed.where == where
    if where == "unsupported" and runtime is None:
        assert "no container runtime" in placed.reason and "--host" in placed.reason


def test_a_task_of_plain_files_runs_on_the_host_without_asking(tmp_path: Path) -> None:
    task = read_task(write_task(tmp_path, "plain"))
    assert place(task, host=False, runtime=None, bubblewrap=True).where == "host"
    assert place(task, host=False, runtime="/usr/bin/docker", bubblewrap=True).where == "host"
    without = place(task, host=True, runtime=None, bubblewrap=False)
    assert without.where == "unsupported" and "bubblewrap" in without.reason


def test_what_rein_never_runs_stays_unsupported_whatever_the_flags(tmp_path: Path) -> None:
    task = read_task(write_task(tmp_path, "steps", toml='[[steps]]\nname = "a"\n'))
    assert place(task, host=True, runtime="/usr/bin/docker", bubblewrap=True).where == \
        "unsupported"


def test_a_compose_project_is_not_built(tmp_path: Path) -> None:
    path = write_task(tmp_path, "compose", environment={"docker-compose.yaml": "services: {}\n"})
    task = read_task(path)
    placed = place(task, host=False, runtime="/usr/bin/docker", bubblewrap=True,
                   agent_in_container=True)
    assert placed.where == "unsupported" and "compose" in placed.reason


def test_the_container_commands(tmp_path: Path) -> None:
    path = write_task(tmp_path, "imaged2", toml="""
        [environment]
        workdir = "/app"
        network_mode = "no-network"
        env = { LANG = "C.UTF-8" }
        [verifier]
        env = { MODE = "strict" }
        """, environment={"Dockerfile": "FROM ubuntu:24.04\n"},
        solve="#!/bin/bash\n")
    task = read_task(path)
    logs = tmp_path / "trial" / "logs"
    plan = commands(task, runtime="docker", container="c1", logs=logs, oracle=True)
    assert plan.build is not None and plan.build[:2] == ["docker", "build"]
    assert plan.build[-1] == str(path / "environment")
    assert plan.start[:6] == ["docker", "run", "-d", "--name", "c1", "-w"]
    assert f"{logs / 'verifier'}:/logs/verifier" in plan.start
    assert ["--network", "none"] == plan.start[plan.start.index("--network"):][:2]
    assert plan.start[-2:] == ["sleep", "infinity"]
    assert plan.solve[0] == ["docker", "cp", f"{path / 'solution'}/.", "c1:/solution"]
    assert plan.verify[0][-1].startswith("rm -f /logs/verifier/reward.txt")  # before the tests
    assert plan.verify[1] == ["docker", "cp", f"{path / 'tests'}/.", "c1:/tests"]
    assert "MODE=strict" in plan.verify[2] and plan.verify[2][-1].startswith("chmod +x")
    assert plan.remove == ["docker", "rm", "-f", "c1"]
    nop = commands(task, runtime="docker", container="c1", logs=logs, oracle=False)
    assert nop.solve == []


def test_the_sandbox_binds_the_paths_a_task_assumes(tmp_path: Path) -> None:
    box = TaskSandbox(binds={"/app": tmp_path / "w", "/logs/verifier": tmp_path / "v"},
                      network=False, workdir="/app")
    argv = box.argv(["bash", "-c", "true"], cwd="/app")
    assert ["--bind", str(tmp_path / "w"), "/app"] == argv[argv.index(str(tmp_path / "w")) - 1:][:3]
    assert "--unshare-net" in argv and argv[-5:] == ["/app", "--", "bash", "-c", "true"]
    # the host's own /app or /logs (if any) are hidden, not bound under the task's
    assert ["--ro-bind", "/logs", "/logs"] != argv[:3]


def test_an_imaged_task_is_unsupported_here_and_not_graded_unless_host(
        ws: Path, tmp_path: Path, capsys: Any) -> None:
    from rein.eval.placement import container_runtime

    if container_runtime() is not None:
        pytest.skip("a container engine answers on this machine")
    suite = tmp_path / "suite"
    image_task(suite)
    code, result = run_eval(capsys, str(suite), "--config", "oracle", "--config", "nop")
    assert code == 0  # unsupported is reported, never a failure
    by = {c["name"]: c for c in result["configurations"]}
    assert by["oracle"]["trials"] == 0 and by["oracle"]["not_graded"] == {
        "unsupported": ["imaged__oracle__1"]}
    assert result["validation"]["oracle"]["unsupported"] == ["imaged"]
    assert "no container runtime" in result["trials"][0]["reason"]
    code, result = run_eval(capsys, str(suite), "--config", "oracle", "--config", "nop",
                            "--host")
    by = {c["name"]: c for c in result["configurations"]}
    assert (by["oracle"]["solved"], by["oracle"]["trials"]) == (1, 1)
    assert (by["nop"]["solved"], by["nop"]["trials"]) == (0, 1)
    # on the host the task's files are the build context, without its Dockerfile
    folder = Path(result["trials"][0]["folder"]) / "workdir"
    assert sorted(p.name for p in folder.iterdir()) == ["data.txt", "done"]
