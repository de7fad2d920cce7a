"""Plan a valid Agentic Graph: order, parallel groups, merged defaults, worst case, notices.

The PLAN phase of AGS §17.1, pure: it reads data and (through an injected loader) the
documents that ``subgraph.ref`` points to, and computes per scope

* the effective edge set: explicit edges ∪ ``depends_on``, deduplicated on
  ``(from, to, kind, when)`` (§8.4);
* a canonical topological order (Kahn's algorithm with the ready queue ordered by
  declaration index, §17.4) and parallel groups (nodes at the same topological level);
* reachability from the entrypoints;
* each node's merged view of ``defaults`` (§6.3);
* the worst-case node-execution count, multiplying retries, loop iterations and map items
  through every nesting level, ``ref`` children included.

Facts that are not document defects (a worst case above ``max_node_executions``, a feature
above ``requires_conformance``, an estimate above the budget) become :class:`Notice` values.
The document is assumed to have passed validation; nothing here raises on a valid one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from rein.errors import ReinError
from rein.formats.ags.plan_model import (
    TIER_ORDER,
    CriterionPlan,
    EdgePlan,
    Feature,
    GatePlan,
    NodePlan,
    Notice,
    Plan,
    ScopePlan,
)
from rein.formats.ags.plan_notices import (
    NOTICE_COST,
    NOTICE_DEPTH,
    NOTICE_INTEGRITY,
    NOTICE_LEVEL,
    NOTICE_PROVIDER_KEY,
    NOTICE_RECURSION,
    NOTICE_REF,
    NOTICE_TOKENS,
    NOTICE_WORST_CASE,
    budget_notices,
    is_key_variable,
    key_notice,
    level_notices,
)
from rein.formats.ags.plan_order import (
    MERGED_BLOCKS,
    effective_edges,
    effective_node,
    topological_order,
)
from rein.formats.ags.spec import node_spec
from rein.formats.canonical import ags_digest
from rein.formats.loader import load_path
from rein.formats.pointers import escape
from rein.formats.redaction import DEFAULT_KEY_VARIABLES
from rein.formats.shapes import mapping_of, sequence_of

# (uri, referencing file or None) → (data, source) of the child, or None when not local.
RefLoader = Callable[[str, "str | None"], "tuple[Any, str] | None"]

_CONTAINERS = ("loop", "map")
_LEVEL_1_STAGES = frozenset({"before_start", "after_outputs"})
_CRITERION_LEVEL = {"expression": 2, "regex": 2, "json_schema": 2, "llm_judge": 3,
                    "external": 3}


def default_ref_loader(uri: str, base: str | None) -> tuple[Any, str] | None:
    """Load a local ``subgraph.ref``: paths resolve against the referencing document's folder.

    Non-local URIs (with a scheme such as ``https://``) return None: planning never touches
    the network. Load failures raise :class:`~rein.errors.LoadError`.
    """
    if "://" in uri or uri.startswith("//"):
        return None
    raw = uri.removeprefix("file:")
    path = Path(raw)
    if not path.is_absolute() and base is not None:
        path = Path(base).parent / path
    return load_path(path).data, str(path)


def plan_path(path: str | Path, *, load_ref: RefLoader | None = default_ref_loader,
              key_variables: Iterable[str] = ()) -> Plan:
    """Load one graph file and plan it (its ``ref`` children resolve next to it)."""
    return build_plan(load_path(path).data, source=str(path), load_ref=load_ref,
                      key_variables=key_variables)


def build_plan(
    data: Mapping[str, Any],
    *,
    source: str | None = None,
    load_ref: RefLoader | None = default_ref_loader,
    digest: str | None = None,
    key_variables: Iterable[str] = (),
) -> Plan:
    """The plan of a valid graph document. ``load_ref=None`` leaves ``ref`` children unplanned.

    ``digest`` saves recomputing the graph digest when the caller already has it (the
    validator's report carries it); it must be ``ags_digest(data)``. ``key_variables`` are
    the provider key variables rein.toml names, flagged (PLAN009) when a node's
    ``requirements.environment`` lists one, as the built-in providers' keys always are.
    """
    builder = _Builder(load_ref, root_source=source, key_variables=key_variables)
    doc = _Doc(data=data, source=source, level=_declared_level(data))
    builder.levels[source] = doc.level
    root = builder.scope(data, doc=doc, path="", pointer="", depth=0, defaults=data.get("defaults"))
    constraints = mapping_of(data.get("constraints"))
    graph_criteria = _criteria(data.get("success"))
    for c in graph_criteria:
        if c.kind == "human":
            builder.gates.append(GatePlan(node="", kind="criterion", mode="approve", id=c.id,
                                          required=c.severity == "required", pointer="/success"))
        builder.feature(doc, f"{c.kind} criterion", _CRITERION_LEVEL.get(c.kind, 1), "/success")
    cost, tokens = _projected(root)
    plan = Plan(
        graph_id=str(data.get("id", "")),
        title=str(data.get("title", "")),
        objective=str(data.get("objective", "")).strip(),
        version=data.get("version"),
        source=source,
        digest=digest or ags_digest(data),
        requires_conformance=doc.level,
        required_level=max([1] + [f.level for f in builder.features if f.file == source]),
        root=root,
        worst_case_executions=root.worst_case,
        tiers={t: builder.tiers.get(t, 0) for t in TIER_ORDER},
        gates=tuple(builder.gates),
        graph_criteria=graph_criteria,
        constraints=dict(constraints),
        projected_cost_usd=cost,
        projected_tokens=tokens,
        features=tuple(builder.features),
        notices=(),
    )
    notices = (builder.notices + budget_notices(plan, constraints)
               + level_notices(builder.features, builder.levels, source))
    return plan.replace(notices=tuple(notices))


# ---------------------------------------------------------------------------- internals


class _Doc:
    """One document being planned: the root graph or a ``ref`` child."""

    __slots__ = ("data", "level", "source")

    def __init__(self, *, data: Mapping[str, Any], source: str | None, level: int) -> None:
        self.data, self.source, self.level = data, source, level


class _Builder:
    """Walks scopes once, collecting gates, tiers, features and notices along the way."""

    def __init__(self, load_ref: RefLoader | None, *, root_source: str | None,
                 key_variables: Iterable[str] = ()) -> None:
        self.load_ref = load_ref
        self.key_variables = frozenset((*DEFAULT_KEY_VARIABLES.values(), *key_variables))
        self.root_source = root_source
        self.levels: dict[str | None, int] = {}  # declared requires_conformance per document
        self.notices: list[Notice] = []
        self.features: list[Feature] = []
        self.gates: list[GatePlan] = []
        self.tiers: dict[str, int] = {}
        self.active: list[tuple[str, str | None, str]] = []  # recursion guard
        self.deepest = 0

    def _file(self, doc: _Doc) -> str | None:
        """The file to name in a notice: only child documents are named (the root is implied)."""
        return None if doc.source == self.root_source else doc.source

    def feature(self, doc: _Doc, name: str, level: int, pointer: str) -> None:
        if level > 1:
            self.features.append(
                Feature(name=name, level=level, pointer=pointer, file=doc.source))

    def scope(self, fragment: Mapping[str, Any], *, doc: _Doc, path: str, pointer: str,
              depth: int, defaults: Any) -> ScopePlan:
        self.deepest = max(self.deepest, depth)
        nodes_data: Mapping[str, Any] = fragment.get("nodes") or {}
        edges = effective_edges(fragment, pointer)
        order, groups = topological_order(nodes_data, edges)
        rank = {n: i for i, n in enumerate(order)}
        group = {n: g for g, members in enumerate(groups) for n in members}
        entrypoints = tuple(e for e in fragment.get("entrypoints") or [] if e in nodes_data)
        reachable = _reachable(entrypoints, edges)
        for e in edges:
            if e.kind != "sequence":
                self.feature(doc, f"{e.kind} edge", 2, e.pointer)
        defaults = defaults if isinstance(defaults, Mapping) else None
        nodes = tuple(
            self.node(node_id, node, doc=doc, scope_path=path,
                      pointer=f"{pointer}/nodes/{escape(node_id)}", depth=depth,
                      defaults=defaults, index=i, rank=rank[node_id], group=group[node_id],
                      reachable=node_id in reachable)
            for i, (node_id, node) in enumerate(nodes_data.items())
        )
        return ScopePlan(
            path=path, title=str(fragment.get("title", "")), file=doc.source, pointer=pointer,
            depth=depth, nodes=nodes, edges=tuple(edges), order=order, groups=groups,
            entrypoints=entrypoints,
            unreachable=tuple(n for n in nodes_data if n not in reachable),
            worst_case=sum(n.worst_case for n in nodes),
        )

    def node(self, node_id: str, node: Mapping[str, Any], *, doc: _Doc, scope_path: str,
             pointer: str, depth: int, defaults: Mapping[str, Any] | None, index: int,
             rank: int, group: int, reachable: bool) -> NodePlan:
        eff = effective_node(node, defaults)
        kind = str(eff.get("type", "task"))
        qualified = f"{scope_path}.{node_id}" if scope_path else node_id
        spec = node_spec(node_id, eff)
        attempts = spec.attempts
        decision = mapping_of(eff.get("decision"))
        calls_model = kind == "task" or (kind == "decision"
                                         and decision.get("evaluator", "agent") == "agent")
        intelligence = mapping_of(eff.get("intelligence"))
        tier = intelligence.get("tier") or ("standard" if calls_model else None)
        if kind == "gate":
            tier = None
        if calls_model and tier:
            self.tiers[tier] = self.tiers.get(tier, 0) + 1
        criteria = _criteria(eff.get("success"))
        self._collect_human(eff, kind, qualified, pointer, doc, criteria)
        self._node_features(eff, kind, pointer, doc)
        self._provider_keys(eff, qualified, pointer, doc)
        success = mapping_of(eff.get("success"))

        multiplier, child_label, child = None, None, None
        body_cost = 1
        if kind in _CONTAINERS or kind == "subgraph":
            multiplier, child_label, child = self._child(
                eff, kind, node_id, doc=doc, path=qualified, pointer=pointer, depth=depth + 1)
            body_cost = 1 + (multiplier or 1) * (child.worst_case if child else 0)
        escalation = spec.failure.escalation
        return NodePlan(
            id=node_id, qualified=qualified, type=kind, title=str(eff.get("title", "")),
            pointer=pointer, index=index, rank=rank, group=group, reachable=reachable,
            join=str(eff.get("join", "all")), tier=tier, calls_model=calls_model,
            attempts=attempts, worst_case=attempts * body_cost, effective=eff,
            criteria=criteria, success_mode=success.get("mode", "all") if criteria else None,
            when=eff.get("when"), fallback=spec.failure.strategies,
            escalation=str(escalation.get("to")) if escalation else None,
            on_exhausted=spec.failure.on_exhausted,
            compensation=spec.failure.compensation, multiplier=multiplier,
            child_label=child_label, child=child,
            estimate=dict(eff["estimate"]) if isinstance(eff.get("estimate"), Mapping) else {},
        )

    def _child(self, eff: Mapping[str, Any], kind: str, node_id: str, *, doc: _Doc, path: str,
               pointer: str, depth: int) -> tuple[int | None, str | None, ScopePlan | None]:
        block = mapping_of(eff.get(kind))
        multiplier = None
        if kind == "loop":
            multiplier = int(block.get("max_iterations", 1))
        elif kind == "map":
            multiplier = int(block.get("max_items", 1))
        if isinstance(block.get("body"), Mapping):
            label = "body"
            child = self._fragment(block["body"], doc, path, f"{pointer}/{kind}/body", depth,
                                   key=None)
        elif isinstance(block.get("inline"), Mapping):
            label = "inline"
            child = self._fragment(block["inline"], doc, path, f"{pointer}/{kind}/inline",
                                   depth, key=None)
        elif isinstance(block.get("use"), str):
            name = block["use"]
            label = f"use {name}"
            fragment = (doc.data.get("subgraphs") or {}).get(name)
            child = None
            if isinstance(fragment, Mapping):
                child = self._fragment(fragment, doc, path, f"/subgraphs/{escape(name)}", depth,
                                       key=("use", doc.source, name))
        elif isinstance(block.get("ref"), Mapping):
            label = f"ref {block['ref'].get('uri', '')}"
            child = self._ref(block["ref"], doc, path, f"{pointer}/subgraph/ref", depth)
        else:
            return multiplier, None, None
        return multiplier, label, child

    def _fragment(self, fragment: Mapping[str, Any], doc: _Doc, path: str, pointer: str,
                  depth: int, *, key: tuple[str, str | None, str] | None) -> ScopePlan | None:
        if key is not None and key in self.active:
            self.notices.append(Notice(
                code=NOTICE_RECURSION, pointer=pointer, file=self._file(doc),
                message=f"fragment {key[2]!r} uses itself; the repetition is not planned"))
            return None
        if key is not None:
            self.active.append(key)
        try:
            # A fragment's own defaults apply inside it; the root's never do (AGS §6.3).
            return self.scope(fragment, doc=doc, path=path, pointer=pointer, depth=depth,
                              defaults=fragment.get("defaults"))
        finally:
            if key is not None:
                self.active.pop()

    def _ref(self, ref: Mapping[str, Any], doc: _Doc, path: str, pointer: str,
             depth: int) -> ScopePlan | None:
        uri = str(ref.get("uri", ""))

        def lower_bound(why: str) -> None:
            self.notices.append(Notice(
                code=NOTICE_REF, pointer=pointer, file=self._file(doc),
                message=f"subgraph {uri!r} was not planned ({why}); the worst case counts "
                        "only its container, so it is a lower bound"))

        if self.load_ref is None:
            lower_bound("reference loading is off")
            return None
        try:
            loaded = self.load_ref(uri, doc.source)
        except ReinError as exc:
            lower_bound(exc.message)
            return None
        if loaded is None:
            lower_bound("it is not a local file")
            return None
        data, source = loaded
        if not isinstance(data, Mapping) or not isinstance(data.get("nodes"), Mapping):
            lower_bound("it is not a graph document")
            return None
        key = ("ref", str(Path(source).resolve()), "")
        if key in self.active or (doc.source and _same_file(doc.source, source)):
            self.notices.append(Notice(
                code=NOTICE_RECURSION, pointer=pointer, file=self._file(doc),
                message=f"document {uri!r} references itself; the repetition is not planned"))
            return None
        self._check_pin(ref, data, uri, pointer, doc)
        child_doc = _Doc(data=data, source=source, level=_declared_level(data))
        self.levels.setdefault(source, child_doc.level)
        self.active.append(key)
        try:
            return self.scope(data, doc=child_doc, path=path, pointer="", depth=depth,
                              defaults=data.get("defaults"))
        finally:
            self.active.pop()

    def _check_pin(self, ref: Mapping[str, Any], data: Any, uri: str, pointer: str,
                   doc: _Doc) -> None:
        integrity, expected = ref.get("integrity"), ref.get("expected_id")
        if integrity and ags_digest(data) != integrity:
            self.notices.append(Notice(
                code=NOTICE_INTEGRITY, pointer=pointer, file=self._file(doc),
                message=f"{uri!r} has digest {ags_digest(data)}, not the pinned {integrity}; "
                        "a run refuses it (RT051)"))
        if expected and data.get("id") != expected:
            self.notices.append(Notice(
                code=NOTICE_INTEGRITY, pointer=pointer, file=self._file(doc),
                message=f"{uri!r} has id {data.get('id')!r}, not the expected {expected!r}; "
                        "a run refuses it (RT052)"))

    def _collect_human(self, eff: Mapping[str, Any], kind: str, qualified: str, pointer: str,
                       doc: _Doc, criteria: tuple[CriterionPlan, ...]) -> None:
        if kind == "gate" and isinstance(eff.get("gate"), Mapping):
            gate = eff["gate"]
            self.gates.append(GatePlan(node=qualified, kind="gate", mode=str(gate.get("mode")),
                                       roles=tuple(gate.get("roles") or ()), pointer=pointer))
        for i, h in enumerate(eff.get("human") or []):
            if not isinstance(h, Mapping):
                continue
            self.gates.append(GatePlan(
                node=qualified, kind="checkpoint", mode=str(h.get("mode")), at=h.get("at"),
                id=h.get("id"), roles=tuple(h.get("roles") or ()),
                required=bool(h.get("required", True)), pointer=f"{pointer}/human/{i}"))
            if h.get("at") not in _LEVEL_1_STAGES:
                self.feature(doc, f"{h.get('at')} checkpoint", 2, f"{pointer}/human/{i}")
        for c in criteria:
            if c.kind == "human":
                self.gates.append(GatePlan(node=qualified, kind="criterion", mode="approve",
                                           id=c.id, required=c.severity == "required",
                                           pointer=f"{pointer}/success"))

    def _provider_keys(self, eff: Mapping[str, Any], qualified: str, pointer: str,
                       doc: _Doc) -> None:
        req = mapping_of(eff.get("requirements"))
        names = sequence_of(req.get("environment"))
        keys = [n for n in names if isinstance(n, str) and is_key_variable(n, self.key_variables)]
        if keys:
            self.notices.append(key_notice(qualified, keys, f"{pointer}/requirements/environment",
                                           self._file(doc)))

    def _node_features(self, eff: Mapping[str, Any], kind: str, pointer: str,
                       doc: _Doc) -> None:
        if kind == "decision":
            self.feature(doc, "decision node", 2, pointer)
        elif kind in ("loop", "map", "subgraph"):
            self.feature(doc, f"{kind} node", 3, pointer)
        if "when" in eff:
            self.feature(doc, "node when", 2, f"{pointer}/when")
        if eff.get("join", "all") != "all":
            self.feature(doc, f"join {eff['join']}", 2, f"{pointer}/join")
        for name, spec in (eff.get("inputs") or {}).items():
            if isinstance(spec, Mapping) and "template" in spec:
                self.feature(doc, "input template", 2, f"{pointer}/inputs/{escape(name)}")
        failure = mapping_of(eff.get("failure"))
        for block, level in (("fallback", 2), ("escalation", 2), ("compensation", 3)):
            if failure.get(block):
                self.feature(doc, f"failure {block}", level, f"{pointer}/failure/{block}")
        success = mapping_of(eff.get("success"))
        for i, c in enumerate(success.get("criteria") or []):
            if isinstance(c, Mapping) and c.get("kind") in _CRITERION_LEVEL:
                self.feature(doc, f"{c['kind']} criterion", _CRITERION_LEVEL[c["kind"]],
                             f"{pointer}/success/criteria/{i}")


def _declared_level(data: Mapping[str, Any]) -> int:
    level = data.get("requires_conformance", 1)
    return level if isinstance(level, int) and not isinstance(level, bool) else 1


def _same_file(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def _reachable(entrypoints: Iterable[str], edges: Iterable[EdgePlan]) -> set[str]:
    outgoing: dict[str, list[str]] = {}
    for e in edges:
        outgoing.setdefault(e.source, []).append(e.target)
    seen: set[str] = set()
    stack = list(entrypoints)
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            stack.extend(outgoing.get(n, ()))
    return seen


def _criteria(success: Any) -> tuple[CriterionPlan, ...]:
    if not isinstance(success, Mapping):
        return ()
    return tuple(
        CriterionPlan(id=str(c.get("id", "")), kind=str(c.get("kind", "")),
                      severity=str(c.get("severity", "required")),
                      description=str(c.get("description", "")).strip())
        for c in success.get("criteria") or [] if isinstance(c, Mapping)
    )


def _projected(scope: ScopePlan) -> tuple[float, int]:
    """Sum of ``estimate`` over a scope; a container's own estimate stands for its body.

    A projection, not a bound: every conditional branch counts, loop and map bodies once.
    """
    cost, tokens = 0.0, 0
    for n in scope.nodes:
        child_cost, child_tokens = _projected(n.child) if n.child else (0.0, 0)
        cost += float(n.estimate.get("cost_usd", child_cost))
        tokens += int(n.estimate.get("tokens", child_tokens))
    return cost, tokens


__all__ = [
    "MERGED_BLOCKS", "NOTICE_COST", "NOTICE_DEPTH", "NOTICE_INTEGRITY", "NOTICE_LEVEL",
    "NOTICE_PROVIDER_KEY", "NOTICE_RECURSION", "NOTICE_REF", "NOTICE_TOKENS",
    "NOTICE_WORST_CASE", "RefLoader", "build_plan", "default_ref_loader", "effective_edges",
    "effective_node", "plan_path", "topological_order",
]
