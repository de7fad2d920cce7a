"""``rein serve`` as a user runs it: the bind rules, then a real server in a subprocess that
starts a run, survives a client that goes away, and leaves the run to another process."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rein.cli import main

httpx = pytest.importorskip("httpx")


def test_a_non_loopback_host_without_a_token_is_refused(
        workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["serve", "--host", "0.0.0.0"])
    err = capsys.readouterr().err
    assert code == 4 and "WEB010" in err and "--token-env" in err


def test_a_short_or_missing_token_is_a_usage_error(
        workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SHORT_TOKEN", "abc")
    assert main(["serve", "--host", "0.0.0.0", "--token-env", "SHORT_TOKEN"]) == 64
    assert "WEB011" in capsys.readouterr().err
    monkeypatch.delenv("UNSET_TOKEN", raising=False)
    assert main(["serve", "--token-env", "UNSET_TOKEN"]) == 64
    assert "WEB011" in capsys.readouterr().err


def test_serve_help_teaches_with_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--help"]) == 0
    out = capsys.readouterr().out
    assert "Example:" in out and "rein serve --port 9000 --read-only" in out
    assert main(["--help"]) == 0
    assert "serve" in capsys.readouterr().out


@pytest.fixture
def server(workspace: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", "from rein.cli import run; run()", "serve", "--port", "0"],
        cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ})
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    assert ready, "rein serve printed no URL"
    url = proc.stdout.readline().strip()
    try:
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(30)


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found
    return found.group(1)


def test_a_served_console_starts_a_run_that_outlives_it(
        server: tuple[subprocess.Popen[str], str], workspace: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    proc, url = server
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=[\w-]{40,}", url)
    base = url.split("/?")[0]
    with httpx.Client(base_url=base, timeout=30) as client:
        assert client.get("/").status_code == 401  # no session yet
        r = client.get(url, follow_redirects=True)
        assert r.status_code == 200 and "Runs" in r.text
        plan = client.get("/plan", params={"path": "g.agraph.yaml"}).text
        digest = re.search(r"<code data-digest>([^<]+)</code>", plan)
        assert digest
        r = client.post("/plan/run", headers={"origin": base}, data={
            "csrf": _csrf(plan), "path": "g.agraph.yaml", "digest": digest.group(1)})
        assert r.status_code == 303
        run_id = r.headers["location"].rsplit("/", 1)[-1]
        # A client that goes away mid-stream: the server goes on serving.
        with client.stream("GET", f"/runs/{run_id}/events") as stream:
            first = next(stream.iter_lines())
            assert first.startswith("retry:")
        assert client.get(f"/runs/{run_id}").status_code == 200
        page = client.get(f"/runs/{run_id}").text
        assert 'data-node="ok" data-status="awaiting_human"' in page
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 0
    # Another process goes on driving the run the console started.
    capsys.readouterr()
    assert main(["approvals", "list", "--json"]) == 0
    [pending] = json.loads(capsys.readouterr().out)["approvals"]
    assert pending["run_id"] == run_id
    assert main(["approvals", "accept", pending["approval_id"], "--json"]) == 3
    capsys.readouterr()
    assert main(["runs", "list", "--json"]) == 0
    [run] = json.loads(capsys.readouterr().out)["runs"]
    assert run["status"] == "awaiting_human"  # now at the input gate


def test_without_the_web_extra_serve_says_how_to_get_it(
        workspace: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # import uvicorn → ImportError
    assert main(["serve"]) == 64
    err = capsys.readouterr().err
    assert "WEB001" in err and "rein-ags[web]" in err


def test_two_consoles_on_one_host_keep_separate_sessions() -> None:
    from rein.web.auth import Guard

    a = Guard.for_bind(host="127.0.0.1", port=8765, token="a" * 40)
    b = Guard.for_bind(host="127.0.0.1", port=8766, token="b" * 40)
    assert a.cookie != b.cookie
    assert "127.0.0.1:8765" in a.hosts and "localhost:8765" in a.hosts
    assert "127.0.0.1:8766" not in a.hosts
