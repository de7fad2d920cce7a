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


def resumed_note(run_id: str, *, interrupted: bool) -> str:
    """What a flow says when it continued one of its runs itself: ``interrupted``, the run
    was left running by a rein process that stopped; else an answer was recorded that the
    run had not taken up (a person's answer to a run approved in the agent's sandbox is
    left to the sandbox)."""
    if interrupted:
        return f"resumed run {run_id}, which a stopped rein process left running"
    return f"resumed run {run_id}, which had an answer recorded that it had not taken up"


__all__ = ["FLOW_COMMANDS", "continued_by", "resumed_note"]
