"""The features index: what `rein dev` lists of the feature graph on every turn, read back
only as a person was shown it.

Parsing the graph's YAML on every turn would cost more than the rest of the turn, so rein
writes the features (their nodes, titles, order, and those committed under an earlier
plan) as one JSON comment line at the end of ``specs/plan.agraph.yaml``, with the digest
of the graph itself. Both files rein reads here are the workspace's, which the agent may
write between turns, so the index counts only where:

* the graph file holds the bytes the planning run's gate showed a person (the digest its
  approval recorded, in the run store): an index edited with it is not those bytes;
* the feature run ``.rein/dev/flow.json`` names is a run of that graph (its digest, in the
  run store): not an earlier plan's run that succeeded, reported as this plan's.

Otherwise `DEV008`: rein says which file is not what was approved, and reports nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from rein.core.ids import RunId
from rein.dev.paths import FEATURES_PATH
from rein.engine.service import Harness
from rein.errors import Refused

LINE = b"# rein-dev-index: "
START_AGAIN = "run `rein dev start --new` (a changed plan is approved again)"


def index_line(index: Mapping[str, Any]) -> str:
    """The comment line that carries ``index`` (ASCII JSON: no line break can end it)."""
    return LINE.decode() + json.dumps(dict(index), sort_keys=True, separators=(",", ":"),
                                      ensure_ascii=True) + "\n"


def features_index(harness: Harness, flow: Mapping[str, Any]) -> dict[str, Any] | None:
    """The index of the feature graph the flow's planning run showed a person (None before
    one was shown: the plan is still being made); `DEV008` where the graph file, or the
    feature run the flow's file names, is not that graph."""
    planning = str(flow["planning_run"])
    shown = _shown(harness, planning)
    if shown is None:
        return None
    try:
        raw = (harness.workspace / FEATURES_PATH).read_bytes()
    except OSError:
        raw = b""
    if "sha256:" + hashlib.sha256(raw).hexdigest() != shown:
        raise Refused(f"{FEATURES_PATH} is not the feature graph planning run {planning} "
                      "put before a person: it changed since", code="DEV008",
                      hint=f"restore the approved {FEATURES_PATH}, or {START_AGAIN}")
    index = _read(raw)
    if index.get("plan_id") != flow.get("plan_id"):
        raise Refused(f".rein/dev/flow.json names plan {flow.get('plan_id')}, and the "
                      f"feature graph planning run {planning} put before a person is plan "
                      f"{index.get('plan_id')}", code="DEV008", hint=START_AGAIN)
    run_id = flow.get("features_run")
    if run_id and harness.run(str(run_id)).graph_digest != index.get("digest"):
        raise Refused(f"run {run_id}, which .rein/dev/flow.json names as the feature run, "
                      f"is not a run of the feature graph planning run {planning} put "
                      "before a person", code="DEV008", hint=START_AGAIN)
    return index


def _shown(harness: Harness, planning_run: str) -> str | None:
    """The digest of the feature graph as the last gate of ``planning_run`` showed it."""
    rows = [r for r in harness.store.approvals(run_id=RunId(planning_run))
            if r.kind.value == "gate" and FEATURES_PATH in (r.request.get("files") or {})]
    return str(rows[-1].request["files"][FEATURES_PATH]) if rows else None


def _read(raw: bytes) -> dict[str, Any]:
    """The index the graph's last comment line carries; a graph written without one is
    parsed (its bytes are the ones shown, so the index built from them is too)."""
    at = raw.rfind(b"\n" + LINE)
    if at >= 0:
        try:
            found = json.loads(raw[at + 1 + len(LINE):].split(b"\n", 1)[0])
        except ValueError:
            found = None
        if isinstance(found, dict):
            return found
    from rein.formats.loader import load_bytes

    return index_of(load_bytes(raw, source=FEATURES_PATH, format="yaml").data)


def index_of(data: Mapping[str, Any]) -> dict[str, Any]:
    """The features index of the feature graph ``data``: its plan, its digest, and its
    features in build order (those committed under an earlier plan first, without a
    node)."""
    index = [{"node": node_id, "title": str(node.get("title", "")).split(": ", 1)[-1],
              **{k: (node.get("x-rein-dev") or {}).get(k)
                 for k in ("feature", "priority", "depends_on", "serves")}}
             for node_id, node in (data.get("nodes") or {}).items()]
    from rein.formats.canonical import ags_digest

    meta = data.get("x-rein-dev") or {}
    earlier = [{"node": None, **c} for c in meta.get("committed") or []]
    return {"plan_id": meta.get("plan_id"), "digest": ags_digest(data),
            "features": earlier + index}
