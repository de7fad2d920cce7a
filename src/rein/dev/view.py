"""Where the development flow stands, for a reader that changes nothing (the web console).

The same reading as `rein dev status` (:func:`rein.dev.flow.status`): the flow's runs from
``.rein/dev/flow.json``, the features' states, and the stop with its reason, computed by the
same functions; plus, per feature, what each attempt's checks said (the verify command's
result and the handoff's commit, with their evidence) and the flow's context policy. It
starts nothing, resumes nothing and runs no git process: the commits are the ones the
handoff check recorded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rein.core.ids import RunId
from rein.dev.flow import load_flow
from rein.dev.settings import load_settings
from rein.dev.stops import read_stop
from rein.engine.service import Harness
from rein.errors import ReinError

_COMMITTED = re.compile(r"committed (?:feature \S+ )?as ([0-9a-f]{4,64})\b")


def snapshot(harness: Harness) -> dict[str, Any] | None:
    """The flow as one mapping, or None when the workspace has no flow."""
    flow = load_flow(harness.workspace)
    if flow is None or not flow.get("planning_run"):
        return None
    try:
        planning = harness.run(flow["planning_run"])
    except ReinError:
        return None
    run_id = flow.get("features_run") or planning.run_id
    stage = "features" if flow.get("features_run") else "planning"
    pending = harness.driver_status(run_id)
    features, stop = read_stop(harness, flow, pending, stage=stage)
    checks = checks_of(harness, flow.get("features_run"))
    for f in features:
        f["checks"] = checks.get(f["node"], [])
        f["commit"] = next((a["commit"] for a in reversed(f["checks"]) if a["commit"]),
                           f.get("commit"))  # or the earlier plan's, for one not built again
    try:
        policy = load_settings(harness.config.get("dev")).context_policy
    except ReinError as exc:
        policy = f"unreadable ({exc.code})"
    clean = pending.get("clean_context_reason") if pending.get("clean_context") else None
    return {"plan_id": flow.get("plan_id"), "stage": stage, "run_id": run_id,
            "planning_run": flow["planning_run"], "features_run": flow.get("features_run"),
            "run_status": harness.run(run_id).status.value, "context_policy": policy,
            "clean_context": clean, "features": features,
            **stop}


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


__all__ = ["checks_of", "snapshot"]
