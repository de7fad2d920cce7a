"""Where the development flow stands, for a reader that changes nothing (the web console).

The same reading as `rein dev status` (:func:`rein.dev.flow.status`): the flow's runs from
``.rein/dev/flow.json``, the features' states, and the stop with its reason, computed by the
same functions; plus, per feature, what each attempt's checks said (the verify command's
result and the handoff's commit, with their evidence) and the flow's context policy. It
starts nothing, resumes nothing and runs no git process: the commits are the ones the
handoff check recorded.
"""

from __future__ import annotations

from typing import Any

from rein.dev.attempts import checks_of
from rein.dev.flow import load_flow
from rein.dev.settings import load_settings
from rein.dev.stops import read_stop
from rein.engine.service import Harness
from rein.errors import ReinError


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


__all__ = ["checks_of", "snapshot"]
