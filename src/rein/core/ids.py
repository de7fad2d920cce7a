"""Typed ids: a node key is never a run id, and an approval id is never either.

``NewType`` keeps them apart for the type checker at no cost at run time.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import NewType
else:
    def NewType(name: str, tp: type) -> object:
        return lambda value: value  # what typing's gives at run time: the value itself

RunId = NewType("RunId", str)
NodeId = NewType("NodeId", str)  # a node id as the graph declares it, e.g. "run_tests"
NodeKey = NewType("NodeKey", str)  # scope path + node id, e.g. "repair_loop[1].run_tests"
ApprovalId = NewType("ApprovalId", str)
TurnToken = NewType("TurnToken", str)  # a driver instruction's token, e.g. "drv-…"

