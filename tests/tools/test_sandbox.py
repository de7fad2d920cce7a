"""The sandbox policy and the bubblewrap boundary, exercised through real commands."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from rein.errors import ConfigError
from rein.tools.catalog import ToolCall
from rein.tools.gate import ToolPolicy, Verdict
from rein.tools.sandbox import (
    SandboxMode,
    SandboxPolicy,
    backend_for,
    bubblewrap_argv,
    bubblewrap_status,
)
from rein.tools.shell import run_sandboxed
from rein.tools.toolbox import Toolbox

BWRAP, WHY_NOT = bubblewrap_status()
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason=f"bubblewrap unusable here: {WHY_NOT}")


def shell(
    ws: Path,
    command: str,
    *,
    grants: tuple[str, ...] = ("shell:exec", "fs:write"),
    mode: SandboxMode = SandboxMode.WORKSPACE_WRITE,
    network: bool = False,
):  # type: ignore[no-untyped-def]
    policy = ToolPolicy.build(
        grants, sandbox=SandboxPolicy(mode=mode, workspace=ws, network_access=network)
    )
    box = Toolbox(tools=("shell_exec",), policy=policy, shell_timeout=30)
    return asyncio.run(box.run(ToolCall(id="1", name="shell_exec", arguments={"command": command})))


def test_mode_names_follow_codex() -> None:
    assert [m.value for m in SandboxMode] == [
        "read-only",
        "workspace-write",
        "danger-full-access",
        "external-sandbox",
    ]
    with pytest.raises(ConfigError) as info:
        SandboxPolicy.parse("workspace_write")
    assert info.value.code == "SANDBOX001" and "workspace-write" in (info.value.hint or "")


def test_policy_as_codex_sandbox_policy(tmp_path: Path) -> None:
    extra = tmp_path / "cache"
    policy = SandboxPolicy(
        mode=SandboxMode.WORKSPACE_WRITE,
        workspace=tmp_path,
        writable_roots=(extra,),
        network_access=True,
    )
    assert policy.to_codex() == {
        "type": "workspaceWrite",
        "writableRoots": [str(tmp_path), str(extra)],
        "networkAccess": True,
        "excludeTmpdirEnvVar": False,
        "excludeSlashTmp": True,
    }
    assert SandboxPolicy(mode=SandboxMode.READ_ONLY).to_codex() == {
        "type": "readOnly",
        "networkAccess": False,
    }


def test_for_attempt_maps_node_requirements(tmp_path: Path) -> None:
    rw = SandboxPolicy.for_attempt(tmp_path, "read_write", "none")
    assert rw.mode is SandboxMode.WORKSPACE_WRITE and not rw.network_access
    ro = SandboxPolicy.for_attempt(tmp_path, "read_only", "full")
    assert ro.mode is SandboxMode.READ_ONLY and ro.network_access
    assert not rw.require_boundary
    strict = SandboxPolicy.for_attempt(tmp_path, "read_write", "none", require_boundary=True)
    assert strict.require_boundary and strict.mode is SandboxMode.WORKSPACE_WRITE


def test_bubblewrap_command_line(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    policy = SandboxPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace=tmp_path)
    argv = bubblewrap_argv(policy, ["sh", "-c", "true"], cwd=tmp_path)
    ws = str(tmp_path.resolve())
    pairs = list(zip(argv, argv[1:], argv[2:], strict=False))
    assert ("--ro-bind", "/", "/") not in pairs  # the machine's root is not shown
    assert ("--ro-bind", "/usr", "/usr") in pairs and ("--tmpfs", "/tmp", "--dev") not in pairs
    assert argv[argv.index("--tmpfs") + 1] == "/tmp"
    read, write = pairs.index(("--ro-bind", ws, ws)), pairs.index(("--bind", ws, ws))
    assert read < write < pairs.index(("--ro-bind", f"{ws}/.git", f"{ws}/.git"))  # on top
    for flag in ("--unshare-net", "--die-with-parent", "--new-session"):
        assert flag in argv
    assert argv[-4:] == ["--", "sh", "-c", "true"]
    networked = SandboxPolicy(mode=SandboxMode.READ_ONLY, workspace=tmp_path, network_access=True)
    assert "--unshare-net" not in bubblewrap_argv(networked, ["true"], cwd=tmp_path)
    assert "--bind" not in bubblewrap_argv(networked, ["true"], cwd=tmp_path)


def test_no_sandbox_process_for_full_access_or_external(tmp_path: Path) -> None:
    assert backend_for(SandboxPolicy(mode=SandboxMode.DANGER_FULL_ACCESS)).name == "none"
    external = backend_for(SandboxPolicy(mode=SandboxMode.EXTERNAL))
    assert external.name == "none" and external.note == "an external sandbox is in charge"


@needs_bwrap
def test_shell_write_outside_writable_roots_fails_under_bubblewrap(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    decision, result = shell(ws, f"echo x > {outside}")
    assert decision.verdict is Verdict.ALLOW  # permissions allow; the boundary refuses
    assert not result.ok
    assert "Read-only file system" in result.content
    assert not outside.exists()
    _, result = shell(ws, "echo x > /tmp/rein-outside-probe")
    assert not result.ok and not Path("/tmp/rein-outside-probe").exists()
    _, result = shell(ws, "echo inside > inside.txt && cat inside.txt")
    assert result.ok and (ws / "inside.txt").read_text() == "inside\n"
    assert result.data is not None and result.data["backend"] == "bubblewrap"


@needs_bwrap
def test_read_only_sandbox_refuses_workspace_writes_through_the_shell(tmp_path: Path) -> None:
    _, result = shell(tmp_path, "echo x > a.txt", mode=SandboxMode.READ_ONLY)
    assert not result.ok and not (tmp_path / "a.txt").exists()


@needs_bwrap
def test_git_stays_read_only_under_bubblewrap(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    _, result = shell(tmp_path, "echo x > .git/evil")
    assert not result.ok and not (tmp_path / ".git/evil").exists()


@needs_bwrap
def test_network_is_unshared_unless_allowed(tmp_path: Path) -> None:
    # Only the loopback device exists in a fresh network namespace, and it is down.
    _, result = shell(tmp_path, "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '")
    assert (
        result.ok and result.content.split("--- stdout ---\n")[1].split("\n--- stderr")[0] == "lo\n"
    )


@needs_bwrap
def test_scratch_tmpdir_is_writable_and_private(tmp_path: Path) -> None:
    _, result = shell(
        tmp_path, 'echo t > "$TMPDIR/t" && cat "$TMPDIR/t" && env | grep -c REIN_ || true'
    )
    assert result.ok, result.content
    assert "t\n0" in result.content  # rein's own environment is not passed through


def test_require_boundary_refuses_without_a_boundary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("rein.tools.sandbox.bubblewrap_status", lambda: (None, "not installed"))
    policy = SandboxPolicy(
        mode=SandboxMode.WORKSPACE_WRITE, workspace=tmp_path, require_boundary=True
    )
    from rein.tools.paths import ToolFailure

    with pytest.raises(ToolFailure) as info:
        asyncio.run(run_sandboxed(["true"], policy=policy, cwd=tmp_path, env={}, timeout=5))
    assert info.value.code == "TOOL030"
    assert "not a security boundary" in info.value.message


def test_process_backend_says_it_is_not_a_boundary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("rein.tools.sandbox.bubblewrap_status", lambda: (None, "not installed"))
    _, result = shell(tmp_path, "echo hi")
    assert result.ok and result.data is not None and result.data["backend"] == "process"
    assert "the process backend is not a security boundary" in result.content


def test_shell_command_outside_grants_never_runs(tmp_path: Path) -> None:
    decision, result = shell(tmp_path, "touch made && echo ok", grants=("shell:exec:echo *",))
    assert decision.verdict is Verdict.DENY and result.refused
    assert result.content == (
        "refused shell:exec:touch made && echo ok: not covered by this node's permissions; "
        "allowed for shell:exec: shell:exec:echo *"
    )
    assert not (tmp_path / "made").exists()


@needs_bwrap
def test_command_sandbox_plugs_into_run_process(tmp_path: Path) -> None:
    from rein.tools.process import run_process
    from rein.tools.sandbox import CommandSandbox

    ws = tmp_path / "ws"
    ws.mkdir()
    sandbox = CommandSandbox(policy=SandboxPolicy(mode=SandboxMode.READ_ONLY, workspace=ws))
    result = asyncio.run(
        run_process(
            "echo x > made.txt", cwd=ws, env={"PATH": "/usr/bin:/bin"}, timeout=30, sandbox=sandbox
        )
    )
    assert result.exit_code != 0 and "Read-only file system" in result.stderr
    assert not (ws / "made.txt").exists()


# -- fs:read limits what a command can read -----------------------------------------------


def stdout(result) -> str:  # type: ignore[no-untyped-def]
    return str(result.content).split("--- stdout ---\n")[1].split("\n--- stderr")[0]


@needs_bwrap
def test_a_command_cannot_read_outside_the_workspace(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("s3cret\n")
    _, result = shell(ws, f"cat {outside}/secret.txt", grants=("shell:exec", "fs:read:**"))
    assert not result.ok and "s3cret" not in result.content
    assert "No such file or directory" in result.content
    # The machine's own secrets are not there either: rein runs as a user who could read it.
    assert Path("/etc/shadow").exists()
    _, result = shell(ws, "cat /etc/shadow", grants=("shell:exec", "fs:read:**"))
    assert not result.ok and "No such file or directory" in result.content
    _, result = shell(ws, f"ls {Path.home()}/.ssh /var/lib /srv 2>&1 | grep -c 'No such'",
                      grants=("shell:exec", "fs:read:**"))
    assert stdout(result) == "3\n"


@needs_bwrap
def test_a_command_reads_only_what_fs_read_grants(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.txt").write_text("a\n")
    (tmp_path / "notes.txt").write_text("private\n")
    (tmp_path / ".env").write_text("TOKEN=1\n")
    grants = ("shell:exec", "fs:read:src/**")
    _, result = shell(tmp_path, "cat src/a.txt", grants=grants)
    assert result.ok and stdout(result) == "a\n"
    _, result = shell(tmp_path, "cat notes.txt", grants=grants)
    assert not result.ok and "private" not in result.content
    # A deny pattern is masked inside what is bound: the file cannot be read.
    policy = ToolPolicy.build(("shell:exec", "fs:read:**"), denied=("fs:read:.env",),
                              sandbox=SandboxPolicy(mode=SandboxMode.READ_ONLY,
                                                    workspace=tmp_path))
    box = Toolbox(tools=("shell_exec",), policy=policy, shell_timeout=30)
    _, result = asyncio.run(box.run(ToolCall(id="1", name="shell_exec", arguments={
        "command": "cat notes.txt; cat .env"})))
    assert not result.ok and stdout(result) == "private\n" and "TOKEN" not in result.content


@needs_bwrap
def test_common_tools_still_work_with_reads_confined(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.py").write_text("print(6 * 7)\n")
    _, result = shell(tmp_path, "python3 a.py && git status --short a.py && sh -c 'echo sh'",
                      grants=("shell:exec", "fs:read:**", "fs:write:**"))
    assert result.ok, result.content
    assert stdout(result) == "42\n?? a.py\nsh\n"
