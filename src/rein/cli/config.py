"""``rein config``: the merged ``rein.toml`` and where each value came from."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rein.cli.output import emit_json, json_option
from rein.errors import ExitCode

if TYPE_CHECKING:
    from rein.config import Config
    from rein.config.trust import ProjectTrust

_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group("config", context_settings=_CONTEXT)
def config() -> None:
    """Show rein's configuration (rein.toml: managed, user, project; lower files only narrow).

    A project rein.toml's command workers, hooks, network providers and store URL are ignored
    until you trust that exact content (rein config trust); narrowing settings always apply.

    \b
    Example:
      rein config show
      rein config show --json | jq .values
      rein config trust --workspace ~/src/cloned-repo

    \b
    Exit codes: 0 ok, 4 trust refused or stale, 64 usage error or an invalid rein.toml.
    """


@config.command("show", context_settings=_CONTEXT,
                epilog="Exit codes: 0 ok, 64 a rein.toml is invalid (file:line in the message).")
@click.option("--workspace", type=click.Path(file_okay=False), default=".", show_default=True,
              help="The workspace whose rein.toml is the project file.")
@json_option
def show(workspace: str, as_json: bool) -> int:
    """Print every merged value with the file it came from, then the merge's notes.

    Values not set by any file are rein's defaults (shown for [policy]). The notes say what
    the merge narrowed or ignored, and what rein reads nowhere (a section, key or tier that
    is most often a typo).

    \b
    Example:
      rein config show --workspace ~/src/project
    """
    from rein.config import DEFAULT_POLICY, flatten, load_config
    from rein.config.hooks import hook_warnings

    cfg = load_config(Path(workspace))
    _check_definitions(cfg)
    # A table left empty (its withheld or dropped keys are listed below) holds no value.
    values = {k: v for k, v in flatten(cfg.data).items() if v != {}}
    for key, value in DEFAULT_POLICY.items():
        values.setdefault(f"policy.{key}", value)
    sources = {k: list(cfg.sources.get(k) or _parent_source(cfg.sources, k) or ["default"])
               for k in values}
    trust = cfg.project_trust
    if as_json:
        emit_json({"files": [{"scope": s, "path": p} for s, p in cfg.files],
                   "values": values, "sources": sources, "notes": list(cfg.notes),
                   "warnings": hook_warnings(_all_hooks(cfg)),
                   "project_trust": None if trust is None else trust.to_json()})
        return int(ExitCode.OK)
    for scope, path in cfg.files:
        click.echo(f"# {scope}: {path}")
    for key in sorted(values):
        click.echo(f"{key} = {json.dumps(values[key], ensure_ascii=False)}"
                   f"    # {', '.join(sources[key])}")
    if trust is not None and not trust.honoured:
        for item in trust.items:
            click.echo(f"# untrusted, ignored: {item.key}: {item.detail}")
    for note in cfg.notes:
        click.echo(f"# note: {note}")
    for warning in hook_warnings(_all_hooks(cfg)):
        click.echo(f"# warning: {warning}")
    return int(ExitCode.OK)


def _all_hooks(cfg: Config) -> dict[str, object]:
    """The hooks in force and the project's withheld ones: a warning is worth reading
    before trusting a file, too."""
    hooks = dict(cfg.get("hooks") or {})
    trust = cfg.project_trust
    if trust is not None and not trust.honoured:
        for item in trust.items:
            if item.kind == "hook" and item.key.startswith("hooks."):
                hooks.setdefault(item.key.removeprefix("hooks."), item.value)
    return hooks


@config.command("trust", context_settings=_CONTEXT,
                epilog="Exit codes: 0 trusted (or nothing needs trust), 4 refused (not confirmed, "
                       "the file changed since --digest was read, or a managed file forbids "
                       "project trust), 64 a rein.toml is invalid (or runs files rein cannot "
                       "tell from its command line, CFG016).")
@click.option("--workspace", type=click.Path(file_okay=False), default=".", show_default=True,
              help="The workspace whose rein.toml to trust.")
@click.option("--digest", "expected", metavar="DIGEST", default=None,
              help="Trust only if the tables still have this digest (what you reviewed).")
@json_option
def trust(workspace: str, expected: str | None, as_json: bool) -> int:
    """Review what the project rein.toml would run or reach, and trust that exact content.

    Lists every command line (command workers, hooks) and every URL (providers, store) the
    project file defines. With --digest the trust is recorded at once if the content still
    has that digest; without it rein asks on a terminal and refuses otherwise. Editing those
    tables later voids the trust.

    \b
    Example:
      rein config trust --workspace ~/src/cloned-repo
      rein config trust --digest sha256:3f2a...   # after reviewing, from a script
    """
    from rein.config import load_config
    from rein.config.trust import TrustState
    from rein.config.trusting import trust_project
    from rein.errors import Refused

    ws = Path(workspace).resolve()
    cfg = load_config(ws)
    _check_definitions(cfg)
    current = cfg.project_trust
    # A command whose files cannot be told is refused at once: there is nothing to confirm.
    if expected is None and current is not None and not current.unsure and current.state \
            not in (TrustState.NOTHING, TrustState.FORBIDDEN):
        if as_json or not _interactive():
            refused = Refused(f"{current.path}: not trusted yet (no confirmation)",
                              code="CFG014", hint=f"after reviewing, run: rein config trust "
                                                  f"--workspace {ws} --digest {current.digest}")
            if not as_json:
                _describe(current)
                raise refused
            # One JSON object: what would be trusted, and why nothing was recorded.
            emit_json({"trusted": False, **current.to_json(), "error": refused.to_json()})
            return int(ExitCode.REFUSED)
        _describe(current)
        from rein.cli.prompt import approved, not_approved

        if not approved("Trust these definitions?"):
            return not_approved("nothing was recorded", "to trust them later: rein config "
                                f"trust --workspace {ws} --digest {current.digest}")
        expected = current.digest
    result = trust_project(ws, expected_digest=expected)
    if as_json:
        emit_json({"trusted": result.state is TrustState.TRUSTED, **result.to_json()})
    elif result.state is TrustState.NOTHING:
        click.echo(f"{result.path} defines nothing that needs trust; nothing recorded")
    else:
        click.echo(f"trusted {result.path} at {result.digest}")
    return int(ExitCode.OK)


@config.command("untrust", context_settings=_CONTEXT,
                epilog="Exit codes: 0 ok (whether or not it was trusted), 64 usage.")
@click.option("--workspace", type=click.Path(file_okay=False), default=".", show_default=True,
              help="The workspace whose rein.toml to stop trusting.")
@json_option
def untrust(workspace: str, as_json: bool) -> int:
    """Forget the trust in a workspace's rein.toml: its commands and URLs are ignored again.

    \b
    Example:
      rein config untrust --workspace ~/src/cloned-repo
    """
    from rein.config.trusting import untrust_project

    ws = Path(workspace).resolve()
    removed = untrust_project(ws)
    path = str(ws / "rein.toml")
    if as_json:
        emit_json({"path": path, "removed": removed})
    else:
        click.echo(f"{'no longer trusted' if removed else 'was not trusted'}: {path}")
    return int(ExitCode.OK)


def _check_definitions(cfg: Config) -> None:
    """Refuse malformed provider and command worker tables, trusted or withheld, the way a
    run would: a table shown as valid must not fail later, and a key written in the file
    (PROVCFG002) must never be printed back."""
    from rein.engine.run.workers_setup import check_withheld, command_templates
    from rein.providers.config import parse_providers

    check_withheld(cfg)
    parse_providers(cfg.get("providers"))
    command_templates(cfg.get("workers") or {})


def _interactive() -> bool:
    import sys

    return sys.stdin.isatty() and sys.stdout.isatty()


def _describe(trust: ProjectTrust) -> None:
    click.echo(f"{trust.path} ({trust.state.value}) would add:")
    for item in trust.items:
        click.echo(f"  {item.kind:15} {item.key}: {item.detail}")
        for path, digest in item.files.items():  # the workspace files it runs, bound too
            click.echo(f"  {'':15}   runs {path} ({digest[:19]})")
        if item.unsure is not None:
            click.echo(f"  {'':15}   cannot be trusted: {item.unsure}")
    if trust.trusted_digest:
        click.echo(f"previously trusted: {trust.trusted_digest}")
    click.echo(f"digest: {trust.digest}")


def _parent_source(sources: Mapping[str, tuple[str, ...]], key: str) -> list[str] | None:
    probe = key
    while "." in probe:
        probe = probe.rsplit(".", 1)[0]
        found = sources.get(probe)
        if found:
            return list(found)
    return None
