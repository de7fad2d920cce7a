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
from typing import Any

from rein.errors import ConfigError

PG_SCHEMES = ("postgresql://", "postgres://")


def store_url(workspace: Path, given: str | None = None) -> str | None:
    """The store URL in force for ``workspace`` (``None``: the embedded default)."""
    if given:
        return given
    from rein.config.files import any_config

    if not any_config(workspace):  # nothing to read: skip importing the config machinery
        return None
    from rein.config import load_config

    section = load_config(workspace).get("store") or {}
    url = section.get("url") if isinstance(section, dict) else None
    if url is not None and not isinstance(url, str):
        raise ConfigError("[store] url must be a string", code="CONFIG_STORE",
                          hint='write url = "postgresql://user@host/db" under [store]')
    return url or None


def key_variables(workspace: Path) -> tuple[str, ...]:
    """The provider key variables the workspace's merged ``rein.toml`` names."""
    from rein.config.files import any_config
    from rein.formats.redaction import provider_key_variables

    if not any_config(workspace):
        return ()
    from rein.config import load_config

    config = load_config(workspace)
    tables = dict(config.get("providers") or {})
    # A provider withheld from an untrusted project file still names a key of this user's.
    trust = config.project_trust
    for item in trust.items if trust is not None else ():
        if item.key.startswith("providers."):
            tables.setdefault(item.key.removeprefix("providers."), item.value)
    return provider_key_variables(tables)


def open_store(workspace: Path, *, url: str | None = None, create: bool = True) -> Any:
    """The store of ``workspace`` (``None`` when the embedded one does not exist yet and
    ``create`` is false), redacting the workspace's provider keys as well."""
    from rein.formats.redaction import known_secrets

    store = _open(workspace, url=url, create=create)
    if store is not None:
        store.know(known_secrets(os.environ, key_variables(workspace)))
    return store


def _open(workspace: Path, *, url: str | None, create: bool) -> Any:
    from rein.store.sqlite import SQLiteStore

    url = store_url(workspace, url)
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
