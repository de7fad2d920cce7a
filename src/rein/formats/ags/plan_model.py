"""The plan of an Agentic Graph as data: what a reviewer approves before a token is spent.

These are the values :func:`rein.formats.ags.plan.build_plan` computes (AGS §17.1 PLAN
phase): per scope the effective edges, a canonical topological order and its parallel
groups, reachability, the merged ``defaults`` view of each node, tiers, gates and human
checkpoints, criteria, budgets, projected cost and the worst-case node-execution count.

Everything is frozen. Mappings held here (merged blocks, constraints) come straight from
the document and are never mutated; ``to_json`` copies them out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from rein.core.frozen import Frozen, set_field

TIER_ORDER: tuple[str, ...] = ("minimal", "standard", "advanced", "frontier")


class Notice(Frozen):
    """A fact about the graph worth a reviewer's attention that is not a document defect.

    Validation findings say the document is wrong; notices say "this will cost more than
    its budget" or "this needs a higher conformance level than it declares".
    """

    __slots__ = ("code", "file", "message", "pointer")

    code: str
    message: str
    pointer: str
    file: str | None  # set when the fact is about a referenced child document

    def __init__(self, *, code: str, message: str, pointer: str = "",
                 file: str | None = None) -> None:
        set_field(self, "code", code)
        set_field(self, "message", message)
        set_field(self, "pointer", pointer)
        set_field(self, "file", file)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message,
                               "pointer": self.pointer}
        if self.file is not None:
            out["file"] = self.file
        return out


class EdgePlan(Frozen):
    """One member of a scope's effective edge set (explicit edges ∪ ``depends_on``)."""

    __slots__ = ("kind", "label", "origin", "pointer", "source", "target", "when")

    source: str
    target: str
    kind: str  # sequence | conditional | on_failure
    when: str | None
    label: str | None
    origin: str  # "edge" or "depends_on": where the edge was declared
    pointer: str

    def __init__(self, *, source: str, target: str, kind: str, when: str | None = None,
                 label: str | None = None, origin: str = "edge", pointer: str = "") -> None:
        set_field(self, "source", source)
        set_field(self, "target", target)
        set_field(self, "kind", kind)
        set_field(self, "when", when)
        set_field(self, "label", label)
        set_field(self, "origin", origin)
        set_field(self, "pointer", pointer)

    def to_json(self) -> dict[str, Any]:
        return {"from": self.source, "to": self.target, "kind": self.kind, "when": self.when,
                "label": self.label, "origin": self.origin}


class CriterionPlan(Frozen):
    """One success criterion: what will be checked, and whether it decides pass/fail."""

    __slots__ = ("description", "id", "kind", "severity")

    id: str
    kind: str
    severity: str  # required | advisory
    description: str

    def __init__(self, *, id: str, kind: str, severity: str, description: str = "") -> None:
        set_field(self, "id", id)
        set_field(self, "kind", kind)
        set_field(self, "severity", severity)
        set_field(self, "description", description)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "severity": self.severity,
                "description": self.description}


class GatePlan(Frozen):
    """A place where a person is asked: a gate node, a human checkpoint or a human criterion."""

    __slots__ = ("at", "id", "kind", "mode", "node", "pointer", "required", "roles")

    node: str  # qualified node id ("" for a graph-level criterion)
    kind: str  # gate | checkpoint | criterion
    mode: str  # approve | review | input | notify (a human criterion is "approve")
    at: str | None  # checkpoint stage
    id: str | None  # checkpoint or criterion id
    roles: tuple[str, ...]
    required: bool
    pointer: str

    def __init__(self, *, node: str, kind: str, mode: str, at: str | None = None,
                 id: str | None = None, roles: tuple[str, ...] = (), required: bool = True,
                 pointer: str = "") -> None:
        set_field(self, "node", node)
        set_field(self, "kind", kind)
        set_field(self, "mode", mode)
        set_field(self, "at", at)
        set_field(self, "id", id)
        set_field(self, "roles", roles)
        set_field(self, "required", required)
        set_field(self, "pointer", pointer)

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "kind": self.kind, "mode": self.mode, "at": self.at,
                "id": self.id, "roles": list(self.roles), "required": self.required}


class NodePlan(Frozen):
    """One node of one scope, with its ``defaults`` merged in (AGS §6.3)."""

    __slots__ = (
        "attempts",
        "calls_model",
        "child",
        "child_label",
        "compensation",
        "criteria",
        "effective",
        "escalation",
        "estimate",
        "fallback",
        "group",
        "id",
        "index",
        "join",
        "multiplier",
        "on_exhausted",
        "pointer",
        "qualified",
        "rank",
        "reachable",
        "success_mode",
        "tier",
        "title",
        "type",
        "when",
        "worst_case",
    )

    id: str
    qualified: str  # scope path + id, e.g. "repair_loop.diagnose"
    type: str
    title: str
    pointer: str
    index: int  # declaration position in the scope
    rank: int  # position in the scope's canonical topological order
    group: int  # topological level: nodes of one group may run in parallel
    reachable: bool
    join: str
    tier: str | None  # routed tier for nodes that call a model; None for gates and the like
    calls_model: bool
    attempts: int  # merged failure.retry.max_attempts (gates: 1)
    worst_case: int  # node executions at worst, nested scopes included
    effective: Mapping[str, Any]  # the node with defaults merged
    criteria: tuple[CriterionPlan, ...]
    success_mode: str | None
    when: str | None
    fallback: tuple[str, ...]  # fallback strategies in order
    escalation: str | None  # escalation target kind (human, node, ...)
    on_exhausted: str
    compensation: str | None
    multiplier: int | None  # loop max_iterations or map max_items
    child_label: str | None  # "body", "use NAME", "inline", "ref URI"
    child: ScopePlan | None
    estimate: Mapping[str, Any]

    def __init__(self, *, id: str, qualified: str, type: str, title: str, pointer: str, index: int,
                 rank: int, group: int, reachable: bool, join: str, tier: str | None,
                 calls_model: bool, attempts: int, worst_case: int, effective: Mapping[str, Any],
                 criteria: tuple[CriterionPlan, ...] = (), success_mode: str | None = None,
                 when: str | None = None, fallback: tuple[str, ...] = (),
                 escalation: str | None = None, on_exhausted: str = "fail",
                 compensation: str | None = None, multiplier: int | None = None,
                 child_label: str | None = None, child: ScopePlan | None = None,
                 estimate: Mapping[str, Any] | None = None) -> None:
        set_field(self, "id", id)
        set_field(self, "qualified", qualified)
        set_field(self, "type", type)
        set_field(self, "title", title)
        set_field(self, "pointer", pointer)
        set_field(self, "index", index)
        set_field(self, "rank", rank)
        set_field(self, "group", group)
        set_field(self, "reachable", reachable)
        set_field(self, "join", join)
        set_field(self, "tier", tier)
        set_field(self, "calls_model", calls_model)
        set_field(self, "attempts", attempts)
        set_field(self, "worst_case", worst_case)
        set_field(self, "effective", effective)
        set_field(self, "criteria", criteria)
        set_field(self, "success_mode", success_mode)
        set_field(self, "when", when)
        set_field(self, "fallback", fallback)
        set_field(self, "escalation", escalation)
        set_field(self, "on_exhausted", on_exhausted)
        set_field(self, "compensation", compensation)
        set_field(self, "multiplier", multiplier)
        set_field(self, "child_label", child_label)
        set_field(self, "child", child)
        set_field(self, "estimate", {} if estimate is None else estimate)

    def __repr__(self) -> str:  # effective left out, as the dataclass did
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__
                          if name not in ('effective',))
        return f"{type(self).__name__}({shown})"

    def to_json(self) -> dict[str, Any]:
        constraints = self.effective.get("constraints")
        out: dict[str, Any] = {
            "id": self.id,
            "qualified": self.qualified,
            "type": self.type,
            "title": self.title,
            "rank": self.rank,
            "group": self.group,
            "reachable": self.reachable,
            "join": self.join,
            "tier": self.tier,
            "attempts": self.attempts,
            "worst_case": self.worst_case,
            "criteria": [c.to_json() for c in self.criteria],
            "when": self.when,
            "fallback": list(self.fallback),
            "escalation": self.escalation,
            "on_exhausted": self.on_exhausted,
            "compensation": self.compensation,
            "constraints": dict(constraints) if isinstance(constraints, Mapping) else {},
            "estimate": dict(self.estimate),
        }
        if self.child is not None:
            out["multiplier"] = self.multiplier
            out["child"] = self.child_label
            out["scope"] = self.child.path
        return out


class ScopePlan(Frozen):
    """A graph scope (the root, a loop or map body, a subgraph child) and its schedule."""

    __slots__ = (
        "depth",
        "edges",
        "entrypoints",
        "file",
        "groups",
        "nodes",
        "order",
        "path",
        "pointer",
        "title",
        "unreachable",
        "worst_case",
    )

    path: str  # "" for the root; "repair_loop", "outer.inner" for nested scopes
    title: str
    file: str | None
    pointer: str
    depth: int  # nesting level of subgraph, loop and map scopes (root 0)
    nodes: tuple[NodePlan, ...]  # in declaration order
    edges: tuple[EdgePlan, ...]
    order: tuple[str, ...]  # canonical topological order (Kahn, ties by declaration)
    groups: tuple[tuple[str, ...], ...]  # parallel groups by topological level
    entrypoints: tuple[str, ...]
    unreachable: tuple[str, ...]
    worst_case: int

    def __init__(self, *, path: str, title: str, file: str | None, pointer: str, depth: int,
                 nodes: tuple[NodePlan, ...], edges: tuple[EdgePlan, ...], order: tuple[str, ...],
                 groups: tuple[tuple[str, ...], ...], entrypoints: tuple[str, ...],
                 unreachable: tuple[str, ...], worst_case: int) -> None:
        set_field(self, "path", path)
        set_field(self, "title", title)
        set_field(self, "file", file)
        set_field(self, "pointer", pointer)
        set_field(self, "depth", depth)
        set_field(self, "nodes", nodes)
        set_field(self, "edges", edges)
        set_field(self, "order", order)
        set_field(self, "groups", groups)
        set_field(self, "entrypoints", entrypoints)
        set_field(self, "unreachable", unreachable)
        set_field(self, "worst_case", worst_case)

    def node(self, node_id: str) -> NodePlan:
        """The node with this id in this scope; KeyError when absent."""
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(node_id)

    def in_order(self) -> list[NodePlan]:
        """The nodes in canonical topological order."""
        by_id = {n.id: n for n in self.nodes}
        return [by_id[i] for i in self.order]

    def walk(self) -> Iterator[ScopePlan]:
        """This scope, then every nested scope, depth first in topological order."""
        yield self
        for n in self.in_order():
            if n.child is not None:
                yield from n.child.walk()

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "title": self.title,
            "file": self.file,
            "pointer": self.pointer,
            "depth": self.depth,
            "entrypoints": list(self.entrypoints),
            "order": list(self.order),
            "groups": [list(g) for g in self.groups],
            "unreachable": list(self.unreachable),
            "worst_case": self.worst_case,
            "edges": [e.to_json() for e in self.edges],
            "nodes": [n.to_json() for n in self.in_order()],
        }


class Feature(Frozen):
    """A feature the graph uses and the conformance level it needs (AGS §19)."""

    __slots__ = ("file", "level", "name", "pointer")

    name: str
    level: int
    pointer: str
    file: str | None

    def __init__(self, *, name: str, level: int, pointer: str, file: str | None = None) -> None:
        set_field(self, "name", name)
        set_field(self, "level", level)
        set_field(self, "pointer", pointer)
        set_field(self, "file", file)

    def to_json(self) -> dict[str, Any]:
        return {"feature": self.name, "level": self.level, "pointer": self.pointer}


class Plan(Frozen):
    """Everything rein knows about a graph before running it."""

    __slots__ = (
        "constraints",
        "digest",
        "features",
        "gates",
        "graph_criteria",
        "graph_id",
        "notices",
        "objective",
        "projected_cost_usd",
        "projected_tokens",
        "required_level",
        "requires_conformance",
        "root",
        "source",
        "tiers",
        "title",
        "version",
        "worst_case_executions",
    )

    graph_id: str
    title: str
    objective: str
    version: str | None
    source: str | None
    digest: str
    requires_conformance: int  # as declared (default 1)
    required_level: int  # what the features used actually need
    root: ScopePlan
    worst_case_executions: int
    tiers: Mapping[str, int]
    gates: tuple[GatePlan, ...]
    graph_criteria: tuple[CriterionPlan, ...]
    constraints: Mapping[str, Any]  # the graph's global budgets
    projected_cost_usd: float
    projected_tokens: int
    features: tuple[Feature, ...]
    notices: tuple[Notice, ...]

    def __init__(self, *, graph_id: str, title: str, objective: str, version: str | None,
                 source: str | None, digest: str, requires_conformance: int, required_level: int,
                 root: ScopePlan, worst_case_executions: int, tiers: Mapping[str, int],
                 gates: tuple[GatePlan, ...], graph_criteria: tuple[CriterionPlan, ...],
                 constraints: Mapping[str, Any], projected_cost_usd: float, projected_tokens: int,
                 features: tuple[Feature, ...], notices: tuple[Notice, ...]) -> None:
        set_field(self, "graph_id", graph_id)
        set_field(self, "title", title)
        set_field(self, "objective", objective)
        set_field(self, "version", version)
        set_field(self, "source", source)
        set_field(self, "digest", digest)
        set_field(self, "requires_conformance", requires_conformance)
        set_field(self, "required_level", required_level)
        set_field(self, "root", root)
        set_field(self, "worst_case_executions", worst_case_executions)
        set_field(self, "tiers", tiers)
        set_field(self, "gates", gates)
        set_field(self, "graph_criteria", graph_criteria)
        set_field(self, "constraints", constraints)
        set_field(self, "projected_cost_usd", projected_cost_usd)
        set_field(self, "projected_tokens", projected_tokens)
        set_field(self, "features", features)
        set_field(self, "notices", notices)

    @property
    def order(self) -> tuple[str, ...]:
        return self.root.order

    @property
    def groups(self) -> tuple[tuple[str, ...], ...]:
        return self.root.groups

    def scopes(self) -> Iterator[ScopePlan]:
        """Every scope, root first, depth first."""
        return self.root.walk()

    def nodes(self) -> Iterator[NodePlan]:
        """Every node of every scope, in topological order within each scope."""
        for scope in self.scopes():
            yield from scope.in_order()

    def budgets(self) -> dict[str, Any]:
        """Graph constraints and, per node that has any, its merged node constraints."""
        per_node: dict[str, Any] = {}
        for n in self.nodes():
            c = n.effective.get("constraints")
            if isinstance(c, Mapping) and c:
                per_node[n.qualified] = dict(c)
        return {"graph": dict(self.constraints), "nodes": per_node}

    def to_json(self) -> dict[str, Any]:
        return {
            "graph_id": self.graph_id,
            "title": self.title,
            "objective": self.objective,
            "version": self.version,
            "path": self.source,
            "digest": self.digest,
            "requires_conformance": self.requires_conformance,
            "required_level": self.required_level,
            "worst_case_executions": self.worst_case_executions,
            "order": list(self.root.order),
            "groups": [list(g) for g in self.root.groups],
            "scopes": [s.to_json() for s in self.scopes()],
            "tiers": dict(self.tiers),
            "gates": [g.to_json() for g in self.gates],
            "criteria": [c.to_json() for c in self.graph_criteria],
            "budgets": self.budgets(),
            "projected_cost_usd": round(self.projected_cost_usd, 6),
            "projected_tokens": self.projected_tokens,
            "features": [f.to_json() for f in self.features],
            "notices": [n.to_json() for n in self.notices],
        }
