"""What every ``rein profile`` command shares: click settings, ``--workspace``, the clock,
and resolving a PROFILE argument against the workspace's configuration.

Used by :mod:`rein.cli.profile` and :mod:`rein.cli.profile_session`, so neither reaches into
the other's private names.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from rein.config import Config
    from rein.profiles.resolve import ResolvedProfile

CONTEXT: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

F = TypeVar("F", bound=Callable[..., Any])


def now() -> datetime:
    """The clock every write uses."""
    return datetime.now(UTC)


def workspace_option(func: F) -> F:
    """``--workspace DIR``: where rein.toml, .rein/ and the project's profiles are."""
    return click.option("--workspace", "workspace", type=click.Path(file_okay=False),
                        default=".", show_default=True,
                        help="The workspace (rein.toml, .rein/, project profiles).")(func)


def resolve(name: str, workspace: str) -> tuple[ResolvedProfile, Config]:
    """Profile ``name`` (a name found by discovery, or a path) resolved in ``workspace``, and
    the configuration it was resolved with."""
    # Imported here: `rein --help` and the other command groups need neither.
    from rein.config import load_config
    from rein.profiles.resolve import resolve_profile

    ws = Path(workspace)
    config = load_config(ws)
    return resolve_profile(name, workspace=ws, config=config), config
