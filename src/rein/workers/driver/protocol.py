"""The driver protocol: what rein hands an external agent, and what it accepts back.

An **instruction** is one attempt of one node, as data: its token, the node and attempt,
the brief, the resolved inputs (large ones written to a file under ``.rein/driver/`` and
referenced by path), the outputs to produce, permissions and budgets (and which budgets
rein cannot enforce on a driver), the feedback of failed criteria on a retry, whether to
start from a clean context, and ``respond_with``: the JSON Schema of the one envelope that
answers it. An **envelope** names the token, node and attempt it answers, says ``done`` or
``failed``, and carries the outputs (a decision label, a judge's score), and may say what
the turn cost (``usage``, self-reported).

Everything here is pure: building, schemas, parsing and checking. Persisting turns is
:mod:`rein.workers.driver.store`; the worker is :mod:`rein.workers.driver.worker`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path

from rein.core.frozen import Frozen
from rein.errors import Refused
from rein.workers.driver.places import INBOX, SPILL_DIR

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:  # not imported at run time: `rein next` reads this module and must be fast
    from typing import Any

    from rein.workers.base import AttemptRequest

PROTOCOL = "rein.driver/1"

# JSON Schema fragments for AGS output value types (the engine checks them again, exactly).
_TYPE_SCHEMAS: dict[str, dict[str, Any]] = {
    "string": {"type": "string"}, "text": {"type": "string"}, "markdown": {"type": "string"},
    "file": {"type": "string", "description": "a workspace-relative path"},
    "directory": {"type": "string", "description": "a workspace-relative path"},
    "reference": {"type": "string", "description": "a URI"},
    "number": {"type": "number"}, "integer": {"type": "integer"},
    "boolean": {"type": "boolean"}, "object": {"type": "object"},
    "array": {"type": "array"}, "artifact": {"type": "object", "required": ["id"]},
    "file_set": {"type": "array", "items": {"type": "string"}},
}
# Limits on what a driver's own loop spends: checked against the usage it reports (or rein
# attributes from its records), so enforced only where there is some.
USAGE_LIMITS = ("max_input_tokens", "max_output_tokens", "max_total_tokens", "max_cost_usd")
# Spent without telling rein, whatever it reports: asked of the driver, never enforced.
UNENFORCED_LIMITS = ("max_tool_calls", "max_agent_steps")


class Limits(Frozen):
    """Size limits of one instruction."""

    max_instruction_bytes: int = 16_000  # the whole JSON instruction
    max_inline_input_bytes: int = 2_000  # one input value; larger ones go to a file


class EnvelopeRefused(Refused):
    """An envelope that answers nothing pending, or not in the shape asked for."""

    default_code = "DRIVER_ENVELOPE"


def token_for(request: AttemptRequest) -> str:
    """The token of one attempt: the same request always gives the same token."""
    import hashlib

    key = "\0".join([request.run_id, request.node_id, str(request.attempt), request.kind,
                     request.title if request.kind == "judge" else ""])
    return "drv-" + hashlib.sha256(key.encode()).hexdigest()[:20]


def _tidy(value: Any) -> Any:
    """A limit without float noise (a cost left of 0.30000000000000004 reads 0.3)."""
    if isinstance(value, float):
        return int(value) if value.is_integer() else float(f"{value:.6g}")
    return value


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str).encode())


def _spill(workspace: Path, token: str, name: str, value: Any) -> dict[str, Any]:
    """Write one large value to ``.rein/driver/<token>/<name>`` and return its reference."""
    folder = workspace / SPILL_DIR / token
    folder.mkdir(parents=True, exist_ok=True)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2,
                                                           default=str)
    path = folder / (f"{name}.txt" if isinstance(value, str) else f"{name}.json")
    path.write_text(text, encoding="utf-8")
    return {"path": path.relative_to(workspace).as_posix(), "bytes": len(text.encode()),
            "note": "too large to inline: read the file"}


def build_instruction(request: AttemptRequest, *, token: str, limits: Limits,
                      clean_context: str | None = None, served_by: str = "driver"
                      ) -> dict[str, Any]:
    """The instruction for ``request`` (large inputs spilled to files in the workspace)."""
    workspace = Path(request.workspace)
    inputs: dict[str, Any] = {}
    spilled: dict[str, Any] = {}
    for name, value in request.inputs.items():
        if _size(value) > limits.max_inline_input_bytes:
            spilled[name] = _spill(workspace, token, name, value)
        else:
            inputs[name] = value
    budget = request.budget
    enforced = {}
    if budget.max_wall_clock_seconds is not None:
        # What is left of a run's clock is a float (7199.851559): whole seconds, rounded
        # down, so the number an agent reads is never more than it has.
        enforced["max_wall_clock_seconds"] = int(budget.max_wall_clock_seconds)
    unenforced = {k: _tidy(getattr(budget, k)) for k in UNENFORCED_LIMITS
                  if getattr(budget, k) is not None}
    on_usage = {k: _tidy(getattr(budget, k)) for k in USAGE_LIMITS
                if getattr(budget, k) is not None}
    out: dict[str, Any] = {
        "protocol": PROTOCOL, "token": token, "run_id": request.run_id,
        "node": request.node_id, "attempt": request.attempt, "kind": request.kind,
        "title": request.title, "brief": request.brief, "inputs": inputs,
        "inputs_in_files": spilled,
        "outputs": [_output(o) for o in request.outputs],
        "branches": [dict(b) for b in request.branches],
        "checks": [dict(c) for c in request.checks],
        "permissions": list(request.permissions), "tools": list(request.tools),
        "workspace_access": request.workspace_access, "network": request.network,
        "tier": request.tier,
        "budget": {"enforced": enforced, "on_reported_usage": on_usage,
                   "unenforced": unenforced},
        "feedback": None if request.feedback is None else {
            "failure_class": request.feedback.failure_class.value,
            "summary": request.feedback.summary,
            "failed_criteria": [dict(c) for c in request.feedback.failed_criteria]},
        "clean_context": clean_context is not None,
        "clean_context_reason": clean_context,
        "served_by": served_by,
    }
    if request.env:
        out["environment"] = sorted(request.env)  # names only: values never leave rein
    out["respond_with"] = envelope_schema(out)
    out["example"] = example_envelope(out)
    if _size(out) > limits.max_instruction_bytes and len(request.brief) > 200:
        out["brief_in_file"] = _spill(workspace, token, "brief", request.brief)
        out["brief"] = request.brief[:200] + " … (the whole brief is in brief_in_file)"
    return out


def _output(o: Any) -> dict[str, Any]:
    """One declared output as the instruction lists it (its schema too: the engine checks
    the value against it, so the agent must see it)."""
    out = {"name": o.name, "type": o.type, "description": o.description,
           "required": o.required, "path_hint": o.path_hint}
    if o.schema:
        out["schema"] = dict(o.schema)
    return out


def _output_schema(output: Mapping[str, Any]) -> dict[str, Any]:
    schema = dict(_TYPE_SCHEMAS.get(str(output.get("type")), {}))
    if output.get("description"):
        schema["description"] = str(output["description"])
    if isinstance(output.get("schema"), Mapping):
        # The declared schema narrows the type: an envelope that passes respond_with also
        # passes the engine's output check (RT032), instead of ending the attempt.
        schema = {"allOf": [schema, dict(output["schema"])]}
    return schema


def envelope_schema(instruction: Mapping[str, Any]) -> dict[str, Any]:
    """``respond_with``: the JSON Schema of the one envelope that answers ``instruction``."""
    outputs = list(instruction.get("outputs") or [])
    required = [o["name"] for o in outputs if o.get("required", True)]
    done_requires: list[str] = []
    props: dict[str, Any] = {
        "protocol": {"const": PROTOCOL},
        "token": {"const": instruction["token"]},
        "node": {"const": instruction["node"]},
        "attempt": {"const": instruction["attempt"]},
        "status": {"enum": ["done", "failed"],
                   "description": "done: the work is finished; failed: you could not do it"},
        "outputs": {"type": "object",
                    "properties": {o["name"]: _output_schema(o) for o in outputs},
                    "additionalProperties": False},
        "message": {"type": "string", "description": "a short note; why, when failed"},
        "context_usage": _CONTEXT_USAGE,
        "usage": USAGE_SCHEMA,
        "agent": _AGENT,
    }
    if required:
        done_requires.append("outputs")
    if instruction.get("kind") == "decision":
        props["decision"] = {"enum": [b["label"] for b in instruction.get("branches") or []]}
        done_requires.append("decision")
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"rein driver envelope for {instruction['node']} attempt "
                 f"{instruction['attempt']}",
        "type": "object",
        "required": ["token", "node", "attempt", "status"],
        "properties": props,
        "additionalProperties": False,
    }
    if done_requires or required:
        then: dict[str, Any] = {"required": done_requires}
        if required:
            then["properties"] = {"outputs": {"required": required}}
        schema["if"] = {"properties": {"status": {"const": "done"}}}
        schema["then"] = then
    return schema

# -- usage: what the agent says a turn cost ----------------------------------------------
#
# An agent (or an adapter around it: an IDE hook that reads the agent's own counters) may
# report the model calls one turn took, from the instruction to the envelope, in the
# envelope's ``usage`` or in ``REIN_USAGE_JSON`` of the submitting process (the envelope
# wins). ``input_tokens`` counts every input token, those read from a prompt cache included
# (``cached_input_tokens`` is that part); ``cost_usd`` is optional (rein prices the tokens
# from its table without it, and a model the table does not know has an unknown cost). It
# is stored with the answered turn and labelled *self-reported* wherever it is shown: an
# agent can under-report, so what rein attributes from the agent's own records
# (rein.telemetry.agent_logs) wins over it. Here rather than in a module of its own:
# ``rein submit`` imports this module on every turn, and a module more is a cost of each.

USAGE_ENV = "REIN_USAGE_JSON"
SELF_REPORTED = "self-reported"

USAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "what the model calls of this turn cost, from the instruction to this "
                   "envelope (recorded as self-reported)",
    "properties": {
        "input_tokens": {"type": "integer", "minimum": 0,
                         "description": "every input token, cached ones included"},
        "output_tokens": {"type": "integer", "minimum": 0},
        "cached_input_tokens": {"type": "integer", "minimum": 0,
                                "description": "the part of input_tokens read from a cache"},
        "model": {"type": "string", "description": "the model id, as its vendor names it"},
        "cost_usd": {"type": "number", "minimum": 0,
                     "description": "optional: rein prices the tokens itself without it"},
    },
    "required": ["input_tokens", "output_tokens", "cached_input_tokens", "model"],
    "additionalProperties": False,
}


def usage_problems(usage: Any, where: str = "usage") -> list[str]:
    """Why ``usage`` is not a usage report (empty when it is); the same rules as
    :data:`USAGE_SCHEMA`, and the one the schema cannot say: the cached part of the input
    is not larger than the input."""
    if not isinstance(usage, Mapping):
        return [(f"{where}: must be an object with input_tokens, output_tokens, "
                "cached_input_tokens and model")]
    problems = [f"{where}: unexpected field {k!r}" for k in usage
                if k not in USAGE_SCHEMA["properties"]]
    for name in USAGE_SCHEMA["required"]:
        if name not in usage:
            problems.append(f"{where}: missing {name}")
    for name in ("input_tokens", "output_tokens", "cached_input_tokens"):
        value = usage.get(name)
        if name in usage and (not _count(value)):
            problems.append(f"{where}/{name}: {value!r} is not a whole number from 0")
    if "model" in usage and (not isinstance(usage["model"], str) or not usage["model"]):
        problems.append(f"{where}/model: must be the model's id, a non-empty string")
    cost = usage.get("cost_usd")
    if "cost_usd" in usage and (isinstance(cost, bool) or not isinstance(cost, int | float)
                                or cost < 0):
        problems.append(f"{where}/cost_usd: {cost!r} is not a number from 0")
    if not problems and usage["cached_input_tokens"] > usage["input_tokens"]:
        problems.append(f"{where}/cached_input_tokens: {usage['cached_input_tokens']} is more "
                        f"than input_tokens ({usage['input_tokens']}), which counts them")
    return problems


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def environment_usage(environ: Mapping[str, str]) -> tuple[dict[str, Any] | None, list[str]]:
    """``REIN_USAGE_JSON`` of the submitting process: ``(report, problems)``."""
    import json

    text = environ.get(USAGE_ENV)
    if not text:
        return None, []
    try:
        value = json.loads(text)
    except ValueError as exc:
        return None, [f"{USAGE_ENV}: not JSON ({exc})"]
    problems = usage_problems(value, USAGE_ENV)
    return (None, problems) if problems else (dict(value), [])


def reported_usage(envelope: Mapping[str, Any], environ: Mapping[str, str]
                   ) -> dict[str, Any] | None:
    """The turn's self-reported usage, with its ``source`` (``envelope`` or
    ``environment``), or ``None``. Both were validated before (:func:`usage_problems`)."""
    given = envelope.get("usage")
    if isinstance(given, Mapping):
        return {**given, "source": "envelope"}
    found, problems = environment_usage(environ)
    if found is None or problems:
        return None
    return {**found, "source": "environment"}


_CONTEXT_USAGE: dict[str, Any] = {
    "type": "object",
    "description": "how full your context window is; rein asks for a clean context when high",
    "properties": {"used_tokens": {"type": "integer", "minimum": 0},
                   "window_tokens": {"type": "integer", "minimum": 1}},
    "required": ["used_tokens", "window_tokens"],
    "additionalProperties": False,
}
_AGENT: dict[str, Any] = {
    "type": "object", "description": "who answered (recorded, not trusted)",
    "properties": {"name": {"type": "string"}, "model": {"type": "string"}},
    "additionalProperties": False,
}


def placeholder(output: Mapping[str, Any]) -> Any:
    """The example's value for one output: a path hint as it is (the path to write), else a
    visible placeholder that fails validation if copied (``"<number: score in [0, 1]>"``)."""
    kind = str(output.get("type"))
    if kind in ("file", "directory") and output.get("path_hint"):
        return output["path_hint"]
    what = {"file": "path relative to the workspace", "directory":
            "path relative to the workspace", "file_set": "array of workspace paths",
            "artifact": 'object with an "id"', "reference": "URI"}.get(kind, kind)
    note = str(output.get("description") or "").strip()
    return f"<{what}: {note}>" if note else f"<{what}>"


def example_envelope(instruction: Mapping[str, Any]) -> dict[str, Any]:
    """The envelope answering ``instruction``, with placeholders to replace: copied as it
    is, it is refused (a placeholder number is a string, a placeholder label no label)."""
    outputs = {o["name"]: placeholder(o) for o in instruction.get("outputs") or []}
    out: dict[str, Any] = {"protocol": PROTOCOL, "token": instruction["token"],
                           "node": instruction["node"], "attempt": instruction["attempt"],
                           "status": "done", "outputs": outputs}
    branches = instruction.get("branches") or []
    if instruction.get("kind") == "decision" and branches:
        out["decision"] = "<one of: " + ", ".join(str(b["label"]) for b in branches) + ">"
    return out


def generic_schemas() -> dict[str, Any]:
    """``rein driver schema``: the instruction and envelope shapes every turn follows."""
    envelope = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "rein driver envelope",
        "description": "Each instruction's respond_with narrows this to its token, node, "
                       "attempt, outputs and decision labels.",
        "type": "object",
        "required": ["token", "node", "attempt", "status"],
        "properties": {
            "protocol": {"const": PROTOCOL}, "token": {"type": "string", "pattern": "^drv-"},
            "node": {"type": "string"}, "attempt": {"type": "integer", "minimum": 1},
            "status": {"enum": ["done", "failed"]},
            "outputs": {"type": "object"}, "decision": {"type": "string"},
            "message": {"type": "string"}, "context_usage": _CONTEXT_USAGE,
            "usage": USAGE_SCHEMA, "agent": _AGENT,
        },
        "additionalProperties": False,
    }
    output = {"type": "object", "required": ["name", "type", "description", "required"],
              "properties": {"name": {"type": "string"}, "type": {"type": "string"},
                             "description": {"type": "string"}, "required": {"type": "boolean"},
                             "path_hint": {"type": ["string", "null"]},
                             "schema": {"type": "object"}}}
    instruction = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "rein driver instruction (the instruction member of `rein next --json`)",
        "type": "object",
        "required": ["protocol", "token", "run_id", "node", "attempt", "kind", "title",
                     "brief", "inputs", "outputs", "permissions", "budget", "feedback",
                     "clean_context", "respond_with", "example"],
        "properties": {
            "protocol": {"const": PROTOCOL}, "token": {"type": "string"},
            "run_id": {"type": "string"}, "node": {"type": "string"},
            "attempt": {"type": "integer", "minimum": 1},
            "kind": {"enum": ["task", "decision", "judge"]},
            "title": {"type": "string"}, "brief": {"type": "string"},
            "brief_in_file": {"type": "object"},
            "inputs": {"type": "object"}, "inputs_in_files": {"type": "object"},
            "outputs": {"type": "array", "items": output},
            "branches": {"type": "array"},
            "checks": {"type": "array", "items": {
                "type": "object", "required": ["id", "kind", "description", "severity"],
                "properties": {"id": {"type": "string"}, "kind": {"type": "string"},
                               "description": {"type": "string"},
                               "severity": {"enum": ["required", "advisory"]}}}},
            "permissions": {"type": "array", "items": {"type": "string"}},
            "tools": {"type": "array", "items": {"type": "string"}},
            "workspace_access": {"enum": ["none", "read_only", "read_write"]},
            "network": {"enum": ["none", "restricted", "full"]},
            "environment": {"type": "array", "items": {"type": "string"}},
            "tier": {"type": "string"},
            "budget": {"type": "object", "properties": {
                "enforced": {"type": "object"}, "on_reported_usage": {"type": "object"},
                "unenforced": {"type": "object"}}},
            "feedback": {"type": ["object", "null"]},
            "clean_context": {"type": "boolean"},
            "clean_context_reason": {"type": ["string", "null"]},
            "served_by": {"type": "string"},
            "respond_with": {"type": "object"}, "example": {"type": "object"},
        },
    }
    return {"instruction": instruction, "envelope": envelope}


# An envelope is read whole into memory and parsed once: bound what that may cost. A few
# megabytes hold any inline output; larger work belongs in files named by the outputs.
MAX_ENVELOPE_BYTES = 4 * 1024 * 1024
ENVELOPE_MAX_DEPTH = 64
_ONE_OBJECT = "send exactly one JSON object, as in the instruction's example"


def parse_envelope(text: str) -> dict[str, Any]:
    """The envelope object in ``text``; a Markdown code fence around it is tolerated.

    Read by the document loader's rules with the envelope's limits, so a huge or deeply
    nested envelope, an overlong number or a duplicate key is refused, never a crash
    (:func:`_plain_json` reads the ordinary ones, the loader all others)."""
    body = text.strip()
    if body.startswith("```"):
        lines = body.splitlines()
        if len(lines) >= 2 and lines[-1].strip() == "```":
            body = "\n".join(lines[1:-1])
    if not body:
        raise EnvelopeRefused("the envelope is empty",
                              hint=f"write the JSON envelope to {INBOX} and run `rein submit`")
    value = _plain_json(body)
    if value is None:  # anything unusual: the loader decides, and says what is wrong
        from rein.errors import LoadError
        from rein.formats.loader import LoadLimits, load_text

        limits = LoadLimits(max_bytes=MAX_ENVELOPE_BYTES, max_depth=ENVELOPE_MAX_DEPTH)
        try:
            value = load_text(body, source="envelope", format="json", limits=limits).data
        except LoadError as exc:
            raise _unreadable(exc) from exc
    if not isinstance(value, dict):
        raise EnvelopeRefused(f"the envelope must be a JSON object, not {type(value).__name__}",
                              hint=_ONE_OBJECT)
    return value


class _Unusual(Exception):
    """Something the document loader must judge (and explain)."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Unusual
    return out


def _refuse(_: str) -> Any:
    raise _Unusual


def _short_int(literal: str) -> int:
    if len(literal) > 50:  # the loader's bound is 100 digits: it decides near it
        raise _Unusual
    return int(literal)


def _finite(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise _Unusual
    return value


# A \uD800-\uDFFF escape: the loader judges whether it is half of a pair. A pattern, not
# a compiled one: compiled on a submit's first look (re caches it), not by `rein next`.
_SURROGATE_ESCAPE = r"\\u[dD][89a-fA-F]"


def _plain_json(body: str) -> Any | None:
    """The envelope as the loader would read it, when it is plain JSON far inside the
    loader's limits (unique keys, finite numbers, short integers, shallow, no NUL, no
    surrogate escape, a quarter of the size limit); ``None`` for anything else, which the
    loader then reads (importing it, and the YAML parser with it, only when an envelope
    needs it): it refuses a lone surrogate, which is not Unicode text."""
    if len(body) > MAX_ENVELOPE_BYTES // 4 or "\x00" in body or re.search(_SURROGATE_ESCAPE, body):
        return None
    try:
        value = json.loads(body, object_pairs_hook=_unique, parse_constant=_refuse,
                           parse_int=_short_int, parse_float=_finite)
    except (_Unusual, ValueError, RecursionError):
        return None
    return value if _depth(value) <= ENVELOPE_MAX_DEPTH // 2 else None


def _depth(value: Any) -> int:
    """How deeply containers nest in ``value`` (a scalar: 0)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, depth + 1)
            stack.extend((child, depth + 1) for child in item)
    return deepest


def _unreadable(exc: Any) -> EnvelopeRefused:
    where = exc.location
    at = (f" at line {where.line} column {where.column}"
          if where is not None and where.line is not None else "")
    if exc.kind == "syntax":
        problem = exc.message.removeprefix("invalid JSON: ")
        return EnvelopeRefused(f"the envelope is not JSON: {problem}{at}", hint=_ONE_OBJECT)
    if exc.kind == "too_large":
        return EnvelopeRefused(
            f"the envelope is over the limit of {MAX_ENVELOPE_BYTES:,} bytes",
            code="DRIVER_ENVELOPE_LIMIT",
            hint="write large outputs to files in the workspace and name them in outputs")
    if exc.kind == "too_deep":
        return EnvelopeRefused(
            f"the envelope nests deeper than {ENVELOPE_MAX_DEPTH} levels",
            code="DRIVER_ENVELOPE_LIMIT", hint="flatten the outputs, or put them in a file")
    return EnvelopeRefused(f"the envelope is refused: {exc.message}{at}",
                           hint=exc.hint or _ONE_OBJECT)


def envelope_problems(envelope: Mapping[str, Any], instruction: Mapping[str, Any]
                      ) -> list[str]:
    """Why ``envelope`` does not answer ``instruction`` (empty when it does): every reason
    at once, so that one refusal names all that the agent has to fix."""
    problems: list[str] = []
    named: set[str] = set()  # places already explained: the validator does not repeat them
    for field_name in ("token", "node", "attempt"):
        if field_name in envelope and envelope[field_name] != instruction[field_name]:
            problems.append(f"{field_name} is {_json(envelope[field_name])}, but the pending "
                            f"instruction has {_json(instruction[field_name])}")
            named.add(field_name)
    given = envelope.get("outputs")
    for o in instruction.get("outputs") or []:
        hint = o.get("type") in ("file", "directory") and o.get("path_hint")
        if isinstance(given, Mapping) and not hint and given.get(o["name"]) == placeholder(o):
            problems.append(f"outputs/{o['name']}: is the example's placeholder "
                            f"{_json(placeholder(o))}: replace it with the real value")
            named.add(f"outputs/{o['name']}")
    if isinstance(envelope.get("decision"), str) and envelope["decision"].startswith("<one of:"):
        problems.append("decision: is the example's placeholder: name one of the labels")
        named.add("decision")
    if not problems and _accepted_fast(envelope, instruction):
        # What the schema cannot say: the cached part of the input is not the larger.
        return usage_problems(envelope["usage"]) if "usage" in envelope else problems
    # The verdict and its reasons from the validator, imported only now: the envelopes a
    # driver sends are accepted above without it.
    from rein.formats.jsonschemas import BadSchema, compiled, errors

    schema = instruction["respond_with"]
    try:
        validator = compiled(schema)
    except BadSchema as exc:
        return [*problems, (f"(instruction): a declared output schema is not valid JSON "
                            f"Schema ({exc}); the graph must fix it")]
    for error in errors(validator, envelope):
        place = "/".join(str(p) for p in error.instance_path) or "(envelope)"
        if place in named:
            continue
        line = f"{place}: {_plain(error, schema)}"
        if line not in problems:  # one line per object for all its missing fields
            problems.append(line)
    if isinstance(envelope.get("usage"), Mapping) and not any(
            line.startswith("usage") for line in problems):
        problems += usage_problems(envelope["usage"])  # what the schema cannot say
    return problems


def _accepted_fast(envelope: Mapping[str, Any], instruction: Mapping[str, Any]) -> bool:
    """Whether rein's own check accepts ``envelope`` against ``respond_with`` without
    importing the validator (the largest import a submit would make).

    Only for a ``respond_with`` made of rein's own few keywords (const, enum, type,
    properties, required, if/then): an output that declares a schema of its own goes to
    the validator, whatever it holds. A refusal, or anything the check cannot decide, is
    decided again by the validator, which also gives the reasons; so this can only ever
    spare that import.
    """
    if any(isinstance(o, Mapping) and o.get("schema") for o in instruction.get("outputs") or []):
        return False
    from rein.workers.driver.accept import accepts

    return accepts(instruction["respond_with"], envelope) is True


def _json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def _near(given: Any, names: list[str]) -> str:
    """``: did you mean "ship"?`` for a mistyped label or output name, else nothing."""
    from rein.core.suggest import closest

    found = closest(given, names, limit=1) if isinstance(given, str) else []
    return f"; did you mean {_json(found[0])} for {_json(given)}?" if found else ""


def _plain(error: Any, schema: Mapping[str, Any]) -> str:
    """A schema error in the envelope's own terms (JSON values, not Python reprs): the reader
    is an agent that writes JSON."""
    kind, instance = error.kind, error.instance
    match type(kind).__name__:
        case "Enum":
            listed = f"{_json(instance)} is not one of {', '.join(_json(v) for v in kind.options)}"
            return listed + _near(instance, [v for v in kind.options if isinstance(v, str)])
        case "Constant":
            return f"must be {_json(kind.expected_value)}, not {_json(instance)}"
        case "Required" if isinstance(instance, Mapping):
            required = _rule(schema, error).get("required") or [kind.property]
            missing = [_json(name) for name in required if name not in instance]
            return f"missing the required field(s) {', '.join(missing)}"
        case "AdditionalProperties" if isinstance(instance, Mapping):
            known = list(_rule(schema, error).get("properties") or {})
            extra = [_json(name) for name in kind.unexpected]
            allowed = ", ".join(_json(name) for name in known) or "none"
            near = "".join(_near(name, known) for name in kind.unexpected)
            return f"unexpected field(s) {', '.join(extra)} (allowed: {allowed}){near}"
        case "Type":
            kinds = kind.types if isinstance(kind.types, list) else [kind.types]
            return f"{_json(instance)} is not of type {' or '.join(map(str, kinds))}"
        case _:
            return str(error.message)


def _rule(schema: Mapping[str, Any], error: Any) -> Mapping[str, Any]:
    """The schema object holding the keyword that failed (``{}`` when it cannot be found)."""
    rule: Any = schema
    for step in list(error.schema_path)[:-1]:
        if isinstance(rule, Mapping):
            rule = rule.get(step)
        elif isinstance(rule, list) and isinstance(step, int) and step < len(rule):
            rule = rule[step]
        else:
            return {}
    return rule if isinstance(rule, Mapping) else {}


__all__ = [
    "INBOX",
    "MAX_ENVELOPE_BYTES",
    "PROTOCOL",
    "SELF_REPORTED",
    "USAGE_ENV",
    "USAGE_SCHEMA",
    "EnvelopeRefused",
    "Limits",
    "build_instruction",
    "envelope_problems",
    "envelope_schema",
    "environment_usage",
    "example_envelope",
    "generic_schemas",
    "parse_envelope",
    "placeholder",
    "reported_usage",
    "token_for",
    "usage_problems",
]
