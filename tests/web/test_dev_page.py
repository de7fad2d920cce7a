"""The development flow's page over HTTP: features and their states, each attempt's verify
result with its evidence, the commits, the context policy and the stop; its stream."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rein.web import pages_dev
from rein.web.states import badge
from tests.dev.scripted import git
from tests.web.conftest import Console, make_console
from tests.web.dev_env import driver, repository, step


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = repository(tmp_path / "project")
    monkeypatch.chdir(root)
    monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "no-user.toml"))
    for name in ("REIN_DEV_TARGET", "REIN_DEV_VERIFY", "REIN_CONTEXT_USAGE_JSON"):
        monkeypatch.delenv(name, raising=False)
    return root


@pytest.fixture
def console(repo: Path) -> Iterator[Console]:
    yield from make_console(repo)


def _first_frame(c: Console) -> str:
    async def first() -> str:
        console = c.client.app.state.console
        response: Any = pages_dev.flow_stream(console, lambda: pages_dev.dev_section(console))
        body = response.body_iterator
        try:
            return str(await body.__anext__())
        finally:
            await body.aclose()

    return asyncio.run(first())


def test_no_flow_is_said_plainly(console: Console) -> None:
    console.login()
    r = console.client.get("/dev")
    assert r.status_code == 200
    assert "no development flow" in r.text and "rein dev" in r.text
    assert 'href="/dev"' in r.text and 'href="/threads"' in r.text  # in the navigation


def test_the_page_follows_the_flow_from_planning_to_committed_features(
        console: Console, repo: Path) -> None:
    console.login()
    d = driver(repo)
    step(d)  # rein dev starts the planning run; the plan is written and submitted
    page = console.client.get("/dev").text
    assert "data-stop='waiting'" in page and "stage <b>planning</b>" in page
    assert "waiting for a person to approve the feature graph" in page
    for feature in ("c_to_f", "f_to_c", "table"):
        assert f"data-state=\"planned\" data-feature='{feature}'" in page
    assert "context policy <code>threshold</code>" in page
    step(d)  # a person accepts the feature graph
    where = step(d)  # rein dev starts the feature run; c_to_f's first (wrong) attempt
    features_run = where["features_run"]
    page = console.client.get("/dev").text
    assert f"href='/runs/{features_run}'" in page and "stage <b>features</b>" in page
    c_to_f = page.split("data-feature-detail='c_to_f'", 1)[1].split("</details>", 1)[0]
    assert "attempt 1" in c_to_f and "data-check='verify' data-passed='false'" in c_to_f
    assert "exited 1" in c_to_f and "assert" in c_to_f  # the verify's evidence
    assert "attempt 2 " + badge("running") in c_to_f
    step(d)  # the repair: attempt 2 passes and is committed
    page = console.client.get("/dev").text
    c_to_f = page.split("data-feature-detail='c_to_f'", 1)[1].split("</details>", 1)[0]
    assert "data-check='verify' data-passed='true'" in c_to_f
    assert "data-check='handoff' data-passed='true'" in c_to_f
    sha = git(repo, "log", "--format=%h", "--grep", "Rein-Dev-Feature: .*/c_to_f").strip()
    assert sha and f"committed feature c_to_f as {sha}" in c_to_f
    row = page.split("<code>c_to_f</code></td>", 1)[1].split("</tr>", 1)[0]
    assert 'data-state="succeeded"' in row and f"<code>{sha}</code>" in row
    assert "<td>2</td>" in row  # two attempts
    for _ in range(10):
        if step(d)["reason"] == "done":
            break
    page = console.client.get("/dev").text
    assert "data-stop='done'" in page and "all 3 features are verified and committed" in page
    assert page.count('data-state="succeeded" data-feature=') == 3
    frame = _first_frame(console)
    assert frame.startswith("event: runs\ndata: ") and "data-stop=" in frame


def test_the_dev_routes_need_a_session_and_refuse_changes(console: Console) -> None:
    assert console.client.get("/dev").status_code == 401
    assert console.client.get("/dev.stream").status_code == 401
    console.login()
    assert console.post("/dev", {}).status_code == 405  # nothing on the page changes state
