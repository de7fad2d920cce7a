"""Execution semantics on small graphs: joins, edges, the ladder, budgets, determinism."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.core.states import RunStatus
from rein.engine.run.record import build_record, record_problems
from rein.engine.run.routing import Router
from rein.workers.scripted import ScriptedWorker
from tests.engine.helpers import make_engine, run_graph


def task(title: str, **extra: Any) -> dict[str, Any]:
    return {"title": title, "description": f"Do {title}.", **extra}


def graph(nodes: dict[str, Any], entry: list[str], **extra: Any) -> dict[str, Any]:
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/g", "title": "g",
            "objective": "test", "requires_conformance": 3,
            "constraints": {"max_cost_usd": 1.0, **extra.pop("constraints", {})},
            "entrypoints": entry, "nodes": nodes, **extra}


def write(tmp: Path, data: dict[str, Any]) -> Path:
    path = tmp / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def go(tmp: Path, data: dict[str, Any], answers: dict[str, Any], **kw: Any
       ) -> tuple[Any, dict[str, Any]]:
    engine = make_engine(tmp, workers=(ScriptedWorker({"nodes": answers}),), **kw)
    outcome = run_graph(engine, write(tmp, data))
    record = build_record(engine.store, outcome.run_id)
    assert record_problems(record) == []
    return outcome, record


def states(record: dict[str, Any]) -> dict[str, str]:
    return {n.get("scope_path", n["node_id"]): n["status"] for n in record["nodes"]}


OK = [{"outputs": {}}]
FAIL = [{"failure": "tool_error", "message": "broken"}]


def test_on_failure_edge_and_join_any(tmp_path: Path) -> None:
    data = graph({
        "a": task("a"),
        "recover": task("recover"),
        "after": task("after", join="any"),
    }, ["a"], edges=[{"from": "a", "to": "recover", "kind": "on_failure"},
                     {"from": "a", "to": "after"}, {"from": "recover", "to": "after"}],
        policy={"on_node_failure": "isolate"})
    outcome, record = go(tmp_path, data, {"a": FAIL, "recover": OK, "after": OK})
    assert states(record) == {"a": "failed", "recover": "succeeded", "after": "succeeded"}
    assert outcome.status is RunStatus.FAILED  # a's failure was not absorbed
    taken = {(e["from"], e["to"]): e["active"] for e in record["edges_taken"]}
    assert taken == {("a", "recover"): True, ("a", "after"): False,
                     ("recover", "after"): True}


def test_join_n_of_skips_when_it_can_no_longer_be_met(tmp_path: Path) -> None:
    data = graph({
        "a": task("a"), "b": task("b"), "c": task("c"),
        "two": task("two", join="n_of", join_count=2, depends_on=["a", "b", "c"]),
    }, ["a", "b", "c"], policy={"on_node_failure": "isolate"})
    _, record = go(tmp_path, data, {"a": FAIL, "b": FAIL, "c": OK, "two": OK})
    assert states(record)["two"] == "skipped"


def test_continue_policy_still_runs_dependents(tmp_path: Path) -> None:
    data = graph({"a": task("a"), "b": task("b", depends_on=["a"])}, ["a"],
                 policy={"on_node_failure": "continue"})
    _, record = go(tmp_path, data, {"a": FAIL, "b": OK})
    assert states(record) == {"a": "failed", "b": "succeeded"}


def test_alternate_node_stands_in_and_skip_absorbs(tmp_path: Path) -> None:
    spec = {"out": {"type": "string", "description": "o"}}
    data = graph({
        "a": task("a", outputs=spec, failure={"fallback": [
            {"strategy": "alternate_node", "node": "plan_b"}]}),
        "plan_b": task("plan_b", outputs=spec),
        "c": task("c", failure={"on_exhausted": "skip"}),
        "d": task("d", depends_on=["c"]),
    }, ["a", "c"])
    outcome, record = go(tmp_path, data, {"a": FAIL, "plan_b": [{"outputs": {"out": "B"}}],
                                          "c": FAIL, "d": OK})
    s = states(record)
    assert s["a"] == "succeeded" and s["plan_b"] == "skipped"  # unreachable on its own
    assert s["a~plan_b"] == "succeeded"
    assert s["c"] == "skipped" and s["d"] == "skipped"
    a = next(n for n in record["nodes"] if n["node_id"] == "a" and "scope_path" not in n)
    assert a["fallback_used"] == "alternate_node" and a["outputs"] == {"out": "B"}
    assert outcome.status is RunStatus.SUCCEEDED


def test_node_execution_ceiling_stops_the_run(tmp_path: Path) -> None:
    nodes = {f"n{i}": task(f"n{i}", depends_on=[f"n{i - 1}"] if i else [],
                           outputs={"v": {"type": "string", "description": "v"}})
             for i in range(4)}
    data = graph(nodes, ["n0"], constraints={"max_node_executions": 2},
                 outputs={"first": {"type": "string", "description": "f",
                                    "from": "nodes.n0.outputs.v"}})
    answers = {f"n{i}": [{"outputs": {"v": str(i)}}] for i in range(4)}
    outcome, record = go(tmp_path, data, answers)
    assert states(record) == {"n0": "succeeded", "n1": "succeeded", "n2": "cancelled",
                              "n3": "cancelled"}
    assert outcome.status is RunStatus.PARTIAL  # §5.4: an output is bound
    [rt061] = [d for d in record["diagnostics"] if d["code"] == "RT061"]
    assert "max_node_executions = 2 reached (3)" in rt061["message"]
    assert record["usage"]["node_executions"] == 2


def test_an_unroutable_tier_names_the_tier_tables_no_route_was_made_of(tmp_path: Path) -> None:
    """A typo in [tiers] (a tier's name, a table without its model) made no route and said
    nothing: the refusal only asked for the table the file seemed to have."""
    router = Router.from_config({"minimal": {"provider": "p", "model": "small"},
                                 "advnced": {"provider": "p", "model": "big"},
                                 "frontier": {"provider": "p", "modle": "huge"},
                                 "standard": "p/m", "x-note": {"k": 1}}, None)
    data = graph({"a": task("a", intelligence={"tier": "advanced"})}, ["a"])
    from rein.engine.run.runner import PrepareFailed, prepare

    with pytest.raises(PrepareFailed) as caught:
        prepare(write(tmp_path, data), given={}, router=router, env={})
    [finding] = caught.value.findings
    assert finding.code == "RT011" and "serves: minimal" in finding.message
    assert finding.hint.endswith(
        "no route was made of [tiers.advnced] (not a tier), [tiers.frontier] (no model), "
        "[tiers.standard] (not a table): see `rein config show`")


def test_a_tiers_table_that_makes_no_route_at_all_is_refused_not_ignored(
        tmp_path: Path) -> None:
    """Every [tiers] entry misspelt: the tasks went to the worker that serves every tier
    (the driver, the scripted one) as if [tiers] were absent, and the run started."""
    from rein.engine.run.runner import PrepareFailed, prepare

    data = graph({"a": task("a", intelligence={"tier": "standard"})}, ["a"])
    router = Router.from_config({"standrd": {"provider": "p", "model": "m"}}, None)
    with pytest.raises(PrepareFailed) as caught:
        prepare(write(tmp_path, data), given={}, router=router, env={})
    [finding] = caught.value.findings
    assert finding.code == "RT011" and finding.message.endswith(
        "no entry of [tiers] makes a route: [tiers.standrd] (not a tier)"), finding.message
    assert "remove [tiers]" in finding.hint
    # No [tiers] at all (or only x- entries): the worker serves the tier, as before.
    for tiers in (None, {}, {"x-note": {"k": 1}}):
        router = Router.from_config(tiers, None)
        assert not router.configured and router.route("standard", None, node="a") is None
        prepare(write(tmp_path, data), given={}, router=router, env={})


def test_unroutable_tier_blocks_before_spending(tmp_path: Path) -> None:
    router = Router.from_config({"minimal": {"provider": "p", "model": "small"}}, None)
    data = graph({"a": task("a", intelligence={"tier": "advanced", "allow_downgrade": True}),
                  "b": task("b", intelligence={"tier": "frontier"})}, ["a", "b"])
    engine = make_engine(tmp_path, workers=(ScriptedWorker({"nodes": {"a": OK, "b": OK}}),),
                         router=router)
    from rein.engine.run.runner import PrepareFailed, prepare

    try:
        prepare(write(tmp_path, data), given={}, router=router, env={})
    except PrepareFailed as exc:
        assert [f.code for f in exc.findings] == ["RT011"]
        assert "needs tier 'frontier'" in exc.findings[0].message
    else:
        raise AssertionError("RT011 expected at prepare")
    del data["nodes"]["b"]
    data["entrypoints"] = ["a"]
    outcome = run_graph(engine, write(tmp_path, data))
    record = build_record(engine.store, outcome.run_id)
    routed = record["nodes"][0]["attempts"][0]["routed"]
    assert routed["downgraded"] is True and routed["effective_tier"] == "minimal"
    assert "allow_downgrade" in routed["reason"]


def test_same_graph_same_answers_same_record(tmp_path: Path) -> None:
    data = graph({"a": task("a"), "b": task("b"), "c": task("c", depends_on=["a", "b"])},
                 ["a", "b"], constraints={"max_parallel_nodes": 2})
    answers = {"a": OK, "b": OK, "c": OK}
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    _, first = go(tmp_path / "one", data, answers)
    _, second = go(tmp_path / "two", data, answers)
    for r in (first, second):
        r.pop("harness")
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
