"""Where a command's runs live: ``--workspace DIR`` and ``--store URL``, and the Harness
opened over them.

Kept apart from the commands themselves so that a driver turn (``rein next``) imports only
this and the Harness, not the modules of ``rein run`` and its plan printing.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from rein.engine.service import Harness

_workspace = click.option(
    "--workspace", "workspace", type=click.Path(file_okay=False, path_type=Path),
    default=None, help="Workspace directory (default: the current directory).")
_store = click.option(
    "--store", "store", default=None, metavar="URL", expose_value=False, is_eager=True,
    callback=lambda ctx, _param, value: ctx.meta.__setitem__("rein.store", value),
    help="Run store: postgresql://... or a SQLite file (default: [store] url in rein.toml, "
         "else .rein/rein.db).")


def workspace_option(func: Any) -> Any:
    """``--workspace DIR`` and ``--store URL``: where runs live, for every command that reads
    or writes them."""
    return _workspace(_store(func))


def given_store() -> str | None:
    """The ``--store`` of the command being run, if any."""
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.meta.get("rein.store")


def resolve_workspace(workspace: Path | None) -> Path:
    return (workspace or Path.cwd()).resolve()


def open_harness(workspace: Path, *, create: bool = True,
                 listeners: Iterable[Any] = (), surface: str = "cli") -> Harness:
    """The Harness of this command: its workspace, its ``--store``, these listeners;
    answers given through it are recorded as taken by ``surface``."""
    from rein.engine.service import Harness

    return Harness.open(workspace, store_url=given_store(), create=create,
                        listeners=listeners, surface=surface,
                        signer=sign_here if surface == "cli" else None)


def sign_here(key: str, message: bytes) -> str:
    """Where approvals are signed, the person's key signs a run's approval here: through
    ssh-keygen, which asks this terminal for the key's passphrase or touch (a process with
    no terminal, an agent's, signs nothing with a key that needs one)."""
    from rein.config.signing import sign

    click.echo(f"signing the run's approval with {key} (ssh-keygen may ask for the key's "
               "passphrase or a touch)", err=True)
    return sign(key, message, what="the run's approval")


__all__ = ["given_store", "open_harness", "resolve_workspace", "sign_here",
           "workspace_option"]
