"""Why an attempt's criteria failed, in one line: the reason its record, its events and the
live view give (``criteria_failed: criterion tests failed (...): exit 1: 2 failed``).

Built from the failed criteria exactly as the next attempt is told them
(:func:`rein.engine.kinds.attempt.failed_criteria`): the recorded evidence, redacted and cut
as recorded, so a criterion whose evidence is not recorded names none here either.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["criteria_reason", "evidence_line"]

GENERIC = "success criteria failed"  # when no failed criterion is known (none recorded)
_EVIDENCE = 160  # characters of evidence in the line; the record keeps all of it


def criteria_reason(failed: Sequence[Mapping[str, Any]]) -> str:
    """The first failed criterion (required ones come first), its description and its
    evidence; the others by id."""
    if not failed:
        return GENERIC
    first = failed[0]
    text = f"criterion {first.get('id')} failed"
    if first.get("description"):
        text += f" ({_one_line(str(first['description']))})"
    evidence = evidence_line(first.get("error") or first.get("evidence"))
    if evidence:
        text += f": {evidence}"
    others = [str(c.get("id")) for c in failed[1:]]
    if others:
        text += f"; also failed: {', '.join(others)}"
    return text


def evidence_line(evidence: Any) -> str:
    """Evidence as one short line: a command's exit code and the last line it printed (its
    summary, for a test run); a text on one line; anything else as compact JSON."""
    if evidence is None or evidence == "":
        return ""
    if isinstance(evidence, str) and evidence.startswith("{"):
        # The record keeps structured evidence as compact JSON text.
        try:
            parsed = json.loads(evidence)
        except ValueError:
            parsed = None
        if isinstance(parsed, Mapping):
            evidence = parsed
    if isinstance(evidence, Mapping) and "exit_code" in evidence:
        text = "timed out" if evidence.get("timed_out") else f"exit {evidence.get('exit_code')}"
        if evidence.get("stdout_matched") is False:
            text += ", stdout did not match"
        last = _last_line(evidence.get("stdout")) or _last_line(evidence.get("stderr"))
        return _cut(f"{text}: {last}" if last else text)
    if isinstance(evidence, str):
        return _cut(_one_line(evidence))
    try:
        return _cut(json.dumps(evidence, ensure_ascii=False, sort_keys=True, default=str))
    except (TypeError, ValueError):
        return _cut(_one_line(str(evidence)))


def _last_line(value: Any) -> str:
    lines = [line.strip() for line in str(value or "").splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _cut(text: str) -> str:
    return text if len(text) <= _EVIDENCE else text[:_EVIDENCE - 1] + "…"
