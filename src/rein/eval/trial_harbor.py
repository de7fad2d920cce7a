"""Harbor task trials, in the order Harbor runs them.

1. **Where**: :func:`rein.eval.placement.place` (host, container, or unsupported).
2. **Agent**: the oracle copies ``solution/`` to ``/solution`` and runs ``solve.sh`` from the
   working directory with its output in ``/logs/agent/oracle.txt``; nop does nothing; any
   other configuration runs a one-node graph whose instruction is the task's, served by the
   configuration's workers over the working directory (its trajectory is written to
   ``/logs/agent/trajectory.json`` as ATIF before the verifier runs, as Harbor does).
3. **Verifier**: stale reward files are removed (so an agent cannot plant one), ``tests/``
   is copied to ``/tests``, and ``/tests/test.sh`` runs from the working directory with its
   output in ``/logs/verifier/test-stdout.txt``. Its exit status is ignored.
4. **Reward**: :func:`rein.eval.harbor.read_reward`; solved when the primary reward is 1.

On the host every script runs in :class:`rein.eval.placement.TaskSandbox`, which binds the
trial's folders at ``/logs/...``, ``/tests``, ``/solution`` and the task's working directory.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.core.loops import within
from rein.eval.harbor import CONTAINER_FILES, HarborTask, read_reward
from rein.eval.placement import Placement, TaskSandbox, container_runtime, place
from rein.eval.trial import Trial, TrialSpec, blank, copy_fixture

TOOLS = ["file_read", "file_write", "edit", "file_search", "shell"]
PERMISSIONS = ["fs:read:**", "fs:write:**", "fs:create:**", "fs:delete:**", "shell:exec"]


def placement_of(spec: TrialSpec, task: HarborTask) -> Placement:
    from rein.tools.sandbox import bubblewrap_status

    needs_runtime = task.needs_container and not spec.host
    return place(task, host=spec.host, runtime=container_runtime() if needs_runtime else None,
                 bubblewrap=bubblewrap_status()[0] is not None,
                 agent_in_container=spec.configuration.worker in ("oracle", "nop"))


async def harbor_trial(spec: TrialSpec) -> Trial:
    task = spec.scenario.task
    assert task is not None
    where = placement_of(spec, task)
    if where.where == "unsupported":
        return blank(spec, "unsupported", where.reason)
    if where.where == "container":
        from rein.eval.container import container_trial

        return await container_trial(spec, task, where)
    root = spec.root
    workdir = copy_fixture(spec.scenario.workspace, root / "workdir", skip=CONTAINER_FILES)
    logs = {name: root / "logs" / name for name in ("agent", "verifier", "artifacts")}
    for folder in logs.values():
        folder.mkdir(parents=True, exist_ok=True)
    binds: dict[str, Path] = {task.workdir: workdir, "/logs/agent": logs["agent"],
                              "/logs/verifier": logs["verifier"],
                              "/logs/artifacts": logs["artifacts"]}
    trial = blank(spec, "failed")
    worker = spec.configuration.worker
    if worker == "oracle":
        assert task.solution is not None
        solution = root / "solution"
        shutil.copytree(task.solution.parent, solution)
        result = await run_script(
            task, {**binds, "/solution": solution}, "bash /solution/solve.sh",
            output="/logs/agent/oracle.txt", env={"DEBIAN_FRONTEND": "noninteractive",
                                                  **task.solution_env},
            timeout=min(task.agent_timeout or spec.timeout, spec.timeout),
            network=task.agent_network)
        if result.exit_code != 0:
            (logs["agent"] / "exit-code.txt").write_text(f"{result.exit_code}\n")
    elif worker != "nop":
        trial = await timed_agent_phase(spec, task, workdir, logs["agent"])
    for stale in ("reward.txt", "reward.json"):
        (logs["verifier"] / stale).unlink(missing_ok=True)
    tests = root / "tests"
    shutil.copytree(task.path / "tests", tests)
    verified = await run_script(
        task, {**binds, "/tests": tests}, "chmod +x /tests/test.sh && /tests/test.sh",
        output="/logs/verifier/test-stdout.txt", env=dict(task.verifier_env),
        timeout=task.verifier_timeout, network=task.verifier_network)
    reward = read_reward(logs["verifier"])
    trial.reward = reward.rewards
    trial.status = "solved" if reward.solved else "failed"
    if reward.solved:  # the tests decide a Harbor task, not how the agent's run ended
        late = any(f.get("criterion") == "agent_timeout" for f in trial.failures)
        trial.failures = []
        trial.reason = "solved, though the agent ran past its time" if late else None
    else:
        stdout = logs["verifier"] / "test-stdout.txt"
        evidence = stdout.read_text(errors="replace")[-800:] if stdout.is_file() else ""
        why = reward.problem or f"the reward is {reward.primary}, not 1"
        if verified.timed_out:
            why = f"the tests ran past {task.verifier_timeout} s; {why}"
        trial.failures = trial.failures + [{
            "node": None, "criterion": "reward", "kind": "harbor",
            "description": "tests/test.sh writes a reward of 1", "evidence": (
                f"{why}\n{evidence}".strip())}]
        trial.reason = why
    return trial


async def run_script(task: HarborTask, binds: Mapping[str, Path], script: str, *,
                     output: str, env: Mapping[str, str], timeout: float,
                     network: bool) -> Any:
    """``script`` through ``bash -c`` in the task's sandbox, from its working directory,
    with both output streams in ``output`` (a path inside the sandbox); ``network``: the
    phase's (Harbor's per-phase network mode)."""
    from rein.tools.process import run_process
    from rein.tools.sandbox import bubblewrap_status

    bwrap = bubblewrap_status()[0] or "bwrap"
    sandbox = TaskSandbox(binds=binds, network=network, workdir=task.workdir, bwrap=bwrap)
    child = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
             "LANG": "C.UTF-8", "HOME": "/tmp", "TMPDIR": "/tmp",
             **task.environment_env, **env}
    return await run_process(["bash", "-c", f"{script} > {output} 2>&1"],
                             cwd=binds[task.workdir], env=child, timeout=timeout,
                             sandbox=sandbox)


async def timed_agent_phase(spec: TrialSpec, task: HarborTask, workdir: Path,
                            agent_logs: Path) -> Trial:
    """The agent phase within ``[agent] timeout_sec``. As in Harbor, an agent past its time
    is stopped and the verifier still runs: the tests decide, and the trial says the agent
    ran out of time."""

    if task.agent_timeout is None or task.agent_timeout >= spec.timeout:
        return await agent_phase(spec, task, workdir, agent_logs)
    try:
        return await within(agent_phase(spec, task, workdir, agent_logs),
                                      task.agent_timeout)
    except TimeoutError:
        why = f"the agent ran past the task's agent.timeout_sec ({task.agent_timeout:g} s)"
        trial = blank(spec, "failed", why)
        trial.failures = [{"node": None, "criterion": "agent_timeout", "kind": "harbor",
                           "description": "the agent finishes within agent.timeout_sec",
                           "evidence": why}]
        return trial


async def agent_phase(spec: TrialSpec, task: HarborTask, workdir: Path,
                      agent_logs: Path) -> Trial:
    """The configuration's agent on the task's instruction: a one-node graph over the
    working directory; its trajectory goes to ``/logs/agent/trajectory.json``."""
    from rein.eval.trial_runs import applied_for, grade, open_trial_harness, settle
    from rein.formats import yaml_text

    graph = task_graph(task, spec.configuration.definition.get("instructions"),
                       spec.configuration.definition.get("profile"))
    path = spec.root / "task.agraph.yaml"
    path.write_text(yaml_text.dump(graph), encoding="utf-8")
    applied = applied_for(spec)
    with open_trial_harness(spec, workdir, applied) as harness:
        prepared = await harness.prepare(path, given={})
        outcome = await harness.start(prepared, approved=prepared.digest)
        gates, waiting = await settle(harness, spec, outcome.run_id, workdir)
        trial = grade(harness, spec, outcome.run_id, gates, waiting, graph=graph,
                      applied=applied)
    # Harbor reads the trajectory at /logs/agent before the verifier runs.
    shutil.copyfile(spec.root / "agent" / "trajectory.json", agent_logs / "trajectory.json")
    return trial


def task_graph(task: HarborTask, instructions: str | None, profile: str | None
               ) -> dict[str, Any]:
    """The one-node graph an agent works a Harbor task through."""
    note = (f"Your working directory is the task's {task.workdir}: use paths relative to it. "
            "The task's tests run after you finish; rein reads their reward.")
    node: dict[str, Any] = {
        "type": "task", "title": f"Harbor task {task.name}", "description": task.instruction,
        "instructions": note + (f"\n\n{instructions}" if instructions else ""),
        "intelligence": {"tier": "standard"},
        "outputs": {"summary": {"type": "string",
                                "description": "One line: what you did for the task."}},
        "requirements": {"tools": list(TOOLS), "permissions": list(PERMISSIONS),
                         "workspace": "read_write",
                         **({"network": "full"} if task.network else {})},
    }
    if profile:
        node["x-rein-profile"] = profile
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": f"rein/eval/{task.name}",
            "title": f"Harbor task {task.name}", "version": "1.0.0",
            "requires_conformance": 1, "objective": task.instruction.splitlines()[0][:200],
            "entrypoints": ["solve"], "nodes": {"solve": node}}


__all__ = ["agent_phase", "harbor_trial", "placement_of", "run_script", "task_graph"]
