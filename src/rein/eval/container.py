"""A Harbor task's trial in a container, where a container runtime answers.

The image is the task's ``docker_image``, or built from ``environment/`` (its Dockerfile).
One container per trial, started on ``sleep infinity`` with the trial's ``/logs/agent`` and
``/logs/verifier`` folders mounted; the oracle's ``solution/`` and the verifier's ``tests/``
are copied in when their phase begins (as Harbor uploads them), and the container is removed
however the trial ends. Only the oracle and nop act inside a container: rein's own workers
act on the host (:func:`rein.eval.placement.place` reports the rest unsupported).

The commands are built by pure functions (:func:`commands`), so what runs is testable on a
machine without an engine.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from rein.core.frozen import Frozen
from rein.eval.harbor import HarborTask, read_reward
from rein.eval.placement import Placement
from rein.eval.trial import Trial, TrialSpec, blank


class Commands(Frozen):
    """The container commands of one trial, in the order they run."""

    build: list[str] | None  # None: the task names a prebuilt image
    start: list[str]
    solve: list[list[str]]  # copy the solution in, run it (oracle only)
    verify: list[list[str]]  # remove stale rewards, copy the tests in, run them
    remove: list[str]


def image_name(task: HarborTask) -> str:
    if task.docker_image:
        return task.docker_image
    tag = hashlib.sha256(str(task.path).encode()).hexdigest()[:12]
    return f"rein-eval-{task.name.lower()}:{tag}"


def commands(task: HarborTask, *, runtime: str, container: str, logs: Path, oracle: bool
             ) -> Commands:
    image = image_name(task)
    build = None if task.docker_image else [
        runtime, "build", "-t", image, str(task.environment)]
    start = [runtime, "run", "-d", "--name", container, "-w", task.workdir,
             "-v", f"{logs / 'agent'}:/logs/agent", "-v", f"{logs / 'verifier'}:/logs/verifier"]
    if not task.network:
        start += ["--network", "none"]
    for name, value in sorted(task.environment_env.items()):
        start += ["-e", f"{name}={value}"]
    start += [image, "sleep", "infinity"]

    def run(script: str, env: dict[str, str], user: str | None = None) -> list[str]:
        flags = [f for name, value in sorted(env.items()) for f in ("-e", f"{name}={value}")]
        if user is not None:
            flags += ["--user", user]
        return [runtime, "exec", "-w", task.workdir, *flags, container, "bash", "-c", script]

    solve: list[list[str]] = []
    if oracle and task.solution is not None:
        solve = [[runtime, "cp", f"{task.solution.parent}/.", f"{container}:/solution"],
                 run("bash /solution/solve.sh > /logs/agent/oracle.txt 2>&1",
                     {"DEBIAN_FRONTEND": "noninteractive", **task.solution_env}, task.agent_user)]
    verify = [run("rm -f /logs/verifier/reward.txt /logs/verifier/reward.json", {}),
              [runtime, "cp", f"{task.path / 'tests'}/.", f"{container}:/tests"],
              run("chmod +x /tests/test.sh && /tests/test.sh > /logs/verifier/test-stdout.txt "
                  "2>&1", dict(task.verifier_env), task.verifier_user)]
    return Commands(build=build, start=start, solve=solve, verify=verify,
                    remove=[runtime, "rm", "-f", container])


async def container_trial(spec: TrialSpec, task: HarborTask, where: Placement) -> Trial:
    from rein.tools.process import run_process

    assert where.runtime is not None
    logs = spec.root / "logs"
    for name in ("agent", "verifier"):
        (logs / name).mkdir(parents=True, exist_ok=True)
    container = f"rein-eval-{spec.trial_id}-a{spec.attempt}".lower()[:120]
    plan = commands(task, runtime=where.runtime, container=container, logs=logs,
                    oracle=spec.configuration.worker == "oracle")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(spec.root)}

    async def step(argv: list[str], timeout: float) -> int:
        result = await run_process(argv, cwd=spec.root, env=env, timeout=timeout)
        return result.exit_code

    try:
        if plan.build is not None and await step(plan.build, task.build_timeout) != 0:
            return blank(spec, "error", "the task's image did not build")
        if await step(plan.start, 600.0) != 0:
            return blank(spec, "error", "the task's container did not start")
        for argv in plan.solve:
            await step(argv, task.agent_timeout or spec.timeout)
        for argv in plan.verify:
            await step(argv, task.verifier_timeout)
    finally:
        await step(plan.remove, 120.0)
    reward = read_reward(logs / "verifier")
    trial = blank(spec, "solved" if reward.solved else "failed",
                  None if reward.solved else reward.problem or f"the reward is {reward.primary}")
    trial.reward = reward.rewards
    return trial


__all__ = ["Commands", "commands", "container_trial", "image_name"]
