"""The two AGS graphs of the development flow, built as data and written as YAML.

* The **planning graph** (``.rein/dev/planning.agraph.yaml``): one driver task, ``plan``,
  whose output is the feature plan and whose success criterion is rein's own check of it
  (``rein.dev.plan``: its failure reasons are the feedback of the next attempt, a bounded
  number of times); then a gate, ``approve``, that shows the feature graph rein wrote from
  the accepted plan, so that a person approves that exact content through the approval
  queue before any feature runs.
* The **feature graph** (``specs/plan.agraph.yaml``, in the repository beside the briefs):
  one task node per feature, in build order; each node's criteria are ``rein.dev.verify``
  then ``rein.dev.handoff`` (in declared order, stopping at the first failure, so nothing
  is committed unverified), its retry policy is the repair loop, and the graph's constraints
  are the flow's budgets.

Both are plain AGS documents: ``rein graph plan`` draws them and any AGS tool reads them.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rein.core.writing import write_atomic
from rein.dev.interpreter import shown
from rein.dev.paths import (
    FEATURES_ID,
    FEATURES_PATH,
    PLAN_JSON,
    PLANNING_ID,
    PLANNING_PATH,
)
from rein.dev.plan_check import Feature
from rein.dev.settings import DevSettings, every_n
from rein.formats import yaml_text

__all__ = ["FEATURES_PATH", "PLANNING_PATH", "feature_graph", "planning_graph",
           "write_feature_graph", "write_graph"]

PLAN_SHAPE = """\
Write the plan as JSON to .rein/dev/plan.json (a real file), of this shape:
  {"verify": "python -m pytest -q",
   "features": [
     {"id": "parse", "title": "...", "description": "...", "priority": 1,
      "depends_on": [],
      "context": {"requirements": [], "decisions": [], "constraints": [], "files": [],
                  "acceptance": []},
      "verify": "python -m pytest -q tests/test_parse.py"}]}
The top-level "verify" is how every feature is verified; a feature's own "verify" replaces
it for that feature. One small vertical feature per capability; priority 1 is built first
among ready features.
The verify command runs without a shell, so it is a program and its arguments; it must
fail when the feature is missing. Each feature will be implemented with only its own
title, description and context, never the whole brief again: put in the context what the
feature needs. rein checks the plan; a refused plan comes back with the reasons."""


def planning_graph(*, brief: str, settings: DevSettings, plan_id: str,
                   imported: bool) -> dict[str, Any]:
    """The planning graph; ``imported``: the plan file exists, so no driver is asked."""
    check = {"id": "plan_checked", "kind": "external", "check": "rein.dev.plan",
             "description": "rein checks the plan: its shape, unique ids, dependencies that "
                            "exist and form no cycle, the caps, and a real verify command",
             "params": {"plan_id": plan_id, "settings": settings_params(settings),
                        "graph": FEATURES_PATH}}
    nodes: dict[str, Any] = {}
    if not imported:
        nodes["plan"] = {
            "type": "task", "title": "Plan the features",
            "description": "Turn the brief below into a prioritised feature plan.\n\n" + brief,
            "instructions": PLAN_SHAPE,
            "outputs": {"plan": {"type": "file", "description": "The feature plan (JSON).",
                                 "path_hint": PLAN_JSON}},
            "requirements": {"permissions": ["fs:read:**"], "workspace": "read_write"},
            "failure": {"retry": {"max_attempts": settings.plan_attempts,
                                  "retry_on": ["criteria_failed", "model_error"],
                                  "backoff": "none"},
                        "on_exhausted": "fail"},
            "success": {"criteria": [check]},
        }
    gate: dict[str, Any] = {
        "type": "gate", "title": "A person approves the feature graph",
        "description": f"Approve the feature graph {FEATURES_PATH} before any feature runs.",
        "gate": {"mode": "approve",
                 "prompt": f"Build the features of {FEATURES_PATH}? Review the graph as "
                           "this approval presents it (`rein approvals show` with its id "
                           "draws it). Once accepted, the agent runs `rein dev` to start "
                           "them.",
                 "present": [repr(FEATURES_PATH)], "on_reject": "fail"},
    }
    if settings.plan_roles:  # [dev] plan_roles of the account's own rein.toml
        gate["gate"]["roles"] = list(settings.plan_roles)
    if not imported:  # an imported plan was checked by `rein dev` before this graph exists
        gate["depends_on"] = ["plan"]
    nodes["approve"] = gate
    doc = _document(PLANNING_ID, "Plan the development flow's features", nodes,
                    ["plan"] if not imported else ["approve"], constraints=None)
    if not imported:
        doc["outputs"] = {"plan": {"type": "file", "from": "nodes.plan.outputs.plan",
                                   "description": "The accepted feature plan (JSON)."}}
    return doc


def command_of(feature: Feature, verify: tuple[str, ...] | None,
               settings: DevSettings) -> tuple[str, ...]:
    """The verify command of ``feature``: the control plane's, the feature's, the plan's."""
    command = settings.verify or feature.verify or verify
    assert command is not None  # the plan check refuses a feature without one
    return command


def definition_of(feature: Feature, *, command: Sequence[str], target: str) -> str:
    """The digest of what ``feature`` is: its id, title, description and context (what the
    driver is told), and the command that verifies it, where. A feature committed under an
    earlier plan with this digest is the same feature (its commit carries the digest)."""
    data = {"id": feature.id, "title": feature.title, "description": feature.description,
            "context": {k: list(v) for k, v in sorted(feature.context.items())},
            "verify": list(command), "target": target}
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def feature_graph(features: Sequence[Feature], *, verify: tuple[str, ...] | None,
                  settings: DevSettings, plan_id: str,
                  committed: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The feature graph of an accepted plan, features in build order. ``committed``: the
    features (id → commit) already committed with the same definition and verified again
    on the current tree: they are left out, and named in the graph's ``x-rein-dev``."""
    nodes: dict[str, Any] = {}
    previous: str | None = None
    committed = committed or {}
    for index, feature in enumerate(f for f in features if f.id not in committed):
        command = command_of(feature, verify, settings)
        node = feature_node(feature, command=command, settings=settings, plan_id=plan_id,
                            clean=clean_start(settings.context_policy, index))
        # Features run one at a time, in the order the picker would take (dependencies,
        # then priority): the driver works on one workspace, and a commit is per feature.
        if previous is not None:
            node["depends_on"] = [previous]
        nodes[feature.node_id] = node
        previous = feature.node_id
    constraints: dict[str, Any] = {"max_node_executions": settings.max_steps}
    if settings.max_wall_clock_seconds is not None:
        constraints["max_wall_clock_seconds"] = settings.max_wall_clock_seconds
    if settings.max_cost_usd is not None:
        constraints["max_cost_usd"] = settings.max_cost_usd
    doc = _document(FEATURES_ID, "Build the planned features, one at a time", nodes,
                    list(nodes)[:1], constraints=constraints, plan_id=plan_id)
    if committed:
        doc["x-rein-dev"]["committed"] = [
            {"feature": f.id, "title": f.title, "commit": committed[f.id]}
            for f in features if f.id in committed]
    # What the driver said of each feature, in the run record (rein decided the rest). Not
    # required: the run succeeds when every feature node does (each has its summary then),
    # and a feature that failed has none as a consequence, not a second error (RT041).
    doc["outputs"] = {f"{n}_summary": {"type": "string", "from": f"nodes.{n}.outputs.summary",
                                       "required": False,
                                       "description": f"The driver's summary of {n}."}
                      for n in nodes}
    return doc


def clean_start(policy: str, index: int) -> str | None:
    """For the feature at ``index`` of the build order: ``always`` when the context policy
    asks a clean session at its start, ``never`` when no reset may be asked, else ``None``
    (the driver's usage threshold decides)."""
    if policy == "never":
        return "never"
    if policy == "per-feature":
        return "always"
    n = every_n(policy)
    if n is not None:
        return "always" if index % n == 0 else "never"
    return None


def feature_node(feature: Feature, *, command: tuple[str, ...], settings: DevSettings,
                 plan_id: str, clean: str | None = None) -> dict[str, Any]:
    target = settings.target
    params = {"plan_id": plan_id, "feature": feature.id, "title": feature.title,
              "target": target, "verify": list(command),
              "definition": definition_of(feature, command=command, target=target),
              "timeout_seconds": settings.verify_timeout_seconds,
              "smoke": list(settings.smoke) if settings.smoke else None}
    write = "fs:write:**" if target == "." else f"fs:write:{target}/**"
    requirements: dict[str, Any] = {
        "permissions": ["fs:read:**", write, f"fs:create:{write[9:]}", f"fs:delete:{write[9:]}"],
        "workspace": "read_write"}
    if settings.tools:  # a model worker serves the features: rein's tools, as [dev] grants
        requirements["tools"] = list(settings.tools)
        if {"shell", "shell_exec"} & set(settings.tools):
            requirements["permissions"].append("shell:exec")
    return {
        "type": "task", "title": f"Feature {feature.id}: {feature.title}",
        "description": feature.description or feature.title,
        "instructions": implement_text(feature, command=command, target=target,
                                       clean=clean == "always"),
        "outputs": {"summary": {"type": "string",
                                "description": "One line: what changed for this feature."}},
        "requirements": requirements,
        # A repair is answered in the context that holds the work its feedback is about;
        # the first attempt's reset follows the context policy.
        "constraints": {"x-rein-keep-context-on-retry": True,
                        **({"x-rein-clean-context": clean} if clean else {})},
        # The repair loop: a failed verify or handoff, an answer that came too late, and
        # the driver's own "failed" (model_error), whose message is the next attempt's
        # feedback. Only when the attempts are spent does the feature fail.
        "failure": {"retry": {"max_attempts": settings.steps_per_feature,
                              "retry_on": ["criteria_failed", "model_error", "timeout"],
                              "backoff": "none"},
                    "on_exhausted": "fail"},
        "success": {
            "evaluation_order": "cheapest_first",
            "criteria": [
                {"id": "verify", "kind": "external", "check": "rein.dev.verify",
                 "description": f"rein runs `{shlex.join(command)}` in {target} (no shell; "
                                "its process group is killed on timeout) and it passes, "
                                "on a change that is not empty; "
                                f"{shown(command, Path(target))}",
                 "timeout_seconds": settings.verify_timeout_seconds + 30, "params": params},
                {"id": "handoff", "kind": "external", "check": "rein.dev.handoff",
                 "description": "rein appends the feature to progress.txt and commits it; "
                                "the tree is clean afterwards",
                 "params": params},
            ]},
        "x-rein-dev": {"feature": feature.id, "priority": feature.priority,
                       "depends_on": list(feature.depends_on),
                       **({"serves": list(feature.serves)} if feature.serves else {})},
    }


def implement_text(feature: Feature, *, command: Sequence[str], target: str,
                   clean: bool) -> str:
    """What the driver is told for one feature: only that feature's context."""
    where = "at the root of the repository" if target in ("", ".") else \
        f"in {target!r} of the repository"
    lines = [(f"Implement feature {feature.id} ({feature.title}) {where}, and nothing "
             "else: the smallest complete change, with its tests."),
             ("Use only the context below; the brief is not repeated. Do not commit: rein "
             f"verifies with `{shlex.join(command)}` and commits the feature itself.")]
    if clean:
        lines.insert(0, "=== NEW SESSION (clean context): start this feature in a fresh "
                        "session or sub-agent ===")
    for key, values in feature.context.items():
        lines.append(f"{key}:")
        lines += [f"  - {v}" for v in values]
    if feature.depends_on:
        lines.append("builds on: " + ", ".join(feature.depends_on) + " (already committed)")
    if feature.serves:
        lines.append("serves the requirements: " + ", ".join(feature.serves))
    return "\n".join(lines)


def settings_params(settings: DevSettings) -> dict[str, Any]:
    out = settings.as_dict()  # by name, as the graphs of earlier releases list them
    return {k: list(v) if isinstance(v, tuple) else v for k, v in sorted(out.items())}


def settings_from(params: Mapping[str, Any]) -> DevSettings:
    values = dict(params)
    for key in ("verify", "smoke", "plan_roles", "tools"):
        if values.get(key) is not None:
            values[key] = tuple(values[key])
    return DevSettings(**values)


def write_graph(root: Path, relative: str, data: Mapping[str, Any]) -> Path:
    path = root / relative
    write_atomic(path, _header(relative) + yaml_text.dump(dict(data)))
    return path


def _header(relative: str) -> str:
    return "# Written by `rein dev`. Review it with `rein graph plan " + relative + "`.\n"


def write_feature_graph(root: Path, data: Mapping[str, Any]) -> Path:
    """The feature graph, its last line a comment carrying the index of its features that
    `rein dev` reads on every turn (:mod:`rein.dev.index`: parsing the YAML each time would
    cost more than the rest of the turn), and so bound to the graph a person approves."""
    from rein.dev.index import index_line, index_of
    from rein.formats.loader import load_text

    body = yaml_text.dump(dict(data))
    # The digest the run of this file will record: of the document as rein reads it back.
    index = index_of(load_text(body, source=FEATURES_PATH).data)
    path = root / FEATURES_PATH
    write_atomic(path, _header(FEATURES_PATH) + body + index_line(index))
    return path


def _document(graph_id: str, title: str, nodes: Mapping[str, Any], entrypoints: list[str],
              *, constraints: Mapping[str, Any] | None, plan_id: str | None = None
              ) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "ags_version": "1.0", "kind": "AgenticGraph", "id": graph_id, "title": title,
        "version": "1.0.0", "requires_conformance": 3,
        "objective": title + " (the rein development flow).",
        "entrypoints": entrypoints, "nodes": dict(nodes)}
    if constraints:
        doc["constraints"] = dict(constraints)
    if plan_id is not None:
        doc["x-rein-dev"] = {"plan_id": plan_id}
    return doc
