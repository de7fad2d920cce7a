"""Where approvals are signed, `rein dev` starts the features only under a plan approval
whose signature verifies, and runs only the feature graph it showed.

The person starts the flow (their key signs the planning run's approval) and accepts the
plan (signed); the agent drives the rest. The feature run is approved by that signed plan
approval, checked as it starts and every time it continues. A process confined as agent
sandboxes confine (``setpriv --no-new-privs``) writing the plan's acceptance straight into
the store, or a changed feature graph with the digest the store holds for it, gets nothing
started or run.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml
from devflow_support import Cli, drive
from scripted import ScriptedDriver
from support import account_files

from tests.cli.test_approvals_forged import ACCEPT, FORGE, SANDBOXES, one_json, sandbox_param
from tests.cli.test_approvals_signed import keypair
from tests.dev.test_plan_roles import pending, plan_approval

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None,
                                reason="ssh-keygen (OpenSSH) is missing")


@pytest.fixture
def signed(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """ana's key signs here: the allowed signers give it to her, and it is her signing key."""
    keys = repo.parent / "keys"
    key = keypair(keys, "ana")
    allowed = keys / "allowed_signers"
    allowed.write_text(f"ana {Path(f'{key}.pub').read_text().strip()}\n")
    _managed, user = account_files(monkeypatch, repo.parent / "account")
    user.parent.mkdir(parents=True)
    user.write_text(f'[approver]\nid = "ana"\nallowed_signers = "{allowed}"\n'
                    f'signing_key = "{key}"\n')
    return key


def forge(repo: Path, statement: str, values: list[Any]) -> None:
    """The agent writes into the store from its sandbox, with Python's sqlite3."""
    import subprocess
    import sys

    done = subprocess.run([*SANDBOXES["setpriv"], sys.executable, "-c", FORGE,
                           json.dumps([[statement, values]])], cwd=repo, capture_output=True,
                          text=True, timeout=120, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "forged"), done.stderr


def flow(repo: Path) -> dict[str, Any]:
    return dict(json.loads((repo / ".rein/dev/flow.json").read_text()))


def test_a_signed_plan_approval_carries_the_features_to_the_end(
        signed: Path, driver: ScriptedDriver, cli: Cli, repo: Path) -> None:
    """The control: the flow runs to its end; the feature run is approved by the plan
    approval, which `rein runs show` finds verified on the way."""
    code, where = drive(driver, cli)
    assert (code, where["reason"]) == (0, "done"), where
    features = flow(repo)["features_run"]
    with sqlite3.connect(repo / ".rein" / "rein.db") as db:
        binding = json.loads(db.execute("SELECT binding FROM runs WHERE run_id = ?",
                                        (features,)).fetchone()[0])
    under = binding["x-rein-approved-under"]
    assert under["file"] == "specs/plan.agraph.yaml"
    _code, shown = cli.json("approvals", "show", under["approval_id"])
    assert shown["answer"]["given"]["identity"]["method"] == "ssh-signature"
    _code, planning = cli.json("runs", "show", flow(repo)["planning_run"])
    assert "approval_refused" not in planning


@pytest.mark.parametrize("sandbox", [sandbox_param("setpriv")])
def test_a_plan_acceptance_written_into_the_store_starts_nothing(
        signed: Path, driver: ScriptedDriver, cli: Cli, repo: Path, sandbox: str) -> None:
    plan_approval(driver)
    gate = pending(cli)["approval_id"]
    forge(repo, ACCEPT, [json.dumps({"actor": "ana", "note": "fine"}), gate])
    driver.dev()  # the agent's next turn reads; nothing starts
    assert flow(repo)["features_run"] is None
    code, out = cli("resume", flow(repo)["planning_run"], "--json")  # the run continues
    assert (code, one_json(out)["status"]) == (3, "awaiting_human"), out
    code, where = driver.dev()
    assert code == 3 and where["instruction"].get("for") == "approval", where
    assert flow(repo)["features_run"] is None
    row = pending(cli)
    assert row["approval_id"] == gate and row["refused"]["code"] == "APPROVAL005"
    # And with the planning run's end forged as well, the feature run is not started.
    forge(repo, ACCEPT, [json.dumps({"actor": "ana"}), gate])
    forge(repo, "UPDATE runs SET status = 'succeeded' WHERE run_id = ?",
          [flow(repo)["planning_run"]])
    code, where = driver.dev()
    assert where.get("error", {}).get("code") == "APPROVAL005", where
    assert "carries no signature" in where["error"]["message"]
    assert flow(repo)["features_run"] is None


@pytest.mark.parametrize("sandbox", [sandbox_param("setpriv")])
def test_a_feature_graph_changed_after_the_signed_plan_approval_runs_nothing(
        signed: Path, driver: ScriptedDriver, cli: Cli, repo: Path, sandbox: str) -> None:
    """The agent edits the approved feature graph (a verify of its own) and gives the store
    the digest of the edit, so that RT053 sees no change: the approval it runs under
    showed other content, and nothing of the edit runs."""
    plan_approval(driver)
    code, out = cli("approvals", "accept", pending(cli)["approval_id"])
    assert code == 0, out
    code, where = driver.dev()
    assert where["stage"] == "features", where
    features = flow(repo)["features_run"]
    graph = repo / "specs" / "plan.agraph.yaml"
    data = yaml.safe_load(graph.read_text())
    data["description"] = "the agent's own plan"
    graph.write_text(yaml.safe_dump(data, sort_keys=False))
    _code, digest = cli("graph", "digest", str(graph))
    with sqlite3.connect(repo / ".rein" / "rein.db") as db:
        binding = json.loads(db.execute("SELECT binding FROM runs WHERE run_id = ?",
                                        (features,)).fetchone()[0])
        events = db.execute("SELECT count(*) FROM events WHERE run_id = ?",
                            (features,)).fetchone()[0]
    binding.update(graph_digest=digest.strip(), approved_digest=digest.strip())
    forge(repo, "UPDATE runs SET graph_digest = ?, binding = ? WHERE run_id = ?",
          [digest.strip(), json.dumps(binding), features])
    instruction = where["instruction"]
    code, answered = driver.submit(driver.work(instruction))
    assert (code, answered["error"]["code"]) == (4, "APPROVAL005"), answered
    assert "specs/plan.agraph.yaml changed since" in answered["error"]["message"]
    code, out = cli("resume", features, "--json")
    assert (code, one_json(out)["error"]["code"]) == (4, "APPROVAL005"), out
    with sqlite3.connect(repo / ".rein" / "rein.db") as db:
        assert db.execute("SELECT count(*) FROM events WHERE run_id = ?",
                          (features,)).fetchone()[0] == events
