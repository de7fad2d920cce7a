"""The tool backend seam: an allowed call's I/O goes to the bound backend, after the check;
a denied or unapproved call never reaches it; a command with secrets in its environment
stays local; and the binding is one task's (and its children's), not the process's."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rein.tools import backend
from rein.tools.catalog import ToolCall
from rein.tools.gate import ToolPolicy
from rein.tools.process import ProcessResult
from rein.tools.sandbox import SandboxMode, SandboxPolicy
from rein.tools.toolbox import Toolbox

TOOLS = ("file_read", "file_write", "edit", "shell_exec")


class Buffers:
    """A named test double for an editor: files in memory, commands recorded, not run."""

    name = "buffers"

    def __init__(self, files: dict[str, str], *, reads: bool = True, writes: bool = True,
                 runs: bool = True) -> None:
        self.files, self.reads, self.writes, self.runs = files, reads, writes, runs
        self.seen: list[tuple[str, Any]] = []

    async def read_text(self, path: Path) -> str:
        self.seen.append(("read", path.name))
        return self.files[path.name]

    async def write_text(self, path: Path, text: str) -> None:
        self.seen.append(("write", path.name))
        self.files[path.name] = text

    async def run(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
                  timeout: float | None, max_output_bytes: int) -> ProcessResult:
        self.seen.append(("run", list(argv)[-1]))
        return ProcessResult(exit_code=0, stdout="ran in the editor\n", stderr="")


def box(ws: Path, client: Buffers, *, ask: tuple[str, ...] = (),
        secrets: dict[str, str] | None = None) -> Toolbox:
    policy = ToolPolicy.build(["fs:read:**", "fs:write:src/**", "shell:exec"],
                              sandbox=SandboxPolicy(mode=SandboxMode.WORKSPACE_WRITE,
                                                    workspace=ws),
                              ask=ask, denied=("fs:write:src/secret.txt",))
    return Toolbox(tools=TOOLS, policy=policy, backend=client, secrets=secrets,
                   env={"TOKEN": "t0ken-value"} if secrets else None)


def call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(id="c1", name=name, arguments=arguments)


def test_allowed_calls_do_their_io_through_the_backend(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    client = Buffers({"a.txt": "old text\n"})
    tools = box(tmp_path, client)

    async def main() -> list[Any]:
        return [await tools.run(call("file_read", path="src/a.txt")),
                await tools.run(call("edit", path="src/a.txt", old="old", new="new")),
                await tools.run(call("file_write", path="src/b.txt", content="b\n")),
                await tools.run(call("shell_exec", command="echo hi"))]

    (_, read), (_, edit), (_, write), (_, shell) = asyncio.run(main())
    assert read.ok and read.content == "old text\n"
    assert edit.ok and client.files["a.txt"] == "new text\n"
    assert write.ok and write.content == "created src/b.txt (2 bytes)"
    assert shell.ok and "ran in the editor" in shell.content
    assert client.seen == [("read", "a.txt"), ("read", "a.txt"), ("write", "a.txt"),
                           ("write", "b.txt"), ("run", "echo hi")]
    assert list(tmp_path.rglob("*.txt")) == []  # nothing was written locally


def test_denied_and_unapproved_calls_never_reach_the_backend(tmp_path: Path) -> None:
    client = Buffers({})
    tools = box(tmp_path, client, ask=("shell:exec",))

    async def main() -> list[Any]:
        return [await tools.run(call("file_write", path="src/secret.txt", content="x")),
                await tools.run(call("file_write", path="../out.txt", content="x")),
                await tools.run(call("file_write", path="docs/a.txt", content="x")),
                await tools.run(call("shell_exec", command="echo hi"))]

    results = asyncio.run(main())
    assert all(result.refused for _, result in results)
    assert client.seen == []


def test_only_what_the_client_granted_goes_through_it(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    client = Buffers({}, reads=False, runs=False)  # writes only
    tools = box(tmp_path, client)

    async def main() -> list[Any]:
        return [await tools.run(call("file_write", path="src/a.txt", content="a\n")),
                await tools.run(call("edit", path="src/a.txt", old="a", new="b"))]

    (_, write), (_, edit) = asyncio.run(main())
    assert write.ok and client.files == {"a.txt": "a\n"}
    # An edit needs the buffer's text too: without the read grant it is local (no file).
    assert not edit.ok and "no such file" in edit.content
    assert client.seen == [("write", "a.txt")]


def test_a_command_with_secrets_in_its_environment_stays_local(tmp_path: Path) -> None:
    client = Buffers({})
    tools = box(tmp_path, client, secrets={"TOKEN": "t0ken-value"})

    _, result = asyncio.run(tools.run(call("shell_exec", command="echo local")))
    assert result.ok and "local" in result.content
    assert client.seen == []


def test_the_binding_belongs_to_the_task_that_set_it() -> None:
    mine = backend.SessionBinding(backend=Buffers({}))

    async def main() -> dict[str, object]:
        seen: dict[str, object] = {}

        async def look(who: str) -> None:
            seen[who] = backend.current()

        elsewhere = asyncio.ensure_future(look("started before"))
        with backend.bound(mine):
            inside = asyncio.ensure_future(look("started inside"))
        await asyncio.gather(inside, elsewhere)
        seen["after the block"] = backend.current()
        return seen

    assert asyncio.run(main()) == {"started inside": mine, "started before": None,
                                   "after the block": None}
