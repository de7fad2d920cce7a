"""Layer 3: AGX expressions and templates, names, scopes and dataflow (AG201–AG211), plus
the unread-output advisory AG904.

Every expression position (§16.1) is parsed (see :mod:`rein.formats.ags.expressions`) and
each reference is resolved against what is visible at that position:

* ``params`` of the scope (a fragment that declares params sees only those), the graph's
  ``context`` and ``attachments``, ``env`` names of the node's ``requirements.environment``;
* ``nodes.<id>`` of the same scope only (a fragment is sealed: AG202), ``self`` inside a
  node, ``loop`` inside a loop body, the map's ``as``/``index_as`` inside a map body,
  ``outputs`` at graph or fragment level and in ``subgraph.outputs_from``;
* ``secrets`` never (AG205).

Dataflow (AG201): a node may read ``nodes.X`` — and ``output("X", "name")``,
``succeeded("X")`` … with literal arguments — only when X is a transitive predecessor in the
effective edge set. An edge's ``when`` is checked as an expression of the edge's source, so
it may read that source.

Pointers are built only for findings: positions carry their JSON Pointer as a base plus the
tokens below it.
"""

from __future__ import annotations

import re
from typing import Any

from rein.core.frozen import Frozen
from rein.formats.ags.expressions import Reads, expression_reads, template_reads
from rein.formats.ags.report import Collector, near
from rein.formats.ags.scopes import Model, Scope, declared_outputs, dict_of, list_of, node_type
from rein.formats.ags.topology import Topology
from rein.formats.agx.errors import AgxSyntaxError
from rein.formats.pointers import escape

GRAPH_FIELDS = frozenset({"id", "title", "objective", "version", "description"})
NODE_FIELDS = frozenset({"status", "outputs", "attempts", "duration_seconds", "decision"})
SELF_FIELDS = frozenset({"id", "attempt", "inputs", "outputs"})
LOOP_FIELDS = frozenset({"index", "iteration", "previous"})
_STATE_FUNCTIONS = frozenset({"succeeded", "failed", "skipped"})
_OUTPUT_KINDS = frozenset({"artifact_present", "json_schema", "regex"})
# A whole template that is one dotted name under a root was almost surely meant as an
# expression (``template: nodes.a.outputs.b`` renders that text literally).
_BARE_REFERENCE = re.compile(
    r"\s*(?:nodes|params|context|attachments|self|loop|outputs|env|graph|secrets)"
    r"(?:\.[A-Za-z_][A-Za-z0-9_]*)+\s*")

Tokens = tuple[str | int, ...]


class Position(Frozen):
    """What an expression may see, and the pointer that its tokens hang from."""

    scope: Scope
    node: str | None  # the node whose expression it is (None: graph or fragment level)
    base: str  # JSON Pointer of the node (or scope)
    loop_ok: bool = False  # a loop's condition and collect see ``loop``
    child_outputs: bool = False  # subgraph.outputs_from reads the child's outputs
    graph_level: bool = False  # graph/fragment outputs and success read ``outputs``

    def pointer(self, tokens: Tokens) -> str:
        return self.base + "".join("/" + escape(str(t)) for t in tokens)


class Semantics:
    """Checks every expression of a document once; remembers which outputs are read."""

    def __init__(self, model: Model, topologies: dict[str, Topology], out: Collector) -> None:
        self.model = model
        self.topologies = topologies
        self.out = out
        self.reads: set[tuple[str, str, str]] = set()  # (scope pointer, node id, output)
        self._declared: dict[int, frozenset[str]] = {}  # id(node) → declared outputs

    def declared(self, node: dict[str, Any]) -> frozenset[str]:
        """:func:`declared_outputs`, computed once per node."""
        key = id(node)
        hit = self._declared.get(key)
        if hit is None:
            hit = self._declared[key] = declared_outputs(node)
        return hit

    def _add(self, code: str, where: Position, tokens: Tokens, message: str,
             hint: str | None = None) -> None:
        self.out.add(code, where.pointer(tokens), message, hint=hint)

    # ------------------------------------------------------------------ walking positions

    def run(self) -> None:
        for scope in self.model.scopes:
            for node_id, node in scope.nodes.items():
                self._node(scope, node_id, node)
            for i, edge in scope.edges():
                anchor = edge.get("from")
                if "when" in edge:
                    at = Position(scope=scope, node=anchor if isinstance(anchor, str) else None,
                                  base=f"{scope.pointer}/edges/{i}")
                    self.expression(edge["when"], at, ("when",))
            level = Position(scope=scope, node=None, base=scope.pointer, graph_level=True)
            for name, spec in dict_of(scope.data.get("outputs")).items():
                if isinstance(spec, dict) and "from" in spec:
                    self.expression(spec["from"], level, ("outputs", name, "from"))
            self._success(scope.data.get("success"), level, ("success",), None)
        self._unread_outputs()

    def _node(self, scope: Scope, node_id: str, node: dict[str, Any]) -> None:
        here = Position(scope=scope, node=node_id, base=scope.node_pointer(node_id))
        expression, template = self.expression, self.template
        for name, spec in dict_of(node.get("inputs")).items():
            if not isinstance(spec, dict):
                continue
            if "from" in spec:
                expression(spec["from"], here, ("inputs", name, "from"))
            if "template" in spec:
                template(spec["template"], here, ("inputs", name, "template"))
        if "when" in node:
            expression(node["when"], here, ("when",))
        if "instructions" in node:
            template(node["instructions"], here, ("instructions",))
        if "success" in node:
            self._success(node["success"], here, ("success",), node)
        for i, checkpoint in enumerate(list_of(node.get("human"))):
            if isinstance(checkpoint, dict):
                if "when" in checkpoint:
                    expression(checkpoint["when"], here, ("human", i, "when"))
                if "prompt" in checkpoint:
                    template(checkpoint["prompt"], here, ("human", i, "prompt"))
        if "failure" in node:
            failure = dict_of(node["failure"])
            for i, step in enumerate(list_of(failure.get("fallback"))):
                if isinstance(step, dict) and "when" in step:
                    expression(step["when"], here, ("failure", "fallback", i, "when"))
            escalation = dict_of(failure.get("escalation"))
            if "message" in escalation:
                template(escalation["message"], here, ("failure", "escalation", "message"))
        kind = node_type(node)
        if kind != "task":
            self._block(scope, node_id, kind, dict_of(node.get(kind)), here)

    def _block(self, scope: Scope, node_id: str, kind: str, block: dict[str, Any],
               here: Position) -> None:
        expression, template = self.expression, self.template
        if kind == "gate":
            if "prompt" in block:
                template(block["prompt"], here, ("gate", "prompt"))
            for i, expr in enumerate(list_of(block.get("present"))):
                expression(expr, here, ("gate", "present", i))
        elif kind == "decision":
            if "question" in block:
                template(block["question"], here, ("decision", "question"))
            for i, branch in enumerate(list_of(block.get("branches"))):
                if isinstance(branch, dict) and "when" in branch:
                    expression(branch["when"], here, ("decision", "branches", i, "when"))
        elif kind in ("loop", "map"):
            body = self.model.body_of(scope, node_id, kind) or scope
            inside = Position(scope=body, node=None, base=here.base, loop_ok=True)
            if kind == "loop" and "condition" in block:
                expression(block["condition"], inside, ("loop", "condition"))
            if kind == "map" and "over" in block:
                expression(block["over"], here, ("map", "over"))
            for name, expr in dict_of(block.get("collect")).items():
                expression(expr, inside, (kind, "collect", name))
            if kind == "loop" and body is not scope:
                self._carry(body, block, here)
        elif kind == "subgraph":
            for name, expr in dict_of(block.get("params")).items():
                expression(expr, here, ("subgraph", "params", name))
            child = Position(scope=scope, node=node_id, base=here.base, child_outputs=True)
            for name, expr in dict_of(block.get("outputs_from")).items():
                expression(expr, child, ("subgraph", "outputs_from", name))

    def _success(self, success: Any, where: Position, tokens: Tokens,
                 node: dict[str, Any] | None) -> None:
        if not isinstance(success, dict):
            return
        for i, criterion in enumerate(list_of(success.get("criteria"))):
            if not isinstance(criterion, dict):
                continue
            at = (*tokens, "criteria", i)
            for key in ("expr", "target"):
                if key in criterion:
                    self.expression(criterion[key], where, (*at, key))
            for j, expr in enumerate(list_of(criterion.get("inputs"))):
                self.expression(expr, where, (*at, "inputs", j))
            for key in ("rubric", "prompt"):
                if key in criterion:
                    self.template(criterion[key], where, (*at, key))
            output = criterion.get("output")
            if node is not None and where.node is not None and isinstance(output, str) \
                    and criterion.get("kind") in _OUTPUT_KINDS:
                if output in self.declared(node):
                    self.reads.add((where.scope.pointer, where.node, output))
                else:
                    self._add("AG206", where, (*at, "output"),
                              f"criterion {criterion.get('id')!r} checks output {output!r}, "
                              f"which node {where.node!r} does not declare")

    def _carry(self, body: Scope, block: dict[str, Any], here: Position) -> None:
        """``loop.carry`` maps a body output onto a body param for the next iteration."""
        producers: dict[str, list[str]] = {}
        for node_id, node in body.nodes.items():
            for name in self.declared(node):
                producers.setdefault(name, []).append(node_id)
        for source, target in dict_of(block.get("carry")).items():
            at = ("loop", "carry", source)
            if source not in producers:
                self._add("AG206", here, at, f"carry source {source!r} is not an output of "
                          "any node in the loop body")
            for node_id in producers.get(source, ()):
                self.reads.add((body.pointer, node_id, source))
            if isinstance(target, str) and target not in dict_of(body.data.get("params")):
                self._add("AG203", here, at, f"carry target {target!r} is not a param of the "
                          "loop body", hint="declare it under the body's params")

    # ------------------------------------------------------------------ one expression

    def expression(self, text: Any, where: Position, tokens: Tokens) -> None:
        """Check an expression position (the whole string is one expression)."""
        if not isinstance(text, str) or not text.strip():
            return
        if "${{" in text:
            self._add("AG211", where, tokens,
                      f"{_clip(text)} uses ${{{{ }}}} in an expression position")
            return
        try:
            reads = expression_reads(text)
        except AgxSyntaxError as exc:
            self._add("AG204", where, tokens, f"invalid expression {_clip(text)}: "
                      f"{exc.message}", hint=exc.hint)
            return
        self._resolve(reads, where, tokens)

    def template(self, text: Any, where: Position, tokens: Tokens) -> None:
        """Check a template position (literal text with ``${{ }}`` interpolations)."""
        if not isinstance(text, str):
            return
        try:
            reads = template_reads(text)
        except AgxSyntaxError as exc:
            self._add("AG204", where, tokens, f"invalid template: {exc.message}", hint=exc.hint)
            return
        if not reads.refs and not reads.calls and _BARE_REFERENCE.fullmatch(text):
            self._add("AG211", where, tokens,
                      f"the template {text.strip()!r} is a bare reference, which renders as "
                      "that literal text",
                      hint="wrap it as ${{ " + text.strip() + " }} (or use from: for inputs)")
        self._resolve(reads, where, tokens)

    def _resolve(self, reads: Reads, where: Position, tokens: Tokens) -> None:
        for name, args in reads.calls:
            if name == "output" and len(args) == 2 and all(isinstance(a, str) for a in args):
                self.reference(("nodes", str(args[0]), "outputs", str(args[1])), where, tokens)
            elif name in _STATE_FUNCTIONS and len(args) == 1 and isinstance(args[0], str):
                self.reference(("nodes", args[0]), where, tokens)
        for path in reads.refs:
            self.reference(path, where, tokens)

    # ------------------------------------------------------------------ one reference

    def reference(self, parts: tuple[str, ...], where: Position, tokens: Tokens) -> None:
        """Resolve one dotted reference at ``where``; report what does not resolve."""
        root, rest = parts[0], parts[1:]
        scope = where.scope
        if root == "nodes":
            self._node_ref(parts, where, tokens)
        elif root == "params":
            if rest and rest[0] not in scope.params:
                self._add("AG203", where, tokens, f"{_dotted(parts)}: param {rest[0]!r} is "
                          "not declared" + ("" if scope.is_root else " by this fragment"),
                          hint=near("AG203", rest[0], scope.params))
        elif root in scope.bindings:
            return
        elif root == "secrets":
            self._add("AG205", where, tokens, f"{_dotted(parts)}: expressions must not read "
                      "secrets")
        elif root == "graph":
            if rest and rest[0] not in GRAPH_FIELDS:
                self._add("AG203", where, tokens, f"{_dotted(parts)}: graph has no field "
                          f"{rest[0]!r} (only id, title, objective, version, description)")
        elif root == "context":
            if rest and rest[0] not in self.model.context:
                self._add("AG203", where, tokens,
                          f"{_dotted(parts)}: context has no key {rest[0]!r}",
                          hint=near("AG203", rest[0], self.model.context))
        elif root == "attachments":
            if rest and rest[0] not in self.model.attachments:
                self._add("AG203", where, tokens,
                          f"{_dotted(parts)}: no attachment is named {rest[0]!r}")
        elif root == "env":
            self._env(parts, where, tokens)
        elif root == "outputs":
            self._outputs(parts, where, tokens)
        elif root == "loop":
            if not where.loop_ok:
                self._add("AG203", where, tokens,
                          f"{_dotted(parts)}: loop is only visible inside a loop body")
            elif rest and rest[0] not in LOOP_FIELDS:
                self._add("AG203", where, tokens, f"{_dotted(parts)}: loop has no field "
                          f"{rest[0]!r} (only index, iteration, previous)")
        elif root == "self":
            self._self(parts, where, tokens)
        else:
            self._add("AG203", where, tokens, f"{_dotted(parts)}: {root!r} is not a name "
                      "visible here")

    def _env(self, parts: tuple[str, ...], where: Position, tokens: Tokens) -> None:
        node = where.scope.nodes.get(where.node) if where.node is not None else None
        env = list_of(dict_of(node.get("requirements")).get("environment")) if node else []
        if len(parts) > 1 and parts[1] not in env:
            self._add("AG203", where, tokens, f"{_dotted(parts)}: {parts[1]!r} is not listed "
                      "in the node's requirements.environment")

    def _outputs(self, parts: tuple[str, ...], where: Position, tokens: Tokens) -> None:
        if where.child_outputs:
            return  # the child's outputs are known only once it is resolved
        if not where.graph_level:
            node = where.scope.nodes.get(where.node) if where.node is not None else None
            hint = None
            if node is not None:  # a node's own outputs are ``self.outputs.<name>``
                own = "self." + _dotted(parts) if len(parts) > 1 else "self.outputs.<name>"
                hint = f"within a node, its own outputs are read as {own}"
            self._add("AG203", where, tokens, f"{_dotted(parts)}: outputs is only visible in "
                      "graph outputs and success, and in subgraph.outputs_from", hint=hint)
        elif len(parts) > 1 and parts[1] not in dict_of(where.scope.data.get("outputs")):
            self._add("AG203", where, tokens,
                      f"{_dotted(parts)}: no graph output is named {parts[1]!r}")

    def _self(self, parts: tuple[str, ...], where: Position, tokens: Tokens) -> None:
        node = where.scope.nodes.get(where.node) if where.node is not None else None
        if node is None:
            self._add("AG203", where, tokens,
                      f"{_dotted(parts)}: self is only visible within a node")
        elif len(parts) > 2 and parts[1] == "outputs":
            if parts[2] in self.declared(node):
                self.reads.add((where.scope.pointer, str(where.node), parts[2]))
            else:
                self._add("AG206", where, tokens,
                          f"{_dotted(parts)}: the node does not declare output {parts[2]!r}")
        elif len(parts) > 2 and parts[1] == "inputs":
            if parts[2] not in dict_of(node.get("inputs")):
                self._add("AG203", where, tokens,
                          f"{_dotted(parts)}: the node does not declare input {parts[2]!r}")
        elif len(parts) > 1 and parts[1] not in SELF_FIELDS:
            self._add("AG203", where, tokens, f"{_dotted(parts)}: self has no field "
                      f"{parts[1]!r} (only id, attempt, inputs, outputs)")

    def _node_ref(self, parts: tuple[str, ...], where: Position, tokens: Tokens) -> None:
        if len(parts) < 2:
            return
        scope, node_id = where.scope, where.node
        target = parts[1]
        if target == "self":
            if node_id is None:
                self._add("AG203", where, tokens,
                          f"{_dotted(parts)}: nodes.self is only visible within a node")
                return
            target = node_id
        if target not in scope.nodes:
            if node_id is not None and not scope.is_root:
                self._add("AG202", where, tokens, f"{_dotted(parts)}: node {target!r} is "
                          "outside this fragment; fragments are sealed",
                          hint="pass the value in through the fragment's params")
            else:
                self._add("AG203", where, tokens,
                          f"{_dotted(parts)}: there is no node {target!r} in this scope",
                          hint=near("AG203", target, scope.nodes))
            return
        if len(parts) > 3 and parts[2] == "outputs":
            if parts[3] in self.declared(scope.nodes[target]):
                self.reads.add((scope.pointer, target, parts[3]))
            else:
                self._add("AG206", where, tokens, f"{_dotted(parts)}: node {target!r} does "
                          f"not declare output {parts[3]!r}")
        elif len(parts) > 2 and parts[2] not in NODE_FIELDS:
            self._add("AG203", where, tokens, f"{_dotted(parts)}: a node has no field "
                      f"{parts[2]!r} (only status, outputs, attempts, duration_seconds, "
                      "decision)")
        if node_id is None or target == node_id or node_id not in scope.nodes:
            return
        if not self.topologies[scope.pointer].is_predecessor(target, node_id):
            self._add("AG201", where, tokens, f"{_dotted(parts)}: node {node_id!r} reads "
                      f"{target!r}, which does not run before it (no path {target} -> "
                      f"{node_id} in the effective edges)",
                      hint=f"add {target!r} to depends_on of {node_id!r} (or an edge "
                      f"{target} -> {node_id}), or stop reading it")

    # ------------------------------------------------------------------ AG904

    def _unread_outputs(self) -> None:
        reads = self.reads
        for scope in self.model.scopes:
            for node_id, node in scope.nodes.items():
                for name in dict_of(node.get("outputs")):
                    if (scope.pointer, node_id, name) not in reads:
                        self.out.add("AG904", scope.node_pointer(node_id, "outputs", name),
                                     f"output {name!r} of node {node_id!r} is never read")


def _dotted(parts: tuple[str, ...]) -> str:
    return ".".join(parts)


def _clip(text: str, limit: int = 80) -> str:
    shown = text if len(text) <= limit else text[: limit - 1] + "…"
    return repr(shown)
