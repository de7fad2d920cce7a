"""The AGS 1.0 diagnostic catalogue (SPEC §18): every AG code, its severity, rule and fix.

Severities follow the spec: AG0xx–AG3xx are errors, AG9xx are advisory warnings that never
block execution (``--strict`` turns them into failures). Three codes are never produced by
document validation:

* AG301 and AG302 concern the *values* supplied for ``params`` when a run starts; they are
  raised by parameter binding, which needs those values.
* AG303 ("``requires_conformance`` exceeds the harness level") cannot fire in rein: rein
  implements conformance level 3, the schema caps ``requires_conformance`` at 3, so every
  valid document is at or below rein's level. The code is listed so that reports and run
  records can name it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from rein.core.frozen import Frozen
from rein.errors import Severity


class CodeInfo(Frozen):
    """One catalogue entry: what the rule says and how to fix a violation."""

    code: str
    severity: Severity
    rule: str  # one line, what must hold
    hint: str  # one line, how to fix a document that breaks the rule
    layer: str  # "structural", "referential", "semantic", "binding" or "advisory"


def _entries() -> list[CodeInfo]:
    s, r, m, b, a = "structural", "referential", "semantic", "binding", "advisory"
    e: Severity = "error"
    w: Severity = "warning"
    rows: list[tuple[str, Severity, str, str, str]] = [
        ("AG001", e, s, "the document is a JSON object that satisfies the AGS 1.0 JSON Schema",
         "fix the value at the location so that it has the type and shape the schema requires"),
        ("AG002", e, s, "ags_version is a MAJOR.MINOR this harness implements (1.0)",
         'set ags_version: "1.0"; newer minors fail closed until rein implements them'),
        ("AG003", e, s, "objects carry only the fields the spec defines, or x- extensions",
         "remove the field, correct its spelling, or prefix it with x- to make it an extension"),
        ("AG004", e, s, "enumerated fields hold one of their allowed values",
         "use one of the values the spec lists for this field"),
        ("AG005", e, s, "a mapping (YAML) or object (JSON) has no duplicate keys",
         "keep one occurrence of the key; parsers disagree on which duplicate wins"),
        ("AG101", e, r, "a node carries only the type block matching its type",
         "remove the block, or change the node's type to the kind the block belongs to"),
        ("AG102", e, r, "a gate node declares no intelligence (gates never call a model)",
         "remove intelligence from the gate, or make the node a task"),
        ("AG103", e, r, "a sequence edge has no when (only conditional and on_failure edges do)",
         "remove when, or set kind: conditional"),
        ("AG104", e, r, "an input declares at most one of from, template and value",
         "keep exactly one of from, template or value for this input"),
        ("AG111", e, r, "the effective edge set of every scope is acyclic",
         ("remove or redirect one edge (or depends_on entry) on the cycle; use a loop node "
         "for repetition")),
        ("AG112", e, r, "an entrypoint has no incoming edges",
         "remove the incoming edge, or remove the node from entrypoints"),
        ("AG113", e, r, "edges, fallback, escalation and compensation name nodes of their scope",
         "name a node declared in the same nodes map (ids are scoped to their fragment)"),
        ("AG114", e, r, "depends_on names nodes of the same scope",
         "name a node declared in the same nodes map, or remove the entry"),
        ("AG115", e, r, "the graph's entrypoints name declared nodes",
         "name a node declared under the graph's nodes"),
        ("AG116", e, r, "join_count of an n_of join is at most the number of incoming edges",
         "lower join_count, or add the incoming edges the join waits for"),
        ("AG117", e, r, ("reserved names are not used as node ids or bindings (node id self; "
         "map.as and map.index_as naming a namespace root)"),
         ("rename it; reserved roots are graph, params, context, attachments, nodes, self, loop, "
         "outputs, env, secrets and item")),
        ("AG121", e, r, "with evaluator: expression every decision branch has a when",
         "add a when expression to the branch, or use evaluator: agent"),
        ("AG122", e, r, "decision and gate nodes do not declare an output named decision",
         "remove the decision output; the harness sets outputs.decision itself"),
        ("AG123", e, r, "default_branch names a declared branch label",
         "set default_branch to one of the branch labels"),
        ("AG124", e, r, "branch labels are unique within a decision",
         "give each branch its own label"),
        ("AG131", e, r, ("subgraph references are not recursive, directly or transitively "
         "(named fragments and external ref files)"),
         "break the cycle: a fragment or graph must not (indirectly) run itself; use a loop"),
        ("AG132", e, r, "loop.use, map.use and subgraph.use name a fragment under subgraphs",
         "declare the fragment under subgraphs, or correct the name"),
        ("AG133", e, r, "a fragment's entrypoints name nodes of that fragment",
         "name a node declared in the fragment's own nodes map"),
        ("AG141", e, r, "intelligence.tier and intelligence.level agree",
         "use level 1 for minimal, 2 standard, 3 advanced, 4 frontier, or drop level"),
        ("AG142", e, r, "intelligence.escalate_to is not below tier",
         "set escalate_to to the node's tier or a higher one"),
        ("AG151", e, r, "an alternate_node fallback declares every required output of the node",
         "declare the missing outputs on the alternate node, or pick another alternate"),
        ("AG152", e, r, "a compensation node does not declare its own compensation",
         "remove failure.compensation from the compensation node"),
        ("AG153", e, r, "relax_criteria and degrade_outputs name the node's criteria and outputs",
         "name criteria ids from the node's success block and outputs it declares"),
        ("AG201", e, m, "a node reads nodes.X.outputs only when X is a transitive predecessor",
         "add an edge or depends_on so that X runs first, or read the value elsewhere"),
        ("AG202", e, m, "an expression inside a fragment reads no node outside the fragment",
         "pass the value into the fragment through params (subgraph.params or loop carry)"),
        ("AG203", e, m, ("expressions read only declared names (params, context, attachments, "
         "env, nodes, and the roots visible at that position)"),
         ("declare the name (params, context, attachments, requirements.environment) or fix "
         "its spelling")),
        ("AG204", e, m, ("every expression and ${{ }} interpolation parses, and calls a known "
         "function with the right number of arguments"),
         "fix the expression syntax; write 'a - 1' with spaces, use only the AGX functions"),
        ("AG205", e, m, "no expression references secrets.*",
         ("list the secret in requirements.secrets; the harness injects it into the node's "
         "environment")),
        ("AG206", e, m, "references to outputs name outputs the node declares",
         "declare the output on the node, or fix the output name"),
        ("AG211", e, m, "expression positions hold a bare expression, not ${{ }} interpolation",
         "remove the ${{ and }} around the expression (templates use them, expressions do not)"),
        ("AG301", e, b, "every required param without a default gets a value when a run starts",
         "pass the param, or give it a default"),
        ("AG302", e, b, "supplied param values satisfy the param's enum and schema",
         "pass a value allowed by the param's enum and schema"),
        ("AG303", e, b, "requires_conformance does not exceed the harness's level (rein is level 3)",
         "lower requires_conformance, or run the graph on a harness of that level"),
        ("AG901", w, a, "a dependency is declared once, by depends_on or by an explicit edge",
         "remove the depends_on entry or the duplicate explicit edge"),
        ("AG902", w, a, "a side-effecting task node declares a success block",
         "add success criteria that check the node's effect (a command or file_exists)"),
        ("AG903", w, a, "every node is reachable from an entrypoint",
         "connect the node with an edge or depends_on, add it to entrypoints, or remove it"),
        ("AG904", w, a, "every declared output is read somewhere",
         "read the output (an input, a criterion, a graph output) or remove it"),
        ("AG905", w, a, "a frontier-tier node explains why in intelligence.rationale",
         "add intelligence.rationale, or lower the tier"),
        ("AG906", w, a, "a success block has at least one deterministic required criterion",
         "add a command, file_exists, expression, regex or json_schema criterion"),
        ("AG907", w, a, "determinism: strict comes with a seed",
         "set constraints.seed, or relax determinism"),
        ("AG908", w, a, ("the graph's cost can be previewed (constraints.max_cost_usd or an "
         "estimate on some node)"),
         "set constraints.max_cost_usd, or add estimate blocks to nodes"),
        ("AG909", w, a, "a non-local subgraph.ref carries an integrity digest",
         "add ref.integrity (sha256-… of the child document, see rein graph digest)"),
    ]
    return [CodeInfo(code=c, severity=sev, layer=layer, rule=rule, hint=hint)
            for c, sev, layer, rule, hint in rows]


CODES: Mapping[str, CodeInfo] = MappingProxyType({info.code: info for info in _entries()})
"""Every AG code of AGS 1.0, by code."""
