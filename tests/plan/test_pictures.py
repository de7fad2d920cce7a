"""Pictures that read at a glance: branch labels on the arrows, colours and shapes by kind
(by state for a run), a legend, and SVG through Graphviz."""

from __future__ import annotations

import re
import shutil

import pydot
import pytest
from plan_docs import graph, task
from support import EXAMPLES

from rein.formats.ags.pictures import (
    KIND_COLOURS,
    STATE_COLOURS,
    edge_label,
    node_state,
    render_dot,
    render_mermaid,
    state_caption,
)
from rein.formats.ags.plan import build_plan, plan_path

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pydot's pyparsing

RELEASE = EXAMPLES / "release-train.agraph.yaml"


def _decided(when: str, label: str | None = None) -> object:
    decide = {"type": "decision", "title": "pick", "description": "d",
              "decision": {"evaluator": "agent", "branches": [
                  {"label": "left", "description": "l"}, {"label": "right", "description": "r"}]}}
    edge = {"from": "pick", "to": "work", "kind": "conditional", "when": when}
    if label:
        edge["label"] = label
    return build_plan(graph({"pick": decide, "work": task(title="work")}, edges=[edge]))


def test_an_arrow_says_its_label_not_its_condition() -> None:
    mermaid = render_mermaid(plan_path(RELEASE))
    assert '-->|"risky"|' in mermaid and '-->|"safe"|' in mermaid
    assert "outputs.decision" not in mermaid  # no whole expression on an arrow
    assert '-.->|"on failure: unhealthy"|' in mermaid
    dot = render_dot(plan_path(RELEASE))
    assert 'label="risky"' in dot and "outputs.decision" not in dot


def test_without_a_label_the_decision_branch_tested_names_the_arrow() -> None:
    for when in ('nodes.pick.outputs.decision == "right"',
                 "'right' == nodes.pick.outputs.decision"):
        plan = _decided(when)
        (edge,) = plan.root.edges
        assert edge_label(edge, plan.root) == "right"


def test_any_other_condition_is_shortened_on_the_arrow() -> None:
    plan = _decided("nodes.pick.status == 'succeeded' and len(params.items) > 3")
    (edge,) = plan.root.edges
    label = edge_label(edge, plan.root)
    assert label is not None and label.startswith("if nodes.pick.status") and label[-1] == "…"
    assert len(label) <= 31


def test_nodes_are_coloured_by_kind_with_a_legend_of_the_kinds_used() -> None:
    plan = plan_path(RELEASE)
    mermaid = render_mermaid(plan)
    kinds = {n.type for n in plan.nodes()}
    assert kinds == {"task", "gate", "decision"}
    for kind in kinds:
        fill, stroke = KIND_COLOURS[kind]
        assert f"classDef {kind} fill:{fill},stroke:{stroke}" in mermaid
    assert re.search(r'n\d+\{"assess_risk<br/>.*"\}:::decision', mermaid)
    assert "classDef loop" not in mermaid  # only what the picture uses
    legend = mermaid[mermaid.index('subgraph legend ["Legend"]'):]
    assert ':::task' in legend and ':::gate' in legend and "dashed arrow: on failure" in legend
    [parsed] = pydot.graph_from_dot_data(render_dot(plan))
    attrs = parsed.get_node('"assess_risk"')[0].get_attributes()
    assert attrs["shape"] == "diamond"
    assert attrs["fillcolor"].strip('"') == KIND_COLOURS["decision"][0]
    table = parsed.get_node('"legend"')[0].get_attributes()["label"]
    assert "decision (diamond)" in table and "runs when the node fails" in table


def test_a_run_colours_each_node_by_the_state_it_reached() -> None:
    plan = plan_path(EXAMPLES / "no-worker.agraph.yaml")
    states = {"size_up": ["succeeded"], "classify_items": ["running"],
              "classify_items.bucket": ["succeeded", "failed", "succeeded"]}
    mermaid = render_mermaid(plan, states)
    assert re.search(r'"size_up<br/>[^"]*<br/>succeeded"\}:::succeeded', mermaid)
    assert re.search(r'"bucket<br/>[^"]*<br/>failed 1 · succeeded 2"\}:::failed', mermaid)
    assert re.search(r'"count_down<br/>[^"]*<br/>not reached"\]\]:::not_reached', mermaid)
    assert "classDef task" not in mermaid  # states replace the kind colours
    [parsed] = pydot.graph_from_dot_data(render_dot(plan, states))
    fill = parsed.get_node('"classify_items"')[0].get_attributes()["fillcolor"].strip('"')
    assert fill == STATE_COLOURS["running"][0]


def test_the_state_a_node_is_coloured_by_is_the_one_to_look_at_first() -> None:
    assert node_state(["succeeded", "failed"]) == "failed"
    assert node_state(["succeeded", "awaiting_human"]) == "awaiting_human"
    assert node_state([]) == node_state(None) == "not_reached"
    assert state_caption(["succeeded"] * 3) == "succeeded ×3"
    assert state_caption(None) == "not reached"


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.agraph.yaml")), ids=lambda p: p.name)
def test_every_example_draws_as_svg(path) -> None:
    if shutil.which("dot") is None:
        pytest.skip("Graphviz is not installed (scripts/system-deps.sh installs it)")
    from rein.cli.pictures import svg

    drawn = svg(render_dot(plan_path(path)))
    assert drawn.lstrip().startswith("<?xml") and "</svg>" in drawn
    for node in plan_path(path).nodes():
        assert f"<title>{node.qualified}</title>" in drawn
