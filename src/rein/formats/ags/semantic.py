"""Layer 3: AGX expressions and templates, names, scopes and dataflow (AG201–AG211), plus
the unread-output advisory AG904.

Every expression position (§16.1) is parsed with :mod:`rein.formats.agx`; each reference is
resolved against what is visible at that position:

* ``params`` of the scope (a fragment that declares params sees only those), the graph's
  ``context`` and ``attachments``, ``env`` names of the node's ``requirements.environment``;
* ``nodes.<id>`` of the same scope only (a fragment is sealed: AG202), ``self`` inside a
  node, ``loop`` inside a loop body, the map's ``as``/``index_as`` inside a map body,
  ``outputs`` at graph or fragment level and in ``subgraph.outputs_from``;
* ``secrets`` never (AG205).

Dataflow (AG201): a node may read ``nodes.X`` — and ``output("X", "name")`` with literal
arguments — only when X is a transitive predecessor in the effective edge set. An edge's
``when`` is checked as an expression of the edge's source, so it may read that source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rein.formats.agx import (
    NOT_LITERAL,
    AgxSyntaxError,
    calls,
    has_interpolation,
    parse,
    parse_template,
    references,
)
from rein.formats.ags.report import Collector
from rein.formats.ags.scopes import Model, Scope, declared_outputs, dict_of, list_of, node_type
from rein.formats.ags.topology import Topology

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


@dataclass(frozen=True, kw_only=True, slots=True)
class Position:
    """Where an expression sits and what it may see."""

    scope: Scope
    node: str | None  # the node whose expression it is (None: graph or fragment level)
    pointer: str
    loop_ok: bool = False  # a loop's condition and collect see ``loop``
    child_outputs: bool = False  # subgraph.outputs_from reads the child's outputs
    graph_level: bool = False  # graph/fragment outputs and success read ``outputs``


class Semantics:
    """Checks every expression of a document once; remembers which outputs are read."""

    def __init__(self, model: Model, topologies: dict[str, Topology], out: Collector) -> None:
        self.model = model
        self.topologies = topologies
        self.out = out
        self.reads: set[tuple[str, str, str]] = set()  # (scope pointer, node id, output)

    # ------------------------------------------------------------------ walking positions

    def run(self) -> None:
        for scope in self.model.scopes:
            for node_id, node in scope.nodes.items():
                self._node(scope, node_id, node)
            for i, edge in scope.edges():
                anchor = edge.get("from")
                if "when" in edge:
                    self.expression(edge["when"], Position(
                        scope=scope, node=anchor if isinstance(anchor, str) else None,
                        pointer=f"{scope.pointer}/edges/{i}/when"))
            level = Position(scope=scope, node=None, pointer=scope.pointer, graph_level=True)
            for name, spec in dict_of(scope.data.get("outputs")).items():
                if isinstance(spec, dict) and "from" in spec:
                    self.expression(spec["from"], _at(level, "outputs", name, "from"))
            self._success(scope.data.get("success"), _at(level, "success"), None)
        self._unread_outputs()

    def _node(self, scope: Scope, node_id: str, node: dict[str, Any]) -> None:
        here = Position(scope=scope, node=node_id, pointer=scope.node_pointer(node_id))
        for name, spec in dict_of(node.get("inputs")).items():
            if not isinstance(spec, dict):
                continue
            if "from" in spec:
                self.expression(spec["from"], _at(here, "inputs", name, "from"))
            if "template" in spec:
                self.template(spec["template"], _at(here, "inputs", name, "template"))
        if "when" in node:
            self.expression(node["when"], _at(here, "when"))
        if "instructions" in node:
            self.template(node["instructions"], _at(here, "instructions"))
        self._success(node.get("success"), _at(here, "success"), node)
        for i, checkpoint in enumerate(list_of(node.get("human"))):
            if isinstance(checkpoint, dict):
                if "when" in checkpoint:
                    self.expression(checkpoint["when"], _at(here, "human", i, "when"))
                if "prompt" in checkpoint:
                    self.template(checkpoint["prompt"], _at(here, "human", i, "prompt"))
        failure = dict_of(node.get("failure"))
        for i, step in enumerate(list_of(failure.get("fallback"))):
            if isinstance(step, dict) and "when" in step:
                self.expression(step["when"], _at(here, "failure", "fallback", i, "when"))
        escalation = dict_of(failure.get("escalation"))
        if "message" in escalation:
            self.template(escalation["message"], _at(here, "failure", "escalation", "message"))
        kind = node_type(node)
        block = dict_of(node.get(kind))
        if kind == "gate":
            if "prompt" in block:
                self.template(block["prompt"], _at(here, "gate", "prompt"))
            for i, expr in enumerate(list_of(block.get("present"))):
                self.expression(expr, _at(here, "gate", "present", i))
        elif kind == "decision":
            if "question" in block:
                self.template(block["question"], _at(here, "decision", "question"))
            for i, branch in enumerate(list_of(block.get("branches"))):
                if isinstance(branch, dict) and "when" in branch:
                    self.expression(branch["when"], _at(here, "decision", "branches", i, "when"))
        elif kind in ("loop", "map"):
            body = self.model.body_of(scope, node_id, kind) or scope
            inside = Position(scope=body, node=None, pointer=here.pointer, loop_ok=True)
            if kind == "loop" and "condition" in block:
                self.expression(block["condition"], _at(inside, "loop", "condition"))
            if kind == "map" and "over" in block:
                self.expression(block["over"], _at(here, "map", "over"))
            for name, expr in dict_of(block.get("collect")).items():
                self.expression(expr, _at(inside, kind, "collect", name))
            if kind == "loop" and body is not scope:
                self._carry(body, block, _at(here, "loop", "carry"))
        elif kind == "subgraph":
            for name, expr in dict_of(block.get("params")).items():
                self.expression(expr, _at(here, "subgraph", "params", name))
            child = Position(scope=scope, node=node_id, pointer=here.pointer, child_outputs=True)
            for name, expr in dict_of(block.get("outputs_from")).items():
                self.expression(expr, _at(child, "subgraph", "outputs_from", name))

    def _success(self, success: Any, where: Position, node: dict[str, Any] | None) -> None:
        if not isinstance(success, dict):
            return
        for i, criterion in enumerate(list_of(success.get("criteria"))):
            if not isinstance(criterion, dict):
                continue
            at = _at(where, "criteria", i)
            for key in ("expr", "target"):
                if key in criterion:
                    self.expression(criterion[key], _at(at, key))
            for j, expr in enumerate(list_of(criterion.get("inputs"))):
                self.expression(expr, _at(at, "inputs", j))
            for key in ("rubric", "prompt"):
                if key in criterion:
                    self.template(criterion[key], _at(at, key))
            output = criterion.get("output")
            if node is not None and where.node is not None and isinstance(output, str) \
                    and criterion.get("kind") in _OUTPUT_KINDS:
                if output in declared_outputs(node):
                    self.reads.add((where.scope.pointer, where.node, output))
                else:
                    self.out.add("AG206", at.pointer + "/output",
                                 f"criterion {criterion.get('id')!r} checks output {output!r}, "
                                 f"which node {where.node!r} does not declare")

    def _carry(self, body: Scope, block: dict[str, Any], where: Position) -> None:
        """``loop.carry`` maps a body output onto a body param for the next iteration."""
        producers: dict[str, list[str]] = {}
        for node_id, node in body.nodes.items():
            for name in declared_outputs(node):
                producers.setdefault(name, []).append(node_id)
        for source, target in dict_of(block.get("carry")).items():
            at = where.pointer + "/" + source.replace("~", "~0").replace("/", "~1")
            if source not in producers:
                self.out.add("AG206", at, f"carry source {source!r} is not an output of any "
                             "node in the loop body")
            for node_id in producers.get(source, ()):
                self.reads.add((body.pointer, node_id, source))
            if isinstance(target, str) and target not in dict_of(body.data.get("params")):
                self.out.add("AG203", at, f"carry target {target!r} is not a param of the "
                             "loop body", hint="declare it under the body's params")

    # ------------------------------------------------------------------ one expression

    def expression(self, text: Any, where: Position) -> None:
        """Check an expression position (the whole string is one expression)."""
        if not isinstance(text, str) or not text.strip():
            return
        if has_interpolation(text):
            self.out.add("AG211", where.pointer,
                         f"{text!r} uses ${{{{ }}}} in an expression position")
            return
        try:
            expr = parse(text)
        except AgxSyntaxError as exc:
            self.out.add("AG204", where.pointer, f"invalid expression {text!r}: {exc.message}",
                         hint=exc.hint)
            return
        self._names(expr, where)

    def template(self, text: Any, where: Position) -> None:
        """Check a template position (literal text with ``${{ }}`` interpolations)."""
        if not isinstance(text, str):
            return
        try:
            template = parse_template(text)
        except AgxSyntaxError as exc:
            self.out.add("AG204", where.pointer, f"invalid template: {exc.message}",
                         hint=exc.hint)
            return
        parts = template.interpolations
        if not parts and _BARE_REFERENCE.fullmatch(text):
            self.out.add("AG211", where.pointer,
                         f"the template {text.strip()!r} is a bare reference, which renders as "
                         "that literal text",
                         hint="wrap it as ${{ " + text.strip() + " }} (or use from: for inputs)")
        for part in parts:
            self._names(part.expr, where)

    def _names(self, expr: Any, where: Position) -> None:
        for call in calls(expr):
            args = call.args
            literal = [a for a in args if a is not NOT_LITERAL and isinstance(a, str)]
            if call.name == "output" and len(args) == 2 and len(literal) == 2:
                self.reference(("nodes", args[0], "outputs", args[1]), where)
            elif call.name in _STATE_FUNCTIONS and len(args) == 1 and literal:
                self.reference(("nodes", args[0]), where)
        for ref in references(expr):
            self.reference(tuple(ref.path), where)

    # ------------------------------------------------------------------ one reference

    def reference(self, parts: tuple[str, ...], where: Position) -> None:  # noqa: C901
        """Resolve one dotted reference at ``where``; report what does not resolve."""
        root, rest = parts[0], parts[1:]
        scope, node_id = where.scope, where.node
        node = scope.nodes.get(node_id) if node_id is not None else None
        add = self.out.add
        shown = ".".join(parts)
        if root == "secrets":
            add("AG205", where.pointer, f"{shown}: expressions must not read secrets")
        elif root == "graph":
            if rest and rest[0] not in GRAPH_FIELDS:
                add("AG203", where.pointer, f"{shown}: graph has no field {rest[0]!r} (only "
                    "id, title, objective, version, description)")
        elif root == "params":
            if rest and rest[0] not in scope.params:
                add("AG203", where.pointer, f"{shown}: param {rest[0]!r} is not declared"
                    + ("" if scope.is_root else " by this fragment"))
        elif root == "context":
            if rest and rest[0] not in self.model.context:
                add("AG203", where.pointer, f"{shown}: context has no key {rest[0]!r}")
        elif root == "attachments":
            if rest and rest[0] not in self.model.attachments:
                add("AG203", where.pointer, f"{shown}: no attachment is named {rest[0]!r}")
        elif root == "env":
            env = list_of(dict_of(node.get("requirements")).get("environment")) if node else []
            if rest and rest[0] not in env:
                add("AG203", where.pointer, f"{shown}: {rest[0]!r} is not listed in the "
                    "node's requirements.environment")
        elif root == "outputs":
            self._outputs(parts, where)
        elif root == "loop":
            if not (where.loop_ok or "loop" in scope.bindings):
                add("AG203", where.pointer, f"{shown}: loop is only visible inside a loop body")
            elif rest and rest[0] not in LOOP_FIELDS:
                add("AG203", where.pointer, f"{shown}: loop has no field {rest[0]!r} (only "
                    "index, iteration, previous)")
        elif root == "self":
            self._self(parts, where, node)
        elif root == "nodes":
            self._node_ref(parts, where)
        elif root not in scope.bindings:
            add("AG203", where.pointer, f"{shown}: {root!r} is not a name visible here")

    def _outputs(self, parts: tuple[str, ...], where: Position) -> None:
        if where.child_outputs:
            return  # the child's outputs are known only once it is resolved
        if not where.graph_level:
            self.out.add("AG203", where.pointer, f"{'.'.join(parts)}: outputs is only visible "
                         "in graph outputs and success, and in subgraph.outputs_from")
        elif len(parts) > 1 and parts[1] not in dict_of(where.scope.data.get("outputs")):
            self.out.add("AG203", where.pointer, f"{'.'.join(parts)}: no graph output is "
                         f"named {parts[1]!r}")

    def _self(self, parts: tuple[str, ...], where: Position, node: dict[str, Any] | None) -> None:
        shown = ".".join(parts)
        if node is None:
            self.out.add("AG203", where.pointer, f"{shown}: self is only visible within a node")
            return
        if len(parts) > 2 and parts[1] == "outputs":
            if parts[2] in declared_outputs(node):
                self.reads.add((where.scope.pointer, str(where.node), parts[2]))
            else:
                self.out.add("AG206", where.pointer,
                             f"{shown}: the node does not declare output {parts[2]!r}")
        elif len(parts) > 2 and parts[1] == "inputs":
            if parts[2] not in dict_of(node.get("inputs")):
                self.out.add("AG203", where.pointer,
                             f"{shown}: the node does not declare input {parts[2]!r}")
        elif len(parts) > 1 and parts[1] not in SELF_FIELDS:
            self.out.add("AG203", where.pointer, f"{shown}: self has no field {parts[1]!r} "
                         "(only id, attempt, inputs, outputs)")

    def _node_ref(self, parts: tuple[str, ...], where: Position) -> None:
        if len(parts) < 2:
            return
        scope, node_id = where.scope, where.node
        shown = ".".join(parts)
        target = parts[1]
        if target == "self":
            if node_id is None:
                self.out.add("AG203", where.pointer,
                             f"{shown}: nodes.self is only visible within a node")
                return
            target = node_id
        if target not in scope.nodes:
            if node_id is not None and not scope.is_root:
                self.out.add("AG202", where.pointer,
                             f"{shown}: node {target!r} is outside this fragment; fragments "
                             "are sealed")
            else:
                self.out.add("AG203", where.pointer,
                             f"{shown}: there is no node {target!r} in this scope")
            return
        if len(parts) > 3 and parts[2] == "outputs":
            if parts[3] in declared_outputs(scope.nodes[target]):
                self.reads.add((scope.pointer, target, parts[3]))
            else:
                self.out.add("AG206", where.pointer,
                             f"{shown}: node {target!r} does not declare output {parts[3]!r}")
        elif len(parts) > 2 and parts[2] not in NODE_FIELDS:
            self.out.add("AG203", where.pointer, f"{shown}: a node has no field {parts[2]!r} "
                         "(only status, outputs, attempts, duration_seconds, decision)")
        if node_id is None or target == node_id or node_id not in scope.nodes:
            return
        topology = self.topologies[scope.pointer]
        if not topology.is_predecessor(target, node_id):
            self.out.add("AG201", where.pointer,
                         f"{shown}: node {node_id!r} reads {target!r}, which does not run "
                         f"before it (no path {target} -> {node_id} in the effective edges)")

    # ------------------------------------------------------------------ AG904

    def _unread_outputs(self) -> None:
        for scope in self.model.scopes:
            for node_id, node in scope.nodes.items():
                for name in dict_of(node.get("outputs")):
                    if (scope.pointer, node_id, name) not in self.reads:
                        self.out.add("AG904", scope.node_pointer(node_id, "outputs", name),
                                     f"output {name!r} of node {node_id!r} is never read")


def _at(where: Position, *tokens: str | int) -> Position:
    tail = "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)
    return Position(scope=where.scope, node=where.node, pointer=where.pointer + tail,
                    loop_ok=where.loop_ok,
                    child_outputs=where.child_outputs, graph_level=where.graph_level)
