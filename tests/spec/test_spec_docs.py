"""docs/spec-flow.md shows a real session: run it again and compare what rein prints."""

from __future__ import annotations

from pathlib import Path

from devflow_support import Cli
from spec_session import page, run_session
from support import ROOT

DOC = ROOT / "docs" / "spec-flow.md"


def test_the_page_shows_the_session_as_rein_prints_it(repo: Path, cli: Cli) -> None:
    text = DOC.read_text(encoding="utf-8")
    shown = text.split("<!-- session:start -->\n", 1)[1].split("<!-- session:end -->", 1)[0]
    printed = page(run_session(repo, cli))
    assert shown == printed, "refresh the page: python tests/spec/spec_session.py DIR"
