"""fs:write holds for shell commands: binds under bubblewrap, a before/after check always.

Every behaviour is tested twice where it matters: under bubblewrap (skipped with the reason
where it cannot run) and with the probe forced to say no namespaces, the path some
containers take, where the before/after check alone enforces the grants.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rein.tools.catalog import ToolCall
from rein.tools.gate import ToolPolicy
from rein.tools.permissions import PermissionSet
from rein.tools.sandbox import SandboxMode, SandboxPolicy, bubblewrap_status
from rein.tools.toolbox import Toolbox
from rein.tools.writeguard import changed_paths, outside_grants, snapshot, write_binds

BWRAP, WHY_NOT = bubblewrap_status()


@pytest.fixture(params=["bubblewrap", "process"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test runs under bubblewrap and under the no-namespace fallback."""
    if request.param == "bubblewrap" and BWRAP is None:
        pytest.skip(f"bubblewrap unusable here: {WHY_NOT}")
    if request.param == "process":
        monkeypatch.setattr(
            "rein.tools.sandbox.bubblewrap_status", lambda: (None, "no namespaces (forced)")
        )
    return str(request.param)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "src" / "app.py").write_text("print('app')\n")
    return root


def shell(ws: Path, command: str, *grants: str, denied: tuple[str, ...] = (),
          mode: SandboxMode = SandboxMode.WORKSPACE_WRITE):  # type: ignore[no-untyped-def]
    policy = ToolPolicy.build(("shell:exec", *grants), denied=denied,
                              sandbox=SandboxPolicy(mode=mode, workspace=ws))
    box = Toolbox(tools=("shell_exec",), policy=policy, shell_timeout=30)
    call = ToolCall(id="1", name="shell_exec", arguments={"command": command})
    _, result = asyncio.run(box.run(call))
    return box, result


def test_the_issue_write_outside_fs_write_is_refused(ws: Path, backend: str) -> None:
    box, result = shell(ws, "echo hi > src/app.py", "fs:write:docs/**", "fs:read:**")
    assert not result.ok
    assert box.written_outside == (["src/app.py"] if backend == "process" else [])
    if backend == "bubblewrap":
        assert "Read-only file system" in result.content  # src is not bound writable
        assert (ws / "src/app.py").read_text() == "print('app')\n"
    else:
        assert result.refused  # the write happened; the check caught it afterwards
        assert result.content.startswith(
            "refused: a command wrote outside this node's fs:write grants: src/app.py "
            "(allowed: fs:write:docs/**)"
        )
    assert result.data is not None and result.data["backend"] == backend


def test_writes_inside_the_grants_go_through(ws: Path, backend: str) -> None:
    box, result = shell(ws, "mkdir -p docs/a/b && echo hi > docs/a/b/x.md", "fs:write:docs/**")
    assert result.ok, result.content
    assert (ws / "docs/a/b/x.md").read_text() == "hi\n" and box.written_outside == []


def test_a_file_glob_binds_its_directory_and_the_check_does_the_rest(
    ws: Path, backend: str
) -> None:
    box, result = shell(ws, "echo x > src/new.py && echo y > src/notes.txt", "fs:write:src/*.py")
    assert (ws / "src/new.py").exists()  # src is writable, so the write happened
    assert not result.ok and result.refused and box.written_outside == ["src/notes.txt"]


def test_deny_patterns_hold_for_commands(ws: Path, backend: str) -> None:
    (ws / "secrets").mkdir()
    box, result = shell(ws, "echo x > secrets/key", "fs:write", denied=("fs:write:secrets/**",))
    assert not result.ok and box.written_outside == ["secrets/key"]


def test_deleting_or_renaming_outside_the_grants_is_refused(ws: Path, backend: str) -> None:
    box, result = shell(ws, "mv src/app.py docs/app.py", "fs:write:docs/**")
    assert not result.ok
    if backend == "process":
        assert box.written_outside == ["src/app.py"]  # docs/app.py is covered
    else:
        assert (ws / "src/app.py").exists()


def test_no_fs_write_grant_means_a_read_only_workspace(ws: Path, backend: str) -> None:
    box, result = shell(ws, "echo x > a.txt")
    assert not result.ok
    assert box.written_outside == (["a.txt"] if backend == "process" else [])


def test_a_read_only_sandbox_is_checked_without_bubblewrap_too(ws: Path, backend: str) -> None:
    box, result = shell(ws, "echo x > docs/a.md", "fs:write:docs/**", mode=SandboxMode.READ_ONLY)
    assert not result.ok
    assert box.written_outside == (["docs/a.md"] if backend == "process" else [])


def test_git_hooks_are_protected_without_bubblewrap(ws: Path, backend: str) -> None:
    (ws / ".git" / "hooks").mkdir(parents=True)
    box, result = shell(ws, "echo evil > .git/hooks/pre-commit", "fs:write")
    assert not result.ok
    if backend == "process":
        assert box.written_outside == [".git/hooks/pre-commit"]


# -- the pieces ------------------------------------------------------------------------


def test_binds_follow_the_grants(ws: Path, tmp_path: Path) -> None:
    root = ws.resolve()

    def binds(*grants: str) -> tuple[Path, ...]:
        return write_binds(ws, PermissionSet.parse(grants))

    assert binds("fs:write:docs/**") == (root / "docs",)
    assert binds("fs:write:src/*.py", "fs:write:src/**") == (root / "src",)
    assert binds("fs:write:README.md") == (root,)  # a file at the top: the workspace
    assert binds("fs:write:new/**") == (root,)  # not there yet: its nearest parent
    assert binds("fs:write") == binds("fs:write:**") == (root,)
    assert binds("fs:read:**", "shell:exec") == ()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (ws / "link").symlink_to(outside)
    assert binds("fs:write:link/**") == ()  # never bind a directory outside the workspace


def test_the_check_sees_content_changes_that_keep_size_and_mtime(ws: Path) -> None:
    import os

    target = ws / "src" / "app.py"
    before = snapshot(ws, (ws,))
    info = target.stat()
    target.write_text("print('bad')\n"[: len("print('app')\n")])
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))  # mtime set back; ctime moves
    changes = changed_paths(before, snapshot(ws, (ws,)))
    assert changes == {"src/app.py": "modified"}
    assert outside_grants(changes, PermissionSet.parse(["fs:write:docs/**"])) == ("src/app.py",)
