"""What a model attempt is told, and the ``submit_outputs`` contract it must meet.

The system prompt is the same for every attempt; the user message (:func:`render_brief`) is
the node's brief, inputs, outputs, permissions and the feedback of a failed attempt. The model
finishes by calling ``submit_outputs``, whose JSON Schema (:func:`submit_schema`) is built
from the node's declared outputs (decision nodes add a ``decision`` enum of the branch
labels); :func:`submission_problem` says what to fix when a submission does not match it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from rein.formats.jsonschemas import BadSchema, compiled, errors
from rein.providers.types import ModelToolCall
from rein.workers.base import AttemptRequest, OutputSpec

SUBMIT = "submit_outputs"

_TYPE_SCHEMAS: Mapping[str, Mapping[str, Any]] = {
    "string": {"type": "string"},
    "text": {"type": "string"},
    "markdown": {"type": "string"},
    "number": {"type": "number"},
    "integer": {"type": "integer"},
    "boolean": {"type": "boolean"},
    "object": {"type": "object"},
    "array": {"type": "array"},
    "file": {"type": "string", "description": "workspace-relative path of the file"},
    "file_set": {"type": "array", "items": {"type": "string"}},
    "directory": {"type": "string", "description": "workspace-relative path of the directory"},
    "artifact": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
    "reference": {"type": "string", "format": "uri"},
}

SYSTEM_PROMPT = """\
You are a worker inside rein, a harness that runs a plan one node at a time.
Do the task described by the user message using only the tools offered. Paths are relative
to the workspace. A tool call outside your permissions is refused with a message saying what
is allowed: adjust and continue. The harness checks your work itself; claiming success does
not make it so. When you are done, call `submit_outputs` exactly once with the declared
outputs. Do not commit to git."""


def submit_schema(
    outputs: Iterable[OutputSpec], branches: Iterable[Mapping[str, str]] = ()
) -> dict[str, Any]:
    """The JSON Schema of ``submit_outputs``: the declared outputs (+ a decision enum)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    labels = [b["label"] for b in branches]
    if labels:
        properties["decision"] = {
            "type": "string",
            "enum": labels,
            "description": "the branch to take",
        }
        required.append("decision")
    for spec in outputs:
        schema = dict(spec.schema) if spec.schema else dict(_TYPE_SCHEMAS.get(spec.type, {}))
        schema["description"] = spec.description + (
            f" (path hint: {spec.path_hint})" if spec.path_hint else ""
        )
        properties[spec.name] = schema
        if spec.required:
            required.append(spec.name)
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def render_brief(request: AttemptRequest) -> str:
    """The user message: the node's brief, inputs, outputs, permissions and feedback."""
    parts = [f"# {request.title}", request.brief.strip()]
    if request.inputs:
        parts.append(
            "## Inputs\n```json\n"
            + json.dumps(dict(request.inputs), indent=2, default=str)
            + "\n```"
        )
    if request.outputs:
        lines = [
            f"- `{o.name}` ({o.type}{', required' if o.required else ''}): {o.description}"
            for o in request.outputs
        ]
        parts.append("## Outputs to submit\n" + "\n".join(lines))
    if request.branches:
        lines = [f"- `{b['label']}`: {b.get('description', '')}" for b in request.branches]
        parts.append("## Decide one branch\n" + "\n".join(lines))
    parts.append(
        "## Permissions\n" + ("\n".join(f"- {p}" for p in request.permissions) or "(none)")
    )
    if request.feedback is not None:
        fb = request.feedback
        lines = [f"The previous attempt failed ({fb.failure_class.value}): {fb.summary}"]
        for c in fb.failed_criteria:
            lines.append(
                f"- {c.get('id', '?')}: {c.get('description', '')} — "
                f"evidence: {c.get('evidence', '')}"
            )
        parts.append("## Feedback\n" + "\n".join(lines))
    return "\n\n".join(p for p in parts if p)


def submission_problem(call: ModelToolCall, schema: Mapping[str, Any]) -> str | None:
    """Why a ``submit_outputs`` call is not accepted (for the model to fix), or None."""
    if call.parse_error is not None:
        return f"{SUBMIT}: the arguments are not a JSON object ({call.parse_error})"
    try:
        found = errors(compiled(schema), dict(call.arguments))
    except BadSchema:
        return None  # a declared output schema is broken: the output check reports it
    if not found:
        return None
    lines = [
        f"- {'/'.join(map(str, e.instance_path)) or '(top level)'}: {e.message}"
        for e in found[:10]
    ]
    return f"{SUBMIT} was not accepted; fix these and call it again:\n" + "\n".join(lines)
