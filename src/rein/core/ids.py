"""Typed ids: a node key is never a run id, and an approval id is never either.

``NewType`` keeps them apart for the type checker at no cost at run time.
"""

from __future__ import annotations

from typing import NewType

RunId = NewType("RunId", str)
NodeId = NewType("NodeId", str)  # a node id as the graph declares it, e.g. "run_tests"
NodeKey = NewType("NodeKey", str)  # scope path + node id, e.g. "repair_loop[1].run_tests"
ApprovalId = NewType("ApprovalId", str)
TurnToken = NewType("TurnToken", str)  # a driver instruction's token, e.g. "drv-…"

