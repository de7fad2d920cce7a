"""``rein config``: the merged ``rein.toml`` and where each value came from."""

from __future__ import annotations

import json
from pathlib import Path

import click

from rein.cli.output import emit_json, json_option
from rein.errors import ExitCode

_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group("config", context_settings=_CONTEXT)
def config() -> None:
    """Show rein's configuration (rein.toml: managed, user, project; lower files only narrow).

    \b
    Example:
      rein config show
      rein config show --json | jq .values
    """


@config.command("show", context_settings=_CONTEXT,
                epilog="Exit codes: 0 ok, 64 a rein.toml is invalid (file:line in the message).")
@click.option("--workspace", type=click.Path(file_okay=False), default=".", show_default=True,
              help="The workspace whose rein.toml is the project file.")
@json_option
def show(workspace: str, as_json: bool) -> int:
    """Print every merged value with the file it came from, then what the merge narrowed.

    Values not set by any file are rein's defaults (shown for [policy]).

    \b
    Example:
      rein config show --workspace ~/src/project
    """
    from rein.config import DEFAULT_POLICY, flatten, load_config

    cfg = load_config(Path(workspace))
    values = flatten(cfg.data)
    for key, value in DEFAULT_POLICY.items():
        values.setdefault(f"policy.{key}", value)
    sources = {k: list(cfg.sources.get(k) or _parent_source(cfg.sources, k) or ["default"])
               for k in values}
    if as_json:
        emit_json({"files": [{"scope": s, "path": p} for s, p in cfg.files],
                   "values": values, "sources": sources, "notes": list(cfg.notes)})
        return int(ExitCode.OK)
    for scope, path in cfg.files:
        click.echo(f"# {scope}: {path}")
    for key in sorted(values):
        click.echo(f"{key} = {json.dumps(values[key], ensure_ascii=False)}"
                   f"    # {', '.join(sources[key])}")
    for note in cfg.notes:
        click.echo(f"# narrowed: {note}")
    return int(ExitCode.OK)


def _parent_source(sources: dict[str, tuple[str, ...]] | object, key: str) -> list[str] | None:
    probe = key
    while "." in probe:
        probe = probe.rsplit(".", 1)[0]
        found = sources.get(probe)  # type: ignore[attr-defined]
        if found:
            return list(found)
    return None
