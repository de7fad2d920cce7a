"""The console records how each answer was given (the web surface, the session that gave it,
the server's confinement), shows it on the run's page, refuses an unsigned answer where
answers are signed, and answers nothing when the server itself runs confined."""

from __future__ import annotations

import hashlib
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import account_files

from rein.cli import main
from tests.web.conftest import Console, make_console

httpx = pytest.importorskip("httpx")


def _session_tag(console: Console) -> str:
    from rein.web.auth import COOKIE

    return hashlib.sha256(console.client.cookies[COOKIE].encode()).hexdigest()[:16]


def test_an_answer_in_the_console_records_the_session_and_shows_on_the_run(
        console: Console) -> None:
    console.login()
    run_id = console.start("g.agraph.yaml")
    [row] = console.pending()
    r = console.post(f"/approvals/{row.approval_id}", {"action": "accept",
                                                       "digest": row.digest})
    assert r.status_code == 303
    assert console.steering is not None and console.steering.idle(60)
    stored = console.harness.store.get_approval(row.approval_id)
    assert stored is not None and stored.answer is not None
    given = stored.answer["given"]
    assert given["surface"] == "web" and given["confined"] is False
    assert given["identity"]["method"] == "web-session"
    assert given["identity"]["session"] == _session_tag(console)  # a digest, not the id
    graph = [a for a in console.harness.approvals(run_id=run_id, pending_only=False)
             if a.kind.value == "graph"]
    assert graph[0].answer is not None
    assert graph[0].answer["given"]["identity"]["session"] == _session_tag(console)
    page = console.client.get(f"/runs/{run_id}").text
    assert "<h2>Approvals</h2>" in page
    shown = re.search(rf"data-approval='{row.approval_id}'>.*?</li>", page, re.DOTALL)
    assert shown is not None and "via <b>web</b>" in shown.group(0)
    assert f"web-session <code>{_session_tag(console)}</code>" in shown.group(0)


def test_where_answers_are_signed_the_console_starts_and_answers_nothing(
        workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """The console cannot sign: it starts no run (a run's approval is signed) and answers
    nothing but a cancel. A run the person started from their terminal waits for them."""
    from rein.config.approver import os_account

    outside = tmp_path_factory.mktemp("account")
    key = outside / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                   check=True, capture_output=True)
    _managed, user = account_files(monkeypatch, outside)
    user.parent.mkdir(parents=True)
    allowed = outside / "allowed_signers"
    allowed.write_text(f"{os_account()} {Path(f'{key}.pub').read_text().strip()}\n")
    user.write_text(f'[approver]\nallowed_signers = "{allowed}"\nsigning_key = "{key}"\n')
    assert main(["run", "g.agraph.yaml", "--approve", _digest(workspace), "--json"]) == 3
    capsys.readouterr()
    for console in make_console(workspace):
        console.login()
        runs = len(console.harness.runs())
        r = console.post("/plan/run", {"path": "g.agraph.yaml",
                                       "digest": console.digest("g.agraph.yaml")})
        assert r.status_code == 409 and "APPROVAL004" in r.text
        assert "rein run" in r.text  # a person starts it from their own terminal
        assert len(console.harness.runs()) == runs
        [row] = console.pending()
        r = console.post(f"/approvals/{row.approval_id}", {"action": "accept",
                                                           "digest": row.digest})
        assert r.status_code == 409 and "APPROVAL004" in r.text
        assert "rein approvals accept" in r.text  # the person answers from a terminal
        assert [p.approval_id for p in console.pending()] == [row.approval_id]


BWRAP = shutil.which("bwrap")


def _bwrap_works() -> bool:
    if BWRAP is None:
        return False
    done = subprocess.run([BWRAP, "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                           "--", "true"], capture_output=True, check=False, timeout=60)
    return done.returncode == 0


@pytest.mark.skipif(not _bwrap_works(), reason="bubblewrap is missing or cannot create "
                    "namespaces")
def test_a_console_started_inside_a_sandbox_answers_nothing(
        workspace: Path, capsys: Any) -> None:
    """An agent in a sandbox starts `rein serve` and posts the answer to it: the server runs
    confined (bubblewrap: no-new-privileges), so the answer is refused and not recorded."""
    assert main(["run", "g.agraph.yaml", "--approve", _digest(workspace), "--json"]) == 3
    capsys.readouterr()
    assert BWRAP is not None
    proc = subprocess.Popen(
        [BWRAP, "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--die-with-parent",
         "--", sys.executable, "-c", "from rein.cli import run; run()", "serve", "--port",
         "0"], cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ})
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "rein serve printed no URL"
        url = proc.stdout.readline().strip()
        base = url.split("/?")[0]
        with httpx.Client(base_url=base, timeout=60) as client:
            client.get(url, follow_redirects=True)
            page = client.get("/approvals").text
            approval = re.search(r"data-approval='([^']+)'", page)
            digest = re.search(r'name="digest" value="([^"]+)"', page)
            csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
            assert approval and digest and csrf, page
            r = client.post(f"/approvals/{approval.group(1)}", headers={"origin": base},
                            data={"action": "accept", "digest": digest.group(1),
                                  "csrf": csrf.group(1)})
            assert r.status_code == 409 and "APPROVAL003" in r.text, r.text[:2000]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
    assert main(["approvals", "list", "--json"]) == 0
    [pending] = json.loads(capsys.readouterr().out)["approvals"]
    assert pending["approval_id"] == approval.group(1) and pending["status"] == "pending"


def _digest(workspace: Path) -> str:
    from rein.formats.ags import validate_path

    return str(validate_path(str(workspace / "g.agraph.yaml")).digest)
