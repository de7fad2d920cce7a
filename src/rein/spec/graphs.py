"""The specification flow's AGS graph, built as data and written as YAML
(``.rein/spec/spec.agraph.yaml``).

One driver task per document, in order (``write_charter`` … ``write_readiness``), whose
output is the document's path and whose success criterion is rein's own check of it
(``rein.spec.document``: its reasons are the next attempt's feedback, ``[spec]
document_attempts`` times). A person approves at gates through the approval queue: after
each document (``[spec] gates = "document"``, the default), or once for the whole bundle
(``"bundle"``); each gate presents the documents' files, so the approval binds their
content, and carries ``[dev] plan_roles``; a document edited while its gate waited is
checked again (``x-rein-recheck``) before a person is asked about it. A reopened bundle is the same graph from the
first document that must be written again.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.core.writing import write_atomic
from rein.formats import yaml_text
from rein.spec.documents import SHAPES
from rein.spec.paths import GRAPH_ID, GRAPH_PATH, NAMES, PATHS, PLAN_PATH, TITLES

__all__ = ["spec_graph", "write_graph"]

INTRO = {
    "charter": "Write the charter of the product the brief describes: its goal, scope, "
               "non-goals, stakeholders and constraints.",
    "requirements": "Write the requirements: functional and non-functional, each with a "
                    "stable id and a fit criterion a test can decide.",
    "design": "Write the design: the components (each functional requirement allocated to "
              "one), their interfaces, the data, and the decisions with their reasons.",
    "acceptance": "Write the acceptance checks: every requirement traced to at least one "
                  "observable check.",
    "readiness": "Write the readiness review: the open questions (each with the assumption "
                 "made meanwhile), the risks, and the slices of the development plan.",
}


def spec_graph(*, brief: str, settings: Mapping[str, Any], spec_id: str, start: int = 0,
               reopened: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The graph of the documents from ``NAMES[start]`` on; ``reopened``: why a document is
    written again (a person edited it, or one it depends on changed)."""
    names = NAMES[start:]
    nodes: dict[str, Any] = {}
    previous: str | None = None
    for name in names:
        node = _write_node(name, brief=brief, settings=settings, spec_id=spec_id,
                           why=(reopened or {}).get(name))
        if previous is not None:
            node["depends_on"] = [previous]
        nodes[f"write_{name}"] = node
        previous = f"write_{name}"
        if settings["gates"] == "document":
            nodes[f"approve_{name}"] = _gate(f"the {TITLES[name]}", [name], settings,
                                             after=previous)
            previous = f"approve_{name}"
    if settings["gates"] == "bundle":
        nodes["approve_bundle"] = _gate("the specification bundle", list(names), settings,
                                        after=previous)
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": GRAPH_ID,
            "title": "Write and review the specification bundle", "version": "1.0.0",
            "requires_conformance": 3,
            "objective": "A brief becomes a reviewed specification bundle whose plan `rein "
                         "dev` builds (the rein specification flow).",
            "entrypoints": [f"write_{names[0]}"], "nodes": nodes,
            "outputs": {name: {"type": "file", "from": f"nodes.write_{name}.outputs.document",
                               "description": f"The {TITLES[name]}."} for name in names},
            "constraints": {"max_node_executions": len(nodes) * int(
                settings["document_attempts"]) + len(nodes)},
            "x-rein-spec": {"spec_id": spec_id, "documents": list(names)}}


def _write_node(name: str, *, brief: str, settings: Mapping[str, Any], spec_id: str,
                why: str | None) -> dict[str, Any]:
    path = PATHS[name]
    earlier = [PATHS[n] for n in NAMES[:NAMES.index(name)]]
    description = INTRO[name]
    if why:
        description = (f"{path} is open again: {why}. Bring it in line with the brief and "
                       "the documents before it (keep its ids: never renumber one).\n\n"
                       + description)
    if name == "charter":
        description += "\n\nThe brief:\n\n" + brief
    else:
        description += ("\n\nRead the brief (specs/*.md, specs/*.txt) and the documents "
                        f"before this one: {', '.join(earlier)}.")
    instructions = (f"Write the {TITLES[name]} as JSON to {path} (a real file), of this "
                    f"shape:\n{SHAPES[name]}\nOn submit, rein checks it (structure, unique "
                    "and stable ids, references that exist, traces); a refused document "
                    "comes back with every reason. No TBD or TODO: an open point is an open "
                    "question of the readiness review, with the assumption made meanwhile.")
    if name == "readiness":
        instructions += (f"\nOnce the bundle is approved, rein publishes the slices as "
                         f"{PLAN_PATH}, which `rein dev` builds.")
    return {
        "type": "task", "title": f"Write the {TITLES[name]}", "description": description,
        "instructions": instructions,
        "outputs": {"document": {"type": "file", "description": f"The {TITLES[name]} "
                                 "(JSON).", "path_hint": path}},
        "requirements": {"permissions": ["fs:read:**", f"fs:write:{path}",
                                         f"fs:create:{path}"],
                         "workspace": "read_write"},
        "failure": {"retry": {"max_attempts": int(settings["document_attempts"]),
                              "retry_on": ["criteria_failed"], "backoff": "none"},
                    "on_exhausted": "fail"},
        "success": {"criteria": [{
            "id": f"{name}_checked", "kind": "external", "check": "rein.spec.document",
            "description": f"rein checks the {TITLES[name]} document: its structure, unique "
                           "and stable ids, references that exist, and its traces",
            "params": {"document": name, "spec_id": spec_id,
                       "max_features": int(settings["max_features"])}}]},
        "x-rein-spec": {"document": name},
    }


def _gate(what: str, names: list[str], settings: Mapping[str, Any], *,
          after: str | None) -> dict[str, Any]:
    files = [PATHS[n] for n in names]
    gate: dict[str, Any] = {
        "type": "gate", "title": f"A person approves {what}",
        "description": f"Approve {what} ({', '.join(files)}).",
        "gate": {"mode": "approve",
                 "prompt": f"Approve {what}? Read {', '.join(files)} as this approval "
                           f"presents {'it' if len(files) == 1 else 'them'} (`rein approvals "
                           "show` with its id, `--file NAME` prints one). Once accepted, the "
                           "agent runs `rein spec` to go on.",
                 "present": [repr(f) for f in files], "on_reject": "fail"},
        # A document edited while its gate waited is checked again before a person is
        # asked about it; refused, the gate fails and `rein spec` gives it back.
        "x-rein-recheck": [f"write_{n}" for n in names]}
    if settings.get("roles"):
        gate["gate"]["roles"] = list(settings["roles"])
    if after is not None:
        gate["depends_on"] = [after]
    return gate


def write_graph(root: Path, data: Mapping[str, Any]) -> Path:
    path = root / GRAPH_PATH
    text = f"# Written by `rein spec`. Review it with `rein graph plan {GRAPH_PATH}`.\n"
    text += yaml_text.dump(dict(data))
    write_atomic(path, text)
    return path
