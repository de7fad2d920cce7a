"""The optional parts of rein: which extra installs each, and the install hint for a missing one.

The base install runs the driver, validates and plans graphs, and serves no model itself.
Everything that talks to a vendor, a server or a database is an extra, installed by name
(``pip install 'rein-ags[openai]'``). A feature whose extra is missing stops where it is first
used with a coded error whose hint is :func:`install_hint`, never an ``ImportError``.

Every hint is built from :data:`DISTRIBUTION`, so renaming the package on PyPI changes one
line here (and ``name`` in pyproject.toml, which a test holds equal to it).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType

from rein.errors import ConfigError

DISTRIBUTION = "rein-ags"
"""The name rein is installed by (on the package index, `rein` is another project); every
install hint names it. The command and the import package stay ``rein``."""

EXTRAS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "openai": ("openai", "httpx2"),  # the openai provider kind (and OpenAI-compatible servers)
    "anthropic": ("anthropic", "httpx2"),  # the anthropic provider kind
    "mcp": ("mcp", "anyio", "httpx2"),  # a profile's MCP servers
    "postgres": ("psycopg",),  # a postgresql:// store
    "web": ("starlette", "uvicorn"),  # rein serve
    "acp": ("acp",),  # rein acp
    "otel": ("opentelemetry.sdk",),  # OpenTelemetry export
    "scale": ("dbos",),  # the dbos executor and rein worker
})
"""Each extra, and the modules rein imports from what it installs (pyproject.toml lists the
distributions; a test holds the two lists of extras equal)."""


def install_hint(extra: str) -> str:
    """The command that installs ``extra``: ``pip install 'rein-ags[postgres]'``."""
    if extra not in EXTRAS:
        raise KeyError(f"rein has no extra {extra!r}")
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def missing(extra: str) -> str | None:
    """The first module of ``extra`` that cannot be imported, or ``None`` when all can.

    Imports them: the caller is about to use the feature, which imports them anyway."""
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ImportError:
            return module
    return None


def require(extra: str, feature: str, *, code: str) -> None:
    """Raise ConfigError ``code`` naming the module that is missing when ``extra`` is not
    installed; ``feature`` is what needs it, as the message's subject (``the postgresql://
    store``)."""
    module = missing(extra)
    if module is not None:
        raise ConfigError(f"{feature} needs {module}, which is not installed (the {extra} "
                          "extra installs it)", code=code, hint=install_hint(extra),
                          extra=extra, module=module)


__all__ = ["DISTRIBUTION", "EXTRAS", "install_hint", "missing", "require"]
