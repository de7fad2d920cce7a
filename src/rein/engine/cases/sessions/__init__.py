"""The session runtime: threads and turns over the engine's runs (the use cases).

- :mod:`.runtime` — :class:`Sessions` (``harness.sessions``): threads in the store, turns
  as runs, answers to their questions;
- :mod:`.turn` — :class:`TurnRun`: one turn as it runs; :mod:`.digest` — a graph turn's
  digest question in the approval queue; :mod:`.ends` — a turn that ended without its run;
- :mod:`.conversation` — a conversation turn as a one-node graph; :mod:`.graph_turns` — a
  turn that names a graph; :mod:`.policy` — sandbox and approval policy as declared values;
- :mod:`.replies` — what each turn said, for the next turn's brief;
- :mod:`.launches` — an editor's MCP server launches in the approval queue.

How a turn reads as protocol messages (its feed, the wire types, the SDK) is the protocol
layer's: :mod:`rein.protocol`.
"""

from rein.engine.cases.sessions.runtime import RunCalls, Sessions
from rein.engine.cases.sessions.turn import DECISIONS, TurnRun

__all__ = ["DECISIONS", "RunCalls", "Sessions", "TurnRun"]
