"""The scopes of a graph: the root, every inline loop/map/subgraph body, every named fragment.

Node ids, edges and entrypoints are local to a scope (§8); a loop, map or subgraph node is
one vertex in its parent scope and owns the scope of its body. Later layers walk this model
instead of the raw document.

The model tolerates documents that failed the schema: anything of the wrong type is left
out (layer 1 has already reported it), so that the referential and semantic layers can
still run on the parts that are well formed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rein.formats.ags.report import Collector
from rein.formats.pointers import escape

# Appendix B: namespace roots that no user-defined binding may shadow.
RESERVED_ROOTS = frozenset({
    "graph", "params", "context", "attachments", "nodes", "self", "loop", "outputs", "env",
    "secrets", "item",
})
CONTAINER_TYPES = ("loop", "map", "subgraph")


class Scope:
    """One node namespace. Built once by :func:`build_scopes`; ``bindings`` of a named
    fragment is filled in after every use of the fragment has been seen."""

    __slots__ = ("bindings", "data", "kind", "name", "nodes", "owner", "params", "parent",
                 "pointer")
    pointer: str  # JSON Pointer of the fragment ("" for the root)
    kind: str  # "root", "loop", "map", "subgraph" (inline) or "fragment" (named)
    name: str | None  # the fragment's name under ``subgraphs``
    data: dict[str, Any]  # the graph or fragment object
    nodes: dict[str, dict[str, Any]]  # declaration order kept
    params: frozenset[str]  # names readable as params.<name>
    bindings: frozenset[str]  # extra roots: loop, map as / index_as
    parent: Scope | None
    owner: str | None  # id of the node in ``parent`` that owns this scope

    def __init__(
        self, *,
        pointer: str,
        kind: str,
        name: str | None,
        data: dict[str, Any],
        nodes: dict[str, dict[str, Any]],
        params: frozenset[str],
        bindings: frozenset[str] = frozenset(),
        parent: Scope | None = None,
        owner: str | None = None,
    ) -> None:
        self.pointer = pointer
        self.kind = kind
        self.name = name
        self.data = data
        self.nodes = nodes
        self.params = params
        self.bindings = bindings
        self.parent = parent
        self.owner = owner

    @property
    def is_root(self) -> bool:
        return self.kind == "root"

    def node_pointer(self, node_id: str, *rest: str | int) -> str:
        tail = "".join("/" + escape(str(t)) for t in rest)
        return f"{self.pointer}/nodes/{escape(node_id)}{tail}"

    def edges(self) -> Iterator[tuple[int, dict[str, Any]]]:
        raw = self.data.get("edges")
        if isinstance(raw, list):
            for index, edge in enumerate(raw):
                if isinstance(edge, dict):
                    yield index, edge


class Model:
    """All scopes of one document, plus the document-wide names expressions may read."""

    __slots__ = ("attachments", "by_pointer", "context", "doc", "fragments", "graph_params",
                 "scopes", "uses")
    doc: dict[str, Any]
    scopes: list[Scope]
    by_pointer: dict[str, Scope]
    fragments: dict[str, Scope]  # named fragments, by name
    graph_params: frozenset[str]
    context: frozenset[str]
    attachments: frozenset[str]
    uses: dict[str, list[tuple[Scope, str, str]]]
    # fragment name → [(scope, node id, "loop"|"map"|"subgraph")] for every ``use``

    def __init__(
        self, *,
        doc: dict[str, Any],
        scopes: list[Scope],
        by_pointer: dict[str, Scope],
        fragments: dict[str, Scope],
        graph_params: frozenset[str],
        context: frozenset[str],
        attachments: frozenset[str],
        uses: dict[str, list[tuple[Scope, str, str]]] | None = None,
    ) -> None:
        self.doc = doc
        self.scopes = scopes
        self.by_pointer = by_pointer
        self.fragments = fragments
        self.graph_params = graph_params
        self.context = context
        self.attachments = attachments
        self.uses = {} if uses is None else uses

    def body_of(self, scope: Scope, node_id: str, block: str) -> Scope | None:
        """The scope a loop/map/subgraph node runs: its inline body or its named fragment."""
        node = scope.nodes.get(node_id, {})
        spec = node.get(block)
        if not isinstance(spec, dict):
            return None
        key = "inline" if block == "subgraph" else "body"
        if key in spec:
            return self.by_pointer.get(scope.node_pointer(node_id, block, key))
        use = spec.get("use")
        return self.fragments.get(use) if isinstance(use, str) else None


def dict_of(value: Any) -> dict[str, Any]:
    """``value`` when it is an object, else an empty one (the schema reported the rest)."""
    return value if isinstance(value, dict) else {}


def list_of(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def node_type(node: dict[str, Any]) -> str:
    t = node.get("type", "task")
    return t if isinstance(t, str) else "task"


def _nodes(fragment: dict[str, Any]) -> dict[str, dict[str, Any]]:
    raw = fragment.get("nodes")
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if isinstance(v, dict)}


def _names(value: Any) -> frozenset[str]:
    return frozenset(k for k in value) if isinstance(value, dict) else frozenset()


def build_scopes(doc: dict[str, Any], out: Collector) -> Model:
    """Build every scope, and report reserved map bindings (AG117) on the way."""
    graph_params = _names(doc.get("params"))
    attachments = frozenset(
        a["name"] for a in list_of(doc.get("attachments"))
        if isinstance(a, dict) and isinstance(a.get("name"), str)
    )
    model = Model(doc=doc, scopes=[], by_pointer={}, fragments={}, graph_params=graph_params,
                  context=_names(doc.get("context")), attachments=attachments)
    root = Scope(pointer="", kind="root", name=None, data=doc, nodes=_nodes(doc),
                 params=graph_params)
    _add(model, root, out)
    for name, fragment in dict_of(doc.get("subgraphs")).items():
        if isinstance(fragment, dict):
            scope = Scope(pointer="/subgraphs/" + escape(name), kind="fragment", name=name,
                          data=fragment, nodes=_nodes(fragment),
                          params=_names(fragment.get("params")) or graph_params)
            model.fragments[name] = scope
            _add(model, scope, out)
    # A named fragment sees the extra roots that every one of its users binds.
    for name, scope in model.fragments.items():
        bound: frozenset[str] | None = None
        for user_scope, node_id, block in model.uses.get(name, []):
            names = _container_bindings(user_scope.nodes[node_id], block)
            bound = names if bound is None else bound & names
        scope.bindings = bound or frozenset()
    return model


def _add(model: Model, scope: Scope, out: Collector) -> None:
    model.scopes.append(scope)
    model.by_pointer[scope.pointer] = scope
    for node_id, node in scope.nodes.items():
        kind = node_type(node)
        if kind not in CONTAINER_TYPES:
            continue
        block = node.get(kind)
        if not isinstance(block, dict):
            continue
        if kind == "map":
            _check_map_bindings(scope, node_id, block, out)
        use = block.get("use")
        if isinstance(use, str):
            model.uses.setdefault(use, []).append((scope, node_id, kind))
        key = "inline" if kind == "subgraph" else "body"
        body = block.get(key)
        if isinstance(body, dict):
            child = Scope(pointer=scope.node_pointer(node_id, kind, key), kind=kind, name=None,
                          data=body, nodes=_nodes(body),
                          params=_names(body.get("params")) or model.graph_params,
                          bindings=_container_bindings(node, kind), parent=scope,
                          owner=node_id)
            _add(model, child, out)


def _container_bindings(node: dict[str, Any], kind: str) -> frozenset[str]:
    if kind == "loop":
        return frozenset({"loop"})
    if kind == "map":
        block = dict_of(node.get("map"))
        names = {block.get("as"), block.get("index_as", "index")}
        return frozenset(n for n in names if isinstance(n, str))
    return frozenset()


def _check_map_bindings(scope: Scope, node_id: str, block: dict[str, Any],
                        out: Collector) -> None:
    """Appendix B: ``map.as``/``index_as`` must not shadow a namespace root (``item`` too,
    which the spec keeps for a future default). Reported as AG117, the catalogue's
    reserved-name rule."""
    for key in ("as", "index_as"):
        name = block.get(key)
        if isinstance(name, str) and name in RESERVED_ROOTS:
            out.add("AG117", scope.node_pointer(node_id, "map", key),
                    f"map.{key} of node {node_id!r} is {name!r}, a reserved namespace root; "
                    "expressions could not tell the item from the root",
                    hint="choose another binding name (for example the singular of what "
                    "the map iterates over)")


def declared_outputs(node: dict[str, Any]) -> frozenset[str]:
    """Output names a node exposes: its ``outputs`` plus the implicit ones (§7): ``decision``
    on decision and gate nodes, ``gate.collect``, ``loop.collect``, ``map.collect`` and
    ``subgraph.outputs_from`` keys."""
    outputs = node.get("outputs")
    kind = node.get("type", "task")
    if kind == "task" or kind not in _IMPLICIT_KEY:  # most nodes: no implicit outputs
        return frozenset(outputs) if isinstance(outputs, dict) else frozenset()
    names = set(outputs) if isinstance(outputs, dict) else set()
    if kind in ("decision", "gate"):
        names.add("decision")
    key = _IMPLICIT_KEY[kind]
    if key is not None:
        names.update(dict_of(dict_of(node.get(kind)).get(key)))
    return frozenset(names)


_IMPLICIT_KEY = {"decision": None, "gate": "collect", "loop": "collect", "map": "collect",
                 "subgraph": "outputs_from"}
