"""The usage report's console pages: ``/dev/report`` and ``/runs/{run_id}/report`` show the
report the commands print (the same figures), and what nobody measured reads unknown."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.web.conftest import Console, make_console
from tests.web.dev_env import cli, driver, repository, step


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = repository(tmp_path / "project")
    monkeypatch.chdir(root)
    monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "no-user.toml"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))  # no account's records
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    for name in ("REIN_DEV_TARGET", "REIN_DEV_VERIFY", "REIN_CONTEXT_USAGE_JSON",
                 "REIN_USAGE_JSON"):
        monkeypatch.delenv(name, raising=False)
    return root


@pytest.fixture
def console(repo: Path) -> Iterator[Console]:
    yield from make_console(repo)


def cell(page: str, table: str, row: str) -> list[str]:
    """The cells of the row that starts with ``row`` in the table marked ``table``."""
    found = re.search(rf"<table {table}>.*?</table>", page, re.DOTALL)
    assert found, table
    for tr in re.findall(r"<tr>(.*?)</tr>", found.group(0), re.DOTALL):
        cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr)]
        if cells and cells[0] == row:
            return cells
    raise AssertionError(f"no row {row!r} in {table}")


def test_the_console_shows_the_flows_report_as_the_command_prints_it(
        console: Console, repo: Path) -> None:
    console.login()
    assert "no development flow" in console.client.get("/dev/report").text
    d = driver(repo)
    for _ in range(12):
        if step(d)["reason"] == "done":
            break
    code, out = cli("dev", "report", "--json")
    assert code == 0, out
    report = json.loads(out)
    page = console.client.get("/dev/report")
    assert page.status_code == 200
    text = page.text
    assert "<h1>What the agent spent" in text and 'href="/dev"' in text
    for command in report["commands"]:
        cells = cell(text, "data-commands", command["command"])
        # Steps of the command: the page reads the same record of calls (the report's own
        # `rein dev report` is not a driver-facing call, so the count stands).
        assert cells[1] == str(command["invocations"]), (command, cells)
        assert cells[-2:] == ["unknown", "unknown"]  # no usage told, none read
    for name in report["definitions"]:  # each time, with its one definition
        assert f"<td>{name}</td>" in text and html.escape(report["definitions"][name]) in text
    assert "from each approval asked to its answer" in text


def test_a_runs_report_page_and_the_link_to_it(console: Console, repo: Path) -> None:
    console.login()
    d = driver(repo)
    step(d)
    run_id = json.loads(cli("runs", "list", "--json")[1])["runs"][0]["run_id"]
    run_page = console.client.get(f"/runs/{run_id}").text
    assert f"href='/runs/{run_id}/report'" in run_page
    # No usage told, no records read: unknown, never $0.0000 (the page, and the list).
    assert "cost unknown" in run_page and "$0.0000" not in run_page
    assert "$0.0000" not in console.client.get("/").text
    page = console.client.get(f"/runs/{run_id}/report")
    assert page.status_code == 200 and "data-gf-table" in page.text
    assert console.client.get("/runs/run-20260101T000000-abcdef/report").status_code == 404
