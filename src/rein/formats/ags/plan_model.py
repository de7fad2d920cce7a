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

from rein.core.frozen import Frozen, field

TIER_ORDER: tuple[str, ...] = ("minimal", "standard", "advanced", "frontier")


class Notice(Frozen):
    """A fact about the graph worth a reviewer's attention that is not a document defect.

    Validation findings say the document is wrong; notices say "this will cost more than
    its budget" or "this needs a higher conformance level than it declares".
    """

    code: str
    message: str
    pointer: str = ""
    file: str | None = None  # set when the fact is about a referenced child document

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message,
                               "pointer": self.pointer}
        if self.file is not None:
            out["file"] = self.file
        return out


class EdgePlan(Frozen):
    """One member of a scope's effective edge set (explicit edges ∪ ``depends_on``)."""

    source: str
    target: str
    kind: str  # sequence | conditional | on_failure
    when: str | None = None
    label: str | None = None
    origin: str = "edge"  # "edge" or "depends_on": where the edge was declared
    pointer: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"from": self.source, "to": self.target, "kind": self.kind, "when": self.when,
                "label": self.label, "origin": self.origin}


class CriterionPlan(Frozen):
    """One success criterion: what will be checked, and whether it decides pass/fail."""

    id: str
    kind: str
    severity: str  # required | advisory
    description: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "severity": self.severity,
                "description": self.description}


class GatePlan(Frozen):
    """A place where a person is asked: a gate node, a human checkpoint or a human criterion."""

    node: str  # qualified node id ("" for a graph-level criterion)
    kind: str  # gate | checkpoint | criterion
    mode: str  # approve | review | input | notify (a human criterion is "approve")
    at: str | None = None  # checkpoint stage
    id: str | None = None  # checkpoint or criterion id
    roles: tuple[str, ...] = ()
    required: bool = True
    pointer: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "kind": self.kind, "mode": self.mode, "at": self.at,
                "id": self.id, "roles": list(self.roles), "required": self.required}


class NodePlan(Frozen):
    """One node of one scope, with its ``defaults`` merged in (AGS §6.3)."""

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
    criteria: tuple[CriterionPlan, ...] = ()
    success_mode: str | None = None
    when: str | None = None
    fallback: tuple[str, ...] = ()  # fallback strategies in order
    escalation: str | None = None  # escalation target kind (human, node, ...)
    on_exhausted: str = "fail"
    compensation: str | None = None
    multiplier: int | None = None  # loop max_iterations or map max_items
    child_label: str | None = None  # "body", "use NAME", "inline", "ref URI"
    child: ScopePlan | None = None
    estimate: Mapping[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:  # effective left out, as the dataclass did
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__fields__
                          if name != "effective")
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

    name: str
    level: int
    pointer: str
    file: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"feature": self.name, "level": self.level, "pointer": self.pointer}


class Plan(Frozen):
    """Everything rein knows about a graph before running it."""

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

    @property
    def cost_estimated(self) -> bool:
        """Whether a node says what it costs (``estimate.cost_usd``): without one the
        projected cost is unknown, not $0.00."""
        return any("cost_usd" in n.estimate for n in self.nodes())

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
            "cost_estimated": self.cost_estimated,
            "projected_tokens": self.projected_tokens,
            "features": [f.to_json() for f in self.features],
            "notices": [n.to_json() for n in self.notices],
        }
