"""Where the client grants ``fs`` and ``terminal``, the file and shell tools go through it
(the editor's buffers and terminals), after rein's permission check: a denied path and a
declined command never reach the client."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from rein.tools.sandbox import bubblewrap_status
from tests.acp_agent.client import Recorder, acp, schema, spawn
from tests.appserver.serve import reply, shell, workspace


def write(path: str, content: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "file_write",
                            "arguments": {"path": path, "content": content}}]}


def read(path: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "file_read", "arguments": {"path": path}}]}


class Editor(Recorder):
    """A client whose files are buffers (nothing reaches the disk) and whose terminals run
    the command they are given, recording every fs and terminal request."""

    def __init__(self, decide: Any, buffers: dict[str, str]) -> None:
        super().__init__(decide)
        self.buffers = buffers
        self.requests: list[tuple[str, Any]] = []
        self.terminals: dict[str, tuple[int, str]] = {}

    async def read_text_file(self, path: str, session_id: str, **kwargs: Any
                             ) -> schema.ReadTextFileResponse:
        self.requests.append(("fs/read_text_file", path))
        return schema.ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(self, content: str, path: str, session_id: str,
                              **kwargs: Any) -> schema.WriteTextFileResponse:
        self.requests.append(("fs/write_text_file", (path, content)))
        self.buffers[path] = content
        return schema.WriteTextFileResponse()

    async def create_terminal(self, command: str, session_id: str, args: Any = None,
                              cwd: Any = None, env: Any = None, output_byte_limit: Any = None,
                              **kwargs: Any) -> schema.CreateTerminalResponse:
        argv = [command, *(args or [])]
        self.requests.append(("terminal/create", argv))
        child = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env={v.name: v.value for v in env or ()},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await child.communicate()
        terminal = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal] = (int(child.returncode or 0), out.decode())
        return schema.CreateTerminalResponse(terminal_id=terminal)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any
                                     ) -> schema.WaitForTerminalExitResponse:
        self.requests.append(("terminal/wait_for_exit", terminal_id))
        return schema.WaitForTerminalExitResponse(exit_code=self.terminals[terminal_id][0])

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any
                              ) -> schema.TerminalOutputResponse:
        self.requests.append(("terminal/output", terminal_id))
        code, text = self.terminals[terminal_id]
        return schema.TerminalOutputResponse(
            output=text, truncated=False, exit_status=schema.TerminalExitStatus(exit_code=code))

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any
                               ) -> schema.ReleaseTerminalResponse:
        self.requests.append(("terminal/release", terminal_id))
        return schema.ReleaseTerminalResponse()


GRANTS = schema.ClientCapabilities(
    fs=schema.FileSystemCapabilities(read_text_file=True, write_text_file=True),
    terminal=True)


def converse(root: Path, editor: Editor, prompts: list[str],
             capabilities: Any = GRANTS) -> list[str]:
    async def main() -> list[str]:
        async with spawn(root, editor) as (conn, _proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                  client_capabilities=capabilities)
            session = (await conn.new_session(cwd=str(root), mcp_servers=[])).session_id
            stops = []
            for text in prompts:
                done = await conn.prompt(session_id=session, prompt=[acp.text_block(text)])
                stops.append(done.stop_reason)
            return stops

    return asyncio.run(main())


def test_a_write_and_a_command_go_through_the_editor(tmp_path: Path) -> None:
    root = workspace(tmp_path, [write("notes.txt", "from the model\n"),
                                read("draft.md"),
                                shell("echo from-the-terminal"), reply("done")])
    draft = str(root / "draft.md")
    editor = Editor(lambda call, options: "allow_once",
                    {draft: "an unsaved buffer\n"})  # not on disk: only the editor has it

    assert converse(root, editor, ["write, read, run"]) == ["end_turn"]

    notes = str(root / "notes.txt")
    assert editor.buffers[notes] == "from the model\n"
    assert not (root / "notes.txt").exists()  # the editor's buffer took it, not the disk
    kinds = [kind for kind, _ in editor.requests]
    assert kinds == ["fs/write_text_file", "fs/read_text_file", "terminal/create",
                     "terminal/wait_for_exit", "terminal/output", "terminal/release"]
    argv = editor.requests[2][1]
    # The terminal shows the command after rein's sandbox launcher, not bwrap's line.
    assert argv[0] == "/bin/sh" and Path(argv[1]).name == "rein-sandbox"
    assert argv[2:] == ["/bin/sh", "-c", "echo from-the-terminal"]
    write_call, read_call, shell_call = editor.calls()
    assert (write_call["kind"], write_call["status"]) == ("edit", "completed")
    # The model saw the buffer's text, and the terminal's output came back as the call's.
    assert read_call["status"] == "completed"
    assert (shell_call["kind"], shell_call["status"]) == ("execute", "completed")
    assert "from-the-terminal" in shell_call["content"][0]["content"]["text"]
    assert [a["kind"] for a in editor.asked] == ["execute"]  # rein asked before it ran


def test_the_terminal_shows_the_command_and_it_runs_confined(tmp_path: Path) -> None:
    """The line the editor is given is the launcher and the command, never bwrap's options;
    the launcher runs the very sandbox rein built: a write outside the workspace fails
    (where bubblewrap is usable), and the launcher is gone once the terminal is released."""
    (tmp_path / "ws").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    command = f"echo shown; touch {outside}/escaped"
    root = workspace(tmp_path / "ws", [shell(command), reply("done")])
    editor = Editor(lambda call, options: "allow_once", {})

    assert converse(root, editor, ["run"]) == ["end_turn"]

    [argv] = [a for kind, a in editor.requests if kind == "terminal/create"]
    assert argv[2:] == ["/bin/sh", "-c", command]
    assert not any(a.startswith("--") for a in argv), argv  # no bwrap option shown
    assert not Path(argv[1]).exists()  # removed after terminal/release
    [shell_call] = editor.calls()
    assert "shown" in shell_call["content"][0]["content"]["text"]
    if bubblewrap_status()[0] is not None:
        assert not (outside / "escaped").exists()
        assert "escaped" in shell_call["content"][0]["content"]["text"]  # touch's error


def test_a_denied_path_and_a_declined_command_never_reach_the_editor(tmp_path: Path) -> None:
    root = workspace(tmp_path, [write(".rein/evil.txt", "x"), shell("echo never"),
                                reply("both refused")])
    editor = Editor(lambda call, options: "reject_once", {})

    assert converse(root, editor, ["try"]) == ["end_turn"]

    assert editor.requests == []  # neither the write nor the command reached the client
    denied, declined = editor.calls()
    assert denied["status"] == "failed" and declined["status"] == "failed"
    assert [a["picked"] for a in editor.asked] == ["reject_once"]  # only the command asked
    assert not (root / ".rein" / "evil.txt").exists()


def test_without_the_grants_the_tools_stay_local(tmp_path: Path) -> None:
    root = workspace(tmp_path, [write("notes.txt", "local\n"), reply("done")])
    editor = Editor(lambda call, options: "allow_once", {})

    assert converse(root, editor, ["write"], schema.ClientCapabilities()) == ["end_turn"]

    assert editor.requests == []
    assert (root / "notes.txt").read_text() == "local\n"
    assert os.path.join(str(root), "notes.txt") not in editor.buffers


class Hanging(Editor):
    """An editor whose terminal runs until it is killed; the person cancels the prompt
    while it runs."""

    def __init__(self) -> None:
        super().__init__(lambda call, options: "allow_once", {})
        self.killed = asyncio.Event()
        self.released = asyncio.Event()

    async def create_terminal(self, command: str, session_id: str, args: Any = None,
                              cwd: Any = None, env: Any = None, output_byte_limit: Any = None,
                              **kwargs: Any) -> schema.CreateTerminalResponse:
        self.requests.append(("terminal/create", [command, *(args or [])]))
        self.terminals["term-1"] = (0, "")
        return schema.CreateTerminalResponse(terminal_id="term-1")

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any
                                     ) -> schema.WaitForTerminalExitResponse:
        self.requests.append(("terminal/wait_for_exit", terminal_id))
        await self.conn.cancel(session_id=session_id)
        await self.killed.wait()
        return schema.WaitForTerminalExitResponse(signal="SIGKILL")

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any
                            ) -> schema.KillTerminalResponse:
        self.requests.append(("terminal/kill", terminal_id))
        self.killed.set()
        return schema.KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any
                               ) -> schema.ReleaseTerminalResponse:
        self.released.set()
        return await super().release_terminal(session_id, terminal_id, **kwargs)


def test_a_cancelled_prompt_kills_the_editors_terminal(tmp_path: Path) -> None:
    root = workspace(tmp_path, [shell("sleep 600"), reply("never")])
    editor = Hanging()

    async def main() -> str:
        async with spawn(root, editor) as (conn, _proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                  client_capabilities=GRANTS)
            session = (await conn.new_session(cwd=str(root), mcp_servers=[])).session_id
            done = await conn.prompt(session_id=session, prompt=[acp.text_block("sleep")])
            # The prompt ends as soon as the run is cancelled; the release follows.
            await asyncio.wait_for(editor.released.wait(), 60)
            return str(done.stop_reason)

    assert asyncio.run(main()) == "cancelled"

    kinds = [kind for kind, _ in editor.requests]
    assert kinds == ["terminal/create", "terminal/wait_for_exit", "terminal/kill",
                     "terminal/release"]
