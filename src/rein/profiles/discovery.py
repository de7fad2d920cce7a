"""Where profiles are found, in what order, and with what trust (OAP §5.1, §7.1).

Roots, from lowest to highest precedence (a later root wins for the same name)::

    managed   <dir of the managed rein.toml>/agents   ($REIN_MANAGED_AGENTS overrides)  trust managed
    user      ~/.agentprofiles, then $XDG_CONFIG_HOME/rein/agents (native wins)         trust user
    project   <workspace>/.agents, then <workspace>/.rein/agents (native wins)          trust project
    plugin    [profiles] plugins = [...] in rein.toml, workspace-relative                trust project

One deliberate change from the spec's plain "later wins": a managed profile is never shadowed
by a user, project or plugin profile of the same name (research J-9), unless the managed
policy sets ``allow_shadowing = true``. Every cross-root collision is reported; the same name
twice inside one directory is an error (L1-D2).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from rein.config import Config
from rein.core.frozen import Frozen, field
from rein.errors import LoadError
from rein.formats.oap.document import PROFILE_SUFFIXES, load_oap

Trust = Literal["managed", "user", "project", "imported"]
ROOT_ORDER = ("managed", "user", "project", "plugin")


class Root(Frozen):
    """One discovery directory."""

    scope: str  # managed | user | project | plugin
    path: Path
    trust: Trust
    native: bool = False  # the harness's own directory (wins over the universal one)


class Candidate(Frozen):
    """A profile file found in a root."""

    name: str
    path: Path
    root: Root


class Catalog(Frozen):
    """Every profile discovered, the winner per name, and what the search reported."""

    roots: tuple[Root, ...]
    winners: Mapping[str, Candidate]
    reports: tuple[str, ...] = ()  # collisions and shadowing, for L1-D3
    errors: tuple[str, ...] = ()  # same name twice in one directory (L1-D2), unreadable files
    duplicates: frozenset[str] = field(default_factory=frozenset)

    def find(self, name: str) -> Candidate | None:
        """The profile that ``name`` resolves to, or None."""
        return self.winners.get(name)


def discovery_roots(workspace: Path, config: Config | None = None,
                    env: Mapping[str, str] | None = None) -> tuple[Root, ...]:
    """The roots for a workspace, lowest precedence first."""
    env = os.environ if env is None else env
    if env.get("REIN_MANAGED_AGENTS"):
        managed = Path(env["REIN_MANAGED_AGENTS"])
    else:
        managed = Path(env.get("REIN_MANAGED_CONFIG") or "/etc/rein/rein.toml").parent / "agents"
    home = Path(env.get("HOME") or Path.home())
    xdg = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    roots = [
        Root(scope="managed", path=managed, trust="managed", native=True),
        Root(scope="user", path=home / ".agentprofiles", trust="user"),
        Root(scope="user", path=xdg / "rein" / "agents", trust="user", native=True),
        Root(scope="project", path=workspace / ".agents", trust="project"),
        Root(scope="project", path=workspace / ".rein" / "agents", trust="project", native=True),
    ]
    plugins = ((config.get("profiles") or {}).get("plugins") or []) if config else []
    for plugin in plugins:
        roots.append(Root(scope="plugin", path=workspace / plugin, trust="project", native=True))
    return tuple(roots)


def _profile_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir()
                  if p.is_file() and p.name.lower().endswith(PROFILE_SUFFIXES))


def discover(workspace: Path, config: Config | None = None,
             env: Mapping[str, str] | None = None) -> Catalog:
    """Scan every root. Reads files only; never creates, installs or fetches anything."""
    roots = discovery_roots(workspace, config, env)
    allow_shadowing = bool(config.policy.get("allow_shadowing")) if config else False
    winners: dict[str, Candidate] = {}
    reports: list[str] = []
    errors: list[str] = []
    duplicates: set[str] = set()
    for root in roots:
        seen_here: dict[str, Path] = {}
        for path in _profile_files(root.path):
            try:
                name = load_oap(path).data.get("metadata", {}).get("name")
            except (LoadError, AttributeError):
                errors.append(f"{path}: unreadable profile, skipped")
                continue
            if not isinstance(name, str):
                errors.append(f"{path}: no metadata.name, skipped")
                continue
            if name in seen_here:
                errors.append(f"{name!r} is defined twice in {root.path}: {seen_here[name].name} "
                              f"and {path.name} [L1-D2]")
                duplicates.add(name)
                continue
            seen_here[name] = path
            found = Candidate(name=name, path=path, root=root)
            previous = winners.get(name)
            if previous is None:
                winners[name] = found
            elif previous.root.trust == "managed" and root.trust != "managed" \
                    and not allow_shadowing:
                reports.append(f"{name!r}: {path} would shadow the managed profile "
                               f"{previous.path}; the managed one is kept")
            else:
                reports.append(f"{name!r}: {path} ({root.scope}) takes precedence over "
                               f"{previous.path} ({previous.root.scope})")
                winners[name] = found
    return Catalog(roots=roots, winners=winners, reports=tuple(reports), errors=tuple(errors),
                   duplicates=frozenset(duplicates))


def trust_for(path: Path, workspace: Path, roots: tuple[Root, ...]) -> Trust:
    """Trust of a profile given by path: its root's, ``project`` inside the workspace,
    otherwise ``imported``. Whatever the file itself says is ignored (L1-I4)."""
    real = path.resolve()
    best: Root | None = None
    for root in roots:
        try:
            real.relative_to(root.path.resolve())
        except ValueError:
            continue
        best = root if best is None or len(str(root.path)) > len(str(best.path)) else best
    if best is not None:
        return best.trust
    try:
        real.relative_to(workspace.resolve())
        return "project"
    except ValueError:
        return "imported"
