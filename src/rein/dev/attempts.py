"""What each attempt of a feature run did, as the run store recorded it: its criteria's
results and the commit its handoff made. Read by the flow's views and by `rein dev`, which
writes into ``.git`` only the kept-back commits a handoff recorded making."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rein.core.ids import RunId
from rein.engine.service import Harness

__all__ = ["checks_of"]

_COMMITTED = re.compile(r"committed (?:feature \S+ )?as ([0-9a-f]{4,64})\b")


def checks_of(harness: Harness, run_id: str | None) -> dict[str, list[dict[str, Any]]]:
    """Per feature node, each attempt with its criteria's results (id, passed, evidence)
    and the commit its handoff recorded."""
    if not run_id:
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    for row in harness.store.nodes(RunId(run_id)):
        attempts = []
        for i, a in enumerate(row.record.get("attempts") or []):
            if not isinstance(a, Mapping):
                continue
            results = [r for r in (a.get("success") or {}).get("results") or []
                       if isinstance(r, Mapping)]
            commit = None
            for r in results:
                found = _COMMITTED.search(str(r.get("evidence") or ""))
                if r.get("id") == "handoff" and r.get("passed") and found:
                    commit = found.group(1)
            attempts.append({"attempt": a.get("attempt", i + 1), "status": a.get("status"),
                             "error": a.get("error"), "commit": commit,
                             "results": [{"id": r.get("id"), "passed": bool(r.get("passed")),
                                          "evidence": r.get("evidence") or r.get("error")}
                                         for r in results]})
        out[row.node_id] = attempts
    return out
