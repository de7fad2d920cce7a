"""The specification flow's page over HTTP: the documents and their states, a refusal's
evidence, the published plan and the stop; the same reading as `rein spec status`."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rein.cli import main
from rein.spec.paths import PATHS
from tests.dev.scripted import git
from tests.spec.spec_bundle import good
from tests.web.conftest import Console, make_console


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    (root / "specs").mkdir(parents=True)
    (root / "specs" / "brief.md").write_text("# tempconv\n\nConverts temperatures.\n")
    git(root, "init", "-q")
    monkeypatch.chdir(root)
    monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "no-user.toml"))
    return root


@pytest.fixture
def console(repo: Path) -> Iterator[Console]:
    yield from make_console(repo)


def rein(*args: str) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main([*args, "--json"])
    return dict(json.loads(out.getvalue()))


def answer(repo: Path, document: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write the pending document (``document``, else the good one) and submit it."""
    pending = rein("next")
    name = pending["node"].removeprefix("write_")
    (repo / PATHS[name]).parent.mkdir(parents=True, exist_ok=True)
    (repo / PATHS[name]).write_text(json.dumps(document or good()[name]))
    (repo / ".rein/inbox.json").write_text(json.dumps({
        "protocol": "rein.driver/1", "token": pending["token"], "node": pending["node"],
        "attempt": pending["attempt"], "status": "done",
        "outputs": {"document": PATHS[name]}}))
    return rein("submit")


def accept() -> None:
    [row] = [a for a in rein("approvals", "list")["approvals"] if a["status"] == "pending"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["approvals", "accept", row["approval_id"]]) in (0, 3)


def test_no_flow_is_said_plainly(console: Console) -> None:
    console.login()
    r = console.client.get("/spec")
    assert r.status_code == 200
    assert "no specification flow" in r.text and "rein spec" in r.text
    assert 'href="/spec"' in r.text  # in the navigation


def test_the_page_follows_the_flow_to_the_published_plan(console: Console,
                                                         repo: Path) -> None:
    console.login()
    assert rein("spec")["reason"] == "waiting"
    answer(repo)
    text = console.client.get("/spec").text
    assert "data-stop='waiting'" in text
    assert "data-state=\"accepted\" data-document='charter'" in text
    accept()
    bad = good()["requirements"]
    del bad["requirements"][0]["fit_criterion"]
    answer(repo, bad)
    text = console.client.get("/spec").text
    assert "data-state=\"writing\" data-document='requirements'" in text
    for _name in ("requirements", "design", "acceptance", "readiness"):
        answer(repo)
        accept()
    assert rein("spec")["reason"] == "ready"
    text = console.client.get("/spec").text
    assert "data-stop='ready'" in text
    assert text.count('data-state="approved"') == 5
    assert "data-published='specs/active/40-development-plan.json'" in text


def test_a_failed_document_shows_its_last_refusal() -> None:
    from rein.web.pages_spec import section

    snap = {"reason": "failed", "message": "the charter was refused 3 time(s)",
            "next_action": "rein spec start --new", "spec_id": "s", "run_id": "run-1",
            "documents": [{"document": "charter", "path": PATHS["charter"],
                           "title": "charter", "status": "failed", "attempts": 3,
                           "last_failure": "- the charter needs \"goal\" <b>"}]}
    html = section(snap)
    assert "data-stop='failed'" in html and 'data-state="failed"' in html
    assert "<pre tabindex='0' class='evidence'>- the charter needs &quot;goal&quot; &lt;b&gt;</pre>" in html
