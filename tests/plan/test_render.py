"""The three renderings of a plan: review text, Mermaid, and DOT (parsed with pydot)."""

from __future__ import annotations

import re

import pydot
import pytest
from plan_docs import fragment, graph, task
from support import EXAMPLES

from rein.formats.ags.pictures import render_dot, render_mermaid
from rein.formats.ags.plan import build_plan, plan_path
from rein.formats.ags.render import render_text

# pydot's grammar uses pyparsing names that newer pyparsing releases deprecate.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _tricky_plan():
    """Quotes, backslashes, pipes, angle brackets and hashes in titles and conditions."""
    decide = {"type": "decision", "title": 'Pick "A" or <B> | #C \\ D', "description": "d",
              "decision": {"evaluator": "expression", "branches": [
                  {"label": "a", "description": "a", "when": 'params.x == "a|b"'}]}}
    loop = task(type="loop", title="loop",
                loop={"mode": "until", "condition": "true", "max_iterations": 3,
                      "body": fragment({"step": task(title="step")})})
    doc = graph(
        {"decide": decide, "work": task(title="work \"quoted\""), "loop": loop,
         "cleanup": task(title="cleanup")},
        edges=[{"from": "decide", "to": "work", "kind": "conditional",
                "when": 'nodes.decide.outputs.decision == "a"'},
               {"from": "work", "to": "loop"},
               {"from": "work", "to": "cleanup", "kind": "on_failure"}],
        constraints={"max_node_executions": 2},
    )
    return build_plan(doc, source="tricky.agraph.yaml")


def test_text_shows_what_a_reviewer_needs() -> None:
    plan = _tricky_plan()
    text = render_text(plan)
    assert text.startswith("Plan: t\n")
    assert plan.digest in text
    for node in plan.nodes():
        assert re.search(rf"^\s+{node.id}  ", text, re.MULTILINE), node.id
    assert "step 2" in text and "until ≤3" in text
    assert 'work if nodes.decide.outputs.decision == "a"' not in text  # edges shown on target
    assert 'decide if nodes.decide.outputs.decision == "a"' in text
    assert "work fails" in text  # the on_failure edge, on cleanup
    assert "worst case 7 node executions (ceiling 2)" in text
    assert "PLAN001" in text  # notices are listed


def test_a_cost_no_node_estimates_is_unknown_not_zero() -> None:
    """A graph whose nodes say nothing of their cost was shown as "projected $0.00 from node
    estimates" to the person asked to approve it; a node that estimates $0 is $0."""
    unknown = build_plan(graph({"a": task(), "b": task(estimate={"tokens": 900})}))
    assert not unknown.cost_estimated and unknown.to_json()["cost_estimated"] is False
    text = render_text(unknown)
    assert "projected cost unknown: no node estimates its cost; 900 tokens from node estimates" in text
    assert "$0.00" not in text
    free = build_plan(graph({"a": task(estimate={"cost_usd": 0}), "b": task()}))
    assert free.cost_estimated and "projected $0.00 from node estimates" in render_text(free)
    inner = fragment({"x": task(estimate={"cost_usd": 2})})  # an estimate inside a body counts
    nested = build_plan(graph({"s": task(type="subgraph", subgraph={"inline": inner})}))
    assert nested.cost_estimated and "projected $2.00" in render_text(nested)


def test_text_of_every_example_names_every_node_and_the_worst_case() -> None:
    for path in sorted(EXAMPLES.glob("*.agraph.yaml")):
        plan = plan_path(path)
        text = render_text(plan)
        assert f"worst case {plan.worst_case_executions} node executions" in text
        for node in plan.nodes():
            assert f"{node.id}  " in text


def test_mermaid_structure_and_escaping() -> None:
    plan = _tricky_plan()
    out = render_mermaid(plan)
    lines = out.splitlines()
    assert lines[0] == "flowchart TD"
    assert sum(1 for ln in lines if ln.strip().startswith("subgraph ")) == 2  # and the legend
    assert sum(1 for ln in lines if ln.strip() == "end") == 2
    node_lines = [ln for ln in lines if re.match(r"\s+n\d+[\[{(]", ln)]
    assert len(node_lines) == sum(1 for _ in plan.nodes())
    # labels are quoted; no raw quote, pipe or angle bracket survives inside one
    for label in re.findall(r'"([^"]*)"', out):
        assert not set(label.replace("<br/>", "")) & set("|<>"), label
    assert "#quot;A#quot;" in out and "#124;" in out and "#lt;B#gt;" in out
    assert re.search(r'n\d+ -->\|"a"\| n\d+', out)  # the branch, not the whole condition
    assert re.search(r'n\d+ -\.->\|"on failure"\| n\d+', out)
    assert '{"decide<br/>' in out  # decisions are diamonds


def test_dot_parses_and_has_every_node_edge_and_cluster() -> None:
    plan = _tricky_plan()
    out = render_dot(plan)
    [parsed] = pydot.graph_from_dot_data(out)
    names: set[str] = set()
    edges: list[tuple[str, str]] = []

    def collect(g: pydot.Graph) -> None:
        names.update(n.get_name().strip('"') for n in g.get_nodes())
        edges.extend((e.get_source().strip('"'), e.get_destination().strip('"'))
                     for e in g.get_edges())
        for sub in g.get_subgraphs():
            collect(sub)

    collect(parsed)
    qualified = {n.qualified for n in plan.nodes()}
    assert qualified <= names
    assert ("decide", "work") in edges and ("work", "cleanup") in edges
    assert ("loop", "loop.step") in edges  # the container's link into its body
    [cluster] = parsed.get_subgraphs()
    assert cluster.get_name().strip('"') == "cluster_loop"
    assert parsed.get_node('"legend"')
    decide = parsed.get_node('"decide"')[0]
    label = decide.get_attributes()["label"]
    assert '\\"A\\"' in label and "\\\\" in label  # quotes and backslashes escaped


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.agraph.yaml")), ids=lambda p: p.name)
def test_dot_of_every_example_parses(path) -> None:
    plan = plan_path(path)
    graphs = pydot.graph_from_dot_data(render_dot(plan))
    assert graphs is not None and len(graphs) == 1
    lines = render_mermaid(plan).splitlines()
    opened = sum(1 for ln in lines if ln.strip().startswith("subgraph "))
    assert opened == sum(1 for ln in lines if ln.strip() == "end")
    assert opened == sum(1 for scope in plan.scopes())  # each nested scope, and the legend


def test_renderings_are_deterministic() -> None:
    a, b = _tricky_plan(), _tricky_plan()
    assert render_text(a) == render_text(b)
    assert render_mermaid(a) == render_mermaid(b)
    assert render_dot(a) == render_dot(b)


SHARED_GRAPHS = ["minimal.agraph.yaml", "link-audit.agraph.yaml", "test-repair-loop.agraph.yaml",
                 "library-v1-release.agraph.yaml", "docs-site-refresh.agraph.yaml"]


@pytest.mark.shared
@pytest.mark.parametrize("name", SHARED_GRAPHS)
def test_official_examples_render(shared_dir, name: str) -> None:
    plan = plan_path(shared_dir / "ags-examples" / name)
    [parsed] = pydot.graph_from_dot_data(render_dot(plan))
    assert parsed.get_name().strip('"') == plan.graph_id
    mermaid = render_mermaid(plan)
    assert mermaid.count("<br/>") >= 2 * sum(1 for _ in plan.nodes())
    text = render_text(plan)
    for notice in plan.notices:
        assert notice.code in text
