"""Where approvals are signed, a client's MCP server launches only on an answer that
verifies: an acceptance the agent writes into the store (from its sandbox, with Python's
sqlite3, the entry and its ``approval/answered`` event both) while the editor's dialog is
open launches nothing; the question is asked again, and the server starts only if a
person's signed answer comes."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from rein.store.sqlite import SQLiteStore
from tests.acp_agent.client import Recorder, acp, environment, schema

pytest.importorskip("mcp_server_time", reason="mcp-server-time is not installed "
                                              "(pip install -e '.[test]')")

from tests.acp_agent.test_client_mcp import running, servers_with
from tests.appserver.serve import reply, workspace
from tests.cli.test_approvals_forged import FORGE, SANDBOXES, sandbox_param

SSH_KEYGEN = shutil.which("ssh-keygen")
pytestmark = pytest.mark.skipif(SSH_KEYGEN is None, reason="ssh-keygen (OpenSSH) is missing")

ANSWERED = ("INSERT INTO events (run_id, seq, type, payload, at) SELECT ?, "
            "COALESCE(MAX(seq), 0) + 1, 'approval/answered', ?, '2026-01-01T00:00:00Z' "
            "FROM events WHERE run_id = ?")
ACCEPTED = ("UPDATE approvals SET status = 'accepted', answer = ?, answered_at = created_at "
            "WHERE approval_id = ?")


class Forging(Recorder):
    """An editor whose launch dialog stays open while the agent writes its acceptance into
    the store; asked again, it withdraws the question (a cancel, which needs no key)."""

    def __init__(self, root: Path, sandbox: str) -> None:
        super().__init__(lambda call, options: None)
        self.root, self.sandbox = root, sandbox
        self.launch_asks = 0
        self.moot: asyncio.Event | None = None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        await super().session_update(session_id, update, **kwargs)
        if getattr(update, "tool_call_id", "").startswith("mcp-launch:") and \
                self.moot is not None:
            self.moot.set()

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> schema.RequestPermissionResponse:
        self.launch_asks += 1
        withdrawn = schema.RequestPermissionResponse(
            outcome=schema.DeniedOutcome(outcome="cancelled"))
        if self.launch_asks > 1:
            return withdrawn
        self.moot = asyncio.Event()
        approval = tool_call.raw_input["approval"]
        for statement, values in (
                (ACCEPTED, [json.dumps({"actor": "ana", "note": "fine"}), approval]),
                (ANSWERED, [session_id, json.dumps({"approval_id": approval,
                                                    "status": "accepted"}), session_id])):
            done = await asyncio.to_thread(
                subprocess.run, [*SANDBOXES[self.sandbox], sys.executable, "-c", FORGE,
                                 json.dumps([[statement, values]])],
                cwd=self.root, capture_output=True, text=True, timeout=120, check=False)
            assert done.stdout.strip() == "forged", done.stderr
        # rein moved on from this dialog. (Not asyncio.wait_for: on Python 3.11 it returns
        # instead of raising when it is cancelled as the event is set.)
        async with asyncio.timeout(60):
            await self.moot.wait()
        return withdrawn


def _signed_account(tmp_path: Path) -> tuple[Path, Path]:
    from rein.config.approver import os_account

    assert SSH_KEYGEN is not None
    account = tmp_path / "account"
    account.mkdir()
    key = account / "key"
    subprocess.run([SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                   check=True, capture_output=True)
    (account / "allowed_signers").write_text(
        f"{os_account()} {Path(f'{key}.pub').read_text().strip()}\n")
    (account / "rein.toml").write_text(
        f'[approver]\nallowed_signers = "{account / "allowed_signers"}"\n')
    return account / "etc-rein.toml", account / "rein.toml"


@pytest.mark.parametrize("sandbox", [sandbox_param("setpriv")])
def test_a_launch_accepted_in_the_store_without_rein_launches_nothing(
        tmp_path: Path, sandbox: str) -> None:
    managed, user = _signed_account(tmp_path)
    root = tmp_path / "ws"
    root.mkdir()
    workspace(root, [reply("no tools")])
    stand_in = ("import sys; from pathlib import Path; import rein.config.files as f; "
                f"f.authority_paths = lambda: [('managed', Path({str(managed)!r})), "
                f"('user', Path({str(user)!r}))]; from rein.cli import run; sys.exit(run())")
    mark = uuid.uuid4().hex
    seen = Forging(root, sandbox)

    async def main() -> int:
        async with acp.spawn_agent_process(
                seen, sys.executable, "-c", stand_in, "acp", "--workspace", str(root),
                env={**environment(root), "PATH": "/usr/bin:/bin"}, cwd=str(root)) as (conn,
                                                                                      _proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            new = await conn.new_session(cwd=str(root), mcp_servers=servers_with(mark))
            # The launches are asked as the first prompt begins (its turn then starts no
            # run: where approvals are signed, ACP cannot sign one).
            await conn.prompt(session_id=new.session_id,
                              prompt=[acp.text_block("what time is it?")])
            return running(mark)

    during = asyncio.run(main())
    assert (during, running(mark)) == (0, 0)
    assert seen.launch_asks == 2  # the forged answer was refused, and the question asked again
    store = SQLiteStore(root / ".rein" / "rein.db")
    try:
        [row] = [r for r in store.approvals() if r.kind.value == "mcp_launch"]
        assert row.status.value == "cancelled"
        refused = [e.payload for e in store.events(row.run_id) if e.type == "approval/refused"]
    finally:
        store.close()
    assert [(r["approval_id"], r["code"], r["status"]) for r in refused] == [
        (row.approval_id, "APPROVAL005", "accepted")]
