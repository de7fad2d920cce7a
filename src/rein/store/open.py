"""Which store a command uses: ``--store URL``, else ``[store] url`` in rein.toml, else the
workspace's embedded SQLite database.

``postgresql://`` (or ``postgres://``) URLs open :class:`rein.store.postgres.PostgresStore`;
``sqlite:///path/to/rein.db`` or a plain path opens that SQLite file.

The store redacts every known secret from what it writes; besides the process environment's
``REIN_SECRET_*`` and default provider keys it learns here the key variables that the
workspace's ``[providers]`` tables name.
"""

from __future__ import annotations

import os
from pathlib import Path

from rein.errors import ConfigError

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any

    from rein.config import Config

PG_SCHEMES = ("postgresql://", "postgres://")


def store_url(workspace: Path, given: str | None = None, *, config: Config | None = None
              ) -> str | None:
    """The store URL in force for ``workspace`` (``None``: the embedded default);
    ``config``: the merged ``rein.toml`` already loaded (else it is read here)."""
    if given:
        return given
    if config is None:
        from rein.core.config_places import any_config

        if not any_config(workspace):  # nothing to read: skip importing the config machinery
            return None
        from rein.config import load_config

        config = load_config(workspace)
    section = config.get("store") or {}
    url = section.get("url") if isinstance(section, dict) else None
    if url is not None and not isinstance(url, str):
        raise ConfigError("[store] url must be a string", code="CONFIG_STORE",
                          hint='write url = "postgresql://user@host/db" under [store]')
    return url or None


def key_variables(workspace: Path) -> tuple[str, ...]:
    """The provider key variables the workspace's merged ``rein.toml`` names."""
    from rein.core.config_places import any_config

    if not any_config(workspace):
        return ()
    from rein.config import load_config

    return key_variables_of(load_config(workspace))


def key_variables_of(config: Config) -> tuple[str, ...]:
    """The provider key variables a merged ``rein.toml`` names."""
    from rein.formats.redaction import provider_key_variables

    tables = dict(config.get("providers") or {})
    # A provider withheld from an untrusted project file still names a key of this user's.
    trust = config.project_trust
    for item in trust.items if trust is not None else ():
        if item.key.startswith("providers."):
            tables.setdefault(item.key.removeprefix("providers."), item.value)
    return provider_key_variables(tables)


def open_store(workspace: Path, *, url: str | None = None, create: bool = True,
               config: Config | None = None) -> Any:
    """The store of ``workspace`` (``None`` when the embedded one does not exist yet and
    ``create`` is false), redacting the workspace's provider keys as well. ``config``: the
    merged ``rein.toml`` already loaded (else it is read here)."""
    from rein.formats.redaction import known_secrets

    store = _open(workspace, url=url, create=create, config=config)
    if store is not None:
        names = key_variables(workspace) if config is None else key_variables_of(config)
        store.know(known_secrets(os.environ, names))
    return store


def _open(workspace: Path, *, url: str | None, create: bool, config: Config | None) -> Any:
    from rein.store.sqlite import SQLiteStore

    url = store_url(workspace, url, config=config)
    if url is None:
        return SQLiteStore.open(workspace, create=create)
    if url.startswith(PG_SCHEMES):
        from rein.store.postgres import PostgresStore

        return PostgresStore(url)
    path = Path(url.removeprefix("sqlite://")) if url.startswith("sqlite://") else Path(url)
    if not path.is_absolute():
        path = workspace / path
    if not path.exists() and not create:
        return None
    return SQLiteStore(path)  # creates its folder and the file when they are missing
