"""The command worker, with a small script standing in for a CLI agent."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from rein.core.failures import FailureClass
from rein.core.usage import Budget
from rein.tools.gitguard import git_refs
from rein.tools.sandbox import bubblewrap_status
from rein.workers.base import AttemptRequest, AttemptResult, Item, OutputSpec
from rein.workers.command import CommandTemplate, CommandWorker, parse_outputs

BWRAP, WHY_NOT = bubblewrap_status()
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason=f"bubblewrap unusable here: {WHY_NOT}")


def agent(tmp_path: Path, body: str) -> Path:
    """A stand-in CLI agent: a Python script outside the workspace."""
    script = tmp_path / "agent.py"
    script.write_text("import json, os, subprocess, sys, pathlib\n" + textwrap.dedent(body))
    return script


def request(ws: Path, **kw: Any) -> AttemptRequest:
    base: dict[str, Any] = {
        "run_id": "r1",
        "node_id": "write_note",
        "attempt": 1,
        "kind": "task",
        "title": "Write the note",
        "brief": "Write NOTE.md.",
        "inputs": {},
        "outputs": (OutputSpec(name="summary", type="string", description="what was done"),),
        "permissions": ("fs:write:NOTE.md",),
        "tools": (),
        "workspace": str(ws),
        "workspace_access": "read_write",
    }
    base.update(kw)
    return AttemptRequest(**base)


def drive(worker: CommandWorker, req: AttemptRequest) -> tuple[list[Item], AttemptResult]:
    async def go() -> tuple[list[Item], AttemptResult]:
        items: list[Item] = []
        async for out in worker.run(req):
            if isinstance(out, AttemptResult):
                return items, out
            items.append(out)
        raise AssertionError("no result")

    return asyncio.run(go())


def worker_for(script: Path, *args: str, **kw: Any) -> CommandWorker:
    return CommandWorker(CommandTemplate(argv=(sys.executable, str(script), *args), **kw))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def test_last_line_of_stdout_is_the_report(tmp_path: Path, ws: Path) -> None:
    script = agent(
        tmp_path,
        """
        prompt = pathlib.Path(sys.argv[1]).read_text()
        assert "Write NOTE.md." in prompt and "REIN_OUTPUTS_FILE" in prompt
        pathlib.Path("NOTE.md").write_text("# Note\\n")
        print("working...")
        print(json.dumps({"summary": "wrote NOTE.md", "extra": 1}))
    """,
    )
    items, result = drive(worker_for(script, "{prompt_file}"), request(ws))
    assert result.failure is None, result.message
    assert result.outputs == {"summary": "wrote NOTE.md"}
    assert result.extra == {"x-rein-ignored-keys": ["extra"]}
    assert (ws / "NOTE.md").read_text() == "# Note\n"
    assert items[-1].data["text"].startswith("working...") or items[-2].data["text"].startswith(
        "working..."
    )


def test_outputs_file_wins_and_decisions_map_to_the_label(tmp_path: Path, ws: Path) -> None:
    script = agent(
        tmp_path,
        """
        pathlib.Path(os.environ["REIN_OUTPUTS_FILE"]).write_text(
            json.dumps({"decision": "ship", "summary": "fine"}))
        print('{"summary": "not this one"}')
    """,
    )
    req = request(
        ws,
        kind="decision",
        workspace_access="read_only",
        branches=({"label": "ship"}, {"label": "revise"}),
    )
    _, result = drive(worker_for(script), req)
    assert result.failure is None, result.message
    assert result.decision == "ship" and result.outputs == {"summary": "fine"}


def test_no_report_is_output_missing(tmp_path: Path, ws: Path) -> None:
    _, result = drive(worker_for(agent(tmp_path, "print('done, trust me')")), request(ws))
    assert result.failure is FailureClass.OUTPUT_MISSING


def test_non_zero_exit_is_a_tool_error(tmp_path: Path, ws: Path) -> None:
    _, result = drive(worker_for(agent(tmp_path, "sys.exit(3)")), request(ws))
    assert result.failure is FailureClass.TOOL_ERROR
    assert result.message == "the agent exited with code 3"


def test_missing_program_is_a_tool_error(ws: Path) -> None:
    worker = CommandWorker(CommandTemplate(argv=("/nonexistent/agent-cli",)))
    _, result = drive(worker, request(ws))
    assert result.failure is FailureClass.TOOL_ERROR


def _running(marker: str) -> bool:
    """Whether any live (non-zombie) process on the host has ``marker`` in its command line."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            return True
    return False


@pytest.mark.parametrize("backend", ["default", "process"])
def test_timeout_kills_the_process_group(
    tmp_path: Path, ws: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend == "process":
        monkeypatch.setattr(
            "rein.tools.sandbox.bubblewrap_status", lambda: (None, "disabled in this test")
        )
    marker = f"{4000 + len(backend)}.{abs(hash(str(tmp_path))) % 1000}"
    script = agent(
        tmp_path,
        f"""
        subprocess.Popen(["sleep", "{marker}"])
        import time; time.sleep(60)
        open("{tmp_path / 'finished'}", "w").close()
    """,
    )
    _, result = drive(worker_for(script, timeout_seconds=1), request(ws))
    assert result.failure is FailureClass.TIMEOUT
    assert not (tmp_path / "finished").exists()  # killed, not waited for
    # The group was signalled before run() returned; give the kernel a moment to reap.
    deadline = time.monotonic() + 10
    while _running(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(marker)


def test_environment_is_clean_except_what_is_passed(tmp_path: Path, ws: Path) -> None:
    script = agent(
        tmp_path,
        """
        print(json.dumps({"summary": ",".join(sorted(k for k in os.environ
                                                      if k.startswith(("AGENT_", "OTHER_", "NODE_"))))}))
    """,
    )
    worker = CommandWorker(
        CommandTemplate(argv=(sys.executable, str(script)), pass_env=("AGENT_KEY",)),
        environ={"AGENT_KEY": "k", "OTHER_SECRET": "s"},
    )
    _, result = drive(worker, request(ws, env={"NODE_VAR": "v"}))
    assert result.outputs == {"summary": "AGENT_KEY,NODE_VAR"}


def test_secrets_are_scrubbed_from_items(tmp_path: Path, ws: Path) -> None:
    script = agent(
        tmp_path,
        """
        print("token is", os.environ["TOKEN"])
        print(json.dumps({"summary": "ok"}))
    """,
    )
    items, _ = drive(
        worker_for(script),
        request(ws, env={"TOKEN": "hunter2-secret"}, secret_names=frozenset({"TOKEN"})),
    )
    assert "hunter2-secret" not in str([i.data for i in items])
    assert any("token is [secret:TOKEN]" in str(i.data.get("text")) for i in items)


def _git_repo(ws: Path) -> None:
    for cmd in (
        ["git", "init", "-q"],
        [
            "git",
            "-c",
            "user.email=a@b",
            "-c",
            "user.name=a",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "start",
        ],
    ):
        subprocess.run(cmd, cwd=ws, check=True)


COMMITTING_AGENT = """
    pathlib.Path("NOTE.md").write_text("x")
    subprocess.run(["git", "add", "NOTE.md"])
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a",
                    "commit", "-q", "-m", "sneaky"])
    print(json.dumps({"summary": "done"}))
"""


def test_a_commit_fails_the_attempt_whatever_the_backend(
    tmp_path: Path, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "rein.tools.sandbox.bubblewrap_status", lambda: (None, "disabled in this test")
    )
    _git_repo(ws)
    head = git_refs(ws)
    _, result = drive(worker_for(agent(tmp_path, COMMITTING_AGENT)), request(ws))
    assert result.failure is FailureClass.PERMISSION_DENIED
    assert result.message is not None and "workers never commit" in result.message
    assert "HEAD" in result.message and git_refs(ws) != head


@needs_bwrap
def test_under_bubblewrap_git_is_read_only_and_outside_writes_fail(
    tmp_path: Path, ws: Path
) -> None:
    _git_repo(ws)
    head = git_refs(ws)
    outside = tmp_path / "outside.txt"
    script = agent(
        tmp_path,
        COMMITTING_AGENT.replace(
            'print(json.dumps({"summary": "done"}))',
            f'wrote = "no"\n'
            f"    try:\n"
            f'        pathlib.Path("{outside}").write_text("x")\n'
            f'        wrote = "yes"\n'
            f"    except OSError:\n"
            f"        pass\n"
            f'    print(json.dumps({{"summary": wrote}}))',
        ),
    )
    _, result = drive(worker_for(script), request(ws))
    assert git_refs(ws) == head  # the commit could not happen
    assert result.failure is None and result.outputs == {"summary": "no"}
    assert not outside.exists()


def test_parse_outputs_convention(tmp_path: Path) -> None:
    missing = tmp_path / "none.json"
    assert parse_outputs('log\n{"a": 1}\n\n', missing) == {"a": 1}
    assert parse_outputs('{"a": 1}\nlast line is text', missing) is None
    assert parse_outputs("[1, 2]", missing) is None
    (tmp_path / "o.json").write_text('{"b": 2}')
    assert parse_outputs('{"a": 1}', tmp_path / "o.json") == {"b": 2}


def test_wall_clock_budget_shortens_the_timeout(ws: Path) -> None:
    worker = CommandWorker(CommandTemplate(argv=("true",), timeout_seconds=600))
    assert worker._timeout(request(ws, budget=Budget(max_wall_clock_seconds=5))) == 5


@pytest.mark.parametrize("backend", ["bubblewrap", "process"])
def test_an_agent_writing_outside_fs_write_fails_the_attempt(
    tmp_path: Path, ws: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    if backend == "bubblewrap" and BWRAP is None:
        pytest.skip(f"bubblewrap unusable here: {WHY_NOT}")
    if backend == "process":  # the probe says no namespaces, as in some containers
        monkeypatch.setattr(
            "rein.tools.sandbox.bubblewrap_status", lambda: (None, "no namespaces (forced)")
        )
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("app\n")
    script = agent(
        tmp_path,
        """
        pathlib.Path("NOTE.md").write_text("# Note\\n")
        try:
            pathlib.Path("src/app.py").write_text("hi\\n")
        except OSError as exc:
            print(exc, file=sys.stderr)
        print(json.dumps({"summary": "done"}))
    """,
    )
    items, result = drive(worker_for(script), request(ws))
    assert (ws / "NOTE.md").read_text() == "# Note\n"  # the granted write went through
    notes = [i.data for i in items if "fs_write" in i.data]
    assert len(notes) == 1 and notes[0]["sandbox"] == backend
    # NOTE.md lies at the top, so even bubblewrap binds the whole workspace: the check decides.
    expected = "before/after check of the whole workspace alone" if backend == "process" \
        else "enforced by bubblewrap"
    assert expected in notes[0]["fs_write"]
    assert notes[0]["written_outside"] == ["src/app.py"]
    assert result.failure is FailureClass.PERMISSION_DENIED
    assert result.message == (
        "the agent: a command wrote outside this node's fs:write grants: src/app.py "
        "(allowed: fs:write:NOTE.md)"
    )
