"""Where the flow stands, as one reason with its next action and exit code.

Each stop has its own reason, never one word for all of them:

=========  ====  ============================================================
reason     exit  next action
=========  ====  ============================================================
waiting    0, 3  the instruction for the agent (`rein next`; exit 0), or the approval a
                 person gives (exit 3)
done       0     nothing: every feature is verified and committed
failed     1     the feature that failed, its last feedback; `rein dev start --new`
blocked    1     the features that cannot start, and the failed one they wait on
timeout    1     `rein dev` again resumes (the run's time ran out)
budget     4     a person raises the limit in `[dev]` of rein.toml and runs
                 `rein dev start --new` (the agent cannot)
cancelled  1     `rein dev start --new`
=========  ====  ============================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.engine.service import Harness
from rein.errors import Refused

EXIT = {"waiting": 3, "done": 0, "failed": 1, "blocked": 1, "timeout": 1, "budget": 4,
        "cancelled": 1}


def features_of(harness: Harness, flow: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each feature of the plan with its state in the feature run (``planned`` before it),
    as the feature graph a person was shown lists them (:mod:`rein.dev.index`: `DEV008`
    where the workspace's files are not that graph and its run); none while the plan is
    being made."""
    from rein.dev.index import features_index

    index = features_index(harness, flow)
    if index is None:
        return []
    states: dict[str, Any] = {}
    if flow.get("features_run"):
        states = {n.node_id: n for n in harness.store.nodes(flow["features_run"])}
    out = []
    for meta in index.get("features") or []:
        node_id = meta["node"]
        if node_id is None:  # committed under an earlier plan, unchanged: not built again
            out.append({"id": meta.get("feature"), "node": None, "title": meta["title"],
                        "priority": None, "depends_on": [], "serves": [],
                        "status": "committed", "attempts": 0, "commit": meta.get("commit")})
            continue
        row = states.get(node_id)
        attempts = list((row.record.get("attempts") or []) if row is not None else [])
        out.append({"id": meta.get("feature"), "node": node_id, "title": meta["title"],
                    "priority": meta.get("priority"),
                    "depends_on": meta.get("depends_on") or [],
                    "serves": meta.get("serves") or [],
                    "status": row.status.value if row is not None else "planned",
                    "attempts": len(attempts),
                    **({"last_failure": _failure(attempts[-1])}
                       if row is not None and row.status.value == "failed" and attempts
                       else {})})
    return out


def read_stop(harness: Harness, flow: Mapping[str, Any], pending: Mapping[str, Any], *,
              stage: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The features and the stop, for a reader that refuses nothing (`rein dev status`,
    the console): where the workspace's files are not the graph a person was shown
    (`DEV008`), no feature is listed and the stop says why."""
    try:
        features = features_of(harness, flow)
    except Refused as exc:
        return [], _stop("failed", f"{exc.message} ({exc.code})", exc.hint or "")
    return features, stop_of(pending, stage=stage, features=features)


def _failure(attempt: Mapping[str, Any]) -> str:
    """What the last attempt of a failed feature was told: its failed criteria's evidence."""
    results = (attempt.get("success") or {}).get("results") or []
    said = [f"{r.get('id')}: {r.get('evidence') or r.get('error') or 'failed'}"
            for r in results if not r.get("passed")]
    return "\n".join(said) or str(attempt.get("error") or attempt.get("status") or "")


def stop_of(pending: Mapping[str, Any], *, stage: str, features: list[dict[str, Any]]
            ) -> dict[str, Any]:
    """The reason, message, next action and exit code for what ``rein next`` reported."""
    state = str(pending.get("status"))
    if state == "instruction":
        node = str(pending.get("node", ""))
        what = "the feature plan" if stage == "planning" else _feature_name(node, features)
        return _stop("waiting", f"waiting for the driver: {what} (attempt "
                     f"{pending.get('attempt')})", "do the instruction above, write the "
                     "envelope to .rein/inbox.json and run `rein submit`",
                     exit_code=int(pending.get("exit_code", 0)))
    if state == "waiting":
        if pending.get("for") == "approval":
            return _stop("waiting", "waiting for a person to approve the feature graph"
                         if stage == "planning" else str(pending.get("message", "")),
                         "stop: a person reviews it and answers the approval (the agent "
                         "does not, and cannot from its sandbox); then run `rein dev`")
        return _stop("waiting", str(pending.get("message", "")),
                     str(pending.get("hint") or "run `rein dev` again"))
    if state == "done":
        if stage == "planning":
            return _stop("waiting", "the plan is approved", "run `rein dev` to start "
                         "the features")
        earlier = sum(f["status"] == "committed" for f in features)
        done = (f"all {len(features)} features are verified and committed"
                if len(features) != 1 else "the one feature is verified and committed")
        return _stop("done", done
                     + (f" ({earlier} of them under an earlier plan)" if earlier else ""),
                     "nothing: read `rein dev report` for the session's figures")
    reason = str(pending.get("reason") or "failed")
    failed = [f for f in features if f["status"] == "failed"]
    if reason == "failed" and failed:
        waiting = blocked_by(features, {f["id"] for f in failed})
        if waiting:
            names = ", ".join(f["id"] for f in waiting)
            return _stop("blocked", f"feature(s) {names} cannot start: they depend on "
                         f"{', '.join(f['id'] for f in failed)}, which failed",
                         "read `rein dev report`, fix the plan or the code, then `rein "
                         "dev start --new`", blocked=[f["id"] for f in waiting],
                         failed=[f["id"] for f in failed])
        return _stop("failed", f"feature {failed[0]['id']} failed after "
                     f"{failed[0]['attempts']} attempt(s): "
                     f"{failed[0].get('last_failure') or pending.get('message', '')}",
                     "read `rein dev report`; fix the cause, then `rein dev start --new`",
                     failed=[f["id"] for f in failed])
    if reason == "budget":
        return _stop("budget", str(pending.get("message", "")), "a person raises the "
                     "limit in [dev] of rein.toml, then `rein dev start --new` (done "
                     "features stay committed)")
    if stage == "planning" and reason == "failed":
        return _stop("failed", "the plan was refused every time: "
                     + str(pending.get("message", "")), "make the brief clearer, then "
                     "`rein dev start --new`")
    return _stop(reason if reason in EXIT else "failed", str(pending.get("message", "")),
                 "`rein dev status`, then `rein dev start --new`")


def blocked_by(features: list[dict[str, Any]], failed: set[str]) -> list[dict[str, Any]]:
    """Features that depend, directly or not, on a failed one."""
    out: list[dict[str, Any]] = []
    bad = set(failed)
    for f in features:  # build order: dependencies come first
        if f["id"] not in failed and bad & set(f["depends_on"]):
            out.append(f)
            bad.add(f["id"])
    return out


def _feature_name(node: str, features: list[dict[str, Any]]) -> str:
    for f in features:
        if f["node"] == node:
            return f"feature {f['id']} ({f['title']})"
    return node


def _stop(reason: str, message: str, next_action: str, **extra: Any) -> dict[str, Any]:
    return {"reason": reason, "message": message, "next_action": next_action,
            "exit_code": EXIT[reason], **extra}  # an instruction's 0 comes in ``extra``
