"""Scenarios: what an evaluation runs, read from directories.

Three kinds, told apart by the file a directory holds:

* **graph** (``scenario.toml`` with ``kind = "graph"``): an AGS graph, whose own success
  criteria decide, run over a fresh copy of a fixture workspace;
* **brief** (``scenario.toml`` with ``kind = "brief"``): a ``rein dev`` brief and the
  command that verifies it, built by the development flow in a fresh git repository made
  from the fixture;
* **harbor** (``task.toml``): a Harbor task directory (:mod:`rein.eval.harbor`).

``scenario.toml``::

    [scenario]
    kind = "graph"                  # or "brief"
    name = "fix-greeting"           # default: the directory's name
    description = "..."
    workspace = "workspace"         # the fixture copied into each trial (default: this
                                    # folder when it exists, else an empty workspace)
    solution = "solution/solve.sh"  # the reference solution the oracle runs (or a .patch)
    graph = "graph.agraph.yaml"     # graph scenarios
    params = { name = "value" }     # graph scenarios: the run's params

    [brief]                         # brief scenarios
    text = "tempconv.c_to_f(c) returns the temperature in Fahrenheit."
    verify = ["python3", "-m", "pytest", "-q"]

    [gates]                         # answers to gates met during a trial, by node id
    approve = "accept"              # or "decline", or { answer = "accept", values = {...} }

A PATH given to ``rein eval`` is a scenario, or a folder whose direct subfolders are.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from rein.core.frozen import Frozen, field
from rein.errors import ConfigError, Location
from rein.eval.harbor import PLAIN_NAME, HarborTask, is_task, read_task

Kind = Literal["graph", "brief", "harbor"]
SCENARIO_FILE = "scenario.toml"
_SKIP = frozenset({"__pycache__", ".rein", ".git"})
_SCENARIO_KEYS = frozenset({"kind", "name", "description", "workspace", "solution", "graph",
                            "params"})


class GateAnswer(Frozen):
    """How a scenario answers one gate: accept or decline, with the values an input gate
    collects. Used only inside an evaluation (:mod:`rein.eval.gates`)."""

    answer: Literal["accept", "decline"]
    values: Mapping[str, Any] = field(default_factory=dict)


class Scenario(Frozen):
    """One scenario, as read from its directory."""

    name: str
    kind: Kind
    path: Path
    digest: str  # sha256: over the directory's files, so a result names what was run
    description: str = ""
    workspace: Path | None = None  # the fixture copied into each trial (None: empty)
    solution: Path | None = None  # the reference solution (None: the scenario has none)
    gates: Mapping[str, GateAnswer] = field(default_factory=dict)
    graph: Path | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    brief: str | None = None
    verify: tuple[str, ...] | None = None
    task: HarborTask | None = None

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "path": str(self.path),
                "digest": self.digest, "solution": self.solution is not None}


def is_scenario(path: Path) -> bool:
    return (path / SCENARIO_FILE).is_file() or is_task(path)


def find_scenarios(paths: Sequence[Path], env: Mapping[str, str] | None = None
                   ) -> list[Scenario]:
    """The scenarios at ``paths``, in order (each folder's scenarios sorted by name).
    EVAL001 for a path that holds none, EVAL007 for two scenarios of one name."""
    found: list[Scenario] = []
    for given in paths:
        path = given.resolve()
        if path.is_dir() and is_scenario(path):
            found.append(read_scenario(path, env))
            continue
        children = sorted(p for p in path.iterdir() if p.is_dir() and is_scenario(p)) \
            if path.is_dir() else []
        if not children:
            raise ConfigError("not a scenario or a folder of scenarios",
                              code="EVAL001", location=Location(file=str(given)),
                              hint=f"a scenario folder holds {SCENARIO_FILE} or a Harbor "
                                   "task.toml; see docs/eval.md")
        found.extend(read_scenario(child, env) for child in children)
    seen: dict[str, Path] = {}
    for scenario in found:
        if scenario.name in seen:
            raise ConfigError(f"two scenarios are named {scenario.name!r}: {seen[scenario.name]} "
                              f"and {scenario.path}", code="EVAL007",
                              hint="rename one (name = ... in scenario.toml, or [task] name)")
        seen[scenario.name] = scenario.path
    return found


def read_scenario(path: Path, env: Mapping[str, str] | None = None) -> Scenario:
    if not (path / SCENARIO_FILE).is_file():
        task = read_task(path, env)
        return Scenario(name=task.name, kind="harbor", path=path, digest=tree_digest(path),
                        description=task.instruction.splitlines()[0] if task.instruction
                        else "", workspace=_harbor_workspace(task), solution=task.solution,
                        task=task)
    return _rein_scenario(path)


def _harbor_workspace(task: HarborTask) -> Path | None:
    """A task's files: its ``environment/`` folder (the build context), whose files other
    than the Dockerfile become the working directory, as a ``COPY . <workdir>`` would."""
    return task.environment if task.environment.is_dir() else None


def _rein_scenario(path: Path) -> Scenario:
    from rein.eval.toml_files import read_toml

    where = path / SCENARIO_FILE
    data = read_toml(where, code="EVAL002", what=SCENARIO_FILE)
    unknown = sorted(set(data) - {"scenario", "brief", "gates"})
    if unknown:
        raise _bad(where, f"[{unknown[0]}] is not a section of {SCENARIO_FILE}",
                   "the sections are [scenario], [brief] and [gates]")
    head = _mapping(data.get("scenario", {}), where, "scenario")
    extra = sorted(set(head) - _SCENARIO_KEYS)
    if extra:
        raise _bad(where, f"scenario.{extra[0]} is not a key rein reads",
                   "known keys: " + ", ".join(sorted(_SCENARIO_KEYS)))
    kind = head.get("kind")
    if kind not in ("graph", "brief"):
        raise _bad(where, f"scenario.kind is {kind!r}", 'write kind = "graph" or "brief"')
    name = head.get("name", path.name)
    if not isinstance(name, str) or not PLAIN_NAME.match(name):
        raise _bad(where, f"scenario.name {name!r} is not a plain name",
                   "a name of letters, digits, dots, dashes and underscores")
    workspace = _inside(path, head.get("workspace"), where, "workspace")
    if workspace is None and (path / "workspace").is_dir():
        workspace = path / "workspace"
    solution = _inside(path, head.get("solution"), where, "solution")
    if solution is None and (path / "solution" / "solve.sh").is_file():
        solution = path / "solution" / "solve.sh"
    common: dict[str, Any] = {
        "name": name, "kind": kind, "path": path, "digest": tree_digest(path),
        "description": str(head.get("description", "")), "workspace": workspace,
        "solution": solution, "gates": _gates(data.get("gates", {}), where)}
    if kind == "graph":
        graph = _inside(path, head.get("graph", "graph.agraph.yaml"), where, "graph")
        if graph is None or not graph.is_file():
            raise _bad(where, f"the graph {head.get('graph', 'graph.agraph.yaml')} is missing",
                       "name the scenario's graph with graph = \"...\"")
        params = _mapping(head.get("params", {}), where, "scenario.params")
        return Scenario(**common, graph=graph, params=dict(params))
    brief = _mapping(data.get("brief", {}), where, "brief")
    text, verify = brief.get("text"), brief.get("verify")
    if not isinstance(text, str) or not text.strip():
        raise _bad(where, "a brief scenario needs [brief] text", 'text = "what to build"')
    if not (isinstance(verify, list) and verify and all(isinstance(a, str) and a
                                                        for a in verify)):
        raise _bad(where, "[brief] verify must be a command: a list of strings",
                   'for example verify = ["python3", "-m", "pytest", "-q"]')
    return Scenario(**common, brief=text, verify=tuple(verify))


def _gates(value: Any, where: Path) -> dict[str, GateAnswer]:
    out = {}
    for node, spec in _mapping(value, where, "gates").items():
        table: Any = {"answer": spec} if isinstance(spec, str) else spec
        answer = table.get("answer") if isinstance(table, Mapping) else None
        values = table.get("values", {}) if isinstance(table, Mapping) else None
        if answer not in ("accept", "decline") or not isinstance(values, Mapping):
            raise _bad(where, f"gates.{node} must be \"accept\", \"decline\" or "
                              "{ answer = ..., values = {...} }",
                       f'for example {node} = "accept"')
        out[str(node)] = GateAnswer(answer="accept" if answer == "accept" else "decline",
                                    values=dict(values))
    return out


def _inside(root: Path, value: Any, where: Path, key: str) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise _bad(where, f"scenario.{key} must be a relative path", f'{key} = "..."')
    target = (root / value).resolve()
    if not target.is_relative_to(root.resolve()):
        raise _bad(where, f"scenario.{key} {value!r} is outside the scenario",
                   "a scenario's files live in its folder")
    if not target.exists():
        raise _bad(where, f"scenario.{key} {value!r} does not exist", "fix the path")
    return target


def _mapping(value: Any, where: Path, key: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _bad(where, f"{key} must be a table", f"write [{key}]")
    return value


def _bad(path: Path, message: str, hint: str) -> ConfigError:
    return ConfigError(message, code="EVAL002", hint=hint, location=Location(file=str(path)))


def tree_digest(root: Path, skip: Iterable[str] = _SKIP) -> str:
    """``sha256:`` over every file under ``root`` (relative path and content, in order)."""
    digest = hashlib.sha256()
    skipped = frozenset(skip)
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in skipped)
        for name in sorted(files):
            full = Path(folder) / name
            digest.update(str(full.relative_to(root)).encode() + b"\0")
            try:
                digest.update(full.read_bytes() if not full.is_symlink()
                              else os.readlink(full).encode())
            except OSError:
                digest.update(b"<unreadable>")
            digest.update(b"\0")
    return "sha256:" + digest.hexdigest()


__all__ = ["GateAnswer", "Kind", "Scenario", "find_scenarios", "is_scenario",
           "read_scenario", "tree_digest"]
