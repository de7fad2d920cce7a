"""``rein.toml``: rein's own configuration, merged from three files that can only narrow.

Files, from the most to the least trusted::

    managed   /etc/rein/rein.toml           ($REIN_MANAGED_CONFIG overrides the path)
    user      $XDG_CONFIG_HOME/rein/rein.toml, else ~/.config/rein/rein.toml
              ($REIN_USER_CONFIG overrides the path)
    project   <workspace>/rein.toml

A lower file may only narrow what a higher one allows, because a cloned repository must not
widen the user's policy. So every key that grants something has a combining rule rather than
"last wins": decisions take the minimum (``deny`` < ``ask`` < ``allow``), allow-sets intersect,
deny-sets unite, limits take the minimum, granting booleans are ANDed. Hooks are unioned by
name, a higher file's definition always winning (and ``[policy] project_hooks = false`` drops
the project's). Tables that run commands or send data (command workers, hooks, providers that
reach a network, a store URL) are honoured from the project file only once the user trusts that
exact content by digest (:mod:`rein.config.trust`). Sections rein does not narrow
(``[routing]``, ``[tiers.*]``, ``[driver]``, ``[store]``, anything unknown) are kept as data and
merged key by key, the lower file winning.

``[approver]`` (who answers approvals, their roles, signatures) and ``[dev] plan_roles`` are read
only from the managed file at its fixed path and the account's own file in its home as the
password database gives it, never from a file the environment names or the project's
(:mod:`rein.config.approver`, :func:`rein.config.files.authority_paths`).

:attr:`Config.sources` records, for every merged key, which file(s) produced its value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType

from rein.config import files as _files
from rein.config.approver import (
    Approver,
    approver_of,
    authority_of,
    check_approver,
    merge_authority,
    without_authority,
)
from rein.config.files import config_paths
from rein.config.hooks import check_hooks
from rein.core import config_rules as rules
from rein.core.config_places import any_config
from rein.core.config_rules import DECISIONS as DECISIONS
from rein.core.config_rules import MAX_CONFIG_BYTES as MAX_CONFIG_BYTES
from rein.core.frozen import Frozen, field, set_field
from rein.errors import ConfigError, LoadError, Location

# Every command reads the configuration, most of them with no file to read: the TOML
# parser, the trust records and the document loader are imported when a file needs them.
TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any

    from rein.config.trust import ProjectTrust
    from rein.formats.loader import LoadLimits

SCOPES = ("managed", "user", "project")
# What each checked section may hold lives in rein.core.config_rules, shared with the
# cold read of `rein next`, which must refuse the very files this module refuses.
_POLICY_RULES, _ORDERS, _LIMIT_KEYS = rules.POLICY_RULES, rules.ORDERS, rules.LIMIT_KEYS

#: What rein grants when no file says otherwise: built-in tools, edits inside the workspace,
#: shell and network only after asking.
DEFAULT_POLICY: Mapping[str, Any] = MappingProxyType({
    "default": "ask", "shell": "ask", "edit": "allow", "network": "ask",
    "tools": ["**"], "deny_tools": [],
    "read_roots": ["."], "write_roots": ["."], "deny_paths": [".git", ".rein"],
    "allow_hosts": ["*"], "models": ["**"],
    "memory_mode": "read_write", "memory_scopes": ["**"], "writeback": "auto",
    "max_turns": None, "max_tool_calls": None, "timeout_seconds": None, "max_cost_usd": None,
    "max_context_tokens": None, "max_state_tokens": None, "max_state_bytes": None,
    "subagent_max_depth": 8, "subagent_max_concurrent": 64,
    "absolute_paths": False, "project_hooks": True, "allow_shadowing": False,
    "project_trust": True,
})


class HookSpec(Frozen):
    """A named hook: a command that speaks the Claude Code hook wire format."""

    name: str
    command: tuple[str, ...]
    timeout_seconds: float = 30.0
    events: tuple[str, ...] = ()
    source: str = ""
    matcher: str | None = None  # tool events: which tools (see rein.config.hooks)
    shell: bool = False  # the command was one string: it runs through /bin/sh -c
    fail_closed: bool = False  # a failed run blocks (PreToolUse, PostToolUse, PreCompact)
    # The workspace files it runs, and their digests when the configuration was read (or
    # trusted): a hook whose files changed since is not run (rein.config.command_files).
    # Kept as a read-only copy.
    files: Mapping[str, str] = field(default_factory=dict)
    format: str | None = None  # "claude" | "rein": the tool names and inputs it is shown

    def __post_init__(self) -> None:
        set_field(self, "files", MappingProxyType(dict(self.files)))


class Config(Frozen):
    """The merged configuration. ``data`` is plain TOML data; use :meth:`get` to read it."""

    data: Mapping[str, Any]
    sources: Mapping[str, tuple[str, ...]]  # "policy.shell" → ("/etc/rein/rein.toml", ...)
    files: tuple[tuple[str, str], ...] = ()  # (scope, path) of every file that was read
    notes: tuple[str, ...] = ()  # what the merge dropped or narrowed, and why
    #: The verdict on the project file's tables that run commands or send data (None when
    #: there is no project file). See :mod:`rein.config.trust`.
    project_trust: ProjectTrust | None = None
    #: ``"hooks.NAME"`` / ``"workers.command.NAME"`` → the workspace files its command runs
    #: and their digests, as trusted (a project table) or as read (the others); kept as a
    #: read-only copy.
    pinned: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        set_field(self, "pinned", MappingProxyType(dict(self.pinned)))

    def get(self, section: str, default: Any = None) -> Any:
        """A top-level section (``"policy"``, ``"hooks"``, ``"tiers"``...), or ``default``."""
        value = self.data.get(section, default)
        return default if value is None else value

    @property
    def policy(self) -> Mapping[str, Any]:
        """rein's permission and tool policy with every default filled in."""
        return {**DEFAULT_POLICY, **self.data.get("policy", {})}

    @property
    def hooks(self) -> Mapping[str, HookSpec]:
        """Registered named hooks."""
        out: dict[str, HookSpec] = {}
        for name, spec in (self.data.get("hooks") or {}).items():
            command = spec.get("command", ())
            out[name] = HookSpec(
                name=name,
                command=(command,) if isinstance(command, str) else tuple(command),
                timeout_seconds=float(spec.get("timeout_seconds", 30)),
                events=tuple(spec.get("events", ())),
                source=(self.sources.get(f"hooks.{name}") or ("",))[0],
                matcher=spec.get("matcher"),
                shell=isinstance(command, str),
                fail_closed=bool(spec.get("fail_closed", False)),
                files=self.pinned.get(f"hooks.{name}", {}),
                format=spec.get("format"),
            )
        return out

    @property
    def approver(self) -> Approver:
        """Who answers approvals here (see :mod:`rein.config.approver`)."""
        return approver_of(self.data.get("approver") or {}, self.sources)

    @property
    def limits(self) -> LoadLimits:
        """Loader limits, defaults where the files are silent."""
        from rein.formats.loader import LoadLimits

        given = {k: v for k, v in (self.data.get("limits") or {}).items() if k in _LIMIT_KEYS}
        return LoadLimits(**given)


def loader_limits(workspace: Path) -> LoadLimits:
    """The ``[limits]`` in force for documents of ``workspace``: the defaults when no
    ``rein.toml`` exists (without reading or parsing anything), else the merged files'
    (CFG002/CFG003/CFG004 for a file that cannot be read)."""
    from rein.formats.loader import DEFAULT_LIMITS

    if not any_config(workspace):
        return DEFAULT_LIMITS
    return load_config(workspace).limits


def load_config(workspace: Path, *, env: Mapping[str, str] | None = None) -> Config:
    """Read and merge managed, user and project ``rein.toml``. Bad TOML → :class:`ConfigError`."""
    merged: dict[str, Any] = {}
    sources: dict[str, tuple[str, ...]] = {}
    files: list[tuple[str, str]] = []
    notes: list[str] = []
    trust: ProjectTrust | None = None
    paths = config_paths(workspace, env)
    authority = _authority_files(Path(workspace), notes)
    own = {_same(path) for _scope, path in _files.authority_paths()}
    for scope, path in paths:
        if not path.exists():  # a pipe or folder is read, and refused, rather than skipped
            continue
        data = _read(path)
        _check(data, path)
        notes.extend(_unknown_sections(data, path))
        files.append((scope, str(path)))
        # Who may approve comes from the account's own files alone, read apart below.
        data = without_authority(data, notes, path, quiet=_same(path) in own,
                                 project=scope == "project")
        if scope == "project":
            data = _without_mcp_trust(data, notes, path)
            data, trust = _assess_project(data, merged, path, Path(workspace), paths[1][1])
            from rein.config.trust import notice as trust_notice

            if (text := trust_notice(trust)) is not None:
                notes.append(text)
        _merge_file(merged, sources, notes, data, scope, str(path))
    _merge_authority(merged, sources, notes, files, authority)
    notes.extend(_unrouted_tiers(merged))
    frozen = MappingProxyType(merged)
    return Config(data=frozen, sources=MappingProxyType(sources), files=tuple(files),
                  notes=tuple(notes), project_trust=trust,
                  pinned=_pinned(merged, trust, Path(workspace)))


def _pinned(merged: Mapping[str, Any], trust: ProjectTrust | None, workspace: Path
            ) -> dict[str, dict[str, str]]:
    """The files each hook and command worker in force runs, with their digests: a trusted
    project table's as trusted, the others' as they are now."""
    workers = merged.get("workers")
    commands = workers.get("command") if isinstance(workers, Mapping) else None
    tables = [(f"hooks.{n}", "hook", t) for n, t in (merged.get("hooks") or {}).items()]
    tables += [(f"workers.command.{n}", "command worker", t)
               for n, t in (commands.items() if isinstance(commands, Mapping) else ())]
    if not tables:
        return {}
    from rein.config.trust import bound_files

    trusted = {i.key: i for i in trust.items} if trust is not None and trust.honoured else {}
    out: dict[str, dict[str, str]] = {}
    for key, kind, table in tables:
        item = trusted.get(key)
        if item is not None and item.value == table:
            files = dict(item.files)
        else:
            files = bound_files(table, kind, workspace, os.environ.get("PATH", os.defpath)
                                ).get("files") or {}
        if files:
            out[key] = files
    return out


def _same(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: compared as written
        return path


def _authority_files(workspace: Path, notes: list[str]) -> list[tuple[str, Path]]:
    """The account's own files that exist, except one inside the workspace: nodes and the
    agent write there, and no file they can write says who may approve."""
    out = []
    root = _same(workspace)
    for scope, path in _files.authority_paths():
        if not path.exists():
            continue
        real = _same(path)
        if real == root or root in real.parents:
            notes.append(f"{path}: [approver] and [dev] plan_roles ignored (the file is inside "
                         "the workspace, where nodes and agents write)")
            continue
        out.append((scope, path))
    return out


def _merge_authority(merged: dict[str, Any], sources: dict[str, tuple[str, ...]],
                     notes: list[str], files: list[tuple[str, str]],
                     authority: list[tuple[str, Path]]) -> None:
    """``[approver]`` and ``[dev] plan_roles`` from the account's own files, most trusted
    first; a file read above is not listed twice."""
    read = {_same(Path(p)) for _scope, p in files}
    for _scope, path in authority:
        data = _read(path)
        check_approver(data, path, _bad)
        if _same(path) not in read:
            files.append(("approvers", str(path)))
        merge_authority(merged, sources, notes, authority_of(data), str(path))


def with_layer(config: Config, data: Mapping[str, Any], *, path: str) -> Config:
    """``config`` with one more file's tables merged under it, by the rules a project file
    follows: it narrows the policy, its hooks count as a project's, it says nothing of who
    may approve and pre-approves no MCP launch. ``rein eval`` lays a configuration over the
    person's own ``rein.toml`` this way. CFG004 for a bad table."""
    import copy

    raw = copy.deepcopy(dict(data))
    _check(raw, Path(path))
    sources, notes = dict(config.sources), list(config.notes)
    raw = without_authority(raw, notes, Path(path), project=True)
    raw = _without_mcp_trust(raw, notes, Path(path))
    merged = copy.deepcopy(dict(config.data))
    _merge_file(merged, sources, notes, raw, "project", path)
    return Config(data=MappingProxyType(merged), sources=MappingProxyType(sources),
                  files=(*config.files, ("evaluation", path)), notes=tuple(notes),
                  project_trust=config.project_trust)


# The top-level sections rein reads; anything else is kept as data (extensions: use x-...).
KNOWN_SECTIONS = frozenset({
    "approver", "dev", "driver", "executor", "hooks", "limits", "mcp", "policy", "profiles",
    "providers", "routing", "spec", "store", "telemetry", "tiers", "usage", "workers",
})


# The keys of the flat sections rein reads; a key outside them is noted like a section.
# (Sections of tables, such as [tiers.*] or [providers.*], are checked where they are read.)
KNOWN_KEYS: dict[str, frozenset[str]] = {
    "driver": frozenset({"enabled", "tiers", "clean_context_at", "max_instruction_bytes",
                         "max_inline_input_bytes", "max_write_refusals"}),
    "store": frozenset({"url"}),
    "telemetry": frozenset({"otel"}),
    "profiles": frozenset({"plugins"}),
    "mcp": frozenset({"trusted"}),
    "usage": frozenset({"prices", "agent_logs"}),
}


def _unknown_sections(data: dict[str, Any], path: Path) -> list[str]:
    """A note for each top-level section, or key of a flat section, rein does not read:
    most often a typo."""
    from rein.core.suggest import closest

    out = []
    for section, value in data.items():
        if section.startswith("x-"):
            continue
        if section not in KNOWN_SECTIONS:
            close = closest(section, KNOWN_SECTIONS, limit=1)
            guess = f" (did you mean [{close[0]}]?)" if close else ""
            out.append(f"{path}: [{section}] is not a section rein reads{guess}; kept as "
                       "data, unused (name extensions x-...)")
            continue
        if section == "tiers" and isinstance(value, dict):
            out.extend(_unknown_tiers(value, path))
            continue
        known = KNOWN_KEYS.get(section)
        if known is not None and isinstance(value, dict):
            out.extend(_unknown_keys(value, known, f"[{section}]", path))
    return out


def _unknown_keys(table: dict[str, Any], known: frozenset[str], name: str, path: Path
                  ) -> list[str]:
    """A note for each key of ``table`` (``name``, as written) rein does not read."""
    from rein.core.suggest import closest

    out = []
    for key in table:
        if key in known or key.startswith("x-"):
            continue
        close = closest(key, known, limit=1)
        guess = f" (did you mean {close[0]}?)" if close else ""
        out.append(f"{path}: {name} {key} is not a key rein reads{guess}; kept as data, "
                   f"unused (known: {', '.join(sorted(known))})")
    return out


# The keys of a [tiers.NAME] table (rein.workers.model_setup.tier_routes reads them).
TIER_KEYS = frozenset({"provider", "model", "context_tokens"})


def _unknown_tiers(tiers: dict[str, Any], path: Path) -> list[str]:
    """A note for each entry of ``[tiers]`` no route is made of: a name that is not a tier
    (a node of that tier would be routed up to the next tier that has a model, or refused),
    a value that is not a table, a key a tier's table does not have."""
    from rein.core.suggest import closest
    from rein.core.tiers import TIERS, no_route

    out = []
    for name, table in tiers.items():
        if name.startswith("x-"):
            continue
        why = no_route(name, table)
        if why == "not a tier":
            close = closest(name, TIERS, limit=1)
            guess = f" (did you mean [tiers.{close[0]}]?)" if close else ""
            out.append(f"{path}: [tiers.{name}] is not a tier{guess}; not a route, unused "
                       f"(tiers: {', '.join(TIERS)})")
        elif why == "not a table":
            out.append(f"{path}: tiers.{name} is not a table; not a route, unused (write "
                       f"[tiers.{name}] with provider and model)")
        elif isinstance(table, dict):  # its model may come from another file: merged below
            out.extend(_unknown_keys(table, TIER_KEYS, f"[tiers.{name}]", path))
    return out


def _unrouted_tiers(merged: Mapping[str, Any]) -> list[str]:
    """A note for each tier table that, all files merged, names no model: it is no route."""
    tiers = merged.get("tiers")
    if not isinstance(tiers, Mapping):
        return []
    from rein.core.tiers import no_route

    return [f"[tiers.{name}] names no model in any rein.toml: not a route, unused (a node of "
            f"tier {name} is served by the next tier up that has a model, or refused)"
            for name, table in tiers.items() if no_route(name, table) == "no model"]


def _without_mcp_trust(data: dict[str, Any], notes: list[str], path: Path) -> dict[str, Any]:
    """A project file never pre-approves MCP launches, trusted or not: each launch it asks for
    goes through the approval queue (see ``rein.workers.profile_mcp.trusted_launches``)."""
    mcp = data.get("mcp")
    if not isinstance(mcp, dict) or "trusted" not in mcp:
        return data
    notes.append(f"{path}: mcp.trusted ignored (only a managed or user rein.toml may "
                 "pre-approve MCP launches)")
    return {**data, "mcp": {k: v for k, v in mcp.items() if k != "trusted"}}


def _assess_project(data: dict[str, Any], merged: Mapping[str, Any], path: Path,
                    workspace: Path, user_config: Path) -> tuple[dict[str, Any], ProjectTrust]:
    """The project file's data as far as it is in force, and the trust verdict on the rest."""
    from rein.config.trust import read_records, split_project, trust_file, verdict

    safe, items = split_project(data, merged, workspace,
                                search_path=os.environ.get("PATH", os.defpath))
    allowed = {**DEFAULT_POLICY, **merged.get("policy", {})}["project_trust"]
    # The trust file is read only when there is something to trust, so a project that only
    # narrows never depends on it.
    records = read_records(trust_file(user_config)) if items and allowed else {}
    trust = verdict(path, items, records, allowed=bool(allowed))
    return (data if trust.honoured else safe), trust


# ---------------------------------------------------------------------------- reading


_TOML_POS = r"\(at line (\d+), column (\d+)\)"  # compiled on a TOML error only


def _read(path: Path) -> dict[str, Any]:
    from rein.formats.loader import read_limited

    try:
        text = read_limited(path, MAX_CONFIG_BYTES).decode("utf-8")
    except LoadError as exc:
        raise ConfigError(f"cannot read {path}: {exc.message}", code="CFG002",
                          location=Location(file=str(path)), hint=exc.hint) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read {path}: {exc}", code="CFG002",
                          location=Location(file=str(path)),
                          hint="save the file as UTF-8") from None
    return parse_toml(text, path, code="CFG003")


def parse_toml(text: str, path: Path, *, code: str, what: str | None = None,
               json_numbers: bool = True) -> dict[str, Any]:
    """The data of TOML ``text`` read from ``path``, or a ConfigError with ``code`` whatever
    the text holds: a syntax error at its line and column, a file nested past the parser's
    recursion or holding an integer too long to convert (which ``tomllib`` raises as other
    exceptions), and with ``json_numbers`` a number JSON cannot carry exactly (a file rein
    digests or shows as JSON: ``inf``, ``nan``, hex integers past 2^53). ``what`` names the
    file in the message ("scenario.toml is not valid TOML: ..."; else "invalid TOML: ...")."""
    import tomllib

    lead = f"{what} is not valid TOML" if what else "invalid TOML"
    try:
        data = tomllib.loads(text)
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, tomllib.TOMLDecodeError):
            m = re.search(_TOML_POS, str(exc))
            line, col = (int(m.group(1)), int(m.group(2))) if m else (None, None)
            place = f" at line {line}, column {col}" if m else ""
            raise ConfigError(f"{lead}: {re.sub(_TOML_POS, '', str(exc)).strip()}",
                              code=code, location=Location(file=str(path), line=line,
                                                           column=col),
                              hint=f"fix the TOML syntax{place} (https://toml.io)") from None
        # tomllib converts integers with int() and nests with recursion: a 5,000-digit
        # number or 100,000 nested arrays escape as these, not as TOMLDecodeError.
        why = ("nests too deeply" if isinstance(exc, RecursionError)
               else "holds a number too large to read")
        raise ConfigError(f"{lead}: the file {why}", code=code,
                          location=Location(file=str(path)),
                          hint="the file holds small tables of strings and numbers") from None
    found = rules.bad_number(data) if json_numbers else None
    if found is not None:
        key, value = found
        where = Location(file=str(path), line=_line_of(path, key))
        if isinstance(value, float):
            raise ConfigError(f"{lead}: {key} is {value}, which is not a finite number",
                              code=code, hint="use a finite number", location=where)
        raise ConfigError(f"{lead}: {key} is an integer beyond 2^53", code=code,
                          hint="no setting needs a number this large", location=where)
    return data


def _line_of(path: Path, key: str) -> int | None:
    from rein.formats.loader import read_limited

    try:
        text = read_limited(path, MAX_CONFIG_BYTES).decode("utf-8", errors="replace")
    except LoadError:  # pragma: no cover - the file was just read
        return None
    for number, line in enumerate(text.splitlines(), 1):
        if re.match(rf"\s*{re.escape(key)}\s*=", line):
            return number
    return None


def _bad(path: Path, section: str, key: str, message: str, hint: str | None = None) -> ConfigError:
    return ConfigError(f"[{section}] {key}: {message}", code="CFG004", hint=hint,
                       location=Location(file=str(path), line=_line_of(path, key)))


def _known(key: str, keys: Iterable[str]) -> str:
    """The hint for an unknown key: the nearest known one first, then all of them."""
    from rein.core.suggest import with_suggestion

    listed = "known keys: " + ", ".join(sorted(keys))
    return with_suggestion(listed, key, keys) or listed


def _check(data: dict[str, Any], path: Path) -> None:
    """Type-check the sections rein narrows, so a typo never silently grants (the rules:
    :mod:`rein.core.config_rules`)."""
    for section in sorted(KNOWN_SECTIONS & data.keys()):
        if not isinstance(data[section], dict):  # `providers = "x"`: a value, not a table
            raise ConfigError(f"{section} must be a table ([{section}]), not a value",
                              code="CFG004", hint=f"write its settings under a [{section}] "
                                                  "header", location=Location(
                                  file=str(path), line=_line_of(path, section)))
    policy = data.get("policy", {})
    for key, value in policy.items():
        if (problem := rules.policy_problem(key, value)) is not None:
            raise _bad(path, "policy", key, problem, _known(key, _POLICY_RULES)
                       if problem == rules.UNKNOWN_KEY else None)
    limits = data.get("limits", {})
    for key, value in limits.items():
        if (problem := rules.limits_problem(key, value)) is not None:
            raise _bad(path, "limits", key, problem, _known(key, _LIMIT_KEYS)
                       if problem == rules.UNKNOWN_KEY else None)
    check_hooks(data, path, _bad)
    check_approver(data, path, _bad)
    # [mcp] trusted grants launches without asking: a mistyped one must not pass silently.
    mcp = data.get("mcp", {})
    if (problem := rules.mcp_trusted_problem(mcp.get("trusted", []))) is not None:
        raise _bad(path, "mcp", "trusted", problem,
                   'for example: trusted = ["mcp-server-time --local-timezone UTC"]')


# ---------------------------------------------------------------------------- merging


def _merge_file(merged: dict[str, Any], sources: dict[str, tuple[str, ...]], notes: list[str],
                data: dict[str, Any], scope: str, path: str) -> None:
    for section, value in data.items():
        if section == "policy":
            _merge_policy(merged.setdefault("policy", {}), sources, notes, value, path)
        elif section == "limits":
            _merge_limits(merged.setdefault("limits", {}), sources, notes, value, scope, path)
        elif section == "hooks":
            _merge_hooks(merged, sources, notes, value, scope, path)
        elif isinstance(value, dict):
            if not isinstance(merged.get(section), dict):  # a table here, a value above it
                merged[section] = {}
            _merge_data(merged[section], sources, value, section, path)
        else:
            merged[section] = value
            sources[section] = (path,)


def _merge_limits(target: dict[str, Any], sources: dict[str, tuple[str, ...]],
                  notes: list[str], value: dict[str, Any], scope: str, path: str) -> None:
    """The loader's limits take the minimum; a project file only lowers them, below what a
    higher file sets or else the default: a cloned repository cannot make rein read more of
    its own documents than the person allows (raising is the user's file's to do)."""
    from rein.formats.loader import DEFAULT_LIMITS

    for key, v in value.items():
        ceiling = target.get(key, getattr(DEFAULT_LIMITS, key))
        if scope == "project" and v > ceiling:
            notes.append(f"{path}: limits.{key} = {v} cannot raise {ceiling} (a project file "
                         f"only lowers the loader's limits; raise it in your own rein.toml)")
            continue
        _set_min(target, sources, f"limits.{key}", key, v, path)


def _set_min(target: dict[str, Any], sources: dict[str, tuple[str, ...]], dotted: str,
             key: str, value: Any, path: str) -> None:
    if key not in target or value < target[key]:
        target[key] = value
        sources[dotted] = (path,)


def _merge_policy(target: dict[str, Any], sources: dict[str, tuple[str, ...]],
                  notes: list[str], value: dict[str, Any], path: str) -> None:
    for key, v in value.items():
        dotted, rule = f"policy.{key}", _POLICY_RULES[key]
        if key not in target:
            target[key], sources[dotted] = v, (path,)
            continue
        old = target[key]
        if rule in _ORDERS:
            order = _ORDERS[rule]
            if order.index(v) < order.index(old):
                target[key], sources[dotted] = v, (path,)
            elif order.index(v) > order.index(old):
                notes.append(f"{path}: policy.{key} = {v!r} cannot widen {old!r}; kept {old!r}")
        elif rule == "min":
            if v < old:
                target[key], sources[dotted] = v, (path,)
            elif v > old:
                notes.append(f"{path}: policy.{key} = {v!r} cannot raise {old!r}")
        elif rule in ("intersect", "roots"):
            kept = intersect_patterns(old, v, paths=rule == "roots")
            widened = [p for p in v if p not in kept]
            if widened:
                notes.append(f"{path}: policy.{key} entries {widened} are outside what a "
                             "higher file allows; dropped")
            target[key], sources[dotted] = kept, sources.get(dotted, ()) + (path,)
        elif rule == "union":
            target[key] = list(dict.fromkeys([*old, *v]))
            sources[dotted] = sources.get(dotted, ()) + (path,)
        elif rule == "and":
            if old and not v:
                target[key], sources[dotted] = False, (path,)
            elif v and not old:
                notes.append(f"{path}: policy.{key} = true cannot widen false")


def intersect_patterns(higher: list[str], lower: list[str], *, paths: bool = False) -> list[str]:
    """Patterns of ``lower`` that ``higher`` covers, plus those of ``higher`` ``lower`` covers.

    A lower file's ``["src"]`` under a higher ``["."]`` keeps ``src``; a lower ``["**"]``
    under a higher ``["read"]`` keeps ``read``. Names use the glob dialect of
    :mod:`rein.formats.globs`; with ``paths``, workspace-relative directory containment.
    """
    from rein.formats.globs import covers as glob_covers
    from rein.formats.globs import path_within

    covers = path_within if paths else glob_covers
    out = [p for p in lower if any(covers(h, p) for h in higher)]
    out += [h for h in higher if h not in out and any(covers(p, h) for p in lower)]
    return out


def _merge_hooks(merged: dict[str, Any], sources: dict[str, tuple[str, ...]], notes: list[str],
                 hooks: dict[str, Any], scope: str, path: str) -> None:
    target = merged.setdefault("hooks", {})
    if scope == "project" and not {**DEFAULT_POLICY, **merged.get("policy", {})}[
            "project_hooks"]:
        notes.append(f"{path}: hooks ignored (policy.project_hooks = false)")
        return
    for name, spec in hooks.items():
        if name in target:
            notes.append(f"{path}: hook {name!r} is already defined by "
                         f"{sources[f'hooks.{name}'][0]}; kept that one")
            continue
        target[name] = dict(spec)
        sources[f"hooks.{name}"] = (path,)


def _merge_data(target: dict[str, Any], sources: dict[str, tuple[str, ...]],
                value: dict[str, Any], prefix: str, path: str) -> None:
    for key, v in value.items():
        dotted = f"{prefix}.{key}"
        if isinstance(v, dict) and isinstance(target.get(key), dict):
            _merge_data(target[key], sources, v, dotted, path)
        else:
            target[key] = dict(v) if isinstance(v, dict) else v
            sources[dotted] = (path,)


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted keys → leaf values (lists stay whole), for ``rein config show``."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out
