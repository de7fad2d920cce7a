"""An answer given over the app-server records that surface; a server that runs confined
(started inside an agent's sandbox) answers nothing: the client is warned with APPROVAL003
and the question stays open in the queue. The server is the real one, on a pipe."""

from __future__ import annotations

import os
import shutil
import subprocess
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
