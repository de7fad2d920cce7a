"""The approval queue in the page: forms from declared inputs, answers bound to the digest
shown, refusals for stale pages, and cancel kept apart from decline."""

from __future__ import annotations

from typing import Any

from tests.web.conftest import Console


def _gate(console: Console, node: str) -> Any:
    [row] = [r for r in console.pending() if r.request.get("node") == node]
    return row


def test_the_queue_shows_each_entry_with_its_digest_and_form(console: Console) -> None:
    console.login()
    console.start("g.agraph.yaml")
    [row] = console.pending()
    r = console.client.get("/approvals")
    assert r.status_code == 200
    assert f'data-approval=\'{row.approval_id}\'' in r.text
    assert row.digest in r.text and "Ship it?" in r.text
    assert f'name="digest" value="{row.digest}"' in r.text
    assert r.text.count('name="csrf"') == 1
    for action in ("accept", "decline", "cancel"):
        assert f"value='{action}'" in r.text


def test_accepting_in_the_page_continues_the_run_to_the_input_gate(console: Console) -> None:
    console.login()
    run_id = console.start("g.agraph.yaml")
    ok = _gate(console, "ok")
    r = console.post(f"/approvals/{ok.approval_id}", {"action": "accept",
                                                      "digest": ok.digest})
    assert r.status_code == 303 and r.headers["location"] == f"/runs/{run_id}"
    assert console.steering is not None and console.steering.idle(60)
    ask = _gate(console, "ask")
    page = console.client.get("/approvals").text
    assert "name='value.count'" in page and "(integer)" in page  # from gate.collect
    r = console.post(f"/approvals/{ask.approval_id}", {
        "action": "accept", "digest": ask.digest, "value.count": "3"})
    assert r.status_code == 303
    assert console.steering.idle(60)
    assert console.harness.run(run_id).status.value == "succeeded"
    stored = console.harness.store.get_approval(ask.approval_id)
    assert stored is not None and stored.answer is not None
    assert stored.answer["values"] == {"count": 3}  # typed by the declared integer input


def test_an_answer_naming_another_digest_is_refused_and_not_recorded(console: Console) -> None:
    console.login()
    console.start("g.agraph.yaml")
    [row] = console.pending()
    r = console.post(f"/approvals/{row.approval_id}", {"action": "accept",
                                                       "digest": "sha256:" + "0" * 64})
    assert r.status_code == 409 and "APPROVAL_STALE" in r.text
    assert [p.approval_id for p in console.pending()] == [row.approval_id]


def test_a_page_left_open_while_the_graph_changed_cannot_approve(console: Console) -> None:
    console.login()
    run_id = console.start("g.agraph.yaml")
    [row] = console.pending()
    graph = console.root / "g.agraph.yaml"
    graph.write_text(graph.read_text().replace("Ship it?", "Ship something else?"))
    r = console.post(f"/approvals/{row.approval_id}", {"action": "accept",
                                                       "digest": row.digest})
    assert r.status_code == 409 and "RT053" in r.text and "was not recorded" in r.text
    assert [p.approval_id for p in console.pending()] == [row.approval_id]
    assert console.harness.run(run_id).status.value == "awaiting_human"


def test_approve_and_run_of_a_changed_file_is_refused(console: Console) -> None:
    console.login()
    shown = console.digest("g.agraph.yaml")
    graph = console.root / "g.agraph.yaml"
    graph.write_text(graph.read_text().replace("Ship it?", "Ship it now?"))
    r = console.post("/plan/run", {"path": "g.agraph.yaml", "digest": shown})
    assert r.status_code == 409 and "APPROVAL_STALE" in r.text
    assert console.harness.store.list_runs() == []


def test_decline_fails_the_gate_and_cancel_stops_the_run(console: Console) -> None:
    console.login()
    declined = console.start("g.agraph.yaml")
    [row] = console.pending()
    console.post(f"/approvals/{row.approval_id}", {"action": "decline", "digest": row.digest})
    assert console.steering is not None and console.steering.idle(60)
    assert console.harness.run(declined).status.value == "failed"
    nodes = {n.node_id: n.status.value for n in console.harness.nodes(declined)}
    assert nodes["ok"] == "failed"
    cancelled = console.start("g.agraph.yaml")
    [row] = console.pending()
    console.post(f"/approvals/{row.approval_id}", {"action": "cancel", "digest": row.digest})
    assert console.steering.idle(60)
    assert console.harness.run(cancelled).status.value == "cancelled"


def test_the_run_page_cancels_a_waiting_run(console: Console) -> None:
    console.login()
    run_id = console.start("g.agraph.yaml")
    assert "Cancel the run" in console.client.get(f"/runs/{run_id}").text
    r = console.post(f"/runs/{run_id}/cancel", {})
    assert r.status_code == 303
    assert console.harness.run(run_id).status.value == "cancelled"


def test_an_unknown_action_is_refused(console: Console) -> None:
    console.login()
    console.start("g.agraph.yaml")
    [row] = console.pending()
    r = console.post(f"/approvals/{row.approval_id}", {"action": "approve-all",
                                                       "digest": row.digest})
    assert r.status_code == 400 and "WEB400" in r.text


def test_a_question_asked_before_any_run_links_to_its_thread() -> None:
    """A graph turn's digest question and an editor's MCP launch are filed under their turn
    or thread (no run exists yet): the card links there, not to a run page that is not."""
    from rein.core.ids import ApprovalId, RunId
    from rein.core.states import ApprovalKind, ApprovalStatus
    from rein.store.base import ApprovalRow
    from rein.web.pages_queue import approval_card

    def card(run_id: str, **request: str) -> str:
        row = ApprovalRow(approval_id=ApprovalId("apv-1"), run_id=RunId(run_id), key="k",
                          kind=ApprovalKind.MCP_LAUNCH, status=ApprovalStatus.PENDING,
                          digest="sha256:d", request={"prompt": "Launch?", **request},
                          created_at="2026-12-02T00:00:00Z")
        return approval_card(row, csrf="c", read_only=True)

    assert "href='/threads/thr-1'" in card("thr-1", thread="thr-1")
    assert "href='/threads/thr-1'" in card("turn-1", thread="thr-1", turn="turn-1")
    ran = card("run-1", thread="thr-1", turn="turn-1")
    assert "href='/runs/run-1'" in ran and "/threads/" not in ran
