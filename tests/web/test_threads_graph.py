"""A graph turn on a thread's page: the plan, the nodes as steps, a link to the run's page,
and the graph's gate answered in the page (a question of the thread, like a command)."""

from __future__ import annotations

import asyncio
import concurrent.futures
from pathlib import Path
from typing import Any

import rein
from rein.protocol import ServerRequest, transcript
from tests.web.conftest import Console, make_console


def _graph_turn_at_its_gate(root: Path) -> tuple[str, str]:
    """(thread id, gate approval id): a graph turn whose digest was accepted by its client
    and whose graph now waits at its first gate."""

    async def begin() -> tuple[str, str]:
        with rein.Harness.open(root) as harness:
            thread = harness.start_thread(name="release")
            turn = await thread.run([{"type": "text", "text": "run the gated graph"},
                                     {"type": "mention", "name": "g",
                                      "path": "g.agraph.yaml"}])
            async for message in turn.stream():
                if isinstance(message, ServerRequest):
                    questions = message.params.get("questions") or [{}]
                    if questions[0].get("id") == "digest":  # may the graph run, by digest
                        await turn.answer(message.id, "accept")
                        continue
                    return thread.id, message.id
            raise AssertionError("the graph asked nothing")

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, begin()).result()


def test_a_graph_turn_shows_its_plan_links_its_run_and_answers_its_gate(
        workspace: Path) -> None:
    thread_id, gate = _graph_turn_at_its_gate(workspace)
    for c in make_console(workspace):
        _check(c, thread_id, gate)


def _check(c: Console, thread_id: str, gate: str) -> None:
    c.login()
    [view] = transcript.turns(c.harness, thread_id)
    assert view.kind == "graph" and view.run_id is not None
    page = c.client.get(f"/threads/{thread_id}").text
    assert "data-type='plan'" in page and "Plan: gated" in page  # `rein graph plan`'s text
    assert f"href='/runs/{view.run_id}'" in page
    steps = page.split("<ol class='steps'>", 1)[1].split("</ol>", 1)[0]
    assert "<code>work</code>" in steps and "<code>ok</code>" in steps
    card = page.split(f"data-question='{gate}'", 1)[1].split("</form>", 1)[0]
    assert "Ship it?" in card
    entry = c.harness.store.get_approval(gate)
    assert entry is not None and entry.digest in card
    r = c.post(f"/threads/{thread_id}/approvals/{gate}",
               {"action": "accept", "digest": entry.digest})
    assert r.status_code == 303
    assert c.steering is not None and c.steering.idle(60)
    answered: Any = c.harness.store.get_approval(gate)
    assert answered.status.value == "accepted"
    [view] = transcript.turns(c.harness, thread_id)
    assert gate not in {q.id for q in view.pending}
    assert c.harness.run(view.run_id).status.value == "awaiting_human"  # the next gate


def test_a_gate_cannot_be_accepted_for_the_session(workspace: Path) -> None:
    thread_id, gate = _graph_turn_at_its_gate(workspace)
    for c in make_console(workspace):
        c.login()
        page = c.client.get(f"/threads/{thread_id}").text
        card = page.split(f"data-question='{gate}'", 1)[1].split("</form>", 1)[0]
        assert "value='accept'" in card and "acceptForSession" not in card
        entry = c.harness.store.get_approval(gate)
        assert entry is not None
        r = c.post(f"/threads/{thread_id}/approvals/{gate}",
                   {"action": "acceptForSession", "digest": entry.digest})
        assert r.status_code == 400 and "WEB432" in r.text
        still: Any = c.harness.store.get_approval(gate)
        assert still.status.value == "pending"  # nothing recorded
        assert c.harness.sessions.accepted_for_session(thread_id) == frozenset()
