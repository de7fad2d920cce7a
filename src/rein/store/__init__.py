"""Where run state lives: SQLite under .rein/ by default (PostgreSQL later, same protocol)."""

from __future__ import annotations

from rein.store.base import (
    ApprovalRow,
    DriverTurn,
    Event,
    NodeRow,
    RunRow,
    Store,
    Transition,
)

__all__ = ["ApprovalRow", "DriverTurn", "Event", "NodeRow", "RunRow", "Store", "Transition"]
