"""The real ``codex app-server`` (0.163.0, from the ``openai-codex-cli-bin`` wheel) and
``rein app-server`` driven with the same official-SDK calls, for the methods that need no
model: the same outcome (a result or an error) for each, every answer valid by Codex's
schema, and the same answers where both servers know the same things (the threads loaded,
a fresh thread's turns, an unsubscribe, the files a fuzzy search finds, no hooks, no MCP
servers). A command (``command/exec``) is answered with a result by both (rein's workspace
allows the shell; whether Codex's own sandbox can run it here is Codex's affair), and a
review with no instructions or a compaction of no thread is refused by both. Skipped, saying
why, where the codex wheel is not installed."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from openai_codex import CodexConfig
from openai_codex.client import CodexClient

from tests.appserver import codex_schema
from tests.appserver.codex_bin import codex_binary, codex_env
from tests.appserver.serve import environment, server_args, workspace

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("account/read", {}),
    ("thread/start", {}),
    ("thread/loaded/list", {}),
    ("thread/read", {"threadId": "<thread>"}),
    ("thread/name/set", {"threadId": "<thread>", "name": "named"}),
    ("thread/list", {}),
    ("config/read", {}),
    ("skills/list", {"cwds": ["<root>"]}),
    ("fuzzyFileSearch", {"query": "rdr", "roots": ["<root>"]}),
    ("model/list", {}),
    ("thread/unsubscribe", {"threadId": "<thread>"}),
    ("thread/unsubscribe", {"threadId": "<thread>"}),
    ("thread/loaded/list", {}),
    ("hooks/list", {"cwds": ["<root>"]}),
    ("mcpServerStatus/list", {}),
    ("mcpServerStatus/list", {"threadId": "<thread>"}),
    ("command/exec", {"command": ["echo", "hi"]}),
    ("review/start", {"threadId": "<thread>", "target": {"type": "custom",
                                                         "instructions": ""}}),
    ("thread/compact/start", {"threadId": "not-a-thread"}),
]


def drive(c: CodexClient, root: Path) -> list[tuple[str, str, Any]]:
    """Each call's (method, "result" or "error", the body); ``<thread>`` is the thread
    the call to thread/start made, ``<root>`` the workspace."""
    c.initialize()
    thread = ""
    out: list[tuple[str, str, Any]] = []
    for method, params in CALLS:
        given = {k: (thread if v == "<thread>" else
                     [str(root)] if v == ["<root>"] else v) for k, v in params.items()}
        try:
            result = c._request_raw(method, given)
        except Exception as exc:  # noqa: BLE001 - the outcome compared is the error
            out.append((method, "error", str(exc)))
            continue
        if method == "thread/start":
            assert isinstance(result, dict)
            thread = result["thread"]["id"]
        out.append((method, "result", result))
    return out


def test_codex_and_rein_answer_the_same_calls_alike(tmp_path: Path) -> None:
    binary = codex_binary()
    roots = {}
    for name in ("codex", "rein"):
        root = tmp_path / name
        root.mkdir()
        (root / "src").mkdir()
        (root / "src" / "reader.py").write_text("")
        (root / "src" / "other.txt").write_text("")
        roots[name] = root
    workspace(roots["rein"], [])
    with (roots["rein"] / "rein.toml").open("a") as toml:  # command/exec: no one to ask
        toml.write('\n[policy]\nshell = "allow"\n')
    home = tmp_path / "codex-home"
    with CodexClient(CodexConfig(codex_bin=str(binary), cwd=str(roots["codex"]),
                                 env=codex_env(home))) as c:
        codex = drive(c, roots["codex"])
    with CodexClient(CodexConfig(launch_args_override=server_args(roots["rein"]),
                                 cwd=str(roots["rein"]),
                                 env=environment(roots["rein"]))) as c:
        rein = drive(c, roots["rein"])

    assert [(m, kind) for m, kind, _ in rein] == [(m, kind) for m, kind, _ in codex]
    for method, kind, body in [*codex, *rein]:
        if kind == "result":
            assert codex_schema.errors({"id": 1, "result": body}, answering=method) == []
    by = {"codex": codex, "rein": rein}
    thread = {k: v[1][2]["thread"]["id"] for k, v in by.items()}
    assert all(uuid.UUID(t) for t in thread.values())
    same = {}
    for name, calls in by.items():
        t = thread[name]
        same[name] = [
            calls[2][2]["data"] == [t],  # the thread started is loaded
            calls[1][2]["thread"]["projectId"],
            [f["path"] for f in calls[8][2]["files"]],
            calls[10][2]["status"], calls[11][2]["status"],  # unsubscribed, then not
            calls[12][2]["data"] == [t],  # and still loaded
            calls[4][2],  # thread/name/set: {}
            [e["hooks"] for e in calls[13][2]["data"]],  # no hooks configured
            calls[14][2], calls[15][2],  # no MCP servers
        ]
    assert same["rein"] == same["codex"]
