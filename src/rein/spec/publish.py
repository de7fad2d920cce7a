"""READY: the accepted bundle becomes ``specs/active/40-development-plan.json``, the plan
`rein dev` imports instead of planning again.

Each slice of the readiness review becomes one feature: its dependencies, the requirement
ids it serves, and a bounded implementation context composed by rein from the bundle (the
requirements it serves with their fit criteria, the decisions with their reasons, the
constraints, the files, and the acceptance checks traced to those requirements). The plan
is checked with `rein dev`'s own plan check before it is written, so what is published is
what `rein dev` accepts; and it records the digests of the brief and the documents it was
made from (:mod:`rein.spec.provenance`), so that a later change is noticed.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.core.writing import write_atomic
from rein.spec.paths import PLAN_FORMAT, PLAN_PATH


def compose(bundle: Mapping[str, Any], *, max_features: int = 20
            ) -> tuple[dict[str, Any], list[str]]:
    """The development plan of ``bundle`` (documents by name, all of them present), and
    what `rein dev`'s plan check says of it (no problem: accepted)."""
    from rein.dev.plan_check import check_plan

    reqs = {r["id"]: r for r in _list(bundle["requirements"], "requirements")}
    decisions = {d["id"]: d for d in _list(bundle["design"], "decisions")}
    constraints = {c["id"]: c for c in _list(bundle["charter"], "constraints")}
    checks = _list(bundle["acceptance"], "checks")
    readiness = bundle["readiness"]
    features = []
    for item in _list(readiness, "slices"):
        serves = [r for r in _strings(item.get("serves")) if r in reqs]
        # A decision or a constraint reaches a slice when the slice names it, or when one
        # of the requirements it serves does.
        tied = [d for d, v in decisions.items()
                if set(_strings(v.get("requirements"))) & set(serves)]
        dids = _union(item.get("decisions"), tied)
        cids = _union(item.get("constraints"), [c for r in serves
                                                for c in _strings(reqs[r].get("constraints"))])
        context = {
            "requirements": [f"{r}: {reqs[r].get('statement')} (met when: "
                             f"{reqs[r].get('fit_criterion')})" for r in serves],
            "decisions": [f"{d}: {decisions[d].get('decision')} (because: "
                          f"{decisions[d].get('reason')})" for d in dids if d in decisions],
            "constraints": [f"{c}: {constraints[c].get('text')}" for c in cids
                            if c in constraints],
            "files": _strings(item.get("files")),
            "acceptance": [f"{a['id']}: {a.get('check')}" for a in checks
                           if set(_strings(a.get("requirements"))) & set(serves)],
        }
        feature: dict[str, Any] = {
            "id": item.get("id"), "title": item.get("title"),
            "description": item.get("description", ""),
            "priority": item.get("priority", 1),
            # As written: `rein dev`'s plan check names a depends_on that is not a list.
            "depends_on": item.get("depends_on") or [], "serves": serves,
            "context": {k: v for k, v in context.items() if v}}
        if item.get("verify") is not None:
            feature["verify"] = item["verify"]
        features.append(feature)
    plan: dict[str, Any] = {"format": PLAN_FORMAT, "features": features}
    if readiness.get("verify") is not None:
        plan["verify"] = readiness["verify"]
    checked = check_plan(plan, max_features=max_features)
    problems = [f"the development plan of the slices is refused: {p}"
                for p in checked.problems]
    return plan, problems


def write_plan(workspace: Path, plan: Mapping[str, Any], *, spec_id: str,
               ids: Mapping[str, list[str]]) -> dict[str, Any]:
    """Write the plan with its provenance (the sources' digests as they are now) and the
    ids each document has published (they stay stable from now on)."""
    from rein.spec.provenance import sources

    out = {**plan, "spec": {"spec_id": spec_id,
                            "published_at": dt.datetime.now(dt.UTC).isoformat(
                                timespec="seconds"),
                            "sources": sources(workspace), "ids": dict(ids)}}
    write_atomic(workspace / PLAN_PATH, json.dumps(out, indent=2) + "\n")
    return out


def _list(data: Any, key: str) -> list[Mapping[str, Any]]:
    items = data.get(key) if isinstance(data, Mapping) else None
    return [i for i in items if isinstance(i, Mapping) and isinstance(i.get("id"), str)] \
        if isinstance(items, list) else []


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _union(first: Any, more: list[str]) -> list[str]:
    out: list[str] = []
    for value in [*_strings(first), *more]:
        if value not in out:
            out.append(value)
    return out
