"""Trust for what a project ``rein.toml`` would run or send: inert until approved by digest.

A project's ``rein.toml`` arrives with ``git clone``. Most of it can only narrow (see
:mod:`rein.config`), but some tables *define* things rather than restrict them:

====================================  ==========================================================
``[workers.command.NAME]``            an ``argv`` rein executes (and ``pass_env`` secrets it gets)
``[hooks.NAME]``                      a command rein executes at lifecycle events
``[workers.scripted]``                answers from a file that stand in for every worker of
                                      the nodes it names (and the files they write)
``[providers.NAME]``                  a ``base_url`` that receives prompts, an ``api_key_env``
                                      whose key is sent with them, prices that budgets trust
``[store] url``                       a database that receives every prompt and output
``[usage] prices``                    the prices a driving agent's cost budgets are counted in
====================================  ==========================================================

From the managed and user files these are honoured as written. From the project file they are
*withheld* until the user trusts that exact content: :func:`record_trust` stores the project
file's path and the digest of its withheld tables in the user's trust file
(``trusted-projects.json`` beside the user ``rein.toml``). If the project file changes, the
digest no longer matches and the tables stay withheld, with a notice naming the command that
re-trusts them. A hook's or command worker's digest covers the bytes of the workspace files
its command runs (:mod:`rein.config.command_files`), so a rewritten script withholds it too;
a command whose files cannot be told from its line is never trusted (CFG016). Offline
providers (a new provider of kind ``scripted``, or one answering from ``options.replay``
files) and a SQLite store inside the workspace neither run nor send anything, so they need
no trust: every tool call such a provider scripts goes through the model worker's gate like
a real model's. The scripted *worker* does need trust: it answers for every node it names in
place of the user's workers. ``[policy] project_trust = false`` in a managed or user file
forbids project trust altogether.
"""

from __future__ import annotations

import datetime as dt
import enum
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from rein.core.frozen import Frozen, field
from rein.errors import ConfigError, Location
from rein.formats.canonical import canonical_json

TRUST_FILE_NAME = "trusted-projects.json"
TRUST_FORMAT = 1  # the version of the trust file's layout


class TrustState(enum.Enum):
    """Whether a project file's withheld tables are in force."""

    NOTHING = "nothing"  # the project file defines nothing that needs trust
    TRUSTED = "trusted"  # the digest matches the user's record: everything is honoured
    UNTRUSTED = "untrusted"  # never trusted: withheld
    CHANGED = "changed"  # trusted once, edited since: withheld until trusted again
    FORBIDDEN = "forbidden"  # policy.project_trust = false: withheld whatever the record says


class Withheld(Frozen):
    """One project table that needs trust: what it is and what it would run or reach."""

    key: str  # dotted: "workers.command.fake", "hooks.lint", "providers.openai", "store.url"
    kind: str  # "command worker" | "hook" | "provider" | "store"
    detail: str  # the command line or URL a person reviews
    value: Any  # the table (or value) as written
    # A command's workspace files and their digests (rein.config.command_files.pin)...
    files: Mapping[str, str] = field(default_factory=dict)
    unsure: str | None = None  # ...or why they cannot be told: then it is never trusted

    def to_json(self) -> dict[str, Any]:
        out = {"key": self.key, "kind": self.kind, "detail": self.detail,
               "value": _plain(self.value)}
        if self.files:
            out["files"] = [{"path": p, "digest": d} for p, d in self.files.items()]
        if self.unsure is not None:
            out["unsure"] = self.unsure
        return out

    def bound(self) -> Any:
        """What the digest covers: the table, and the files its command runs."""
        if not self.files and self.unsure is None:
            return _plain(self.value)  # as before files were bound: old records still match
        return {"table": _plain(self.value), "files": dict(self.files),
                **({"unsure": self.unsure} if self.unsure is not None else {})}


class ProjectTrust(Frozen):
    """The trust verdict on one project ``rein.toml``."""

    path: str
    state: TrustState
    digest: str | None  # of the withheld tables; None when there are none
    items: tuple[Withheld, ...] = ()
    trusted_digest: str | None = None  # what the user's record holds, if anything
    changed_files: tuple[str, ...] = ()  # bound files whose bytes differ from the record's

    @property
    def unsure(self) -> tuple[Withheld, ...]:
        """The items whose files cannot be told: they can never be trusted."""
        return tuple(item for item in self.items if item.unsure is not None)

    @property
    def honoured(self) -> bool:
        """Whether the project's tables that need trust are in force."""
        return self.state in (TrustState.TRUSTED, TrustState.NOTHING)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path, "state": self.state.value, "digest": self.digest,
            "trusted_digest": self.trusted_digest,
            "sections": [item.to_json() for item in self.items]}
        if self.changed_files:
            out["changed_files"] = list(self.changed_files)
        return out


# ---------------------------------------------------------------------------- splitting


def split_project(data: Mapping[str, Any], higher: Mapping[str, Any],
                  workspace: Path, *, search_path: str | None = None
                  ) -> tuple[dict[str, Any], tuple[Withheld, ...]]:
    """The project file's data without the tables that need trust, and those tables.

    ``higher`` is what the managed and user files already merged: a project table that
    changes a provider they define is withheld even when it looks harmless, because the
    merge is key by key and the user's key would travel with it. Hooks and command workers
    carry the workspace files their commands run, looked up on ``search_path`` (``PATH``).
    """
    safe = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in data.items()}
    items: list[Withheld] = []
    hooks = safe.pop("hooks", None)
    if isinstance(hooks, Mapping):
        items += [Withheld(key=f"hooks.{name}", kind="hook", detail=_command(spec, "command"),
                           value=spec, **bound_files(spec, "hook", workspace, search_path))
                  for name, spec in hooks.items()]
    elif hooks is not None:
        items.append(Withheld(key="hooks", kind="hook", detail=repr(hooks), value=hooks))
    workers = safe.get("workers")
    if isinstance(workers, dict) and "command" in workers:
        commands = workers.pop("command")
        if isinstance(commands, Mapping):
            items += [Withheld(key=f"workers.command.{name}", kind="command worker",
                               detail=_command(spec, "argv"), value=spec,
                               **bound_files(spec, "command worker", workspace, search_path))
                      for name, spec in commands.items()]
        else:
            items.append(Withheld(key="workers.command", kind="command worker",
                                  detail=repr(commands), value=commands))
    if isinstance(workers, dict) and "scripted" in workers:
        # The test double replaces the user's workers for every node it names: what those
        # nodes produce and decide comes from the project's file, not the user's model.
        scripted = workers.pop("scripted")
        answers = scripted.get("answers") if isinstance(scripted, Mapping) else scripted
        items.append(Withheld(key="workers.scripted", kind="scripted worker",
                              detail=f"answers every node it names from {answers}",
                              value=scripted))
    providers = safe.get("providers")
    if isinstance(providers, dict):
        known = higher.get("providers") or {}
        for name in list(providers):
            spec = providers[name]
            if name not in known and _offline(name, spec):
                continue
            items.append(Withheld(key=f"providers.{name}", kind="provider",
                                  detail=_endpoint(name, spec), value=providers.pop(name)))
    usage = safe.get("usage")
    if isinstance(usage, dict) and "prices" in usage:
        # Lower prices loosen every cost budget of a driving agent: the user trusts them.
        items.append(Withheld(key="usage.prices", kind="prices",
                              detail=f"prices of {', '.join(sorted(map(str, usage['prices'])))}"
                              if isinstance(usage["prices"], Mapping) else repr(usage["prices"]),
                              value=usage.pop("prices")))
    store = safe.get("store")
    if isinstance(store, dict) and "url" in store and not _inside(store["url"], workspace):
        items.append(Withheld(key="store.url", kind="store", detail=str(store["url"]),
                              value=store.pop("url")))
    return safe, tuple(items)


def digest_of(items: tuple[Withheld, ...]) -> str | None:
    """``sha256:`` + hex over the canonical JSON of ``{key: bound}`` (None when empty):
    ``bound`` is the table as written, with the digests of the files it runs if any."""
    if not items:
        return None
    body = canonical_json({item.key: item.bound() for item in items})
    return "sha256:" + hashlib.sha256(body).hexdigest()


def bound_files(spec: Any, kind: str, workspace: Path, search_path: str | None
                ) -> dict[str, Any]:
    """``files`` (path → digest) and ``unsure`` of a hook or command worker table."""
    from rein.config.command_files import CommandFiles, command_files, pin

    if not isinstance(spec, Mapping):
        return {}
    if kind == "hook":
        command, extra = spec.get("command"), spec.get("files") or []
    else:
        command, extra = worker_argv(spec.get("argv"), workspace), []
    if isinstance(command, CommandFiles):  # a command worker's placeholder it cannot tell
        return {"unsure": command.unsure}
    if not (isinstance(command, str) or (isinstance(command, list)
                                         and all(isinstance(w, str) for w in command))):
        return {}  # malformed: check_hooks and the worker setup refuse it with its line
    found = command_files(command, workspace, search_path=search_path,
                          extra=[str(e) for e in extra] if isinstance(extra, list) else [])
    if found.unsure is not None:
        return {"unsure": found.unsure}
    return {"files": pin(workspace, found.paths)} if found.paths else {}


def worker_argv(argv: Any, workspace: Path) -> Any:
    """A command worker's ``argv`` as it runs from ``workspace``: ``{workspace}`` is the
    workspace, the prompt and outputs placeholders are files rein writes outside it, and an
    argument that depends on the node (``{node}``, ``{attempt}``) cannot be told."""
    from rein.config.command_files import CommandFiles

    if not isinstance(argv, list) or not all(isinstance(w, str) for w in argv):
        return argv
    out = []
    for word in argv:
        if "{node}" in word or "{attempt}" in word:
            return CommandFiles(unsure=f"{word!r} depends on the node it runs for")
        if word in ("{prompt}", "{prompt_file}", "{outputs_file}"):
            continue
        out.append(word.replace("{workspace}", str(workspace)))
    return out


def _offline(name: str, spec: Any) -> bool:
    """A provider that answers from files of the workspace: the scripted double or wire
    replay. One that reads a file elsewhere (an absolute path, ``..``) is not offline: it
    would bring a file from outside the project into the run."""
    if not isinstance(spec, Mapping):
        return False
    given = spec.get("options")
    options: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    replay = options.get("replay")
    if not (spec.get("kind", name) == "scripted" or isinstance(replay, list)):
        return False
    files = [options["script"]] if "script" in options else []
    files += replay if isinstance(replay, list) else []
    return all(_relative_inside(f) for f in files)


def _relative_inside(path: Any) -> bool:
    """A relative path that stays in the workspace (read as the provider reads it)."""
    if not isinstance(path, str) or not path or Path(path).is_absolute():
        return False
    return ".." not in PurePosixPath(path.replace("\\", "/")).parts


def _inside(url: Any, workspace: Path) -> bool:
    """A SQLite store given as a relative path that stays in the workspace."""
    if not isinstance(url, str) or not url:
        return False
    # Read as rein.store.open reads it: sqlite://rel/db is relative, sqlite:///abs/db is not.
    path = url.removeprefix("sqlite://") if url.startswith("sqlite://") else url
    return "://" not in path and not path.startswith("/") and _relative_inside(path)


def _command(spec: Any, field_name: str) -> str:
    command = spec.get(field_name) if isinstance(spec, Mapping) else spec
    if isinstance(command, list):
        text = " ".join(json.dumps(c) if (not isinstance(c, str) or " " in c or not c)
                        else c for c in command)
    else:
        text = str(command)
    env = spec.get("pass_env") if isinstance(spec, Mapping) else None
    return text + (f"  (with {', '.join(map(str, env))})" if env else "")


def _endpoint(name: str, spec: Any) -> str:
    if not isinstance(spec, Mapping):
        return repr(spec)
    kind = spec.get("kind", name)
    url = spec.get("base_url") or f"the {kind} default endpoint"
    key = spec.get("api_key_env")
    return f"{kind} at {url}" + (f" with the key in ${key}" if key else "")


def _plain(value: Any) -> Any:
    """TOML data as JSON data (TOML dates and times become ISO strings)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return value


# ---------------------------------------------------------------------------- the trust file


def trust_file(user_config: Path) -> Path:
    """Where trust is recorded: beside the user ``rein.toml``, so the same overrides
    (``REIN_USER_CONFIG``, ``XDG_CONFIG_HOME``, ``HOME``) move both."""
    return user_config.parent / TRUST_FILE_NAME


def read_records(path: Path) -> dict[str, dict[str, Any]]:
    """Project path → record. A missing file is empty; a damaged one is an error, never
    silently empty (that would be harmless) nor silently trusted."""
    return read_keyed(path, "projects", TRUST_FORMAT, lambda why: _damaged(path, why))


def write_records(path: Path, records: Mapping[str, Mapping[str, Any]]) -> None:
    """Replace the trust file atomically (temp file, fsync, rename)."""
    write_keyed(path, "projects", TRUST_FORMAT, records, prefix=".trusted-")


def read_keyed(path: Path, key: str, version: int,
               damaged: Callable[[str], ConfigError]) -> dict[str, dict[str, Any]]:
    """The records of a ``{"format": version, key: {...}}`` file a person's approvals are
    kept in: a missing file is empty, a damaged one is ``damaged(why)``, never silently
    empty nor silently approved."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise damaged(str(exc)) from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise damaged(f"not JSON ({exc})") from None
    records = data.get(key) if isinstance(data, dict) else None
    if not isinstance(records, dict) or data.get("format") != version:
        raise damaged(f'expected {{"format": {version}, "{key}": {{...}}}}')
    return {k: v for k, v in records.items() if isinstance(v, dict)}


def write_keyed(path: Path, key: str, version: int,
                records: Mapping[str, Mapping[str, Any]], *, prefix: str) -> None:
    """Replace such a file atomically (temp file, fsync, rename), readable by its owner."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = json.dumps({"format": version, key: dict(sorted(records.items()))},
                      indent=2, ensure_ascii=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=prefix, dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(body)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _damaged(path: Path, why: str) -> ConfigError:
    return ConfigError(f"the trust file is damaged: {why}", code="CFG012",
                       location=Location(file=str(path)),
                       hint="delete it and trust your projects again with `rein config trust`")


def verdict(project: Path, items: tuple[Withheld, ...], records: Mapping[str, Any], *,
            allowed: bool) -> ProjectTrust:
    """Whether ``items`` of the project file at ``project`` are in force."""
    digest = digest_of(items)
    record = records.get(project_key(project)) or {}
    recorded = record.get("digest") if isinstance(record.get("digest"), str) else None
    unsure = any(item.unsure is not None for item in items)
    if digest is None:
        state = TrustState.NOTHING
    elif not allowed:
        state = TrustState.FORBIDDEN
    elif recorded == digest and not unsure:
        state = TrustState.TRUSTED
    elif recorded is not None:
        state = TrustState.CHANGED
    else:
        state = TrustState.UNTRUSTED
    given = record.get("files")
    was: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    now = {p: d for item in items for p, d in item.files.items()}
    moved = tuple(sorted(p for p in set(was) & set(now) if was[p] != now[p]))
    return ProjectTrust(path=str(project), state=state, digest=digest, items=items,
                        trusted_digest=recorded,
                        changed_files=moved if state is TrustState.CHANGED else ())


def project_key(project: Path) -> str:
    """The record key: the project file's resolved path (a symlink cannot borrow trust)."""
    return str(Path(project).resolve())


def notice(trust: ProjectTrust | None) -> str | None:
    """What to tell the user when a project file's tables are withheld (None otherwise)."""
    if trust is None or trust.honoured:
        return None
    keys = ", ".join(item.key for item in trust.items)
    workspace = str(Path(trust.path).parent)
    again = f"review and trust it with: rein config trust --workspace {workspace}"
    unsure = "; ".join(f"{item.key} cannot be trusted: {item.unsure}" for item in trust.unsure)
    if unsure and trust.state is not TrustState.FORBIDDEN:
        return (f"{trust.path}: ignoring {keys}: {unsure}; write such a command as a list, "
                "or name its files from the workspace root")
    match trust.state:
        case TrustState.CHANGED:
            files = (f"{', '.join(trust.changed_files)} changed; " if trust.changed_files
                     else "")
            return (f"{trust.path} changed since you trusted it ({files}trusted "
                    f"{trust.trusted_digest}, now {trust.digest}); ignoring {keys} until you "
                    f"trust it again; {again}")
        case TrustState.FORBIDDEN:
            return (f"{trust.path}: ignoring {keys}: a managed or user rein.toml sets "
                    "policy.project_trust = false; define them in your user rein.toml instead")
        case _:
            return f"{trust.path} is not trusted; ignoring {keys}; {again}"
