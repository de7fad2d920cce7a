"""The sandbox policy, named as Codex names it, and the bubblewrap boundary that enforces it.

Four modes (``research/protocols.md`` §1.6):

- ``read-only``: nothing is writable; network only if ``network_access``.
- ``workspace-write``: the workspace (or the part of it that ``workspace_binds`` names, see
  :mod:`rein.tools.writeguard`) and the extra ``writable_roots`` are writable, except the
  protected paths: ``.git`` and ``.rein`` (workers never commit and never touch rein's
  state), ``rein.toml`` (and the user's, with the trust records, when the workspace holds
  them), and every workspace file a configured hook or command worker runs
  (:func:`protected_paths`): no node writes what rein itself runs or trusts.
- ``danger-full-access``: no restriction at all, and no sandbox process.
- ``external-sandbox``: the caller already sandboxes rein; rein enforces nothing more than the
  permission checks and says so.

Shell commands and command workers run under bubblewrap (``bwrap``) when it is installed and
can create namespaces, in a new root that holds only what :func:`bubblewrap_argv` binds:

- read-only, the system: :data:`SYSTEM_DIRS` and the files of ``/etc`` that programs need
  (:data:`ETC_ENTRIES`: the loader cache, users and groups, name resolution, certificates,
  time zone, alternatives...), a private ``/dev`` and ``/proc``, an empty ``/tmp``;
- read-only, the tools on the command's ``PATH``: each directory outside the system and, for
  a ``bin``/``sbin``/``shims`` directory, the installation it belongs to (a pyenv, a venv,
  ``/opt/node``); the same for each program the command names that ``PATH`` resolves, its
  symlinks followed, and for rein's own Python; so that interpreters and the tools they
  start work (:func:`tool_dirs`);
- of the workspace, only what the node may read (``readable``, from its ``fs:read`` grants:
  :mod:`rein.tools.readguard`), with the paths its deny patterns name masked
  (``hidden``); the writable roots read-write, the protected paths read-only on top.

Home folders, other projects, ``/root``, ``/var``, ``/run``, ``/srv``, ``/mnt`` and the rest
of ``/tmp`` are not there at all. The network is unshared unless allowed, and the child dies
with its parent in a new session. Without bubblewrap the process backend runs commands
directly, and that is **not a security boundary**: only rein's own permission checks apply.
"""

from __future__ import annotations

import enum
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rein.core.frozen import Frozen, field
from rein.errors import ConfigError
from rein.tools.paths import is_within

if TYPE_CHECKING:
    from rein.config import Config

PROTECTED = (".git", ".rein", "rein.toml")
#: System directories bound read-only (a symlink, as /bin is on merged-/usr systems, is
#: recreated as the same symlink).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: What of /etc a sandboxed command sees: what the loader, name resolution, TLS, locales,
#: shells and common tools read. Everything else there (shadow files, ssh host keys, the
#: managed rein.toml, service configuration) is absent.
ETC_ENTRIES = (
    "alternatives", "bash.bashrc", "ca-certificates", "ca-certificates.conf",
    "crypto-policies", "debian_version", "environment", "gai.conf", "gitconfig", "group",
    "host.conf", "hostname", "hosts", "inputrc", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
    "locale.alias", "locale.conf", "localtime", "lsb-release", "magic", "magic.mime",
    "mime.types", "mtab", "networks", "nsswitch.conf", "os-release", "passwd", "perl", "pki",
    "profile", "profile.d", "protocols", "python3", "resolv.conf", "services", "shells", "ssl",
    "terminfo", "timezone",
)
_TOOL_DIRS = frozenset({"bin", "sbin", "shims"})  # a PATH directory inside an installation
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


class SandboxPolicy(Frozen):
    """What a command or file tool may touch, independent of the permission grants."""

    mode: SandboxMode = SandboxMode.READ_ONLY
    workspace: Path = field(default_factory=Path.cwd)
    writable_roots: tuple[Path, ...] = ()  # extra roots, besides the workspace
    network_access: bool = False
    protected: tuple[str, ...] = PROTECTED  # workspace-relative, never writable
    require_boundary: bool = False  # refuse commands when bubblewrap is not usable
    # The writable part of the workspace when fs:write grants narrow it (None: all of it).
    workspace_binds: tuple[Path, ...] | None = None
    # The readable part of the workspace when fs:read grants narrow it (None: all of it),
    # and the paths in it a deny pattern masks (see rein.tools.readguard).
    readable: tuple[Path, ...] | None = None
    hidden: tuple[Path, ...] = ()

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


class Backend(Frozen):
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
    search_path: str | None = None,
    programs: Sequence[str] = (),
    files: Sequence[Path] = (),
) -> list[str]:
    """The bwrap command line that runs ``argv`` under ``policy`` (see the module doc).

    ``scratch`` is a private writable directory (exported as TMPDIR by the caller), so tools
    that need a temporary file work while ``/tmp`` itself is empty. ``search_path`` is the
    ``PATH`` the command runs with, ``programs`` those the command names: their
    installations are bound read-only (:func:`tool_dirs`); so are ``files`` (what a trusted
    command line names outside the workspace: a command worker's script).
    """
    workspace = policy.workspace.resolve()
    out = [bwrap, *system_binds()]
    out += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for tools in tool_dirs(search_path, workspace, programs):
        out += ["--ro-bind", str(tools), str(tools)]
    for path in files:
        out += ["--ro-bind", str(path), str(path)]
    if policy.readable is None:
        out += ["--ro-bind", str(workspace), str(workspace)]
    else:
        if not _under_system(workspace):
            out += ["--dir", str(workspace)]  # the working directory, even with nothing in it
        for path in policy.readable:
            out += ["--ro-bind", str(path), str(path)]
    writable = [r.resolve() for r in policy.writable() if r.resolve().exists()]
    for resolved in writable:
        out += ["--bind", str(resolved), str(resolved)]
    if scratch is not None:
        out += ["--bind", str(scratch), str(scratch)]
    for rel in policy.protected:
        target = workspace / rel
        if target.exists() and any(is_within(target, root) for root in writable):
            out += ["--ro-bind", str(target), str(target)]
    for path in policy.hidden:
        if path.is_dir():
            out += ["--tmpfs", str(path), "--remount-ro", str(path)]
        elif path.exists():
            out += ["--ro-bind", "/dev/null", str(path)]
    # The new root and /tmp are empty tmpfs: read-only, so a write outside the binds fails
    # as it would on the machine, never vanishing into a folder only the sandbox sees.
    out += ["--remount-ro", "/", "--remount-ro", "/tmp"]
    if not policy.network_access:
        out.append("--unshare-net")
    out += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session"]
    out += ["--chdir", str(cwd), "--", *argv]
    return out


def split_wrapped(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """An argv :func:`bubblewrap_argv` made, split into the sandbox's part (``bwrap``, its
    options, ``--chdir DIR --``) and the command it runs; ``([], argv)`` for an argv that
    is not wrapped."""
    if argv and os.path.basename(argv[0]) == "bwrap":
        for i in range(1, len(argv) - 2):
            if argv[i] == "--chdir" and argv[i + 2] == "--":
                return list(argv[:i + 3]), list(argv[i + 3:])
    return [], list(argv)


@lru_cache(maxsize=1)
def system_binds() -> tuple[str, ...]:
    """The bwrap arguments that show the system read-only: :data:`SYSTEM_DIRS` and
    :data:`ETC_ENTRIES`. A symlink is recreated as the same symlink; one in /etc that points
    outside the system (``resolv.conf`` into ``/run``) has its target bound as well."""
    out: list[str] = []
    for name in SYSTEM_DIRS:
        if os.path.islink(name):
            out += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            out += ["--ro-bind", name, name]
    for entry in ETC_ENTRIES:
        path = f"/etc/{entry}"
        if os.path.islink(path):
            out += ["--symlink", os.readlink(path), path]
            target = os.path.realpath(path)
            if os.path.exists(target) and not _under_system(Path(target)) \
                    and not target.startswith("/proc/"):
                out += ["--ro-bind", target, target]
        elif os.path.exists(path):
            out += ["--ro-bind", path, path]
    return tuple(out)


# Every sandboxed command computes its binds: the checks below compare resolved paths as
# strings, each path resolved once, rather than resolving both sides of every comparison.


@lru_cache(maxsize=1)
def _system_roots() -> tuple[str, ...]:
    return tuple(os.path.realpath(d) for d in SYSTEM_DIRS if os.path.isdir(d))


@lru_cache(maxsize=1)
def _homes() -> frozenset[str]:
    return frozenset({"/root", os.path.realpath(Path.home())})


def _under(path: str, root: str) -> bool:
    """Whether the resolved ``path`` is the resolved ``root`` or below it."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def _under_system(path: Path) -> bool:
    real = os.path.realpath(path)
    return any(_under(real, root) for root in _system_roots())


def tool_dirs(search_path: str | None, workspace: Path, programs: Sequence[str] = ()
              ) -> tuple[Path, ...]:
    """What to bind read-only for the tools a command runs: each absolute directory of
    ``search_path`` outside the system dirs that does not hold the workspace, and for a
    ``bin``, ``sbin`` or ``shims`` directory the installation it belongs to (``~/.pyenv``
    for ``~/.pyenv/shims``), unless that is a home folder or a top-level directory; then
    the installation of each of ``programs`` (a name ``search_path`` resolves, or a path)
    and of rein's own Python, every symlink on the way followed (a venv's ``python`` is a
    link into the interpreter it was made from)."""
    root = os.path.realpath(workspace)
    out: list[str] = []
    for entry in (search_path or "").split(os.pathsep):
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            continue
        directory = os.path.realpath(entry)
        if _under_system(Path(directory)) or _under(root, directory):
            continue
        out.append(directory)
        out += _prefix(directory, root)
    for program in (sys.executable, *programs):
        out += _installation(program, search_path, root)
    return tuple(Path(p) for p in _outermost(out))


def _prefix(directory: str, root: str) -> list[str]:
    """The installation a resolved tool directory belongs to, when it is one to bind."""
    prefix, name = os.path.split(directory)
    if (name in _TOOL_DIRS and prefix.count("/") > 1 and prefix not in _homes()
            and os.path.dirname(prefix) != "/home" and not _under(root, prefix)):
        return [prefix]
    return []


def _installation(program: str, search_path: str | None, root: str) -> list[str]:
    found = program if "/" in program else shutil.which(program, path=search_path or "")
    if not found:
        return []
    out: list[str] = []
    current = os.path.abspath(found)
    for _ in range(40):  # a symlink chain, as the kernel follows it, one link at a time
        folder = os.path.realpath(os.path.dirname(current))  # the link itself kept
        here = os.path.join(folder, os.path.basename(current))
        if not (_under_system(Path(folder)) or _under(here, root)):
            out += _prefix(folder, root) or [here]
        if not os.path.islink(current):
            break
        current = os.path.normpath(os.path.join(os.path.dirname(current),
                                                os.readlink(current)))
    return [p for p in out if os.path.exists(p)]


def _outermost(paths: Sequence[str]) -> list[str]:
    out: list[str] = []
    for path in sorted(set(paths), key=lambda p: p.count("/")):
        if not any(_under(path, o) for o in out):
            out.append(path)
    return out


def protected_paths(config: Config | None, workspace: Path,
                    env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """What no node may write in ``workspace``, whatever its ``fs:write`` grants:
    :data:`PROTECTED`, every workspace file a hook or command worker of ``config`` runs
    (absent ones too: creating one would change what runs), and the managed ``rein.toml``
    and the user's folder of them (its ``rein.toml``, the trust records) when they lie in
    the workspace (a workspace that is a home folder holds ``.config/rein``)."""
    files = [path for pins in (config.pinned.values() if config else ()) for path in pins]
    return tuple(dict.fromkeys([*PROTECTED, *own_files(workspace, env), *sorted(files)]))


def own_files(workspace: Path, env: Mapping[str, str] | None = None) -> list[str]:
    """rein's managed ``rein.toml`` and user configuration folder, as workspace-relative
    paths, when the workspace holds them."""
    from rein.config.files import config_paths

    root = workspace.resolve()
    paths = config_paths(workspace, env)
    files = []
    for path in (paths[0][1], paths[1][1].parent):
        resolved = path.resolve()
        if resolved != root and is_within(resolved, root):
            files.append(resolved.relative_to(root).as_posix())
    return files


def wrap_command(
    policy: SandboxPolicy, argv: Sequence[str], *, cwd: Path, scratch: Path | None = None,
    search_path: str | None = None, programs: Sequence[str] = (),
    files: Sequence[Path] = (),
) -> tuple[list[str], Backend]:
    """The argv to execute and the backend it runs under (bwrap when usable)."""
    backend = backend_for(policy)
    if backend.name == "bubblewrap":
        path, _ = bubblewrap_status()
        return bubblewrap_argv(
            policy, argv, cwd=cwd, scratch=scratch, bwrap=path or "bwrap",
            search_path=search_path if search_path is not None else os.environ.get("PATH"),
            programs=programs or argv[:1], files=files,
        ), backend
    return list(argv), backend


class CommandSandbox(Frozen):
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
        wrapped, _ = wrap_command(self.policy, argv, cwd=cwd, search_path=env.get("PATH"))
        return wrapped, dict(env)
