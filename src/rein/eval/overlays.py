"""Overlays of what the model is shown: system-prompt text and tool descriptions.

A configuration may change the words of the harness, not only its tables::

    [configurations.terse]
    extends = "scripted"
    system = "Prefer the smallest change that passes the checks."   # appended to the system
    [configurations.terse.tools.shell]                                # prompt of every call
    description = "Run one shell command. Use it only to run tests."  # replaces the shell
                                                                      # tool's description

They are applied where the model worker meets its provider: every request a trial's model
workers send has the configuration's ``system`` text after rein's own system prompt (and
after a profile's assembled prompt) and, for each tool it offers that the configuration
describes, the configuration's description in place of rein's. Nothing else of the request
changes: the tools offered, their arguments and the conversation are the harness's own.

An overlay names a tool as the model is offered it (``shell``, ``file_read``, an MCP tool's
offered name, ``submit_outputs``). A trial counts, per overlay, the calls it changed
(:class:`Applied`), so a description of a tool the model was never offered (a misspelled
name, a tool the node does not grant) shows in the results instead of changing nothing
silently.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from rein.core.frozen import Frozen, field

if TYPE_CHECKING:
    from rein.providers.base import Provider
    from rein.providers.types import Capabilities, ModelRequest, ModelResponse, StreamEvent

#: The keys of a configuration that overlay what the model is shown.
PROMPT_KEYS = ("system", "tools")


class PromptOverlay(Frozen):
    """A configuration's system-prompt text and tool descriptions."""

    system: str | None = None
    tools: Mapping[str, str] = field(default_factory=dict)  # offered name -> description

    @classmethod
    def of(cls, definition: Mapping[str, Any]) -> PromptOverlay | None:
        """The overlay a configuration's definition declares (None: it declares none)."""
        system = definition.get("system")
        tools = definition.get("tools") or {}
        if system is None and not tools:
            return None
        return cls(system=system, tools={name: str(spec["description"])
                                         for name, spec in tools.items()})

    def apply(self, request: ModelRequest, applied: Applied) -> ModelRequest:
        """``request`` as this configuration shows it to the model."""
        changes: dict[str, Any] = {}
        if self.system is not None:
            changes["system"] = ((request.system or "").rstrip() + "\n\n" + self.system).lstrip()
        if self.tools and any(t.name in self.tools for t in request.tools):
            changes["tools"] = tuple(
                t.replace(description=self.tools[t.name]) if t.name in self.tools
                else t for t in request.tools)
        applied.count(system=self.system is not None,
                      tools=[t.name for t in request.tools if t.name in self.tools])
        return request.replace(**changes) if changes else request


class Applied:
    """How many model calls of one trial each overlay changed (the trial's lanes run in
    threads, and one trial's workers may call from several)."""

    def __init__(self, overlay: PromptOverlay) -> None:
        self.overlay = overlay
        self.calls = 0
        self.system = 0
        self.tools: dict[str, int] = dict.fromkeys(overlay.tools, 0)
        self._lock = threading.Lock()

    def count(self, *, system: bool, tools: list[str]) -> None:
        with self._lock:
            self.calls += 1
            self.system += int(system)
            for name in tools:
                self.tools[name] += 1

    def to_json(self) -> dict[str, Any]:
        """What the trial records: model calls, the calls each overlay changed, and the
        described tools no call offered."""
        out: dict[str, Any] = {"calls": self.calls}
        if self.overlay.system is not None:
            out["system"] = self.system
        if self.overlay.tools:
            out["tools"] = dict(sorted(self.tools.items()))
            out["never_offered"] = sorted(n for n, c in self.tools.items() if c == 0)
        return out


class OverlaidProvider:
    """A provider whose every request carries the configuration's prompt overlay."""

    def __init__(self, inner: Provider, overlay: PromptOverlay, applied: Applied) -> None:
        self.inner = inner
        self.overlay = overlay
        self.applied = applied
        self.name: str = inner.name

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self.inner.complete(self.overlay.apply(request, self.applied))

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return self.inner.stream(self.overlay.apply(request, self.applied))

    def __getattr__(self, name: str) -> Any:
        # What else a provider carries (its pricing, its test double's requests) is the
        # inner one's: only what the model is shown changes.
        return getattr(self.inner, name)


__all__ = ["PROMPT_KEYS", "Applied", "OverlaidProvider", "PromptOverlay"]
