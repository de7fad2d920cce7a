"""The specification flow's checker: rein, not the agent, decides whether a document is
accepted.

Registered under the ``rein.checkers`` entry-point group as ``rein.spec.document``, so the
engine calls it as the ``external`` criterion of each writing node of the flow's graph,
after every ``rein submit``. A refusal's evidence lists every specific reason
(:mod:`rein.spec.documents`); the engine feeds it back to the next attempt, up to ``[spec]
document_attempts``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rein.engine.run.criteria.model import CheckRequest, CheckResult
from rein.spec.documents import check
from rein.spec.paths import NAMES, PATHS, PLAN_PATH, TITLES

MAX_DOCUMENT_BYTES = 1_000_000


def read(root: Path, relative: str) -> tuple[Any, str | None]:
    """The parsed JSON of ``relative``, or ``None`` and why not."""
    path = root / relative
    try:
        data = path.read_bytes()[:MAX_DOCUMENT_BYTES + 1]
    except FileNotFoundError:
        return None, f"there is no {relative}"
    except OSError as exc:
        return None, f"{relative} cannot be read: {exc.strerror}"
    if len(data) > MAX_DOCUMENT_BYTES:
        return None, f"{relative} is over {MAX_DOCUMENT_BYTES} bytes"
    try:
        return json.loads(data), None
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"{relative} is not valid JSON: {exc}"


def bundle_of(root: Path, names: tuple[str, ...] = NAMES) -> dict[str, Any]:
    """The documents of ``names`` that exist and parse, by name."""
    out = {}
    for name in names:
        data, _why = read(root, PATHS[name])
        if data is not None:
            out[name] = data
    return out


def published_ids(root: Path, name: str) -> list[str] | None:
    """The ids document ``name`` had when the plan was last published (they stay stable),
    read from the plan: in the repository, where no writing node may write."""
    plan, _why = read(root, PLAN_PATH)
    spec = plan.get("spec") if isinstance(plan, dict) else None
    found = (spec.get("ids") or {}).get(name) if isinstance(spec, dict) else None
    return [i for i in found if isinstance(i, str)] if isinstance(found, list) else None


def document(request: CheckRequest) -> CheckResult:
    """The document the driver wrote has the shape, ids and traces the bundle needs."""
    name = str(request.params["document"])
    path = PATHS[name]
    named = str(request.outputs.get("document") or "")
    if named.removeprefix("./") != path:
        return CheckResult(passed=False, evidence=f"the output 'document' is {named!r}: "
                           f"write the {TITLES[name]} to {path} and name that path")
    data, why = read(request.workspace, path)
    if why is not None:
        return CheckResult(passed=False, evidence=why)
    earlier = bundle_of(request.workspace, NAMES[:NAMES.index(name)])
    problems = check(name, data, earlier, published=published_ids(request.workspace, name),
                     max_features=int(request.params.get("max_features", 20)))
    if problems:
        return CheckResult(passed=False, evidence=f"{path} is refused:\n"
                           + "\n".join(f"- {p}" for p in problems))
    return CheckResult(passed=True, evidence=f"the {TITLES[name]} ({path}) is accepted")
