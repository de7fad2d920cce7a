"""The values a gate takes (a review's edits, an input gate's fields) as questions.

Codex's ``item/tool/requestUserInput`` carries several questions, each answered with a
list of strings, and a question with ``isOther`` takes free text. A gate in ``review``
mode takes an edit of each of its outputs, one in ``input`` mode a value for each name it
``collect``s: after the decision (the first question, whose id is the approval's), each
becomes a free-text question ``value:<name>``. An answer left empty keeps what was shown
(review) or gives nothing (input); a text that parses as JSON is that JSON value, like
``rein approvals accept --value``. The gate checks the values as it does from the CLI.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rein.protocol.messages import ServerRequest
from rein.store.base import ApprovalRow

PREFIX = "value:"


def with_fields(request: ServerRequest, approval: ApprovalRow | None) -> ServerRequest:
    """``request`` with a question for each value its gate takes (unchanged otherwise)."""
    if approval is None or request.method != "item/tool/requestUserInput":
        return request
    asked = approval.request
    mode = asked.get("mode")
    if mode == "review":
        names = [str(n) for n in asked.get("outputs") or () if n != "decision"]
        shown = list(asked.get("present") or ())
        questions = [_question(name, f"Edit {name} (leave empty to keep: "
                               f"{_short(shown[i]) if i < len(shown) else 'nothing shown'})")
                     for i, name in enumerate(names)]
    elif mode == "input":
        questions = [_question(str(name), f"Value for {name}")
                     for name in asked.get("collect") or {}]
    else:
        return request
    params = {**request.params, "questions": [*request.params["questions"], *questions]}
    return request.replace(params=params)


def values_of(answers: Mapping[str, Any]) -> dict[str, Any]:
    """The values a client's answers give (only the ``value:`` questions, non-empty)."""
    out: dict[str, Any] = {}
    for key, answer in answers.items():
        picked = answer.get("answers") if isinstance(answer, Mapping) else None
        if not str(key).startswith(PREFIX) or not isinstance(picked, list) or not picked:
            continue
        text = str(picked[0])
        if text == "":
            continue
        try:
            out[str(key)[len(PREFIX):]] = json.loads(text)
        except ValueError:
            out[str(key)[len(PREFIX):]] = text
    return out


def _question(name: str, text: str) -> dict[str, Any]:
    return {"id": PREFIX + name, "header": name, "question": text, "isOther": True,
            "isSecret": False, "options": None}


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 200 else text[:197] + "..."
