"""The toolbox: both spellings, path resolution, the allow/deny/ask check, and the file tools."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from rein.tools.catalog import ALIASES, ToolCall, ToolKind, definitions_for
from rein.tools.gate import ToolPolicy, Verdict
from rein.tools.sandbox import SandboxMode, SandboxPolicy
from rein.tools.toolbox import Toolbox


def make_box(
    ws: Path,
    grants: list[str],
    *,
    tools: tuple[str, ...] = ("file_read", "file_write", "edit", "file_search"),
    mode: SandboxMode = SandboxMode.WORKSPACE_WRITE,
    ask: tuple[str, ...] = (),
    denied: tuple[str, ...] = (),
    secrets: dict[str, str] | None = None,
) -> Toolbox:
    policy = ToolPolicy.build(
        grants, sandbox=SandboxPolicy(mode=mode, workspace=ws), ask=ask, denied=denied
    )
    return Toolbox(tools=tools, policy=policy, secrets=secrets)


def call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(id="c1", name=name, arguments=arguments)


def run(box: Toolbox, c: ToolCall, **kw: bool):  # type: ignore[no-untyped-def]
    return asyncio.run(box.run(c, **kw))


def test_both_spellings_map_to_the_same_tools() -> None:
    pairs = [
        ("file_read", "read"),
        ("file_write", "write"),
        ("file_search", "search"),
        ("shell_exec", "shell"),
        ("http_fetch", "fetch"),
    ]
    for ags, oap in pairs:
        assert ALIASES[ags] is ALIASES[oap]
    assert ALIASES["edit"] is ToolKind.EDIT
    defs = definitions_for(["read", "file_read", "mcp/time/now", "shell"])
    assert [d.name for d in defs] == ["read", "shell"]  # one per kind; unknown names skipped


def test_read_write_edit_within_permissions(tmp_path: Path) -> None:
    box = make_box(tmp_path, ["fs:read:**", "fs:write:src/**"])
    decision, result = run(box, call("file_write", path="src/a.txt", content="hello world\n"))
    assert decision.verdict is Verdict.ALLOW and result.ok, result.content
    assert (tmp_path / "src/a.txt").read_text() == "hello world\n"
    _, result = run(box, call("edit", path="src/a.txt", old="world", new="rein"))
    assert result.ok and (tmp_path / "src/a.txt").read_text() == "hello rein\n"
    _, result = run(box, call("file_read", path="src/a.txt"))
    assert result.content == "hello rein\n"


def test_write_outside_the_grants_is_refused_with_what_is_allowed(tmp_path: Path) -> None:
    box = make_box(tmp_path, ["fs:read:**", "fs:write:src/**"])
    decision, result = run(box, call("file_write", path="secrets.txt", content="x"))
    assert decision.verdict is Verdict.DENY and result.refused and not result.ok
    assert result.content == (
        "refused fs:write:secrets.txt: not covered by this node's permissions; "
        "allowed for fs:write: fs:write:src/**"
    )
    assert not (tmp_path / "secrets.txt").exists()


def test_no_permission_of_a_kind_says_so(tmp_path: Path) -> None:
    box = make_box(tmp_path, ["fs:read:**"])
    decision = box.check(call("file_write", path="a.txt", content="x"))
    assert decision.message == "refused fs:write:a.txt: this node has no fs:write permission at all"


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "src/../../x"])
def test_traversal_is_refused(tmp_path: Path, path: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    box = make_box(ws, ["fs:read:**", "fs:write:**"])
    decision, result = run(box, call("file_write", path=path, content="x"))
    assert decision.verdict is Verdict.DENY and result.refused
    assert "is outside the workspace" in result.content
    assert not (tmp_path / "outside.txt").exists()


def test_symlinks_are_resolved_before_matching(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "private").mkdir()
    (ws / "private/key").write_text("k")
    os.symlink(ws / "private", ws / "src/link")
    os.symlink(tmp_path, ws / "src/up")
    box = make_box(ws, ["fs:read:src/**", "fs:write:src/**"])
    decision = box.check(call("file_read", path="src/link/key"))
    assert decision.verdict is Verdict.DENY
    assert decision.permission == "fs:read:private/key"
    decision = box.check(call("file_write", path="src/up/evil.txt", content="x"))
    assert decision.verdict is Verdict.DENY and "outside the workspace" in (decision.message or "")


def test_read_only_sandbox_refuses_writes_even_when_granted(tmp_path: Path) -> None:
    box = make_box(tmp_path, ["fs:write:**"], mode=SandboxMode.READ_ONLY)
    decision = box.check(call("file_write", path="a.txt", content="x"))
    assert decision.verdict is Verdict.DENY
    assert decision.message == (
        "refused fs:write:a.txt: the sandbox is read-only for this node; nothing may be written"
    )


@pytest.mark.parametrize("path", [".git/config", ".rein/state.db"])
def test_protected_paths_are_never_writable(tmp_path: Path, path: str) -> None:
    box = make_box(tmp_path, ["fs:write:**"], mode=SandboxMode.DANGER_FULL_ACCESS)
    decision = box.check(call("write", path=path, content="x"))
    assert decision.verdict is Verdict.DENY and "protected" in (decision.message or "")


def test_ask_pattern_pauses_and_runs_once_approved(tmp_path: Path) -> None:
    box = make_box(tmp_path, ["fs:write:**"], ask=("fs:write:docs/**",))
    decision, result = run(box, call("file_write", path="docs/x.md", content="x"))
    assert decision.verdict is Verdict.ASK and result.refused
    assert not (tmp_path / "docs/x.md").exists()
    decision, result = run(box, call("file_write", path="docs/x.md", content="x"), approved=True)
    assert decision.verdict is Verdict.ASK and result.ok
    assert (tmp_path / "docs/x.md").read_text() == "x"


def test_unknown_or_ungranted_tool_lists_what_is_available(tmp_path: Path) -> None:
    box = make_box(tmp_path, ["fs:read:**"], tools=("read",))
    decision, result = run(box, call("shell", command="id"))
    assert decision.verdict is Verdict.DENY
    assert result.content == (
        "refused: no tool named 'shell' is available to this node; available tools: read"
    )


def test_search_skips_files_the_node_may_not_read(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/a.md").write_text("alpha TODO\n")
    (tmp_path / "docs/secret.md").write_text("TODO hidden\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git/HEAD").write_text("TODO\n")
    box = make_box(tmp_path, ["fs:read:**"], denied=("fs:read:docs/secret.md",))
    _, result = run(box, call("file_search", pattern="TODO", path="."))
    assert result.content == "docs/a.md:1: alpha TODO"


def test_edit_failures_tell_the_model_how_to_fix_them(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x x\n")
    box = make_box(tmp_path, ["fs:read:**", "fs:write:**"])
    _, result = run(box, call("edit", path="a.txt", old="x", new="y"))
    assert not result.ok and not result.refused
    assert result.content == (
        "a.txt: the text to replace occurs 2 times (hint: include more surrounding text so it "
        "is unique, or set replace_all)"
    )
    _, result = run(box, call("edit", path="a.txt", old="x", new="y", replace_all=True))
    assert result.ok and (tmp_path / "a.txt").read_text() == "y y\n"


def test_secret_values_are_redacted_from_results(tmp_path: Path) -> None:
    (tmp_path / "env.txt").write_text("token=s3cr3t-value\n")
    box = make_box(tmp_path, ["fs:read:**"], secrets={"API_TOKEN": "s3cr3t-value"})
    _, result = run(box, call("file_read", path="env.txt"))
    assert result.content == "token=[secret:API_TOKEN]\n"


def test_bad_arguments_are_refused_before_running(tmp_path: Path) -> None:
    box = make_box(tmp_path, ["fs:read:**"])
    decision, result = run(box, call("file_read"))
    assert decision.verdict is Verdict.DENY
    assert result.content == "argument 'path' must be a non-empty string"
