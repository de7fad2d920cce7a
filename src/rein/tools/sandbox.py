"""The sandbox policy, named as Codex names it, and the bubblewrap boundary that enforces it.

Four modes (``research/protocols.md`` §1.6):

- ``read-only``: nothing is writable; network only if ``network_access``.
- ``workspace-write``: the workspace (or the part of it that ``workspace_binds`` names, see
  :mod:`rein.tools.writeguard`) and the extra ``writable_roots`` are writable, except the
  protected paths: ``.git`` and ``.rein`` (workers never commit and never touch rein's
  state), ``rein.toml``, and every workspace file a configured hook or command worker runs
  (:func:`protected_paths`): no node writes what rein itself runs or trusts.
- ``danger-full-access``: no restriction at all, and no sandbox process.
- ``external-sandbox``: the caller already sandboxes rein; rein enforces nothing more than the
  permission checks and says so.

Shell commands and command workers run under bubblewrap (``bwrap``) when it is installed and
can create namespaces: the system is bound read-only, the writable roots read-write, the
protected paths read-only again on top, the network is unshared unless allowed, and the child
dies with its parent in a new session. Without bubblewrap the process backend runs commands
directly, and that is **not a security boundary**: only rein's own permission checks apply.
"""

from __future__ import annotations

import enum
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rein.errors import ConfigError
from rein.tools.paths import is_within

if TYPE_CHECKING:
    from rein.config import Config

PROTECTED = (".git", ".rein", "rein.toml")
NOT_A_BOUNDARY = (
    "bubblewrap is not available, so commands run directly as processes: the process backend is "
    "not a security boundary (only rein's permission checks apply)"
)


class SandboxMode(enum.StrEnum):
    """Codex's sandbox mode strings."""

    READ_ONLY = "read-only"  # nothing writable
    WORKSPACE_WRITE = "workspace-write"  # workspace + writable roots, minus protected paths
    DANGER_FULL_ACCESS = "danger-full-access"  # no restriction, no sandbox process
    EXTERNAL = "external-sandbox"  # the caller sandboxes; rein only checks permissions


@dataclass(frozen=True, kw_only=True, slots=True)
class SandboxPolicy:
    """What a command or file tool may touch, independent of the permission grants."""

    mode: SandboxMode = SandboxMode.READ_ONLY
    workspace: Path = field(default_factory=Path.cwd)
    writable_roots: tuple[Path, ...] = ()  # extra roots, besides the workspace
    network_access: bool = False
    protected: tuple[str, ...] = PROTECTED  # workspace-relative, never writable
    require_boundary: bool = False  # refuse commands when bubblewrap is not usable
    # The writable part of the workspace when fs:write grants narrow it (None: all of it).
    workspace_binds: tuple[Path, ...] | None = None

    @classmethod
    def parse(cls, mode: str, **kwargs: Any) -> SandboxPolicy:
        """Build from a mode string; ConfigError SANDBOX001 names the valid ones."""
        try:
            parsed = SandboxMode(mode)
        except ValueError:
            valid = ", ".join(m.value for m in SandboxMode)
            raise ConfigError(
                f"unknown sandbox mode {mode!r}", code="SANDBOX001", hint=f"use one of: {valid}"
            ) from None
        return cls(mode=parsed, **kwargs)

    @classmethod
    def for_attempt(
        cls,
        workspace: str | os.PathLike[str],
        workspace_access: Literal["none", "read_only", "read_write"],
        network: Literal["none", "restricted", "full"],
        *,
        require_boundary: bool = False,
        protected: Sequence[str] = (),
    ) -> SandboxPolicy:
        """The policy a node's ``requirements.workspace`` and ``network`` ask for
        (``require_boundary``: the worker refuses commands without a real sandbox;
        ``protected``: more paths no node may write, see :func:`protected_paths`)."""
        mode = (
            SandboxMode.WORKSPACE_WRITE
            if workspace_access == "read_write"
            else SandboxMode.READ_ONLY
        )
        # "restricted" still needs the network namespace; per-origin checks happen in http_fetch.
        return cls(mode=mode, workspace=Path(workspace), network_access=network != "none",
                   require_boundary=require_boundary,
                   protected=tuple(dict.fromkeys([*PROTECTED, *protected])))

    def writable(self) -> tuple[Path, ...]:
        """The roots a command may write below (empty for read-only)."""
        if self.mode is SandboxMode.WORKSPACE_WRITE:
            inside = (self.workspace,) if self.workspace_binds is None else self.workspace_binds
            return (*inside, *self.writable_roots)
        return ()

    def can_write(self, path: Path) -> bool:
        """Whether the sandbox lets ``path`` (resolved) be written."""
        if self.mode in (SandboxMode.DANGER_FULL_ACCESS, SandboxMode.EXTERNAL):
            return not self.is_protected(path)
        if self.mode is SandboxMode.READ_ONLY:
            return False
        return any(is_within(path, root) for root in self.writable()) and not self.is_protected(
            path
        )

    def is_protected(self, path: Path) -> bool:
        """Whether ``path`` is a protected path of the workspace (``.git``, ``.rein``,
        ``rein.toml``, a hook's script)."""
        return self.protecting(path) is not None

    def protecting(self, path: Path) -> str | None:
        """The protected path (as configured) that ``path`` is or lies in, if any."""
        return next((p for p in self.protected if is_within(path, self.workspace / p)), None)

    def to_codex(self) -> dict[str, Any]:
        """The Codex ``sandboxPolicy`` tagged union, for the protocol surface and the record."""
        match self.mode:
            case SandboxMode.READ_ONLY:
                return {"type": "readOnly", "networkAccess": self.network_access}
            case SandboxMode.WORKSPACE_WRITE:
                return {
                    "type": "workspaceWrite",
                    "writableRoots": [str(r) for r in self.writable()],
                    "networkAccess": self.network_access,
                    "excludeTmpdirEnvVar": False,
                    "excludeSlashTmp": True,
                }
            case SandboxMode.DANGER_FULL_ACCESS:
                return {"type": "dangerFullAccess"}
            case SandboxMode.EXTERNAL:
                return {
                    "type": "externalSandbox",
                    "networkAccess": "enabled" if self.network_access else "restricted",
                }


@dataclass(frozen=True, kw_only=True, slots=True)
class Backend:
    """How a command will actually be run."""

    name: Literal["bubblewrap", "process", "none"]  # "none": danger-full-access / external
    is_boundary: bool
    note: str | None = None  # said plainly to the user and the model when not a boundary


@lru_cache(maxsize=1)
def bubblewrap_status() -> tuple[str | None, str | None]:
    """``(path, None)`` when bwrap works here, else ``(None, why not)``. Probed once."""
    path = shutil.which("bwrap")
    if path is None:
        return None, "bwrap is not installed (Debian package: bubblewrap)"
    probe = [
        path,
        "--ro-bind",
        "/",
        "/",
        "--unshare-net",
        "--unshare-pid",
        "--die-with-parent",
        "true",
    ]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"bwrap could not start: {exc}"
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}"
        return None, f"bwrap cannot create namespaces here: {why}"
    return path, None


def backend_for(policy: SandboxPolicy) -> Backend:
    """Which backend runs commands under ``policy`` on this machine."""
    if policy.mode is SandboxMode.DANGER_FULL_ACCESS:
        return Backend(name="none", is_boundary=False, note="danger-full-access: no sandbox")
    if policy.mode is SandboxMode.EXTERNAL:
        return Backend(name="none", is_boundary=True, note="an external sandbox is in charge")
    path, why = bubblewrap_status()
    if path is not None:
        return Backend(name="bubblewrap", is_boundary=True)
    return Backend(name="process", is_boundary=False, note=f"{NOT_A_BOUNDARY} ({why})")


def bubblewrap_argv(
    policy: SandboxPolicy,
    argv: Sequence[str],
    *,
    cwd: Path,
    scratch: Path | None = None,
    bwrap: str = "bwrap",
) -> list[str]:
    """The bwrap command line that runs ``argv`` under ``policy``.

    ``scratch`` is a private writable directory (exported as TMPDIR by the caller), so tools
    that need a temporary file work while ``/tmp`` itself stays read-only.
    """
    out = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for root in policy.writable():
        resolved = root.resolve()
        if resolved.exists():
            out += ["--bind", str(resolved), str(resolved)]
    if scratch is not None:
        out += ["--bind", str(scratch), str(scratch)]
    workspace = policy.workspace.resolve()
    for rel in policy.protected:
        target = workspace / rel
        if target.exists():
            out += ["--ro-bind", str(target), str(target)]
    if not policy.network_access:
        out.append("--unshare-net")
    out += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session"]
    out += ["--chdir", str(cwd), "--", *argv]
    return out


def protected_paths(config: Config) -> tuple[str, ...]:
    """What no node may write, whatever its ``fs:write`` grants: :data:`PROTECTED` and every
    workspace file a hook or command worker of ``config`` runs (absent ones too: creating
    one would change what runs)."""
    files = [path for pins in config.pinned.values() for path in pins]
    return tuple(dict.fromkeys([*PROTECTED, *sorted(files)]))


def wrap_command(
    policy: SandboxPolicy, argv: Sequence[str], *, cwd: Path, scratch: Path | None = None
) -> tuple[list[str], Backend]:
    """The argv to execute and the backend it runs under (bwrap when usable)."""
    backend = backend_for(policy)
    if backend.name == "bubblewrap":
        path, _ = bubblewrap_status()
        return bubblewrap_argv(
            policy, argv, cwd=cwd, scratch=scratch, bwrap=path or "bwrap"
        ), backend
    return list(argv), backend


@dataclass(frozen=True, kw_only=True, slots=True)
class CommandSandbox:
    """A ``ProcessSandbox`` for :func:`rein.tools.process.run_process` (``prepare``).

    For callers that run their own commands under a node's isolation, such as ``command``
    criteria (AGS §22: "run command criteria under the node's permissions and isolation").
    There is no private scratch directory here, so under bubblewrap ``TMPDIR`` is read-only
    unless it lies in a writable root.
    """

    policy: SandboxPolicy

    def prepare(
        self, argv: list[str], *, cwd: Path, env: Mapping[str, str]
    ) -> tuple[list[str], dict[str, str]]:
        wrapped, _ = wrap_command(self.policy, argv, cwd=cwd)
        return wrapped, dict(env)
