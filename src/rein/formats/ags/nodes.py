"""Layer 2, per node: reserved ids, decisions, tiers, the failure ladder, fragment names,
and the per-node advisories (AG117, AG121–AG124, AG132, AG141, AG142, AG151–AG153,
AG113 for ladder targets, AG902, AG905–AG907, AG909).

Type-block and gate-intelligence rules (AG101, AG102) and the input rule (AG104) are
schema rules; :mod:`rein.formats.ags.schema` reports them under their own codes.
"""

from __future__ import annotations

from typing import Any

from rein.formats.ags.report import Collector, near
from rein.formats.ags.scopes import (
    CONTAINER_TYPES,
    Model,
    Scope,
    declared_outputs,
    dict_of,
    list_of,
    node_type,
)

TIER_LEVEL = {"minimal": 1, "standard": 2, "advanced": 3, "frontier": 4}
_MUTATING = ("fs:write", "fs:delete", "git:commit", "git:push", "shell:exec")
_JUDGEMENT_ONLY = frozenset({"llm_judge", "human"})


def check_nodes(model: Model, scope: Scope, out: Collector) -> None:
    """Every per-node referential rule and advisory of one scope."""
    for node_id, node in scope.nodes.items():
        kind = node_type(node)
        if node_id == "self":
            out.add("AG117", scope.node_pointer(node_id), "node id 'self' is reserved: nodes.self means the current "
                    "node", hint="rename the node")
        if kind in ("decision", "gate") and "decision" in dict_of(node.get("outputs")):
            out.add("AG122", scope.node_pointer(node_id, "outputs", "decision"),
                    f"{kind} node {node_id!r} declares an output named 'decision', which the "
                    "harness sets itself")
        if kind == "decision":
            _check_decision(scope, node_id, dict_of(node.get("decision")), out)
        if "intelligence" in node:
            check_intelligence(node["intelligence"], scope.node_pointer(node_id, "intelligence"),
                               out, advise=True)
        for i, criterion in enumerate(list_of(dict_of(node.get("success")).get("criteria"))):
            if isinstance(criterion, dict) and "judge_intelligence" in criterion:
                check_intelligence(criterion["judge_intelligence"], scope.node_pointer(
                    node_id, "success", "criteria", i, "judge_intelligence"), out)
        if "failure" in node:
            _check_failure(scope, node_id, node, out)
        if kind in CONTAINER_TYPES:
            _check_container(model, scope, node_id, kind, dict_of(node.get(kind)), out)
        _advisories(scope, node_id, node, kind, out)
    defaults = dict_of(scope.data.get("defaults"))
    check_intelligence(defaults.get("intelligence"),
                       f"{scope.pointer}/defaults/intelligence", out)


def _check_decision(scope: Scope, node_id: str, block: dict[str, Any], out: Collector) -> None:
    labels: list[Any] = []
    seen: set[Any] = set()
    expression = block.get("evaluator", "agent") == "expression"
    for i, branch in enumerate(list_of(block.get("branches"))):
        if not isinstance(branch, dict):
            continue
        label = branch.get("label")
        where = scope.node_pointer(node_id, "decision", "branches", i)
        if isinstance(label, str):
            if label in seen:
                out.add("AG124", where + "/label",
                        f"decision {node_id!r} declares the branch label {label!r} twice")
            seen.add(label)
            labels.append(label)
        if expression and "when" not in branch:
            out.add("AG121", where,
                    f"branch {label!r} of decision {node_id!r} has no when, but the decision "
                    "is evaluated by expression")
    default = block.get("default_branch")
    if isinstance(default, str) and default not in seen:
        shown = ", ".join(repr(lbl) for lbl in labels) or "none"
        out.add("AG123", scope.node_pointer(node_id, "decision", "default_branch"),
                f"default_branch {default!r} of decision {node_id!r} is not one of its labels "
                f"({shown})")


def check_intelligence(block: Any, where: str, out: Collector, *, advise: bool = False) -> None:
    """AG141/AG142 on any intelligence block; AG905 (advisory) on a node's own block."""
    if not isinstance(block, dict):
        return
    tier = block.get("tier")
    if not isinstance(tier, str) or tier not in TIER_LEVEL:
        return
    level = block.get("level")
    if type(level) is int and level != TIER_LEVEL[tier]:
        out.add("AG141", where + "/level",
                f"intelligence tier {tier!r} is level {TIER_LEVEL[tier]}, but level says {level}")
    escalate = block.get("escalate_to")
    if isinstance(escalate, str) and TIER_LEVEL.get(escalate, 99) < TIER_LEVEL[tier]:
        out.add("AG142", where + "/escalate_to",
                f"escalate_to {escalate!r} is below the tier {tier!r}; escalation only goes up")
    if advise and tier == "frontier" and not block.get("rationale"):
        out.add("AG905", where + "/tier",
                "frontier tier without a rationale: say why the most capable class is needed")


def _check_failure(scope: Scope, node_id: str, node: dict[str, Any], out: Collector) -> None:
    failure = dict_of(node.get("failure"))
    outputs = dict_of(node.get("outputs"))
    for i, step in enumerate(list_of(failure.get("fallback"))):
        if not isinstance(step, dict):
            continue
        where = scope.node_pointer(node_id, "failure", "fallback", i)
        strategy = step.get("strategy")
        if strategy == "alternate_node":
            alt = step.get("node")
            if not isinstance(alt, str):
                continue
            if alt not in scope.nodes:
                out.add("AG113", where + "/node",
                        f"fallback of {node_id!r} names node {alt!r}, which is not in this scope",
                        hint=near("AG113", alt, scope.nodes))
                continue
            required = {name for name, spec in outputs.items()
                        if dict_of(spec).get("required", True) is not False}
            missing = sorted(required - declared_outputs(scope.nodes[alt]))
            if missing:
                out.add("AG151", where + "/node",
                        f"alternate node {alt!r} does not declare the required output(s) "
                        f"{', '.join(missing)} of {node_id!r}")
        elif strategy == "relax_criteria":
            ids = {c.get("id") for c in list_of(dict_of(node.get("success")).get("criteria"))
                   if isinstance(c, dict)}
            unknown = [c for c in list_of(step.get("criteria")) if c not in ids]
            if unknown:
                out.add("AG153", where + "/criteria",
                        f"relax_criteria names {_names(unknown)}, not criteria of {node_id!r}")
        elif strategy == "degrade_outputs":
            unknown = [o for o in list_of(step.get("outputs")) if o not in outputs]
            if unknown:
                out.add("AG153", where + "/outputs",
                        f"degrade_outputs names {_names(unknown)}, not outputs of {node_id!r}")
    comp = failure.get("compensation")
    if isinstance(comp, str):
        where = scope.node_pointer(node_id, "failure", "compensation")
        if comp not in scope.nodes:
            out.add("AG113", where,
                    f"compensation of {node_id!r} names node {comp!r}, which is not in this scope",
                    hint=near("AG113", comp, scope.nodes))
        elif dict_of(scope.nodes[comp].get("failure")).get("compensation") is not None:
            out.add("AG152", where,
                    f"compensation node {comp!r} declares its own compensation")
    escalation = dict_of(failure.get("escalation"))
    target = escalation.get("node")
    if escalation.get("to") == "node" and isinstance(target, str) and target not in scope.nodes:
        out.add("AG113", scope.node_pointer(node_id, "failure", "escalation", "node"),
                f"escalation of {node_id!r} names node {target!r}, which is not in this scope",
                hint=near("AG113", target, scope.nodes))


def _check_container(model: Model, scope: Scope, node_id: str, kind: str,
                     block: dict[str, Any], out: Collector) -> None:
    use = block.get("use")
    if isinstance(use, str) and use not in model.fragments:
        known = ", ".join(sorted(model.fragments)) or "none are declared"
        out.add("AG132", scope.node_pointer(node_id, kind, "use"),
                f"{kind}.use names {use!r}, which is not under subgraphs ({known})")
    ref = dict_of(block.get("ref")) if kind == "subgraph" else {}
    uri = ref.get("uri")
    if isinstance(uri, str) and uri and not uri.startswith((".", "/")) \
            and "integrity" not in ref:
        out.add("AG909", scope.node_pointer(node_id, kind, "ref"),
                f"subgraph ref {uri!r} is not a local path and has no integrity digest; a "
                "change to the child would go unnoticed")


def _advisories(scope: Scope, node_id: str, node: dict[str, Any], kind: str,
                out: Collector) -> None:
    requirements = dict_of(node.get("requirements"))
    mutating = requirements.get("workspace") == "read_write" or any(
        isinstance(p, str) and p.startswith(_MUTATING)
        for p in list_of(requirements.get("permissions")))
    success = node.get("success")
    if mutating and not success and kind == "task":
        out.add("AG902", scope.node_pointer(node_id),
                f"node {node_id!r} changes the workspace but declares no success block, so "
                "nothing checks its effect")
    if isinstance(success, dict):
        kinds = {c.get("kind") for c in list_of(success.get("criteria"))
                 if isinstance(c, dict) and c.get("severity", "required") == "required"}
        if kinds and kinds <= _JUDGEMENT_ONLY:
            out.add("AG906", scope.node_pointer(node_id, "success"),
                    f"the success block of {node_id!r} relies only on judgement "
                    "(llm_judge/human); add a deterministic check")
    constraints = dict_of(node.get("constraints"))
    if constraints.get("determinism") == "strict" and "seed" not in constraints:
        out.add("AG907", scope.node_pointer(node_id, "constraints", "determinism"),
                f"node {node_id!r} asks for strict determinism without a seed")


def _names(values: list[Any]) -> str:
    return ", ".join(repr(v) for v in values)
