"""What the command line prints, JSON or error, never shows a known secret, even when an
error quotes the input that caused it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rein.cli import main

SECRET = "s3cr3t-Value-For-Output-42"


@pytest.fixture(autouse=True)
def secret(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REIN_SECRET_PRINTED", SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET + "-key")
    monkeypatch.chdir(tmp_path)


def test_an_error_quoting_a_secret_is_printed_redacted(capsys: Any) -> None:
    code = main(["graph", "digest", f"{SECRET}.agraph.yaml"])
    shown = capsys.readouterr()
    assert code != 0 and "error:" in shown.err
    assert SECRET not in shown.out + shown.err and "[secret:printed]" in shown.err


def test_json_output_is_printed_redacted(capsys: Any) -> None:
    code = main(["graph", "validate", "--json", f"{SECRET}-key.agraph.yaml"])
    shown = capsys.readouterr()
    assert code != 0
    assert SECRET not in shown.out
    assert json.loads(shown.out)["documents"][0]["path"] == (
        "[secret:ANTHROPIC_API_KEY].agraph.yaml")
