"""The provider interface, the registry built-ins and plugins share, and the test switch.

A provider implements two async methods, :meth:`Provider.complete` and
:meth:`Provider.stream`, and declares :class:`Capabilities` as flags. Built-ins register in
:func:`default_registry` exactly the way a plugin does through the ``rein.providers``
entry-point group: a kind name mapped to a factory ``(config, http_client) -> Provider``.
A built-in kind whose vendor SDK is an extra names it (``extra="openai"``): creating a
provider of that kind without the extra installed is ConfigError PROVCFG006, whose hint
installs it.

``REIN_ALLOW_MODEL_REQUESTS=0`` (set by the test suite) blocks every real model call with
:class:`ModelRequestsBlocked`. A provider built with an injected HTTP client (a mock
transport replaying wire fixtures) is not a real call and is not blocked.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping
from importlib import metadata
from typing import Any, Protocol, runtime_checkable

from rein.core.extras import require
from rein.errors import ConfigError
from rein.providers.config import ProviderConfig
from rein.providers.errors import ModelRequestsBlocked
from rein.providers.types import Capabilities, ModelRequest, ModelResponse, StreamEvent

ALLOW_SWITCH = "REIN_ALLOW_MODEL_REQUESTS"
ENTRY_POINT_GROUP = "rein.providers"


@runtime_checkable
class Provider(Protocol):
    """A model API behind rein's own types."""

    name: str  # the configured provider name (``[providers.NAME]``)
    capabilities: Capabilities

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """One request, one whole response. Raises ProviderError subclasses only."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Deltas as they arrive, ending with exactly one :class:`Completed`."""
        ...


ProviderFactory = Callable[[ProviderConfig, Any], Provider]


def model_requests_allowed(environ: Mapping[str, str] | None = None) -> bool:
    """False when REIN_ALLOW_MODEL_REQUESTS is 0/false/no (the test suite sets it)."""
    value = (environ if environ is not None else os.environ).get(ALLOW_SWITCH, "1")
    return value.strip().lower() not in ("0", "false", "no", "off")


def ensure_allowed(provider: str, *, injected_transport: bool) -> None:
    """Raise ModelRequestsBlocked for a real call while the switch is off."""
    if injected_transport or model_requests_allowed():
        return
    raise ModelRequestsBlocked(
        f"{provider}: real model requests are blocked ({ALLOW_SWITCH}=0)",
        hint="tests use the scripted provider or replay wire fixtures through an injected "
        f"HTTP transport; set {ALLOW_SWITCH}=1 to call the real API",
        provider=provider,
    )


class ProviderRegistry:
    """Kind name → factory. Built-ins and plugins register the same way."""

    def __init__(self) -> None:
        self._factories: dict[str, ProviderFactory] = {}
        self._extras: dict[str, str] = {}  # kind -> the extra that installs its SDK

    def register(self, kind: str, factory: ProviderFactory, *, extra: str | None = None
                 ) -> None:
        """Add a kind; a second registration of one kind replaces the first (plugins win).
        ``extra``: the rein extra that installs what the factory imports."""
        self._factories[kind] = factory
        if extra is None:
            self._extras.pop(kind, None)
        else:
            self._extras[kind] = extra

    def check(self, config: ProviderConfig) -> None:
        """ConfigError PROVCFG006 when the extra ``config``'s kind needs is not installed."""
        extra = self._extras.get(config.kind)
        if extra is not None:
            require(extra, f"providers.{config.name} (kind {config.kind!r})", code="PROVCFG006")

    def kinds(self) -> tuple[str, ...]:
        return tuple(sorted(self._factories))

    def create(self, config: ProviderConfig, *, http_client: Any = None) -> Provider:
        """Build the provider ``config`` describes (ConfigError PROVCFG003 for an unknown kind)."""
        factory = self._factories.get(config.kind)
        if factory is None:
            raise ConfigError(
                f"providers.{config.name}: unknown provider kind {config.kind!r}",
                code="PROVCFG003",
                hint=f"use one of: {', '.join(self.kinds())}, or install the plugin that adds it",
            )
        self.check(config)
        return factory(config, http_client)


def _lazy(module: str, cls: str) -> ProviderFactory:
    """A factory that imports its module on first use: the vendor SDKs take seconds to
    import, and a run that routes no tier to them should not pay for it at start-up."""

    def factory(config: ProviderConfig, http_client: Any = None) -> Provider:
        from importlib import import_module

        provider_cls = getattr(import_module(module), cls)
        return provider_cls.from_config(config, http_client)  # type: ignore[no-any-return]

    return factory


def default_registry(*, plugins: bool = True) -> ProviderRegistry:
    """The built-in kinds (openai, anthropic, scripted) plus ``rein.providers`` plugins."""
    registry = ProviderRegistry()
    registry.register("openai", _lazy("rein.providers.openai_chat", "OpenAIChatProvider"),
                      extra="openai")
    registry.register("anthropic", _lazy("rein.providers.anthropic_messages",
                                         "AnthropicProvider"), extra="anthropic")
    registry.register("scripted", _lazy("rein.providers.scripted", "ScriptedProvider"))
    if plugins:
        for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
            registry.register(entry.name, entry.load())
    return registry
