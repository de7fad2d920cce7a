"""The dataflow rule (AG201) without n² memory: reads of direct predecessors are answered from
the edges, and the transitive closure (n² bits: 1.25 GB at 100,000 nodes) is folded only for
a read of a farther node. Deterministic: counts of memory allocated (tracemalloc), no time."""

from __future__ import annotations

import tracemalloc

from rein.formats.ags.report import Collector
from rein.formats.ags.scopes import build_scopes
from rein.formats.ags.semantic import Semantics
from rein.formats.ags.topology import analyse
from rein.formats.ags.validate import validate_document
from rein.formats.loader import load_text


def _chain(nodes: int, *, far: int | None = None, stranger: int | None = None) -> str:
    """A chain of ``nodes`` tasks, each reading its predecessor; node ``far`` also reads n0
    (an ancestor, not a parent), node ``stranger`` reads the last node (which runs after)."""
    lines = ['ags_version: "1.0"', "kind: AgenticGraph", "id: t/chain", "title: Chain",
             "objective: Many nodes.", "constraints: {max_node_executions: 100000, max_cost_usd: 5}",
             "entrypoints: [n0]", "nodes:"]
    for i in range(nodes):
        lines += [f"  n{i}:", f"    title: Step {i}", "    description: One step.",
                  "    outputs:", "      result: {type: text, description: The note.}"]
        if i:
            lines += [f"    depends_on: [n{i - 1}]", "    inputs:",
                      (f"      prev: {{type: text, description: Before., "
                       f"from: nodes.n{i - 1}.outputs.result}}")]
        if i == far:
            lines.append("      first: {type: text, description: First., "
                         "from: nodes.n0.outputs.result}")
        if i == stranger:
            lines.append(f"      late: {{type: text, description: Late., "
                         f"from: nodes.n{nodes - 1}.outputs.result}}")
    lines += ["outputs:", "  final:", "    type: text", "    description: The end.",
              f"    from: nodes.n{nodes - 1}.outputs.result"]
    return "\n".join(lines) + "\n"


def _checked(text: str) -> list[str]:
    """The finding codes of the topology and dataflow checks of ``text``."""
    doc = load_text(text)
    out = Collector(doc, doc.source)
    model = build_scopes(doc.data, out)
    topologies = {scope.pointer: analyse(scope, out) for scope in model.scopes}
    Semantics(model, topologies, out).run()
    return sorted(f.code for f in out.findings())


def _peak_of_analyse(nodes: int) -> int:
    """Bytes allocated at the peak of the topology analysis of a chain of ``nodes``."""
    doc = load_text(_chain(nodes))
    out = Collector(doc, doc.source)
    model = build_scopes(doc.data, out)
    tracemalloc.start()
    try:
        for scope in model.scopes:
            analyse(scope, out)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def test_the_topology_takes_memory_linear_in_the_nodes() -> None:
    small, large = _peak_of_analyse(1000), _peak_of_analyse(8000)
    # 8x the nodes: about 9x the memory (the index's dict grows by steps); the closure's
    # n² bits, folded for every graph before, made it 18x
    assert large < 12 * small, (small, large)


def test_a_read_of_a_farther_ancestor_still_passes_and_a_later_node_still_fails() -> None:
    assert _checked(_chain(30, far=20)) == []
    assert _checked(_chain(30, stranger=5)) == ["AG201"]


def test_the_closure_is_folded_only_for_a_farther_read() -> None:
    for text, built in ((_chain(50), False), (_chain(50, far=40), True)):
        report = validate_document(load_text(text))
        assert [f.code for f in report.findings] == []
        doc = load_text(text)
        out = Collector(doc, doc.source)
        model = build_scopes(doc.data, out)
        topologies = {scope.pointer: analyse(scope, out) for scope in model.scopes}
        Semantics(model, topologies, out).run()
        assert bool(topologies[""].closure) is built
