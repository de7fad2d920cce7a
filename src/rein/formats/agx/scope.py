"""What an expression can see: the one interface between AGX and the values of a run.

It sits below ``functions`` and ``evaluate`` because both read it: ``output()`` and the
status functions ask the scope, and so does every reference.
"""

from __future__ import annotations

from typing import Any, Protocol


class Scope(Protocol):
    """What an expression can see. The engine provides one per evaluation site."""

    def lookup(self, root: str) -> Any:
        """The value of a root name (``graph``, ``params``, ``nodes``, a map's ``as`` name…).

        Raise KeyError when the name is not visible here.
        """
        ...

    def node_status(self, node_id: str) -> str | None:
        """The status of a node in the current scope (``succeeded``, ``failed``, ``skipped``,
        …), or None when no such node exists."""
        ...
