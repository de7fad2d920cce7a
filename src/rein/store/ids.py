"""Typed ids: a node key is never a run id, and an approval id is never either.

``NewType`` keeps them apart for the type checker at no cost at run time.
"""

from __future__ import annotations

import datetime as dt
from typing import NewType

RunId = NewType("RunId", str)
NodeKey = NewType("NodeKey", str)  # scope path + node id, e.g. "repair_loop[1].run_tests"
ApprovalId = NewType("ApprovalId", str)


def iso(moment: dt.datetime) -> str:
    """RFC 3339 with a ``Z``, as the run record schema expects."""
    return moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
