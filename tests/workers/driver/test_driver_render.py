"""``rein next`` as text: the instruction's sections, in the order an agent reads them."""

from __future__ import annotations

from typing import Any

from rein.workers.driver.render import render

INSTRUCTION: dict[str, Any] = {
    "status": "instruction", "token": "t1", "run_id": "r", "node": "n", "attempt": 2,
    "kind": "task", "title": "Write it", "brief": "do\n\n\n\nit", "exit_code": 0,
    "advisory_failures": [{"id": "lint", "evidence": "two warnings"}],
    "feedback": {"failure_class": "criteria_failed", "summary": "1 of 1 failed",
                 "failed_criteria": [{"id": "c1", "description": "a test passes",
                                      "evidence": {"stdout": "line 1\nline 2"}}]},
    "inputs": {"topic": "rein"}, "inputs_in_files": {"log": {"path": "in/log", "bytes": 9}},
    "outputs": [{"name": "note", "type": "file", "required": True, "description": "the note",
                 "path_hint": "NOTE.md"}],
    "checks": [{"id": "c1", "kind": "command", "description": "tests", "params": {
        "run": "pytest -q"}}],
    "branches": [{"label": "ship", "description": "good"}],
    "permissions": ["fs:write:NOTE.md"], "workspace_access": "read_write", "network": "none",
    "budget": {"enforced": {"max_tool_calls": 5}}, "example": {"status": "done"},
}


def test_an_instruction_has_its_sections_in_reading_order() -> None:
    text = render(INSTRUCTION)
    heads = [line for line in text.splitlines() if line.startswith(("#", "INSTRUCTION"))]
    assert heads == [
        "INSTRUCTION t1 · run r · node n · attempt 2 (task)",
        "## Advisory checks your last submit did not pass (the attempt stands)",
        "# Write it",
        "## The previous attempt failed (criteria_failed): 1 of 1 failed",
        "## Inputs", "## Produce", "## Checked by rein after you submit",
        "## Choose one decision label", "## Rules", "## Respond",
    ]
    assert "do\n\nit" in text and "  stdout: line 1\n    line 2" in text
    assert "- note [file, required] (the value is its path: NOTE.md): the note" in text
    assert "  run: pytest -q" in text and '- enforced: {"max_tool_calls": 5}' in text
    assert text.endswith("exit code 0 (an instruction for you, not an error)")


def test_an_instruction_without_optional_parts_has_no_empty_sections() -> None:
    bare = {k: v for k, v in INSTRUCTION.items()
            if k not in ("advisory_failures", "feedback", "inputs", "inputs_in_files",
                         "outputs", "checks", "branches", "budget")}
    text = render({**bare, "permissions": []})
    heads = [line for line in text.splitlines() if line.startswith("#")]
    assert heads == ["# Write it", "## Rules", "## Respond"]
    assert "- permissions: none (change no file" in text


def test_other_statuses_are_one_line_and_the_run() -> None:
    stopped = {"status": "stopped", "reason": "budget", "message": "over", "run_id": "r",
               "exit_code": 1}
    assert render(stopped) == "STOPPED (budget): over\nrun r · exit code 1"


def test_recorded_evidence_that_holds_a_json_object_is_shown_field_by_field() -> None:
    # The feedback is built from the record, where evidence is text: a command check's
    # measurement arrives as a JSON object in a string, and reads as fields, not one line.
    recorded = '{"exit_code": 1, "stderr": "Traceback\\nAssertionError: Hi, rein\\n"}'
    feedback = {"failure_class": "criteria_failed", "summary": "1 of 1 failed",
                "failed_criteria": [{"id": "greets", "description": "greets",
                                     "evidence": recorded}]}
    text = render({**INSTRUCTION, "feedback": feedback})
    assert "  exit_code: 1\n  stderr: Traceback\n    AssertionError: Hi, rein" in text
    plain = {**feedback, "failed_criteria": [{"id": "g", "description": "g",
                                              "evidence": "{not json"}]}
    assert "  evidence: {not json" in render({**INSTRUCTION, "feedback": plain})


def test_placeholders_are_mentioned_only_when_the_example_has_one() -> None:
    plain = render(INSTRUCTION)  # the example is {"status": "done"}: nothing to replace
    assert "Write this JSON to .rein/inbox.json, then run `rein submit`:" in plain
    assert "<placeholder>" not in plain
    held = render({**INSTRUCTION, "example": {"status": "done",
                                              "outputs": {"score": "<number: the score>"}}})
    assert ("Write this JSON to .rein/inbox.json, each <placeholder> replaced with the real "
            "value, then run `rein submit`:") in held


def test_the_text_says_when_another_instruction_waits_after_this_one() -> None:
    assert "after this one" not in render(INSTRUCTION)
    one = render({**INSTRUCTION, "also_pending": ["right"]})
    assert one.endswith("after this one, another instruction waits (right): `rein next` "
                        "shows it once you have submitted")
    two = render({**INSTRUCTION, "also_pending": ["b", "c (run r2)"]})
    assert "after this one, 2 more instructions wait (b, c (run r2))" in two


def test_every_reason_of_a_refusal_reads_as_a_list_under_its_criterion() -> None:
    # A document check refuses with one reason per line: each line stays under its
    # criterion, and every reason reaches the agent (twelve reasons of ~110 characters).
    reasons = [f"- the design, components[{i}] (CMP-{i}) needs a non-empty \"responsibility\" "
               "(what the component is answerable for)" for i in range(12)]
    evidence = "specs/active/25-design.json is refused:\n" + "\n".join(reasons)
    feedback = {"failure_class": "criteria_failed", "summary": "1 of 1 failed",
                "failed_criteria": [{"id": "design_checked", "description": "rein checks",
                                     "evidence": evidence}]}
    text = render({**INSTRUCTION, "feedback": feedback})
    assert "  evidence: specs/active/25-design.json is refused:\n    - the design, " in text
    for reason in reasons:
        assert f"\n    {reason}\n" in text


def test_evidence_past_the_limit_says_it_was_cut_and_where_the_whole_is() -> None:
    feedback = {"failure_class": "criteria_failed", "summary": "1 of 1 failed",
                "failed_criteria": [{"id": "c", "description": "c", "evidence": "x" * 5000}]}
    text = render({**INSTRUCTION, "feedback": feedback})
    assert "… 3000 more characters: the whole evidence is in `rein next --json`" in text
    assert "x" * 2001 not in text
