"""What every provider built on an official vendor SDK shares: keys, retries, streaming, cost.

A vendor module (:mod:`rein.providers.openai_chat`, :mod:`rein.providers.anthropic_messages`)
subclasses :class:`SdkProvider` and supplies only what differs between APIs: how the SDK
client is built and called, the request parameters, how a whole response is read, and a
:class:`StreamAccumulator` that turns raw stream events into rein's deltas. The shared part
fixes the order of things once: the test switch and the key are checked before any call,
only opening a stream is retried (once deltas flowed, a retry would repeat them), vendor
exceptions are translated at the edge with the key scrubbed, and the cost is priced from the
model the vendor says answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, ClassVar, Protocol, Self

from rein.providers.base import ensure_allowed
from rein.providers.config import ProviderConfig
from rein.providers.errors import ProviderAuthError, vendor_errors
from rein.providers.retry import Sleep, with_retries
from rein.providers.types import (
    Capabilities,
    Completed,
    Message,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    StopReason,
    StreamEvent,
    TokenUsage,
    stop_reason,
)


class StreamAccumulator(Protocol):
    """Reads one vendor stream: passes deltas on and builds the final response."""

    def feed(self, event: Any) -> list[StreamEvent]:
        """rein's deltas for one raw stream event (often none)."""
        ...

    def finish_response(self, requested_model: str) -> ModelResponse:
        """The whole response once the stream ended (without a cost: the caller prices it)."""
        ...


def assistant_response(
    *,
    text: str,
    calls: Iterable[ModelToolCall],
    usage: TokenUsage,
    vendor_stop: str | None,
    stops: Mapping[str, StopReason],
    model: str,
    cost_usd: float | None = None,
) -> ModelResponse:
    """An assistant turn as rein's :class:`ModelResponse`, the stop reason mapped by ``stops``."""
    return ModelResponse(
        message=Message(role="assistant", content=text, tool_calls=tuple(calls)),
        usage=usage,
        stop_reason=stop_reason(vendor_stop, stops),
        vendor_stop_reason=vendor_stop,
        model=model,
        cost_usd=cost_usd,
    )


class SdkProvider:
    """The shared half of a provider over a vendor SDK; subclasses fill in the hooks below."""

    capabilities: ClassVar[Capabilities]
    #: The SDK module whose exception classes :func:`vendor_errors` translates.
    sdk_errors: ClassVar[Any]
    #: The SDK's async client class (both SDKs take the same constructor arguments).
    sdk_client: ClassVar[Any]
    #: The vendor's stop/finish reasons mapped to rein's.
    stops: ClassVar[Mapping[str, StopReason]]

    def __init__(
        self,
        config: ProviderConfig,
        *,
        http_client: Any = None,
        sleep: Sleep = asyncio.sleep,
        environ: dict[str, str] | None = None,
    ) -> None:
        self.name = config.name
        self.config = config
        self._injected = http_client is not None
        self._sleep = sleep
        key = config.api_key(environ)
        self._has_key = key is not None
        self._secrets = (key,) if key else ()
        self._client = self._make_client(key, http_client)

    @classmethod
    def from_config(cls, config: ProviderConfig, http_client: Any = None) -> Self:
        """The registry's factory signature: ``(config, http_client) -> provider``."""
        return cls(config, http_client=http_client)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, base_url={self.config.base_url!r})"

    # -- hooks a vendor module supplies (or keeps) ------------------------------------------------------

    def _make_client(self, key: str | None, http_client: Any) -> Any:
        """The SDK client, with the SDK's own retries off: :func:`with_retries` is the only
        retry layer. A local server ignores the key, but the SDKs insist on one."""
        return self.sdk_client(
            api_key=key or "no-key",
            base_url=self.config.base_url,
            max_retries=0,
            timeout=self.config.timeout_seconds,
            http_client=http_client,
        )

    async def _create(self, params: dict[str, Any]) -> Any:
        """One SDK call with ``params`` (a whole response, or a stream when asked for one)."""
        raise NotImplementedError

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        """The SDK call's keyword arguments for ``request``."""
        raise NotImplementedError

    def _stream_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments for a streaming call."""
        return {**self._params(request), "stream": True}

    def _response(self, raw: Any) -> ModelResponse:
        """A whole SDK response as rein's, priced."""
        raise NotImplementedError

    def _accumulator(self) -> StreamAccumulator:
        """A fresh reader for one stream."""
        raise NotImplementedError

    def _key_optional(self) -> bool:
        """Whether a call may go out without an API key (a local server ignores it)."""
        return False

    def _missing_key_hint(self) -> str:
        return f"export {self.config.key_variable()}"

    # -- the shared flow ---------------------------------------------------------------------

    def _ready(self) -> None:
        ensure_allowed(self.name, injected_transport=self._injected)
        if not self._has_key and not self._key_optional():
            raise ProviderAuthError(
                f"{self.name}: no API key: {self.config.key_variable()} is not set",
                hint=self._missing_key_hint(),
                provider=self.name,
            )

    def _vendor_errors(self) -> Any:
        return vendor_errors(self.name, errors=self.sdk_errors, secrets=self._secrets)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """One request, one whole response; transient failures are retried."""
        self._ready()
        params = self._params(request)

        async def once() -> ModelResponse:
            with self._vendor_errors():
                raw = await self._create(params)
            return self._response(raw)

        return await with_retries(once, policy=self.config.retry, sleep=self._sleep)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Deltas as they arrive, then one :class:`Completed` with the priced response."""
        self._ready()
        params = self._stream_params(request)

        async def open_stream() -> Any:
            with self._vendor_errors():
                return await self._create(params)

        # Only opening the stream is retried: once deltas flowed, a retry would repeat them.
        events = await with_retries(open_stream, policy=self.config.retry, sleep=self._sleep)
        acc = self._accumulator()
        with self._vendor_errors():
            async for event in events:
                for out in acc.feed(event):
                    yield out
        response = acc.finish_response(request.model)
        cost = self.config.prices.cost(response.model, response.usage)
        yield Completed(response=response.replace(cost_usd=cost))

    def _priced_response(self, *, text: str, calls: Iterable[ModelToolCall], usage: TokenUsage,
                         vendor_stop: str | None, model: str) -> ModelResponse:
        """A whole (non-streamed) response, priced from the model the vendor says answered."""
        return assistant_response(
            text=text, calls=calls, usage=usage, vendor_stop=vendor_stop, stops=self.stops,
            model=model, cost_usd=self.config.prices.cost(model, usage),
        )
