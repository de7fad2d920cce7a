"""`rein runs show` says why a node failed: the last attempt's error and failed criteria."""

from __future__ import annotations

from rein.cli.record_view import why_lines


def test_failed_node_shows_error_and_failed_required_criteria() -> None:
    record = {
        "status": "failed",
        "attempts": [
            {"attempt": 1, "error": "criteria_failed: first"},
            {
                "attempt": 2,
                "error": "criteria_failed: success criteria failed",
                "success": {"results": [
                    {"id": "ok", "kind": "file_exists", "passed": True, "severity": "required"},
                    {"id": "bullets", "kind": "command", "passed": False,
                     "severity": "required", "evidence": '{"exit_code":1}'},
                    {"id": "style", "kind": "regex", "passed": False, "severity": "advisory",
                     "evidence": "no match"},
                ]},
            },
        ],
    }
    assert why_lines(record) == [
        "attempt 2: criteria_failed: success criteria failed",
        'criterion bullets (command) failed: {"exit_code":1}',
    ]


def test_long_evidence_is_clipped_and_succeeded_nodes_say_nothing() -> None:
    record = {"status": "blocked", "attempts": [{"attempt": 1, "success": {"results": [
        {"id": "c", "kind": "command", "passed": False, "evidence": "x" * 500}]}}]}
    (line,) = why_lines(record)
    assert line.endswith("...") and len(line) < 220
    assert why_lines({"status": "succeeded", "attempts": [{"error": "old"}]}) == []
