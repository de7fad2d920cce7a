"""The risk of a delta proposal, computed by rein and never read from the document (§6.4).

The reference applicator forces ``high`` only under four prefixes and keeps the declared
risk elsewhere, so switching ``writeback`` to ``auto`` or changing the model stays ``low``
(research J-11). rein classes by what the path governs:

* ``high``: anything that changes authority or behaviour: tools, permissions, model, memory,
  runtime (budgets, subagents), lifecycle (writeback, retention, hooks), role, context files
  and documents, and the identity fields ``metadata.name`` / ``id`` / ``trust``;
* ``medium``: context variables and budgets, ``metadata.description`` (harnesses route on it);
* ``low``: descriptive metadata (display name, tags, authors, annotations, ...).
"""

from __future__ import annotations

from typing import Literal

Risk = Literal["low", "medium", "high"]
RISKS: tuple[Risk, ...] = ("low", "medium", "high")

_MEDIUM_SPEC = ("/spec/context/variables", "/spec/context/budget")
_HIGH_METADATA = ("/metadata/name", "/metadata/id", "/metadata/trust")


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


def proposal_risk(path: str) -> Risk:
    """rein's risk class for a proposal at ``path`` (a JSON Pointer under /metadata or /spec)."""
    if path in ("", "/", "/spec", "/metadata"):
        return "high"  # replacing a whole section can change anything
    if _under(path, "/spec"):
        return "medium" if any(_under(path, p) for p in _MEDIUM_SPEC) else "high"
    if any(_under(path, p) for p in _HIGH_METADATA):
        return "high"
    if _under(path, "/metadata/description"):
        return "medium"
    if _under(path, "/metadata"):
        return "low"
    return "high"  # outside both sections: the schema refuses it; never treat it as harmless
