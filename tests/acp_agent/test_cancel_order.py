"""A session/cancel that reaches ``rein acp`` before a prompt's answer is sent ends that
prompt ``cancelled`` (ACP: a cancelled prompt turn answers with the ``cancelled`` stop
reason), also when the turn had already ended on its own and there was nothing to stop.

The agent runs in this process on the real harness; the client is a test double whose
``session_update`` sends the cancel once the turn's run has ended, and before the agent
can answer the prompt (the agent sends each update before it goes on), so the order is
fixed rather than raced."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.acp_agent.client import acp
from tests.appserver.serve import environment, reply, workspace


class CancellingClientDouble:
    """Records updates; on the first message text, waits for the turn's run to end, then
    cancels the prompt, as a person pressing stop just too late would."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.cancelled_after: str | None = None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        from rein.engine import events

        if update.session_update != "agent_message_chunk" or self.cancelled_after:
            return
        session = self.agent.sessions[session_id]
        store = self.agent.harness.store
        run_id = await session.turn.run_id
        async for _ in events.subscribe(store, run_id, until_ended=True):
            pass
        run = store.get_run(run_id)
        self.cancelled_after = run.status.value
        await self.agent.cancel(session_id=session_id)


def test_a_cancel_after_the_turn_ended_but_before_the_answer_is_cancelled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    from rein.acp.agent import ReinAgent
    from rein.engine.service import Harness

    root = workspace(tmp_path, [{**reply("done"), "text": "all done"}])
    for name, value in environment(root).items():
        monkeypatch.setenv(name, value)

    async def main() -> tuple[str, str | None]:
        with Harness.open(root) as harness:
            agent = ReinAgent(harness)
            client = CancellingClientDouble(agent)
            agent.on_connect(client)
            await agent.initialize(protocol_version=acp.PROTOCOL_VERSION)
            new = await agent.new_session(cwd=str(root), mcp_servers=[])
            done = await agent.prompt(session_id=new.session_id,
                                      prompt=[acp.text_block("finish")])
            return str(done.stop_reason), client.cancelled_after

    stop, run_status = asyncio.run(main())
    assert run_status == "succeeded"  # nothing was left to stop
    assert stop == "cancelled"
    assert "RUN_ENDED" not in capsys.readouterr().err  # too late to stop is no error
