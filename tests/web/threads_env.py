"""A thread whose conversation turn (the scripted provider) waits on a command approval.

The turn is begun and driven in this process up to its question, as a client of the
session runtime (the app-server, the SDK) would; the run then waits in the store for an
answer from anywhere, here the console.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from pathlib import Path
from typing import Any

import rein

TOML = ('[providers.script]\nkind = "scripted"\noptions = { script = "turns.json" }\n\n'
        '[tiers.standard]\nprovider = "script"\nmodel = "scripted-1"\n')
COMMAND = "echo web-console-was-here"
# The model says something, runs a command (asked: the default approval policy), writes a
# file, and answers.
SCRIPT = [
    {"text": "I will run the command first.",
     "tool_calls": [{"name": "shell_exec", "arguments": {"command": COMMAND}}]},
    {"tool_calls": [{"name": "file_write", "arguments": {"path": "notes.txt",
                                                         "content": "one\ntwo\n"}}]},
    {"tool_calls": [{"name": "submit_outputs", "arguments": {"reply": "All done."}}]},
]


def configure(root: Path) -> None:
    (root / "rein.toml").write_text(TOML)
    (root / "turns.json").write_text(json.dumps(SCRIPT))


def waiting_thread(root: Path, *, name: str = "web thread",
                   store_url: str | None = None) -> tuple[str, str]:
    """(thread id, approval id): a thread whose first turn waits on its command."""

    async def begin() -> tuple[str, str]:
        with rein.Harness.open(root, store_url=store_url) as harness:
            thread = harness.start_thread(name=name, sandbox="workspace-write")
            turn = await thread.run("run the command, then write notes.txt")
            asked: Any = None
            async for message in turn.stream():
                if message.method == "item/commandExecution/requestApproval":
                    asked = message
                    break
            assert asked is not None, "the turn asked nothing"
            return thread.id, str(asked.id)

    # A thread of its own: a caller such as Playwright's sync API has a loop running here.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, begin()).result()
