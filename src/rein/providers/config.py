"""Provider configuration from rein.toml, and API keys from the environment.

.. code-block:: toml

    [providers.openai]              # the name nodes and routing refer to
    kind = "openai"                 # openai (any OpenAI-compatible server) | anthropic | scripted
    model = "gpt-4.1-mini"          # default model
    api_key_env = "OPENAI_API_KEY"  # the variable that holds the key (this is the default)

    [providers.local]
    kind = "openai"
    base_url = "http://127.0.0.1:11434/v1"   # Ollama; vLLM, llama.cpp, LM Studio alike
    model = "qwen2.5-coder:7b"               # a local server needs no key

A key is never written in rein.toml: the file is shown by ``rein config show`` and often
committed. ``api_key = "..."`` is refused with a hint; the key lives in the environment and
rein.toml names the variable. The key is read when a client is built and kept only inside the
SDK client; it never appears in a repr, an event, a record or an error message.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from rein.core.frozen import Frozen, field
from rein.errors import ConfigError
from rein.formats.redaction import DEFAULT_KEY_VARIABLES
from rein.providers.pricing import PriceTable
from rein.providers.retry import RetryPolicy

# One list: the variables providers read are the ones every store write redacts.
DEFAULT_KEY_ENV = dict(DEFAULT_KEY_VARIABLES)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_KNOWN = {
    "kind",
    "model",
    "base_url",
    "api_key_env",
    "prices",
    "timeout_seconds",
    "max_attempts",
    "options",
}


class ProviderConfig(Frozen):
    """One ``[providers.NAME]`` table, validated. Holds the key's variable name, never the key."""

    name: str
    kind: str
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    prices: PriceTable = field(default_factory=PriceTable)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout_seconds: float = 120.0
    options: Mapping[str, Any] = field(default_factory=dict)

    def key_variable(self) -> str | None:
        """The environment variable the key is read from."""
        return self.api_key_env or DEFAULT_KEY_ENV.get(self.kind)

    def api_key(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The key from the environment, or None when unset or empty."""
        variable = self.key_variable()
        if variable is None:
            return None
        return (environ if environ is not None else os.environ).get(variable) or None


def parse_providers(table: Mapping[str, Any] | None) -> dict[str, ProviderConfig]:
    """Validate the ``providers`` table of a merged rein.toml (ConfigError PROVCFG00x)."""
    out: dict[str, ProviderConfig] = {}
    for name, entry in (table or {}).items():
        where = f"providers.{name}"
        if not isinstance(entry, Mapping):
            raise _bad(f"{where} must be a table", where)
        if "api_key" in entry:
            raise ConfigError(
                f"{where}.api_key: keys are never written in rein.toml",
                code="PROVCFG002",
                hint="export the key in an environment variable and write "
                f'{where}.api_key_env = "NAME"',
            )
        unknown = set(entry) - _KNOWN
        if unknown:
            raise _bad(f"{where}: unknown keys {sorted(unknown)}", where)
        kind = entry.get("kind", name)
        if not isinstance(kind, str) or not kind:
            raise _bad(f"{where}.kind must be a provider kind such as openai or anthropic", where)
        key_env = entry.get("api_key_env")
        if key_env is not None and (not isinstance(key_env, str) or not _ENV_NAME.match(key_env)):
            raise _bad(f"{where}.api_key_env must be an environment variable name", where)
        for text_key in ("model", "base_url"):
            if entry.get(text_key) is not None and not isinstance(entry[text_key], str):
                raise _bad(f"{where}.{text_key} must be a string", where)
        timeout = entry.get("timeout_seconds", 120.0)
        attempts = entry.get("max_attempts", 3)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise _bad(f"{where}.timeout_seconds must be a number > 0", where)
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise _bad(f"{where}.max_attempts must be an integer >= 1", where)
        options = entry.get("options", {})
        if not isinstance(options, Mapping):
            raise _bad(f"{where}.options must be a table", where)
        out[name] = ProviderConfig(
            name=name,
            kind=kind,
            model=entry.get("model"),
            base_url=entry.get("base_url"),
            api_key_env=key_env,
            prices=PriceTable.parse(entry.get("prices"), where=f"{where}.prices"),
            retry=RetryPolicy(max_attempts=attempts),
            timeout_seconds=float(timeout),
            options=dict(options),
        )
    return out


def _bad(message: str, where: str) -> ConfigError:
    return ConfigError(
        message, code="PROVCFG001", hint=f"see docs/providers.md for the {where} table"
    )
