"""Harness configurations: overlays on the person's ``rein.toml``, declared in a file.

A configurations file (``eval.toml`` beside a suite, or ``--configs FILE``)::

    [configurations.scripted]
    description = "the model worker served by the scripted provider (a test double)"
    instructions = "Read the files you change first."   # appended to every task node
    profile = "profiles/coder.agent.yaml"              # an OAP profile serving every task node
    system = "Prefer the smallest change."             # appended to every model call's
                                                       # system prompt
    [configurations.scripted.tools.shell]              # what the model reads of a tool
    description = "Run one command; only to run the tests."

    [configurations.scripted.rein]                     # rein.toml tables, laid over the
    policy = { shell = "allow" }                       # person's own: they only narrow it
    [configurations.scripted.rein.providers.script]
    kind = "scripted"
    options = { script = "{scenario}/model.json", position = "conversation" }
    [configurations.scripted.rein.tiers.standard]
    provider = "script"
    model = "scripted"

    [configurations.no-shell]
    extends = "scripted"                               # the same, and then this
    [configurations.no-shell.rein.hooks.block-shell]
    command = ["python3", "{suite}/hooks/deny.py"]
    events = ["PreToolUse"]
    matcher = "shell"

``{scenario}`` in a string stands for the folder of the scenario a trial runs and ``{suite}``
for the folder of the configurations file. Each configuration is **digest-bound**
(``sha256:`` over its resolved definition and the content of the files it names), and any
two can be **diffed** key by key. The worker is what the overlay's ``[tiers]`` route to: the
model worker with a real provider, a command worker running an agent CLI, or the scripted
provider, which is a test double and is named as one in every report.

Two configurations are built in and need no declaration: ``oracle`` runs each scenario's
reference solution (and must solve every scenario), ``nop`` does nothing (and must solve
none).
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from rein.core.frozen import Frozen
from rein.errors import ConfigError, Location

BUILTIN = ("oracle", "nop")
CONFIGS_FILE = "eval.toml"
_KEYS = frozenset({"description", "extends", "instructions", "profile", "rein", "system",
                   "tools"})
# What an overlay may set. The store, the executor and who approves belong to the
# evaluation and the person, never to a configuration under test.
OVERLAY_SECTIONS = frozenset({"dev", "driver", "hooks", "limits", "mcp", "policy",
                              "profiles", "providers", "routing", "telemetry", "tiers",
                              "workers"})
# What a brief's check is made of, which a configuration under test may not change.
SCENARIO_OWNS_DEV = frozenset({"verify", "smoke", "target"})
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

WorkerKind = Literal["oracle", "nop", "model", "command", "scripted"]


class Configuration(Frozen):
    """One harness configuration, resolved (``extends`` applied)."""

    name: str
    description: str
    source: str  # the file that declares it, or "built in"
    definition: Mapping[str, Any]  # {"instructions", "profile", "rein"}: what is diffed
    digest: str  # sha256: over the definition and the files it names
    suite: Path | None  # the configurations file's folder ({suite})

    @property
    def builtin(self) -> bool:
        return self.name in BUILTIN

    @property
    def overlay(self) -> Mapping[str, Any]:
        overlay = self.definition.get("rein")
        return overlay if isinstance(overlay, Mapping) else {}

    @property
    def worker(self) -> WorkerKind:
        """What serves the trials: the built-in oracle or nop, else what the tiers route to
        (``scripted`` when every routed provider is the scripted test double)."""
        if self.name in BUILTIN:
            return "oracle" if self.name == "oracle" else "nop"
        overlay = self.overlay
        providers = overlay.get("providers") or {}
        routed = [t.get("provider") for t in (overlay.get("tiers") or {}).values()
                  if isinstance(t, Mapping)]
        commands = (overlay.get("workers") or {}).get("command") or {}
        if routed and all(p in commands for p in routed):
            return "command"
        kinds = {(providers.get(p) or {}).get("kind") for p in routed if p in providers}
        return "scripted" if kinds == {"scripted"} else "model"

    def summary(self) -> dict[str, Any]:
        out = {"name": self.name, "digest": self.digest, "worker": self.worker,
               "description": self.description, "source": self.source}
        if self.worker == "scripted":
            out["test_double"] = "the scripted provider answers from a script: a test double"
        return out

    def for_scenario(self, scenario_dir: Path) -> Mapping[str, Any]:
        """The overlay with ``{scenario}`` and ``{suite}`` filled in for one trial."""
        filled: dict[str, Any] = _fill(copy.deepcopy(dict(self.overlay)), {
            "{scenario}": str(scenario_dir), "{suite}": str(self.suite or scenario_dir)})
        return filled


def builtin(name: str) -> Configuration:
    definition = {"builtin": name}
    description = ("runs each scenario's reference solution: must solve every scenario"
                   if name == "oracle" else "does nothing: must solve no scenario")
    return Configuration(name=name, description=description, source="built in",
                         definition=definition, digest=_digest(definition, {}), suite=None)


def load_configurations(path: Path) -> dict[str, Configuration]:
    """Every configuration a file declares, by name (EVAL005 when it is malformed)."""
    from rein.eval.toml_files import read_toml

    data = read_toml(path, code="EVAL005", what="the configurations file")
    unknown = sorted(set(data) - {"configurations"})
    if unknown:
        raise _bad(path, f"[{unknown[0]}] is not a section of a configurations file")
    table = data.get("configurations", {})
    if not isinstance(table, Mapping):
        raise _bad(path, "[configurations] must hold one table per configuration")
    raw: dict[str, Mapping[str, Any]] = {}
    for name, spec in table.items():
        if name in BUILTIN:
            raise _bad(path, f"{name!r} is built in and cannot be declared")
        if not _NAME.match(name):
            raise _bad(path, f"{name!r} is not a configuration name (letters, digits, . _ -)")
        if not isinstance(spec, Mapping):
            raise _bad(path, f"configurations.{name} must be a table")
        extra = sorted(set(spec) - _KEYS)
        if extra:
            raise _bad(path, f"configurations.{name}.{extra[0]} is not a key rein reads "
                             f"(known: {', '.join(sorted(_KEYS))})")
        raw[name] = spec
    return {name: _resolve(name, raw, path) for name in raw}


def _resolve(name: str, raw: Mapping[str, Mapping[str, Any]], path: Path) -> Configuration:
    chain: list[str] = []
    current: str | None = name
    while current is not None:
        if current in chain:
            raise _bad(path, f"configurations.{name}: extends loops through "
                             f"{' -> '.join([*chain, current])}")
        if current not in raw:
            raise _bad(path, f"configurations.{chain[-1]}.extends names {current!r}, "
                             "which this file does not declare")
        chain.append(current)
        parent = raw[current].get("extends")
        if parent is not None and not isinstance(parent, str):
            raise _bad(path, f"configurations.{current}.extends must be a name")
        current = parent
    definition: dict[str, Any] = {"instructions": None, "profile": None, "rein": {}}
    for link in reversed(chain):
        spec = raw[link]
        for key in ("instructions", "profile"):
            if key in spec:
                if not isinstance(spec[key], str):
                    raise _bad(path, f"configurations.{link}.{key} must be a string")
                definition[key] = spec[key]
        if "system" in spec:
            if not isinstance(spec["system"], str):
                raise _bad(path, f"configurations.{link}.system must be a string")
            definition["system"] = spec["system"]
        if "tools" in spec:
            definition["tools"] = {**definition.get("tools", {}), **_tools(spec["tools"],
                                                                           link, path)}
        overlay = spec.get("rein", {})
        if not isinstance(overlay, Mapping):
            raise _bad(path, f"configurations.{link}.rein must be a table of rein.toml tables")
        refused = sorted(set(overlay) - OVERLAY_SECTIONS)
        if refused:
            from rein.config import KNOWN_SECTIONS
            from rein.core.suggest import with_suggestion

            where = f"configurations.{link}.rein.{refused[0]}"
            sections = ", ".join(sorted(OVERLAY_SECTIONS))
            if refused[0] in KNOWN_SECTIONS:
                raise _bad(path, f"{where} cannot be set by a configuration (the store, the "
                                 "executor, the approver, prices and the spec flow belong to "
                                 "the evaluation and the person)",
                           hint=f"a configuration sets any of: {sections}")
            raise _bad(path, f"{where} is not a table of rein.toml",
                       hint=str(with_suggestion(f"a configuration sets any of: {sections}",
                                                refused[0], sorted(OVERLAY_SECTIONS))))
        dev = overlay.get("dev")
        graded = sorted(set(dev) & SCENARIO_OWNS_DEV) if isinstance(dev, Mapping) else []
        if graded:
            raise _bad(path, f"configurations.{link}.rein.dev.{graded[0]} cannot be set by a "
                             "configuration: a brief scenario's check (its verify command, "
                             "where it runs and what runs before it) is the scenario's",
                       hint="declare the check in the scenario: [brief] verify in its "
                            "scenario.toml")
        definition["rein"] = _merged(definition["rein"], overlay)
    if definition["profile"] is not None:
        profile = (path.parent / definition["profile"]).resolve()
        if not profile.is_file():
            raise _bad(path, f"configurations.{name}.profile {definition['profile']!r} does "
                             "not exist")
        definition["profile"] = str(profile)
    description = str(raw[name].get("description", ""))
    return Configuration(name=name, description=description, source=str(path),
                         definition=definition,
                         digest=_digest(definition, _named_files(definition, path.parent)),
                         suite=path.parent)


def _tools(table: Any, link: str, path: Path) -> dict[str, dict[str, str]]:
    """A configuration's tool descriptions: ``[configurations.NAME.tools.TOOL]`` tables
    with a ``description`` (the name as the model is offered the tool)."""
    if not isinstance(table, Mapping):
        raise _bad(path, f"configurations.{link}.tools must hold one table per tool")
    out = {}
    for tool, spec in table.items():
        where = f"configurations.{link}.tools.{tool}"
        if not isinstance(spec, Mapping) or set(spec) != {"description"} or \
                not isinstance(spec["description"], str) or not spec["description"].strip():
            raise _bad(path, f"{where} must be a table with a description (a non-empty "
                             "string) and nothing else")
        out[str(tool)] = {"description": spec["description"]}
    return out


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(base))
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _fill(value: Any, names: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for name, text in names.items():
            value = value.replace(name, text)
        return value
    if isinstance(value, list):
        return [_fill(v, names) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, names) for k, v in value.items()}
    return value


def _named_files(definition: Mapping[str, Any], suite: Path) -> dict[str, str]:
    """The content digests of the files a definition names by a path in the suite (its
    profile, its hooks' scripts, its providers' scripts): a changed file changes the
    configuration's digest. Paths under ``{scenario}`` belong to the scenario's digest."""
    out: dict[str, str] = {}
    for text in _strings(definition):
        for word in re.split(r"[\s\"'=]+", text.replace("{suite}", str(suite))):
            if not word or "{scenario}" in word or "/" not in word:
                continue
            candidate = Path(word) if Path(word).is_absolute() else suite / word
            try:
                if candidate.is_file():
                    out[word] = hashlib.sha256(candidate.read_bytes()).hexdigest()
            except OSError:
                continue
    return out


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _digest(definition: Mapping[str, Any], files: Mapping[str, str]) -> str:
    from rein.formats.canonical import canonical_json

    body = canonical_json({"definition": dict(definition), "files": dict(files)})
    return "sha256:" + hashlib.sha256(body).hexdigest()


def select(names: Sequence[str], declared: Mapping[str, Configuration]) -> list[Configuration]:
    """The configurations ``names`` asks for, in that order (EVAL004 for an unknown one)."""
    out = []
    for name in names:
        if name in BUILTIN:
            out.append(builtin(name))
            continue
        if name not in declared:
            from rein.core.suggest import with_suggestion

            known = ", ".join([*BUILTIN, *sorted(declared)])
            raise ConfigError(f"no configuration named {name!r}", code="EVAL004",
                              hint=with_suggestion(f"known: {known}", name,
                                                   [*BUILTIN, *declared])
                              or f"known: {known}")
        out.append(declared[name])
    twice = sorted({c.name for c in out if sum(o.name == c.name for o in out) > 1})
    if twice:
        raise ConfigError(f"--config {twice[0]} is given twice", code="EVAL004",
                          hint="name each configuration once")
    return out


def diff(a: Configuration, b: Configuration) -> list[dict[str, Any]]:
    """What changes from ``a`` to ``b``, key by key (dotted keys; lists compared whole)."""
    from rein.config import flatten

    left, right = flatten(a.definition), flatten(b.definition)
    out = []
    for key in sorted(set(left) | set(right)):
        if left.get(key) != right.get(key):
            out.append({"key": key, "from": left.get(key), "to": right.get(key)})
    return out


def area(key: str) -> str:
    """What part of the harness a changed key belongs to, for the risk report."""
    if key.startswith(("instructions", "system")):
        return "prompt"
    if key.startswith(("profile", "tools")):
        return "profile" if key.startswith("profile") else "tools"
    section = key.split(".")[1] if key.startswith("rein.") else key.split(".")[0]
    return {"hooks": "hooks", "tiers": "routing", "routing": "routing",
            "providers": "model", "policy": "policy", "driver": "driver",
            "dev": "context", "workers": "worker", "builtin": "worker"}.get(section, section)


def _bad(path: Path, message: str, *, hint: str = "see docs/eval.md, \"Configurations\""
         ) -> ConfigError:
    return ConfigError(message, code="EVAL005", location=Location(file=str(path)), hint=hint)


__all__ = ["BUILTIN", "CONFIGS_FILE", "Configuration", "area", "builtin", "diff",
           "load_configurations", "select"]
