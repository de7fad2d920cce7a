"""The flows built on the engine whose runs an agent drives one after another.

A run of the development flow's graphs (``rein/dev/...``) or the specification flow's
(``rein/spec/...``) succeeding is not the end of the flow: the flow's own command starts
what comes next. ``rein next`` and ``rein submit`` read this table to say so, from the
graph id alone (the driver layer cannot import the flows themselves).
"""

from __future__ import annotations

# graph id prefix -> (the flow's name, the command that continues it)
FLOW_COMMANDS: dict[str, tuple[str, str]] = {
    "rein/dev/": ("development", "rein dev"),
    "rein/spec/": ("specification", "rein spec"),
}


def continued_by(graph_id: str) -> tuple[str, str] | None:
    """``(flow, command)`` when ``graph_id`` is one of a flow's graphs, else None."""
    for prefix, found in FLOW_COMMANDS.items():
        if graph_id.startswith(prefix):
            return found
    return None


__all__ = ["FLOW_COMMANDS", "continued_by"]
