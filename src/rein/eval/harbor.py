"""Harbor task directories, read the way Harbor reads them (Terminal-Bench's format).

A task is a directory holding ``task.toml``, ``instruction.md``, ``tests/test.sh`` (which
writes a reward to ``/logs/verifier``), usually ``environment/`` (a ``Dockerfile`` and its
build context) and optionally ``solution/solve.sh``. Every ``task.toml`` section is optional
and unknown keys are ignored, as in Harbor. What a trial needs is kept here:

* the working directory (``[environment] workdir``, ``/app`` when unset: the template's and
  Terminal-Bench's ``WORKDIR``), the network of each phase (``[environment] network_mode``,
  ``public`` when unset, which ``[agent]`` and ``[verifier]`` override for their phase, as
  Harbor resolves it; the deprecated ``allow_internet`` when no mode is given), the
  environment variables of each phase (``${VAR}`` and ``${VAR:-default}`` filled in from
  the host), the time limits (the agent's, the verifier's, the image build's) and the user
  each phase runs as in a container;
* whether the task needs a container (a ``Dockerfile``, a compose file or a
  ``docker_image``), and what rein does not run at all, said as the reason the task is
  **unsupported** (never failed: what rein cannot provide is not the agent's fault): several
  steps, an OS other than Linux, a separate verifier environment or commands it collects
  from compose services, a network allowlist (rein gives a phase all of the network or
  none), GPUs or TPUs; and what rein's own agents cannot be given (the task's MCP servers or
  skills), which leaves the task to the oracle and nop;
* the reward: ``reward.json`` (a flat map of finite numbers) first, else ``reward.txt``
  (one number); the test script's exit status is ignored, as in Harbor. A trial is solved
  when its primary reward (``reward``, or the only key) is exactly 1.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.core.frozen import Frozen, field
from rein.errors import ConfigError, Location

DEFAULT_WORKDIR = "/app"
DEFAULT_VERIFIER_TIMEOUT = 600.0
DEFAULT_BUILD_TIMEOUT = 600.0
NETWORK_MODES = ("public", "no-network", "allowlist")
CONTAINER_FILES = ("Dockerfile", "docker-compose.yaml", "docker-compose.yml")
_CANARY = re.compile(r"^\s*(<!--.*-->|#.*)\s*$")
PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class HarborTask(Frozen):
    """What rein reads of one task directory."""

    path: Path
    name: str
    instruction: str
    workdir: str
    network: bool  # the environment's baseline: False for network_mode "no-network"
    agent_timeout: float | None
    verifier_timeout: float
    # Each phase's network: [agent] / [verifier] network_mode, else the baseline. The
    # oracle's solve.sh is the agent phase.
    agent_network: bool = True
    verifier_network: bool = True
    build_timeout: float = DEFAULT_BUILD_TIMEOUT
    agent_user: str | None = None  # who a phase runs as in a container (None: the image's)
    verifier_user: str | None = None
    environment_env: Mapping[str, str] = field(default_factory=dict)
    verifier_env: Mapping[str, str] = field(default_factory=dict)
    solution_env: Mapping[str, str] = field(default_factory=dict)
    docker_image: str | None = None
    container_file: str | None = None  # environment/Dockerfile or the compose file, if any
    unsupported: str | None = None  # why rein cannot run this task at all
    agent_unsupported: str | None = None  # why rein's own agents cannot work it

    @property
    def needs_container(self) -> bool:
        return self.docker_image is not None or self.container_file is not None

    @property
    def solution(self) -> Path | None:
        script = self.path / "solution" / "solve.sh"
        return script if script.is_file() else None

    @property
    def environment(self) -> Path:
        return self.path / "environment"


def is_task(path: Path) -> bool:
    return (path / "task.toml").is_file()


def read_task(path: Path, env: Mapping[str, str] | None = None) -> HarborTask:
    """The task at ``path`` (EVAL003 when it cannot be read or lacks a required file)."""
    from rein.eval.toml_files import read_toml

    env = os.environ if env is None else env
    where = path / "task.toml"
    data = read_toml(where, code="EVAL003", what="task.toml", json_numbers=False)
    for required in ("instruction.md", "tests/test.sh"):
        if not (path / required).is_file():
            raise _bad(path / required, f"the task has no {required}",
                       "a Harbor task holds instruction.md and tests/test.sh (which writes "
                       "/logs/verifier/reward.txt)")
    task = _table(data, "task", where)
    environment = _table(data, "environment", where)
    agent = _table(data, "agent", where)
    verifier = _table(data, "verifier", where)
    solution = _table(data, "solution", where)
    given = task.get("name")
    name = given.rstrip("/").rsplit("/", 1)[-1] if isinstance(given, str) else None
    if name is not None and not PLAIN_NAME.match(name):
        name = None  # a name that cannot name a folder: the task's own folder names it
    container_file = next((f"environment/{n}" for n in CONTAINER_FILES
                           if (path / "environment" / n).is_file()), None)
    baseline = _mode(environment, where, "environment", baseline=True) or "public"
    modes = {"environment": baseline,
             "agent": _mode(agent, where, "agent", baseline=False) or baseline,
             "verifier": _mode(verifier, where, "verifier", baseline=False) or baseline}
    return HarborTask(
        path=path, name=name or path.name,
        instruction=instruction_text((path / "instruction.md").read_text(encoding="utf-8")),
        workdir=_workdir(environment.get("workdir"), where),
        network=baseline != "no-network",
        agent_network=modes["agent"] != "no-network",
        verifier_network=modes["verifier"] != "no-network",
        agent_timeout=_seconds(agent.get("timeout_sec"), None, where, "agent.timeout_sec"),
        verifier_timeout=_seconds(verifier.get("timeout_sec"), DEFAULT_VERIFIER_TIMEOUT, where,
                                  "verifier.timeout_sec") or DEFAULT_VERIFIER_TIMEOUT,
        build_timeout=_seconds(environment.get("build_timeout_sec"), DEFAULT_BUILD_TIMEOUT,
                               where, "environment.build_timeout_sec")
        or DEFAULT_BUILD_TIMEOUT,
        agent_user=_user(agent.get("user"), where, "agent.user"),
        verifier_user=_user(verifier.get("user"), where, "verifier.user"),
        environment_env=_env(environment.get("env"), env, where, "environment.env"),
        verifier_env=_env(verifier.get("env"), env, where, "verifier.env"),
        solution_env=_env(solution.get("env"), env, where, "solution.env"),
        docker_image=environment.get("docker_image") or None,
        container_file=container_file,
        unsupported=_unsupported(data, environment, verifier, modes),
        agent_unsupported=_agent_unsupported(environment))


def instruction_text(text: str) -> str:
    """The instruction as Harbor gives it: leading comment lines that mention a canary, and
    the blank lines right after them, removed."""
    lines = text.splitlines()
    start = 0
    while start < len(lines) and _CANARY.match(lines[start]) and \
            "canary" in lines[start].lower():
        start += 1
        while start < len(lines) and not lines[start].strip():
            start += 1
    return "\n".join(lines[start:]).strip() + "\n"


def _unsupported(data: Mapping[str, Any], environment: Mapping[str, Any],
                 verifier: Mapping[str, Any], modes: Mapping[str, str]) -> str | None:
    if data.get("steps"):
        return "the task has several steps ([[steps]]); rein runs single-step tasks"
    if str(environment.get("os", "linux")).lower() != "linux":
        return f"the task runs on {environment.get('os')}; rein runs Linux tasks"
    if verifier.get("environment") or verifier.get("environment_mode") == "separate":
        return "the task verifies in a separate environment; rein verifies in the task's own"
    if verifier.get("collect"):
        return ("the task's verifier collects from compose services ([[verifier.collect]]); "
                "rein runs single-container tasks")
    allowlisted = [phase for phase in ("agent", "verifier") if modes[phase] == "allowlist"]
    if allowlisted:
        return (f"the task's {allowlisted[0]} network is an allowlist of hosts; rein gives a "
                "phase all of the network or none")
    if environment.get("gpus") or environment.get("tpu"):
        return "the task asks for GPUs or TPUs; rein's trials get none"
    return None


def _agent_unsupported(environment: Mapping[str, Any]) -> str | None:
    """What the task gives its agent that rein's own workers cannot take."""
    if environment.get("mcp_servers"):
        return "the task gives its agent MCP servers ([[environment.mcp_servers]]); rein's " \
               "workers are not connected to a task's servers"
    if environment.get("skills_dir"):
        return "the task gives its agent skills (environment.skills_dir); rein's workers " \
               "do not load a task's skills"
    return None


def _mode(table: Mapping[str, Any], where: Path, section: str, *, baseline: bool
          ) -> str | None:
    """A section's network mode: the environment's is ``public`` when unset (or what the
    deprecated ``allow_internet`` says), a phase's None (the environment's applies)."""
    mode = table.get("network_mode")
    if mode is None:
        if table.get("allowed_hosts") is not None:
            raise _bad(where, f"{section}.allowed_hosts is only valid with network_mode = "
                              '"allowlist"', 'set network_mode = "allowlist", or remove it')
        if baseline and table.get("allow_internet") is not None:
            return "public" if table["allow_internet"] else "no-network"
        return "public" if baseline else None
    if mode not in NETWORK_MODES:
        raise _bad(where, f"{section}.network_mode {mode!r} is not a network mode",
                   f"one of {', '.join(repr(m) for m in NETWORK_MODES)}")
    return str(mode)


def _user(value: Any, where: Path, key: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value) == "":
        raise _bad(where, f"{key} must be a user name or a UID, not {value!r}",
                   f'for example {key.split(".")[-1]} = "root"')
    return str(value)


def _table(data: Mapping[str, Any], name: str, where: Path) -> Mapping[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, Mapping):
        raise _bad(where, f"[{name}] must be a table", f"write [{name}] with its keys")
    return value


def _workdir(value: Any, where: Path) -> str:
    if value is None:
        return DEFAULT_WORKDIR
    if not isinstance(value, str) or not value.startswith("/") or ".." in value.split("/") \
            or value.rstrip("/") == "":
        raise _bad(where, f"environment.workdir {value!r} is not an absolute directory",
                   'for example workdir = "/app"')
    return value.rstrip("/")


def _seconds(value: Any, default: float | None, where: Path, key: str) -> float | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0 \
            or not math.isfinite(value):
        raise _bad(where, f"{key} must be a positive number of seconds, not {value!r}",
                   f"for example {key.split('.')[-1]} = 600")
    return float(value)


def _env(value: Any, host: Mapping[str, str], where: Path, key: str) -> dict[str, str]:
    """An ``env`` table with ``${VAR}`` and ``${VAR:-default}`` filled in from the host."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _bad(where, f"{key} must be a table of strings", f"[{key}] NAME = \"value\"")
    out = {}
    for name, raw in value.items():
        text = str(raw)

        def fill(match: re.Match[str], name: str = name) -> str:
            variable, default = match.group(1), match.group(2)
            if variable in host:
                return host[variable]
            if default is not None:
                return default
            raise _bad(where, f"{key}.{name} uses ${{{variable}}}, which is not set",
                       f"set {variable} in the environment, or write ${{{variable}:-default}}")

        out[str(name)] = _VARIABLE.sub(fill, text)
    return out


def _bad(path: Path, message: str, hint: str) -> ConfigError:
    return ConfigError(message, code="EVAL003", hint=hint, location=Location(file=str(path)))


# -- the reward -----------------------------------------------------------------------------


class Reward(Frozen):
    """What the verifier wrote: the rewards, or why there are none."""

    rewards: Mapping[str, float] | None
    problem: str | None = None  # no reward: the file is missing, empty or not a number

    @property
    def primary(self) -> float | None:
        """``reward``, or the only value; None when there is none to read."""
        if not self.rewards:
            return None
        if "reward" in self.rewards:
            return self.rewards["reward"]
        return next(iter(self.rewards.values())) if len(self.rewards) == 1 else None

    @property
    def solved(self) -> bool:
        return self.primary == 1.0


def read_reward(verifier_dir: Path) -> Reward:
    """The reward in ``verifier_dir``: ``reward.json`` first, then ``reward.txt``."""
    as_json, as_text = verifier_dir / "reward.json", verifier_dir / "reward.txt"
    if as_json.is_file():
        text = as_json.read_text(encoding="utf-8", errors="replace").strip()
        if not text:
            return Reward(rewards=None, problem="reward.json is empty")
        try:
            data = json.loads(text)
        except ValueError as exc:
            return Reward(rewards=None, problem=f"reward.json is not JSON: {exc}")
        if not isinstance(data, dict) or not data:
            return Reward(rewards=None, problem="reward.json is not a map of names to numbers")
        rewards: dict[str, float] = {}
        for key, value in data.items():
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                return Reward(rewards=None, problem=f"reward.json: {key} is {value!r}, not a "
                                                    "finite number")
            rewards[str(key)] = float(value)
        return Reward(rewards=rewards)
    if as_text.is_file():
        text = as_text.read_text(encoding="utf-8", errors="replace").strip()
        if not text:
            return Reward(rewards=None, problem="reward.txt is empty")
        try:
            value = float(text)
        except ValueError:
            return Reward(rewards=None, problem=f"reward.txt holds {text[:40]!r}, not a number")
        if not math.isfinite(value):
            return Reward(rewards=None, problem=f"reward.txt holds {text}, not a finite number")
        return Reward(rewards={"reward": value})
    return Reward(rewards=None, problem="the tests wrote no reward (reward.txt or reward.json "
                                        "in /logs/verifier)")


__all__ = ["HarborTask", "Reward", "instruction_text", "is_task", "read_reward", "read_task"]
