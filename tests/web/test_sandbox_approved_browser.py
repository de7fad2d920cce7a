"""In real headless Chromium against a real ``rein serve``: a person answers, in the console,
the gate of a run an agent approved and started inside its sandbox. The answer is recorded
and shown with why the run was not continued there, nothing after the gate runs in the
console's process (outside the sandbox, under the person's account), and the agent's own
``rein resume``, confined, takes the answer up."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.web.browser import served, why_not

SETPRIV = shutil.which("setpriv")
REIN = Path(sys.executable).parent / "rein"


def _confines() -> bool:
    if SETPRIV is None:
        return False
    probe = subprocess.run([SETPRIV, "--no-new-privs", "grep", "NoNewPrivs", "/proc/self/status"],
                           capture_output=True, text=True, timeout=60, check=False)
    return probe.returncode == 0 and probe.stdout.split() == ["NoNewPrivs:", "1"]


pytestmark = [
    pytest.mark.skipif(why_not() is not None, reason=str(why_not())),
    pytest.mark.skipif(not _confines(), reason="setpriv cannot set no-new-privileges here"),
]

NODE = 'svg.dag g.node[data-node="{}"][data-status="{}"]'
WAIT = 30_000  # ms: an upper bound on waiting, not a pause


def _rein(root: Path, *argv: str, confined: bool = False) -> subprocess.CompletedProcess[str]:
    assert SETPRIV is not None
    prefix = [SETPRIV, "--no-new-privs"] if confined else []
    return subprocess.run([*prefix, str(REIN), *argv], cwd=root, capture_output=True,
                          text=True, timeout=300, check=False, env=dict(os.environ),
                          start_new_session=True)


def _events(root: Path, run_id: str) -> list[dict[str, Any]]:
    done = _rein(root, "runs", "events", run_id, "--json")
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def _started(root: Path, run_id: str) -> set[str]:
    return {e["payload"].get("node") for e in _events(root, run_id)
            if e.get("type") == "node/started"}


def test_a_persons_answer_in_the_console_leaves_a_sandboxed_run_to_its_sandbox(
        browser: Any, workspace: Path) -> None:
    digest = _rein(workspace, "graph", "digest", "g.agraph.yaml").stdout.strip()
    started = _rein(workspace, "run", "g.agraph.yaml", "--approve", digest, confined=True)
    assert started.returncode == 3, started.stdout + started.stderr  # waits on the gate
    [run_id] = [r["run_id"] for r in json.loads(
        _rein(workspace, "runs", "list", "--json").stdout)["runs"]]
    assert _started(workspace, run_id) == {"work", "ok"}

    with served(workspace) as url:
        base = url.split("/?")[0]
        page = browser.new_page()
        page.goto(url)
        page.goto(f"{base}/runs/{run_id}")
        # Before anyone answers, the run's page says where the run goes on.
        notice = page.locator("[data-not-continued]")
        assert f"rein resume {run_id}" in notice.inner_text()
        page.goto(f"{base}/approvals")
        page.click("form.answer button[value=accept]")
        page.wait_for_url(f"{base}/runs/{run_id}", timeout=WAIT)
        # The answer is shown as given here; the page says the run did not go on here.
        page.wait_for_selector("ul[data-answered] >> text=via web", timeout=WAIT)
        assert "not continued here" in page.locator("[data-not-continued]").inner_text()
        assert page.locator(NODE.format("ask", "pending")).count() == 1
        page.close()

    # Nothing after the gate ran in the console's process; the answer is recorded.
    assert "ask" not in _started(workspace, run_id)
    answers = [e for e in _events(workspace, run_id) if e.get("type") == "approval/answered"]
    assert answers[-1]["payload"]["status"] == "accepted"

    # The agent's resume, in its sandbox, takes the answer up: the next gate is reached.
    resumed = _rein(workspace, "resume", run_id, confined=True)
    assert resumed.returncode == 3, resumed.stdout + resumed.stderr
    assert "ask" in _started(workspace, run_id)
