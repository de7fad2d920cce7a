"""A CLI agent's report (its outputs file, or stdout's last line) is untrusted input: a deep,
huge, overlong-number or non-file report is "no report" (OUTPUT_MISSING), never an
exception out of the worker, a hang or a flood of memory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rein.workers.command import parse_outputs

HOSTILE = ["[" * 100_000 + "]" * 100_000, '{"a": ' + "1" * 5000 + "}", '{"a": 1e999}',
           '{"a": 1, "a": 2}']


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_outputs_file_is_no_report(tmp_path: Path, text: str) -> None:
    report = tmp_path / "outputs.json"
    report.write_text(text)
    assert parse_outputs("", report) is None


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_last_line_of_stdout_is_no_report(tmp_path: Path, text: str) -> None:
    assert parse_outputs("log\n" + text + "\n", tmp_path / "absent.json") is None


def test_a_huge_outputs_file_is_refused_unread(tmp_path: Path) -> None:
    report = tmp_path / "outputs.json"
    with report.open("wb") as fh:
        fh.truncate(200 * 1024 * 1024)  # sparse
    assert parse_outputs('{"from": "stdout"}', report) is None


def test_an_outputs_file_linked_to_a_fifo_is_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "outputs.json").symlink_to(tmp_path / "pipe")
    # Not a regular file: the stdout convention applies, and nothing blocks.
    assert parse_outputs('{"a": 1}', tmp_path / "outputs.json") == {"a": 1}
