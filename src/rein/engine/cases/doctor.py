"""``rein doctor``: what this machine and workspace have for rein, and how to fix each gap.

Each check looks without changing anything (no store is created, no file written) and ends
in one :class:`Check`: ``ok``, ``missing`` (the feature it serves cannot work), ``warning``
(it works, less well or less safely) or ``info``. A check is *required* when something this
workspace is set up to use depends on it (its store, the providers its ``rein.toml``
names, the approver's signing files); the rest serve features a person may never use
(pictures, the web console, the sandbox boundary) and never fail the command.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from rein.core.extras import EXTRAS, install_hint
from rein.core.frozen import Frozen
from rein.errors import ReinError

Status = Literal["ok", "missing", "warning", "info"]

__all__ = ["Check", "checks"]


class Check(Frozen):
    """The verdict of one check."""

    name: str  # stable: store, sandbox, graphviz, chromium, provider:NAME, extra:NAME, ...
    title: str
    status: Status
    required: bool = False  # a missing one makes `rein doctor` exit 1
    detail: str = ""
    fix: str = ""  # how to close the gap ("" when there is none)

    @property
    def failing(self) -> bool:
        return self.required and self.status == "missing"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "status": self.status,
                "required": self.required, "detail": self.detail, "fix": self.fix}


def checks(workspace: Path, config: Any, *, store: str | None = None,
           env: Mapping[str, str] | None = None) -> list[Check]:
    """Every check, in the order a person reads them. ``config``: the merged ``rein.toml``,
    or the :class:`ReinError` reading it raised; ``store``: a ``--store`` URL."""
    from rein.core.version import VERSION

    env = dict(os.environ if env is None else env)
    out = [Check(name="rein", title="rein", status="ok",
                 detail=f"rein {VERSION} on Python {sys.version.split()[0]} "
                        f"({sys.executable})")]
    if isinstance(config, ReinError):
        out.append(Check(name="config", title="rein.toml", status="missing", required=True,
                         detail=f"{config.code}: {config.message}", fix=config.hint or ""))
        return out  # what follows reads the configuration
    out.append(Check(name="config", title="rein.toml", status="ok",
                     detail=_config_detail(config)))
    for check in (_store, _approver):
        out.append(check(workspace, config, store))
    out.extend(_providers(config, env))
    out.append(_sandbox())
    out.append(_graphviz())
    out.append(_chromium(env))
    out.extend(_extras(workspace, config, store))
    return out


def _config_detail(config: Any) -> str:
    files = [f"{path} ({scope})" for scope, path in config.files]
    return "read " + ", ".join(files) if files else "no rein.toml (the defaults apply)"


def _store(workspace: Path, config: Any, given: str | None) -> Check:
    from rein.store.open import store_url

    title = "run store"
    try:
        url = store_url(workspace, given, config=config)
    except ReinError as exc:
        return Check(name="store", title=title, status="missing", required=True,
                     detail=f"{exc.code}: {exc.message}", fix=exc.hint or "")
    if url is None or not url.startswith(("postgresql://", "postgres://")):
        path = workspace / ".rein" if url is None else Path(url.removeprefix("sqlite://"))
        where = path if path.is_absolute() else workspace / path
        if where.exists():
            return _opened(workspace, config, given, title, f"SQLite at {where}")
        parent = next((p for p in [where, *where.parents] if p.exists()), None)
        if parent is None or not os.access(parent, os.W_OK):
            return Check(name="store", title=title, status="missing", required=True,
                         detail=f"{where} does not exist and {parent} is not writable",
                         fix="run rein in a folder you may write to, or name another store "
                             "with --store or [store] url")
        return Check(name="store", title=title, status="ok",
                     detail=f"SQLite at {where}, created by the first `rein run`")
    from rein.store.postgres import redact_url

    return _opened(workspace, config, given, title, "PostgreSQL at " + redact_url(url))


def _opened(workspace: Path, config: Any, given: str | None, title: str,
            where: str) -> Check:
    from rein.store.open import open_store

    try:
        opened = open_store(workspace, url=given, create=False, config=config)
        if opened is None:
            return Check(name="store", title=title, status="ok",
                         detail=f"{where}, created by the first `rein run`")
        try:
            count = len(opened.list_runs())
        finally:
            opened.close()
    except ReinError as exc:
        return Check(name="store", title=title, status="missing", required=True,
                     detail=f"{where}: {exc.code}: {exc.message}", fix=exc.hint or "")
    except OSError as exc:
        return Check(name="store", title=title, status="missing", required=True,
                     detail=f"{where}: {exc}", fix="check that rein may read the store")
    return Check(name="store", title=title, status="ok",
                 detail=f"{where}, {count} run{'s' if count != 1 else ''}")


def _approver(workspace: Path, config: Any, given: str | None) -> Check:
    from rein.core.confinement import confinement

    who = config.approver
    title = "approver"
    detail = f"{who.id} ({who.source})" + (f", roles {', '.join(who.roles)}"
                                           if who.roles else ", no roles")
    for what, path in (("allowed_signers", who.allowed_signers),
                       ("signing_key", who.signing_key)):
        if path is not None and not Path(path).expanduser().exists():
            return Check(name="approver", title=title, status="missing", required=True,
                         detail=f"{detail}; [approver] {what} names {path}, which does not "
                                "exist",
                         fix=f"create it, or correct [approver] {what} in your own "
                             "~/.config/rein/rein.toml (docs/configuration.md)")
    if confinement().confined and not who.confined_ok:
        return Check(name="approver", title=title, status="warning", detail=(
            f"{detail}; this process is confined (no-new-privileges, as agent sandboxes "
            "are): it cannot answer approvals"), fix="answer approvals from your own "
            "terminal, outside the agent's sandbox")
    if who.source == "the OS account" or not who.roles:
        return Check(name="approver", title=title, status="info", detail=detail, fix=(
            "a gate that names roles is answered only by an approver holding one: set "
            "[approver] id and roles in your own ~/.config/rein/rein.toml"))
    return Check(name="approver", title=title, status="ok", detail=detail
                 + ("; answers are signed" if who.allowed_signers else ""))


def _providers(config: Any, env: Mapping[str, str]) -> Iterator[Check]:
    from rein.formats.redaction import DEFAULT_KEY_VARIABLES

    table = dict(config.get("providers") or {})
    trust = config.project_trust
    withheld = [] if trust is None or trust.honoured else [
        item.key.removeprefix("providers.") for item in trust.items
        if item.key.startswith("providers.")]
    for name in withheld:
        yield Check(name=f"provider:{name}", title=f"provider {name}", status="missing",
                    required=True, detail="defined in the project rein.toml, which is not "
                    "trusted: rein does not use it", fix="review the file, then `rein config "
                    "trust` (or define the provider in your own rein.toml)")
    if not table and not withheld:
        yield Check(name="providers", title="model providers", status="info",
                    detail="none configured: the worker is your IDE agent (`rein next`, "
                           "`rein submit`), which needs no API key",
                    fix="to let rein call a model itself, add [providers.NAME] to rein.toml "
                        "(docs/providers.md)")
        return
    for name, entry in sorted(table.items()):
        entry = entry if isinstance(entry, Mapping) else {}
        kind = str(entry.get("kind") or name)
        title = f"provider {name} ({kind})"
        absent = _absent(kind) if kind in ("openai", "anthropic") else None
        if absent is not None:
            yield Check(name=f"provider:{name}", title=title, status="missing", required=True,
                        detail=f"{absent} is not installed (the {kind} extra)",
                        fix=install_hint(kind))
            continue
        key = entry.get("api_key_env") or DEFAULT_KEY_VARIABLES.get(kind)
        local = _loopback(str(entry.get("base_url") or ""))
        if key and not env.get(str(key)) and not local:
            yield Check(name=f"provider:{name}", title=title, status="missing", required=True,
                        detail=f"{key} is not set",
                        fix=f"export {key}=... in the shell that runs rein (a key is never "
                            "written in rein.toml)")
            continue
        yield Check(name=f"provider:{name}", title=title, status="ok",
                    detail=(f"key in {key}" if key and env.get(str(key)) else "no key needed")
                    + (f", model {entry['model']}" if entry.get("model") else ""))


def _loopback(url: str) -> bool:
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname or ""
    return host in ("localhost", "127.0.0.1", "::1") or host.startswith("127.")


def _sandbox() -> Check:
    from rein.tools.sandbox import bubblewrap_status

    path, why = bubblewrap_status()
    title = "sandbox (bubblewrap)"
    if path is not None:
        return Check(name="sandbox", title=title, status="ok",
                     detail=f"{path} creates namespaces: commands run inside a boundary")
    fix = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf "
           "install bubblewrap)") if why and "not installed" in why else (
        "allow unprivileged user namespaces (Debian/Ubuntu: sysctl "
        "kernel.unprivileged_userns_clone=1), or run rein where they are allowed")
    return Check(name="sandbox", title=title, status="warning",
                 detail=f"{why}: commands run as plain processes, which is not a boundary",
                 fix=fix)


def _graphviz() -> Check:
    dot = shutil.which("dot")
    title = "Graphviz (pictures)"
    if dot is not None:
        return Check(name="graphviz", title=title, status="ok",
                     detail=f"{dot}: `--format svg` draws plans and runs")
    return Check(name="graphviz", title=title, status="warning",
                 detail="`dot` is not on PATH: `rein graph plan --format svg` cannot draw",
                 fix="install Graphviz (Debian/Ubuntu: apt-get install graphviz; macOS: brew "
                     "install graphviz); --format dot or mermaid need nothing")


def _chromium(env: Mapping[str, str]) -> Check:
    title = "Chromium (the web console's browser tests)"
    if importlib.util.find_spec("playwright") is None:
        return Check(name="chromium", title=title, status="info",
                     detail="Playwright is not installed: the console's browser tests skip",
                     fix="pip install playwright && python -m playwright install chromium")
    home = env.get("PLAYWRIGHT_BROWSERS_PATH") or str(Path.home() / ".cache" / "ms-playwright")
    found = sorted(Path(home).glob("chromium*")) if Path(home).is_dir() else []
    if not found:
        return Check(name="chromium", title=title, status="info",
                     detail=f"no Chromium for Playwright in {home}",
                     fix="python -m playwright install chromium")
    return Check(name="chromium", title=title, status="ok", detail=str(found[-1]))


# What each extra of rein.core.extras serves, as a person reads it.
_SERVES: Mapping[str, str] = {
    "openai": "the openai provider kind", "anthropic": "the anthropic provider kind",
    "mcp": "a profile's MCP servers", "postgres": "a postgresql:// store",
    "web": "the web console (rein serve)", "acp": "the ACP agent (rein acp)",
    "otel": "OpenTelemetry export", "scale": "scale-out (--executor dbos, rein worker)",
}


def _extras(workspace: Path, config: Any, store: str | None) -> Iterator[Check]:
    """Each extra: installed, or what installs it; required when this workspace uses what
    it serves (a provider of its kind, a PostgreSQL store, the dbos executor)."""
    from rein.store.open import store_url

    executor = config.get("executor") or {}
    kinds = {str((e if isinstance(e, Mapping) else {}).get("kind") or n)
             for n, e in (config.get("providers") or {}).items()}
    try:
        url = store_url(workspace, store, config=config) or ""
    except ReinError:
        url = ""  # said by the store's own check
    uses = {"openai": "openai" in kinds, "anthropic": "anthropic" in kinds,
            "postgres": url.startswith(("postgresql://", "postgres://")),
            "scale": isinstance(executor, Mapping) and executor.get("kind") == "dbos"}
    for extra in EXTRAS:
        what = _SERVES.get(extra, f"the {extra} extra")
        absent = _absent(extra)
        if absent is None:
            yield Check(name=f"extra:{extra}", title=what, status="ok",
                        detail=f"the {extra} extra is installed")
            continue
        yield Check(name=f"extra:{extra}", title=what,
                    status="missing" if uses.get(extra) else "info",
                    required=bool(uses.get(extra)),
                    detail=f"{absent} is not installed (the {extra} extra)",
                    fix=install_hint(extra))


def _absent(extra: str) -> str | None:
    """The first module of ``extra`` that is not installed (looked up, not imported)."""
    for module in EXTRAS[extra]:
        try:
            if importlib.util.find_spec(module) is None:
                return module
        except ModuleNotFoundError:  # a parent package is missing
            return module
    return None
