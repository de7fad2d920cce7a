"""A prompt that links an AGS graph runs it: the plan shown, the digest approval as a
permission request with the digest in its title, node states as plan entries, a gate."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from rein.store.sqlite import SQLiteStore
from tests.acp_agent.client import Recorder, acp, spawn, start
from tests.appserver.serve import reply, workspace
from tests.appserver.test_graph_turn import GRAPH


def run_graph(root: Path, decide: Any) -> tuple[Recorder, str]:
    (root / "gated.agraph.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    seen = Recorder(decide)

    async def main() -> str:
        async with spawn(root, seen) as (conn, _proc):
            session = await start(conn, root)
            link = acp.resource_link_block("gated", f"file://{root}/gated.agraph.yaml")
            done = await conn.prompt(session_id=session,
                                     prompt=[acp.text_block("ship it"), link])
            return str(done.stop_reason)

    return seen, asyncio.run(main())


def test_a_graph_prompt_asks_for_its_digest_then_its_gate(tmp_path: Path) -> None:
    root = workspace(tmp_path, [reply("shipped")])
    seen, stop = run_graph(root, lambda call, options: "allow_once")
    assert stop == "end_turn"
    [run] = SQLiteStore(root / ".rein" / "rein.db").list_runs()
    digest, gate = seen.asked
    assert run.graph_digest in digest["title"] and "rein/tests/gated" in digest["title"]
    assert digest["options"] == ["allow_once", "reject_once"]  # never "always" for a digest
    assert gate["title"] == "Ship the release?"
    plans = [[(e["content"], e["status"]) for e in u["entries"]]
             for u in seen.updates if u["sessionUpdate"] == "plan"]
    assert plans[0] == [("ship_gate", "pending"), ("announce", "pending")]
    assert ("ship_gate", "in_progress") in plans[1] + plans[2]
    assert plans[-1] == [("ship_gate", "completed"), ("announce", "completed")]
    thoughts = "".join(u["content"]["text"] for u in seen.updates
                       if u["sessionUpdate"] == "agent_thought_chunk")
    assert "ship_gate" in thoughts and "announce" in thoughts  # the plan, before approval
    assert f"run {run.run_id} succeeded" in seen.text()


def test_a_declined_digest_runs_nothing(tmp_path: Path) -> None:
    root = workspace(tmp_path, [reply("shipped")])
    seen, stop = run_graph(root, lambda call, options: "reject_once")
    assert stop == "end_turn"
    assert len(seen.asked) == 1
    assert SQLiteStore(root / ".rein" / "rein.db").list_runs() == []
    assert "nothing ran" in seen.text()


def test_cancelling_at_the_digest_question_ends_the_prompt_cancelled(tmp_path: Path) -> None:
    root = workspace(tmp_path, [reply("shipped")])
    seen, stop = run_graph(root, lambda call, options: None)  # the client cancels
    assert stop == "cancelled"
    assert len(seen.asked) == 1 and "digest" in seen.asked[0]["title"]
    assert SQLiteStore(root / ".rein" / "rein.db").list_runs() == []
