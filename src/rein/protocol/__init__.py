"""The protocol layer: one projection of the event log into threads, turns and items.

Between the engine and the surfaces that speak a protocol (the app-server, the ACP agent,
the web console, the SDK), as Codex keeps its ``app-server-protocol`` apart from its core.
The engine knows runs, events and the thread and turn use cases (:mod:`rein.engine.cases.sessions`);
this layer says what they are in the Codex vocabulary, once:

- :mod:`.messages` — a notification, a question (server request), a message;
- :mod:`.feed` — one turn's events folded into messages (the projection); :mod:`.items` —
  a tool call as a Codex item; :mod:`.fields` — a gate's values as questions;
- :mod:`.threads` — a thread's turns folded from the store, and Codex's ``Thread``;
- :mod:`.turns` — a turn's feed as it runs, following the event log;
- :mod:`.transcript` — a thread's turns as a reader sees them (the web console);
- :mod:`.shapes`, :mod:`.requests` — the wire types (what the JSON Schema is written from);
- :mod:`.sdk` — the Python SDK: ``rein.Harness``'s threads, ``Thread`` and ``Turn``.
"""

from rein.protocol.messages import Message, Notification, ServerRequest

__all__ = ["Message", "Notification", "ServerRequest"]
