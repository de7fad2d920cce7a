"""What ``rein next`` prints as text: a driver status for an agent or a person at a terminal.

:func:`render` takes the ``rein next --json`` object (:func:`rein.workers.driver.status.status_of`)
and writes it as text: one line for a status other than ``instruction``; for an instruction,
the brief and then one section each for the previous attempt's feedback, the inputs, the
outputs to produce, the checks rein runs after the submit, the decision labels, the rules
(permissions, workspace, network, budget) and how to respond. Every section is a function of
the status alone, so the text is the same whichever process prints it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from rein.workers.driver.places import INBOX

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any

_TEXTS = ("string", "text", "markdown")
_EVIDENCE = 2_000  # characters of one piece of evidence an agent is shown


def carries(output: Mapping[str, Any]) -> str:
    """What an output's value is: a path, or the content itself (a text with a path hint is
    the content; the file at the hint is the agent's to write as well)."""
    hint = output.get("path_hint")
    if output.get("type") in ("file", "directory"):
        return f" (the value is its path: {hint})" if hint else " (the value is its path)"
    if hint and output.get("type") in _TEXTS:
        return f" (the value is the text itself, not a path; also write it to {hint})"
    return f" (path: {hint})" if hint else ""


# A parameter longer than this is the checker's configuration, not something an agent
# acts on (a whole settings object, say): the text names it and `rein next --json` has it.
_PARAM_CHARS = 160


def check_params(params: Mapping[str, Any]) -> list[str]:
    """A criterion's parameters, one line each, as an agent needs them to pass it."""
    lines = []
    for key, value in params.items():
        if key == "run":
            lines.append(f"run: {value}")
            continue
        text = json.dumps(value, ensure_ascii=False, default=str)
        if len(text) > _PARAM_CHARS:
            text = "(the checker's configuration, in `rein next --json`)"
        lines.append(f"{key}: {text}")
    return lines


def render_advisory(failures: list[Mapping[str, Any]]) -> list[str]:
    """Advisory checks the last attempt did not pass: they do not fail it, so no retry
    brings them back; this is the one place the agent hears of them."""
    if not failures:
        return []
    lines = ["", "## Advisory checks your last submit did not pass (the attempt stands)"]
    for failure in failures:
        lines.append(f"- {failure.get('id')}")
        evidence = failure.get("evidence")
        if evidence:
            text = json.dumps(evidence, ensure_ascii=False, default=str) \
                if not isinstance(evidence, str) else evidence
            lines.append(f"  evidence: {_shown(text)}")
    return lines


def render(status: Mapping[str, Any]) -> str:
    """The status as text for an agent or a person reading a terminal."""
    kind = status["status"]
    advisory = render_advisory(list(status.get("advisory_failures") or []))
    if kind != "instruction":
        head = f"{kind.upper()}: {status.get('message', '')}"
        if kind == "stopped":
            head = f"STOPPED ({status['reason']}): {status.get('message', '')}"
        return "\n".join([head + f"\nrun {status['run_id']} · exit code "
                          f"{status['exit_code']}", *advisory])
    lines = [(f"INSTRUCTION {status['token']} · run {status['run_id']} · node {status['node']} "
             f"· attempt {status['attempt']} ({status['kind']})"), *advisory]
    if status.get("clean_context"):
        lines.append(f"=== CLEAN CONTEXT: {status.get('clean_context_reason')} ===")
    brief = str(status["brief"]).strip()
    while "\n\n\n" in brief:  # blank lines run together (no pattern to compile each turn)
        brief = brief.replace("\n\n\n", "\n\n")
    lines += ["", f"# {status['title']}", "", brief]
    if status.get("brief_in_file"):
        lines.append(f"(whole brief: {status['brief_in_file']['path']})")
    for section in (_feedback, _inputs, _produce, _checks, _branches, _rules, _respond):
        lines += section(status)
    return "\n".join(lines)


def _feedback(status: Mapping[str, Any]) -> list[str]:
    """Why the previous attempt failed: each failed criterion and its evidence."""
    fb = status.get("feedback")
    if not fb:
        return []
    lines = ["", f"## The previous attempt failed ({fb['failure_class']}): {fb['summary']}"]
    for c in fb.get("failed_criteria") or []:
        lines.append(f"- {c.get('id')}: {c.get('description')}")
        evidence = _structured(c.get("evidence"))
        if isinstance(evidence, Mapping):
            for key, value in evidence.items():
                lines.append(f"  {key}: {_shown(str(value))}")
        elif evidence:
            lines.append(f"  evidence: {_shown(str(evidence))}")
    return lines


def _shown(text: str) -> str:
    """One piece of evidence, its later lines indented under its label; cut at _EVIDENCE
    characters, saying so and where the whole of it is."""
    text = text.strip()
    if len(text) > _EVIDENCE:
        text = (text[:_EVIDENCE] + f"\n… {len(text) - _EVIDENCE} more characters: the whole "
                "evidence is in `rein next --json` (feedback)")
    first, _, rest = text.partition("\n")
    if not rest:
        return first
    import textwrap

    return first + "\n" + textwrap.indent(textwrap.dedent(rest), "    ")


def _structured(evidence: Any) -> Any:
    """Recorded evidence is text; a JSON object in it is shown field by field, as it was
    measured (an exit code, the streams), rather than as one escaped line."""
    if isinstance(evidence, str) and evidence.startswith("{"):
        try:
            decoded = json.loads(evidence)
        except ValueError:
            return evidence
        return decoded if isinstance(decoded, dict) else evidence
    return evidence


def _inputs(status: Mapping[str, Any]) -> list[str]:
    """The node's resolved inputs, inline or in files of their own."""
    if not (status.get("inputs") or status.get("inputs_in_files")):
        return []
    lines = ["", "## Inputs"]
    for name, value in (status.get("inputs") or {}).items():
        lines.append(f"- {name}: {json.dumps(value, ensure_ascii=False)}")
    for name, ref in (status.get("inputs_in_files") or {}).items():
        lines.append(f"- {name}: in {ref['path']} ({ref['bytes']} bytes)")
    return lines


def _produce(status: Mapping[str, Any]) -> list[str]:
    """The declared outputs: type, whether required, what the value carries, its schema."""
    outputs = status.get("outputs") or []
    lines = ["", "## Produce"] if outputs else []
    for o in outputs:
        need = "required" if o.get("required") else "optional"
        lines.append(f"- {o['name']} [{o['type']}, {need}]{carries(o)}: {o['description']}")
        if o.get("schema"):
            lines.append(f"  schema: {json.dumps(o['schema'], ensure_ascii=False)}")
    return lines


def _checks(status: Mapping[str, Any]) -> list[str]:
    """What rein checks after the submit, with the parameters an agent needs to pass."""
    if not status.get("checks"):
        return []
    lines = ["", "## Checked by rein after you submit"]
    for c in status["checks"]:
        advisory = ", advisory" if c.get("severity") == "advisory" else ""
        lines.append(f"- {c['id']} ({c['kind']}{advisory}): {c.get('description', '')}")
        lines += [f"  {line}" for line in check_params(c.get("params") or {})]
    return lines


def _branches(status: Mapping[str, Any]) -> list[str]:
    """A decision node's labels."""
    if not status.get("branches"):
        return []
    return ["", "## Choose one decision label",
            *(f"- {b['label']}: {b.get('description', '')}" for b in status["branches"])]


def _rules(status: Mapping[str, Any]) -> list[str]:
    """The permissions, workspace and network access, and the budget."""
    granted = ", ".join(status.get("permissions") or [])
    lines = ["", "## Rules",
             (f"- permissions: {granted} (writes outside fs:write: the submit is refused "
              "so that you can undo them; repeated, they fail the attempt)" if granted
              else "- permissions: none (change no file: a submit after a write is refused "
                   "so that you can undo it; repeated, it fails the attempt)"),
             f"- workspace: {status.get('workspace_access')}, network: {status.get('network')}"]
    budget = status.get("budget") or {}
    if budget.get("enforced"):
        lines.append(f"- enforced: {json.dumps(budget['enforced'])}")
    if budget.get("on_reported_usage"):
        lines.append(f"- enforced on the usage you report (`usage` in the envelope) or rein "
                     f"reads from your logs, not enforced without either: "
                     f"{json.dumps(budget['on_reported_usage'])}")
    if budget.get("unenforced"):
        lines.append(f"- asked of you, not enforced: {json.dumps(budget['unenforced'])}")
    return lines


def _respond(status: Mapping[str, Any]) -> list[str]:
    """How to answer: the envelope example, where to write it, the exit code, and whether
    another instruction waits after this one."""
    replace = (", each <placeholder> replaced with the real value," if
               _has_placeholder(status["example"]) else "")
    lines = ["", "## Respond",
             f"Write this JSON to {INBOX}{replace or ','} then run `rein submit`:",
             json.dumps(status["example"], ensure_ascii=False),
             ("It must validate against respond_with (`rein next --json`). "
              "status \"failed\" with a message if you cannot do the work."),
             f"exit code {status['exit_code']} (an instruction for you, not an error)"]
    later = list(status.get("also_pending") or [])
    if later:  # handed out one at a time: say so, or the agent thinks it is the last
        what = "another instruction waits" if len(later) == 1 else \
            f"{len(later)} more instructions wait"
        lines.append(f"after this one, {what} ({', '.join(later)}): `rein next` shows it "
                     "once you have submitted")
    return lines


def _has_placeholder(value: Any) -> bool:
    """Whether the example holds a ``<...>`` value the agent must replace."""
    if isinstance(value, str):
        return value.startswith("<") and value.endswith(">")
    if isinstance(value, Mapping):
        return any(_has_placeholder(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_placeholder(v) for v in value)
    return False
