"""An answer given over the app-server records that surface; a server that runs confined
(started inside an agent's sandbox) answers nothing: the client is warned with APPROVAL003
and the question stays open in the queue. The server is the real one, on a pipe."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from rein.store.sqlite import SQLiteStore
from tests.appserver.serve import environment, reply, server_args, shell, workspace
from tests.appserver.test_wire import Raw

SETPRIV = shutil.which("setpriv")


class Confined(Raw):
    """``rein app-server`` started under ``prefix`` (a sandbox's argv)."""

    def __init__(self, root: Path, prefix: Sequence[str]) -> None:
        self.proc = subprocess.Popen([*prefix, *server_args(root)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env={**os.environ, **environment(root)}, cwd=root)


def _ask(server: Raw) -> dict[str, Any]:
    """Open a thread and a turn whose shell call asks for approval: the question."""
    server.send({"id": 1, "method": "initialize", "params": {"clientInfo": {
        "name": "t", "version": "1"}}})
    server.read()
    server.send({"id": 2, "method": "thread/start", "params": {}})
    thread = server.until("id", 2)["result"]["thread"]["id"]
    server.send({"id": 3, "method": "turn/start", "params": {
        "threadId": thread, "input": [{"type": "text", "text": "run echo one"}]}})
    return server.until("method", "item/commandExecution/requestApproval")


def _stored(root: Path, approval_id: str) -> Any:
    store = SQLiteStore.open(root, create=False)
    assert store is not None
    try:
        return store.get_approval(approval_id)
    finally:
        store.close()


def _served(server: Raw) -> Any:
    yield server
    if server.proc.poll() is None:
        server.proc.kill()
        server.proc.wait()


def test_an_answer_over_the_app_server_records_the_surface(tmp_path: Path) -> None:
    root = workspace(tmp_path, [shell("echo one"), reply("ran one")])
    for server in _served(Raw(root)):
        asked = _ask(server)
        server.send({"id": asked["id"], "result": {"decision": "accept"}})
        server.until("method", "turn/completed")
        assert server.close() == 0
    row = _stored(root, asked["id"])
    assert row.status.value == "accepted"
    given = row.answer["given"]
    assert given["surface"] == "app-server" and given["confined"] is False
    assert given["identity"]["method"] == "os-user"


@pytest.mark.skipif(SETPRIV is None, reason="setpriv (util-linux) is missing")
def test_a_confined_app_server_answers_nothing(tmp_path: Path) -> None:
    root = workspace(tmp_path, [shell("echo one"), reply("ran one")])
    assert SETPRIV is not None
    for server in _served(Confined(root, [SETPRIV, "--no-new-privs"])):
        asked = _ask(server)
        server.send({"id": asked["id"], "result": {"decision": "accept"}})
        warned = server.until("method", "warning")
        assert warned["params"]["message"].startswith("APPROVAL003: ")
        assert server.close() == 0
    row = _stored(root, asked["id"])
    assert row.status.value == "pending" and row.answer is None


SSH_KEYGEN = shutil.which("ssh-keygen")


class SignedServer(Raw):
    """``rein app-server`` where approvals are signed: the account's files (their stand-ins,
    read by the server process) name an allowed-signers file and a signing key."""

    def __init__(self, root: Path, account: Path) -> None:
        managed, user = account / "etc-rein.toml", account / "rein.toml"
        stand_in = ("import sys; from pathlib import Path; import rein.config.files as f; "
                    f"f.authority_paths = lambda: [('managed', Path({str(managed)!r})), "
                    f"('user', Path({str(user)!r}))]; from rein.cli import run; "
                    "sys.exit(run())")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", stand_in, "app-server", "--workspace", str(root)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, **environment(root)}, cwd=root)


@pytest.mark.skipif(SSH_KEYGEN is None, reason="ssh-keygen (OpenSSH) is missing")
def test_where_approvals_are_signed_the_app_server_starts_no_run(tmp_path: Path) -> None:
    """The app-server cannot sign a run's approval: its turn ends failed (APPROVAL004),
    with no run, rather than run under an approval no person's key gave."""
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
        f'[approver]\nallowed_signers = "{account / "allowed_signers"}"\n'
        f'signing_key = "{key}"\n')
    root = tmp_path / "ws"
    root.mkdir()
    workspace(root, [shell("echo one"), reply("ran one")])
    for server in _served(SignedServer(root, account)):
        server.send({"id": 1, "method": "initialize", "params": {"clientInfo": {
            "name": "t", "version": "1"}}})
        server.read()
        server.send({"id": 2, "method": "thread/start", "params": {}})
        thread = server.until("id", 2)["result"]["thread"]["id"]
        server.send({"id": 3, "method": "turn/start", "params": {
            "threadId": thread, "input": [{"type": "text", "text": "run echo one"}]}})
        ended = server.until("method", "turn/completed")["params"]["turn"]
        assert ended["status"] == "failed"
        assert "APPROVAL004" in str(ended["error"]), ended
        assert server.close() == 0
    store = SQLiteStore.open(root, create=False)
    assert store is not None
    try:
        assert store.list_runs() == []
    finally:
        store.close()
