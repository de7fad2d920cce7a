"""The shell tool and the one way rein runs a command under the sandbox.

:func:`run_sandboxed` is shared by the shell tool and the command worker: it wraps the command
with bubblewrap when that is usable (see :mod:`rein.tools.sandbox`), gives it a private scratch
directory as ``TMPDIR``, and runs it through the process-group runner, which kills the whole
group on timeout. The environment is built from scratch: a command sees ``PATH``, ``HOME``,
``LANG``, ``TMPDIR`` and the node's declared environment, never rein's own environment (where
provider keys live).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.core.frozen import Frozen
from rein.core.shellsplit import split_commands
from rein.tools.catalog import ToolResult
from rein.tools.paths import ToolFailure, is_within
from rein.tools.permissions import PermissionSet
from rein.tools.sandbox import Backend, SandboxMode, SandboxPolicy, backend_for, wrap_command
from rein.tools.writeguard import (
    changed_paths,
    directories,
    outside_grants,
    snapshot,
    write_binds,
)

if TYPE_CHECKING:
    from rein.tools.process import ProcessResult

# Runs a wrapped argv: rein's process-group runner, or a client's terminal (tools/backend.py).
Runner = Callable[..., Awaitable["ProcessResult"]]

DEFAULT_TIMEOUT = 120.0
MAX_OUTPUT_BYTES = 64 * 1024
_BASE_PATH = "/usr/local/bin:/usr/bin:/bin"


class CommandOutcome(Frozen):
    """A finished command: the process result plus the backend it ran under."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool
    duration_seconds: float
    backend: Backend
    # Paths the command changed that its fs:write grants do not cover (see writeguard).
    written_outside: tuple[str, ...] = ()
    write_check: str | None = None  # how fs:write was enforced, for the record


# The modes in which rein enforces fs:write for commands (the others: no sandbox, or not rein's).
GUARDED_MODES = (SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE)


def written_outside_message(paths: Sequence[str], writes: PermissionSet | None) -> str:
    """What a worker says when a command wrote outside its grants: the paths and the grants."""
    granted = ", ".join(
        str(g) for g in (writes.grants if writes is not None else ())
        if g.scope == "fs" and g.action in ("write", "create", "delete")
    ) or "(none)"
    shown = ", ".join(paths[:20]) + (f" and {len(paths) - 20} more" if len(paths) > 20 else "")
    return f"a command wrote outside this node's fs:write grants: {shown} (allowed: {granted})"


def write_check_text(backend: Backend) -> str:
    """How ``fs:write`` is enforced for a command under ``backend``, said plainly."""
    if backend.name == "bubblewrap":
        return (
            "fs:write is enforced by bubblewrap (only the granted directories are writable) "
            "and a before/after check of them"
        )
    return (
        "fs:write is enforced by a before/after check of the whole workspace alone: "
        "bubblewrap cannot create namespaces here, so a command can write anywhere and is "
        "failed afterwards for any write outside the grants"
    )


def base_env(extra: Mapping[str, str], *, scratch: Path | None) -> dict[str, str]:
    """A clean environment for a sandboxed command: no inherited secrets or keys."""
    env = {
        "PATH": os.environ.get("PATH", _BASE_PATH),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "HOME": str(scratch) if scratch is not None else os.environ.get("HOME", "/"),
    }
    if scratch is not None:
        env["TMPDIR"] = str(scratch)
    env.update(extra)
    return env


async def run_sandboxed(
    argv: Sequence[str],
    *,
    policy: SandboxPolicy,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float | None,
    max_output_bytes: int = MAX_OUTPUT_BYTES,
    scratch: Path | None = None,
    writes: PermissionSet | None = None,
    runner: Runner | None = None,
    trusted_argv: bool = False,
) -> CommandOutcome:
    """Run ``argv`` under ``policy``; raise ToolFailure (TOOL030) if a boundary is required.

    ``scratch`` is a private directory the command may write whatever the mode (TMPDIR and
    HOME point there); by default a fresh one is made and removed afterwards. A caller that
    passes its own keeps it (the command worker reads its outputs file from there).

    ``writes``, when given, are the node's grants: their ``fs:write`` targets bound what the
    command may change in the workspace (only their directories are writable under
    bubblewrap, and the workspace is compared before and after; ``written_outside`` lists
    what no grant covers, and the caller fails the command for it), and their ``fs:read``
    targets what it may see of it (:mod:`rein.tools.readguard`). Without them, the whole
    workspace is readable.

    ``runner`` runs the wrapped command instead of rein's process-group runner (an editor's
    terminal): the sandbox and the write check stay the same.

    ``trusted_argv``: ``argv`` comes from the user's configuration (a command worker), so
    the files it names outside the workspace (the agent's script) are bound read-only under
    bubblewrap. A model's command line never is: only the programs it names that ``PATH``
    resolves bring their installations in.
    """
    from rein.tools.process import run_process  # the process-group runner

    runner = runner or run_process
    owned = scratch is None
    scratch = Path(tempfile.mkdtemp(prefix="rein-scratch-")) if scratch is None else scratch
    guarded = writes is not None and policy.mode in GUARDED_MODES
    allowed = writes if writes is not None and policy.mode is SandboxMode.WORKSPACE_WRITE \
        else PermissionSet()
    workspace = policy.workspace.resolve()
    command_env = base_env(env, scratch=scratch)
    try:
        if guarded:
            assert writes is not None
            binds = write_binds(workspace, allowed) if allowed.grants else ()
            policy = policy.replace(workspace_binds=binds)
            if backend_for(policy).name == "bubblewrap":  # reads are confined there only
                policy = policy.replace(**_reads(workspace, writes, binds))
        programs, files = _named(argv, workspace, trusted=trusted_argv)
        wrapped, backend = wrap_command(policy, argv, cwd=cwd, scratch=scratch,
                                        search_path=command_env.get("PATH"),
                                        programs=programs, files=files)
        if policy.require_boundary and not backend.is_boundary:
            raise ToolFailure(
                f"refused: this policy requires a sandbox boundary, and {backend.note}",
                code="TOOL030",
                hint="install bubblewrap (Debian package bubblewrap) or relax require_boundary",
            )
        if guarded:
            # Under bubblewrap only the binds can change; without it, anything can.
            roots = (policy.workspace_binds or ()) if backend.name == "bubblewrap" else (workspace,)
            before = snapshot(workspace, roots)
        result = await runner(
            wrapped,
            cwd=cwd,
            env=command_env,
            timeout=timeout,
            max_output_bytes=max_output_bytes,
        )
        outside: tuple[str, ...] = ()
        if guarded:
            after = snapshot(workspace, roots)
            outside = outside_grants(
                changed_paths(before, after),
                allowed,
                protected=policy.protected,
                directories=directories(before, after),
            )
    finally:
        if owned:
            shutil.rmtree(scratch, ignore_errors=True)
    return CommandOutcome(
        exit_code=result.exit_code,
        stdout=_text(result.stdout),
        stderr=_text(result.stderr),
        timed_out=result.timed_out,
        truncated=result.truncated,
        duration_seconds=result.duration_seconds,
        backend=backend,
        written_outside=outside,
        write_check=write_check_text(backend) if guarded else None,
    )


def _named(argv: Sequence[str], workspace: Path, *, trusted: bool
           ) -> tuple[list[str], list[Path]]:
    """The programs ``argv`` runs whose installations the sandbox shows, and the files
    outside the workspace it binds read-only (a trusted argv's only)."""
    if not trusted:
        if list(argv[:2]) == ["/bin/sh", "-c"] and len(argv) == 3:
            commands = split_commands(argv[2]) or ()
            return [c.program for c in commands if c.program and "/" not in c.program], []
        return [], []
    files = [Path(a) for a in argv[1:] if os.path.isabs(a) and os.path.exists(a)
             and not is_within(Path(a), workspace)]
    return list(argv[:1]), files


def _reads(workspace: Path, permissions: PermissionSet, writable: Sequence[Path]
           ) -> dict[str, Any]:
    """``readable`` and ``hidden`` of the sandbox for ``permissions``' ``fs:read`` grants
    and deny patterns (ToolFailure TOOL032 when the masking walk would be too long)."""
    # Imported here: a driver turn imports this module for its criteria and never needs it.
    from rein.tools.readguard import TooManyToMask, hidden_paths, read_binds

    readable = read_binds(workspace, permissions)
    try:
        hidden = hidden_paths(workspace, permissions, (*readable, *writable))
    except TooManyToMask as exc:
        raise ToolFailure(f"refused: an fs:read deny pattern with a wildcard would need {exc} "
                          "to hide what it covers from the command", code="TOOL032",
                          hint="deny literal paths (secrets/**) rather than patterns "
                               "(**/.env), or narrow the fs:read grants") from None
    return {"readable": readable, "hidden": hidden}


async def shell_tool(
    args: Mapping[str, Any],
    *,
    policy: SandboxPolicy,
    cwd: Path,
    env: Mapping[str, str],
    max_timeout: float = DEFAULT_TIMEOUT,
    writes: PermissionSet | None = None,
    runner: Runner | None = None,
) -> ToolResult:
    """Run ``args["command"]`` with ``sh -c`` under the sandbox and report it to the model.

    ``writes`` holds the node's ``fs:write`` grants (see :func:`run_sandboxed`); a command
    that wrote outside them is reported as refused, naming the paths."""
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ToolFailure("command must be a non-empty string", code="TOOL023")
    timeout = args.get("timeout_seconds")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        timeout = max_timeout
    outcome = await run_sandboxed(
        ["/bin/sh", "-c", command],
        policy=policy,
        cwd=cwd,
        env=env,
        timeout=min(float(timeout), max_timeout),
        writes=writes,
        runner=runner,
    )
    lines = [
        f"exit code: {outcome.exit_code}" + (" (timed out)" if outcome.timed_out else ""),
    ]
    if outcome.written_outside:
        lines.insert(0, "refused: " + written_outside_message(outcome.written_outside, writes)
                     + "; the attempt fails for it")
    if outcome.backend.note and not outcome.backend.is_boundary:
        lines.append(f"note: {outcome.backend.note}")
    lines += ["--- stdout ---", outcome.stdout, "--- stderr ---", outcome.stderr]
    if outcome.truncated:
        lines.append(f"[output truncated at {MAX_OUTPUT_BYTES} bytes]")
    return ToolResult(
        ok=outcome.exit_code == 0 and not outcome.timed_out and not outcome.written_outside,
        content="\n".join(lines),
        refused=bool(outcome.written_outside),
        data={
            "written_outside": list(outcome.written_outside),
            "exit_code": outcome.exit_code,
            "timed_out": outcome.timed_out,
            "truncated": outcome.truncated,
            "backend": outcome.backend.name,
            "duration_seconds": round(outcome.duration_seconds, 3),
        },
    )


def _text(value: str | bytes) -> str:
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value
