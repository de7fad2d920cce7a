"""The session runtime: threads, turns and items over the engine's runs.

- :mod:`.runtime` — :class:`Sessions` (``harness.sessions``): threads in the store, turns
  as runs, answers to their questions;
- :mod:`.feed` — one turn's run events folded into the Codex vocabulary;
- :mod:`.conversation` — a conversation turn as a one-node graph;
- :mod:`.policy` — sandbox and approval policy as declared values;
- :mod:`.sdk` — the Python SDK's ``Thread`` and ``Turn``.
- :mod:`.shapes`, :mod:`.requests` — the wire types (what the JSON Schema is written from).
"""

from rein.engine.sessions.feed import Feed, Message, ServerRequest
from rein.engine.sessions.runtime import DECISIONS, Sessions, TurnRun
from rein.engine.sessions.sdk import Thread, Turn, TurnResult

__all__ = ["DECISIONS", "Feed", "Message", "ServerRequest", "Sessions", "Thread", "Turn",
           "TurnResult", "TurnRun"]
