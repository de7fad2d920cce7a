"""The DAG drawing: layered, ordered to cut crossings, and legible at 100 nodes."""

from __future__ import annotations

import itertools
import random
import re
from pathlib import Path

import pytest

from rein.web import layout as lay
from rein.web import svg


def _dag(n: int, seed: int) -> tuple[list[str], list[tuple[str, str]]]:
    rnd = random.Random(seed)
    ids = [f"n{i:03d}" for i in range(n)]
    edges = []
    for i in range(1, n):
        for j in rnd.sample(range(max(0, i - 12), i), k=min(i, rnd.randint(1, 2))):
            edges.append((ids[j], ids[i]))
    return ids, edges


def test_longest_path_layering() -> None:
    layers = lay.layers(["a", "b", "c", "d"], [("a", "b"), ("b", "c"), ("a", "c"), ("a", "d")])
    assert layers == {"a": 0, "b": 1, "c": 2, "d": 1}


def test_a_long_edge_is_routed_through_the_columns_it_crosses() -> None:
    drawn = lay.layout(["a", "b", "c"], [("a", "b"), ("b", "c"), ("a", "c")])
    [long] = [r for r in drawn.routes if (r.source, r.target) == ("a", "c")]
    assert len(long.points) == 3  # start, one dummy in b's column, end


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_hundred_nodes_do_not_overlap_and_cross_less_than_unordered(seed: int) -> None:
    ids, edges = _dag(100, seed)
    drawn = lay.layout(ids, edges)
    assert set(drawn.nodes) == set(ids)
    assert len(drawn.routes) == len(edges)
    boxes = sorted((p.x, p.y) for p in drawn.nodes.values())
    assert len(set(boxes)) == 100
    for (x1, y1), (x2, y2) in itertools.pairwise(boxes):
        if x1 == x2:
            assert y2 - y1 >= lay.NODE_H  # same column: stacked, never overlapping
    for p in drawn.nodes.values():
        assert 0 <= p.x <= drawn.width - lay.NODE_W and 0 <= p.y <= drawn.height - lay.NODE_H
    unordered = _without_sweeps(ids, edges)
    assert lay.crossings(drawn) < lay.crossings(unordered)


def _without_sweeps(ids: list[str], edges: list[tuple[str, str]]) -> lay.Layout:
    saved = lay.SWEEPS
    lay.SWEEPS = 0
    try:
        return lay.layout(ids, edges)
    finally:
        lay.SWEEPS = saved


def test_the_same_graph_is_drawn_the_same_way() -> None:
    ids, edges = _dag(60, 7)
    assert lay.layout(ids, edges) == lay.layout(ids, edges)


def test_the_svg_escapes_titles_and_carries_states() -> None:
    drawn = svg.render([svg.Box(id="a", title="<script>x</script>", type="task",
                                status="running"),
                        svg.Box(id="b", title="b", type="gate")],
                       [svg.Arrow(source="a", target="b", taken=True)])
    assert "<script>" not in drawn and "&lt;script&gt;" in drawn
    assert re.search(r'data-node="a" data-status="running"', drawn)
    assert 'class="edge sequence taken" data-from="a" data-to="b"' in drawn


def test_branches_are_labelled_on_their_edges() -> None:
    import rein
    from rein.web import views

    folder = Path(rein.__file__).parent / "examples"
    planned = views.plan_of(folder, "release-train.agraph.yaml")
    assert planned is not None
    drawn = views.picture(planned[0].root)
    labels = dict(re.findall(r'<text class="edge-label [a-z_]+" data-from="[^"]+" '
                             r'data-to="([^"]+)"[^>]*><title>[^<]*</title>([^<]*)</text>', drawn))
    assert labels["release_approval"] == "risky" and labels["rollback"] == "unhealthy"
    assert labels["deploy"] == "safe"
