"""The session runtime: threads, turns and items over the engine's runs.

- :mod:`.runtime` — :class:`Sessions` (``harness.sessions``): threads in the store, turns
  as runs, answers to their questions;
- :mod:`.feed` — one turn's run events folded into the Codex vocabulary;
- :mod:`.conversation` — a conversation turn as a one-node graph;
- :mod:`.policy` — sandbox and approval policy as declared values;
- :mod:`.turn` — :class:`TurnRun`: one turn as it runs; :mod:`.digest` — a graph turn's
  digest question in the approval queue;
- :mod:`.sdk` — the Python SDK's ``Thread`` and ``Turn``.
- :mod:`.shapes`, :mod:`.requests` — the wire types (what the JSON Schema is written from).
"""

from rein.engine.sessions.feed import Feed, Message, ServerRequest
from rein.engine.sessions.runtime import Sessions
from rein.engine.sessions.sdk import Thread, Turn, TurnResult
from rein.engine.sessions.turn import DECISIONS, TurnRun

__all__ = ["DECISIONS", "Feed", "Message", "ServerRequest", "Sessions", "Thread", "Turn",
           "TurnResult", "TurnRun"]
