"""Where a Harbor task's trial runs, and the confinement its scripts run in on the host.

A task whose environment is a container image (``environment/Dockerfile``, a compose file
or ``[environment] docker_image``) runs in a container where a container runtime answers;
elsewhere it runs on the host only when the person says the host satisfies the image
(``--host``), and is otherwise reported **unsupported**, never failed: a missing image is
not the agent's fault. A task made of plain files (no image) runs on the host.

On the host, the scripts of a task (``solve.sh``, ``tests/test.sh``) assume absolute paths:
the working directory (``/app``), ``/logs/verifier``, ``/logs/agent``, ``/tests``,
``/solution``. :class:`TaskSandbox` gives them those paths with bubblewrap: a fresh root
(tmpfs) holding the host's top-level folders read-only, and the trial's own folders bound
at the paths the task expects, writable. Without bubblewrap those paths cannot be made, and
the task is unsupported here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Literal

from rein.core.frozen import Frozen
from rein.eval.harbor import HarborTask

Where = Literal["host", "container", "unsupported"]
CONTAINER_CLIENTS = ("docker", "podman")


class Placement(Frozen):
    """Where a trial runs, and why; ``reason`` says what is missing when unsupported."""

    where: Where
    reason: str
    runtime: str | None = None  # the container client, for ``container``


@lru_cache(maxsize=1)
def container_runtime() -> str | None:
    """The container client whose engine answers here (``docker info``), else None: a
    client without a running engine is no runtime."""
    for client in CONTAINER_CLIENTS:
        path = shutil.which(client)
        if path is None:
            continue
        try:
            done = subprocess.run([path, "info", "--format", "{{.ServerVersion}}"],
                                  capture_output=True, timeout=20, check=False)
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0 and done.stdout.strip():
            return path
    return None


def place(task: HarborTask, *, host: bool, runtime: str | None, bubblewrap: bool,
          agent_in_container: bool = False) -> Placement:
    """Where the trial of ``task`` runs: ``host`` (the person said the host satisfies it,
    or it needs no image), ``container`` (an image and a runtime), or ``unsupported``.
    ``agent_in_container``: whether the configuration's agent can act inside a container
    (the oracle and nop can; rein's own workers act on the host)."""
    if task.unsupported:
        return Placement(where="unsupported", reason=task.unsupported)
    if task.agent_unsupported and not agent_in_container:
        return Placement(where="unsupported", reason=task.agent_unsupported)
    on_host = Placement(where="host", reason="the host satisfies the task (--host)" if
                        task.needs_container else "the task is plain files: no image")
    if not bubblewrap:
        on_host = Placement(where="unsupported", reason="bubblewrap is not available, so the "
                            "paths the task's scripts assume (/tests, /logs/verifier, its "
                            "working directory) cannot be bound")
    if not task.needs_container:
        return on_host
    image = task.docker_image or task.container_file
    if runtime is not None and not host:
        if task.container_file is not None and task.container_file != "environment/Dockerfile" \
                and task.docker_image is None:
            return Placement(where="unsupported", reason=f"the task's environment is a compose "
                             f"project ({task.container_file}); rein builds single images")
        if not agent_in_container:
            return Placement(where="unsupported", reason="the task runs in a container and "
                             "this configuration's agent acts on the host; use --host if the "
                             "host satisfies the image")
        if not task.agent_network == task.verifier_network == task.network:
            return Placement(where="unsupported", reason="the task's phases have networks of "
                             "their own, and rein keeps a container on one network; use "
                             "--host if the host satisfies the image")
        return Placement(where="container", reason=f"built from {image}", runtime=runtime)
    if host:
        return on_host
    return Placement(where="unsupported", reason=f"the task's environment is a container image "
                     f"({image}) and no container runtime answers here; pass --host if this "
                     "machine satisfies it")


class TaskSandbox(Frozen):
    """A :class:`rein.tools.process.ProcessSandbox` that binds a trial's folders at the
    absolute paths a task's scripts assume (``binds``: path inside → folder on the host)."""

    binds: Mapping[str, Path]
    network: bool
    workdir: str  # the working directory inside (the process starts in its host folder)
    bwrap: str = "bwrap"

    def prepare(self, argv: list[str], *, cwd: Path, env: Mapping[str, str]
                ) -> tuple[list[str], dict[str, str]]:
        return self.argv(argv, cwd=self.workdir), dict(env)

    def argv(self, command: Sequence[str], *, cwd: str) -> list[str]:
        # The root is bubblewrap's own tmpfs, so the task's paths (/app, /tests...) can be
        # made there; the host's top-level folders are seen read-only, except those the
        # task's paths would hide.
        hidden = {Path(inside).parts[1] for inside in self.binds if inside != "/"}
        out = [self.bwrap]
        for entry in sorted(os.listdir("/")):
            if entry in hidden or entry in ("proc", "dev", "tmp"):
                continue
            full = Path("/") / entry
            if full.is_symlink():
                out += ["--symlink", os.readlink(full), str(full)]
            elif full.is_dir():
                out += ["--ro-bind", str(full), str(full)]
        out += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        for inside, outside in sorted(self.binds.items()):
            out += ["--bind", str(outside), inside]
        if not self.network:
            out.append("--unshare-net")
        out += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session",
                "--chdir", cwd, "--", *command]
        return out


__all__ = ["Placement", "TaskSandbox", "container_runtime", "place"]
