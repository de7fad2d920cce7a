"""Every page and stream over HTTP, on a real run started from the plan view."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.web.conftest import Console, sse_events


def test_approve_and_run_starts_a_run_that_waits_at_the_gate(console: Console) -> None:
    console.login()
    page = console.client.get("/plan?path=g.agraph.yaml")
    assert page.status_code == 200
    assert console.digest("g.agraph.yaml") in page.text
    assert "<svg" in page.text and 'data-node="ok"' in page.text
    assert "Plan: gated" in page.text  # the same text as `rein graph plan`
    run_id = console.start("g.agraph.yaml")
    run = console.harness.run(run_id)
    assert run.status.value == "awaiting_human"
    [pending] = console.pending()
    assert pending.kind.value == "gate" and pending.run_id == run_id


def test_the_run_page_draws_states_and_the_log(console: Console) -> None:
    console.login()
    run_id = console.start("g.agraph.yaml")
    r = console.client.get(f"/runs/{run_id}")
    assert r.status_code == 200
    assert re.search(r'data-node="work" data-status="succeeded"', r.text)
    assert re.search(r'data-node="ok" data-status="awaiting_human"', r.text)
    assert 'class="edge sequence taken" data-from="work" data-to="ok"' in r.text
    events = console.harness.events(run_id)
    assert f'data-stream="/runs/{run_id}/events?after={events[-1].seq}"' in r.text
    assert all(f'data-seq="{e.seq}"' in r.text for e in events)
    assert "max_cost_usd" in r.text  # the budget against its limit


def test_the_runs_list_shows_and_filters(console: Console) -> None:
    console.login()
    run_id = console.start("g.agraph.yaml")
    assert run_id in console.client.get("/").text
    assert run_id in console.client.get("/?state=awaiting_human").text
    assert run_id not in console.client.get("/?state=succeeded").text
    assert run_id not in console.client.get("/?q=no-such-graph").text


def test_the_event_stream_replays_then_ends_with_the_run(console: Console) -> None:
    console.login()
    run_id = console.start("g.agraph.yaml")
    [gate] = console.pending()
    r = console.post(f"/approvals/{gate.approval_id}", {"action": "cancel",
                                                        "digest": gate.digest})
    assert r.status_code == 303
    assert console.steering is not None and console.steering.idle(60)
    assert console.harness.run(run_id).status.value == "cancelled"
    stored = [e.seq for e in console.harness.events(run_id)]
    body = console.client.get(f"/runs/{run_id}/events").text
    assert [m["seq"] for m in sse_events(body)] == stored
    assert "event: end" in body
    # Resuming after a seq gives exactly the rest: Last-Event-ID wins over ?after=.
    cut = stored[len(stored) // 2]
    body = console.client.get(f"/runs/{run_id}/events?after=1",
                              headers={"Last-Event-ID": str(cut)}).text
    assert [m["seq"] for m in sse_events(body)] == [s for s in stored if s > cut]
    assert f"id: {stored[-1]}" in body


def test_the_record_downloads_as_a_file(console: Console) -> None:
    console.login()
    run_id = console.start("g.agraph.yaml")
    r = console.client.get(f"/runs/{run_id}/record")
    assert r.status_code == 200
    assert r.headers["content-disposition"] == f'attachment; filename="{run_id}.run.json"'
    assert json.loads(r.text) == console.harness.record(run_id)


def test_unknown_runs_are_a_page_not_a_traceback(console: Console) -> None:
    console.login()
    for path in ("/runs/run-nope", "/runs/run-nope/events", "/runs/run-nope/record"):
        r = console.client.get(path)
        assert r.status_code == 404 and "RUN404" in r.text


def test_plans_lists_the_workspace_graphs(console: Console) -> None:
    console.login()
    (console.root / "sub").mkdir()
    (console.root / "sub" / "x.agraph.yaml").write_text(
        (console.root / "g.agraph.yaml").read_text())
    r = console.client.get("/plans")
    assert "g.agraph.yaml" in r.text and "sub/x.agraph.yaml" in r.text


def test_static_assets_come_from_the_package(console: Console) -> None:
    r = console.client.get("/static/console.js")
    assert r.status_code == 200 and "EventSource" in r.text
    assert console.client.get("/static/../app.py").status_code == 404


def test_the_runs_stream_sends_the_table_when_it_changes() -> None:
    import asyncio

    from rein.web import streams

    states = iter([("a", "<tr>1</tr>"), ("a", "<tr>1</tr>"), ("b", "<tr>2</tr>")])

    async def collect() -> list[str]:
        return [m async for m in streams.runs_stream(lambda: next(states), poll_seconds=0,
                                                     rounds=3)]

    sent = asyncio.run(collect())
    assert [json.loads(m.split("data: ", 1)[1])["html"] for m in sent] == [
        "<tr>1</tr>", "<tr>2</tr>"]
    assert all(m.startswith("event: runs\n") for m in sent)


def test_loops_and_maps_are_counted_and_bodies_and_subgraphs_open(console: Console) -> None:
    import shutil

    from tests.support import ROOT

    shutil.copyfile(ROOT / "examples" / "no-worker.agraph.yaml",
                    console.root / "nw.agraph.yaml")
    console.login()
    run_id = console.start("nw.agraph.yaml")
    assert console.harness.run(run_id).status.value == "succeeded"
    page = console.client.get(f"/runs/{run_id}").text
    assert 'data-count-of="classify_items"> · 5 ran' in page  # five map items
    assert 'data-count-of="count_down"> · 3 ran' in page  # three loop iterations
    [child] = console.harness.child_runs(run_id)
    assert f'<a href="/runs/{child.run_id}"><g class="node" data-node="verdict"' in page
    assert f'href="/runs/{run_id}?scope=count_down"' in page
    body = console.client.get(f"/runs/{run_id}?scope=count_down").text
    assert 'data-node="tick" data-status="succeeded"' in body
    sub = console.client.get(f"/runs/{child.run_id}").text
    assert 'data-node="weigh" data-status="succeeded"' in sub
    assert 'data-node="tell" data-status="succeeded"' in sub


def test_a_node_shows_its_attempts_criteria_evidence_and_feedback(
        console: Console, monkeypatch: Any) -> None:
    import yaml

    from tests.web.conftest import write_graph

    retried = {
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/web-retry", "title": "r",
        "objective": "test", "requires_conformance": 3, "entrypoints": ["work"],
        "nodes": {"work": {
            "title": "work", "description": "Do it.",
            "outputs": {"n": {"type": "integer", "description": "n"}},
            "failure": {"retry": {"max_attempts": 2}},
            "success": {"criteria": [{"id": "two", "kind": "expression",
                                      "description": "n is 2", "expr": "self.outputs.n == 2"}]}}}}
    write_graph(console.root, "r.agraph.yaml", retried)
    answers = console.root / "answers.yaml"
    answers.write_text(yaml.safe_dump({"nodes": {"work": [{"outputs": {"n": 1}},
                                                          {"outputs": {"n": 2}}]}}))
    console.login()
    run_id = console.start("r.agraph.yaml")
    assert console.harness.run(run_id).status.value == "succeeded"
    page = console.client.get(f"/runs/{run_id}").text
    first, second = page.split("<li data-attempt='1'>")[1].split("<li data-attempt='2'>")
    assert "criteria_failed" in first and "✗ <code>two</code>" in first
    assert "told to attempt 2: two failed" in first
    assert "✓ <code>two</code>" in second and "succeeded" in second
