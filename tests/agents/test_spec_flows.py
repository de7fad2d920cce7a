"""The real Codex CLI takes a brief through `rein spec` to READY, inside its sandbox.

As in test_dev_flows.py, the scripted model server (a test double) answers with the
commands the instruction file (AGENTS.md) teaches: `rein spec --json`, the document written
through a here-document, the envelope through `rein submit -`. A person (the test) approves
each document outside the sandbox; the agent's next session goes on. READY publishes the
plan, and `rein dev` imports it without a planning turn.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from agent_clis import REIN_BIN, codex_missing, run_codex, sandbox_missing
from agent_policy import Driver
from scripted_model import ScriptedModel

from rein.spec.paths import PATHS, PLAN_PATH
from tests.spec.spec_bundle import good

BRIEF = "# tempconv\n\nA small Python package that converts temperatures.\n"
PROMPT = ("Use the rein specification flow for the brief in specs/, as AGENTS.md says: "
          "run `.rein/bin/rein spec`.")
pytestmark = pytest.mark.timeout(900)  # six agent sessions of a few seconds each
BUNDLE = good()


def rein(root: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run([str(REIN_BIN / "rein"), *args], cwd=root, capture_output=True,
                          text=True, timeout=120, check=False)
    return done.returncode, done.stdout + done.stderr


def work(instruction: Mapping[str, Any]) -> dict[str, str]:
    name = str(instruction["node"]).removeprefix("write_")
    return {PATHS[name]: json.dumps(BUNDLE[name], indent=1) + "\n"}


def outputs(instruction: Mapping[str, Any]) -> dict[str, Any]:
    return {"document": PATHS[str(instruction["node"]).removeprefix("write_")]}


@pytest.mark.skipif(bool(codex_missing() or sandbox_missing()),
                    reason=str(codex_missing() or sandbox_missing()))
def test_the_codex_cli_in_its_sandbox_takes_a_brief_through_rein_spec(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "specs").mkdir(parents=True)
    (repo / "specs" / "brief.md").write_text(BRIEF)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    code, said = rein(repo, "init", "--agent", "codex")
    assert code == 0, said
    written: list[str] = []
    stopped: dict[str, Any] | None = None
    for index in range(7):  # five documents, each approved, then READY
        policy = Driver(work, outputs, entry="spec --json")
        root = tmp_path / f"s{index}"
        root.mkdir()
        with ScriptedModel(policy) as model:
            done = run_codex(repo, root, model.url, PROMPT)
        assert done.code == 0, done.stderr[-3000:]
        written += [i["node"] for i in policy.instructions]
        stopped = policy.stopped_on
        assert stopped is not None, done.stderr[-3000:]
        if stopped["reason"] != "waiting":
            break
        assert stopped["instruction"].get("for") == "approval", stopped
        code, out = rein(repo, "approvals", "list", "--json")  # a person, outside
        pending = [a for a in json.loads(out)["approvals"] if a["status"] == "pending"]
        assert len(pending) == 1, out
        code, out = rein(repo, "approvals", "accept", pending[0]["approval_id"])
        assert code in (0, 3), out
    assert stopped is not None and stopped["reason"] == "ready", stopped
    assert written == ["write_charter", "write_requirements", "write_design",
                       "write_acceptance", "write_readiness"]
    refused = 0  # the envelopes rein refused: none, the protocol was followed throughout
    for run_id in json.loads((repo / ".rein/spec/flow.json").read_text())["runs"]:
        _code, events = rein(repo, "runs", "events", run_id, "--json")
        refused += events.count('"type":"driver/refused"')
    assert refused == 0
    plan = json.loads((repo / PLAN_PATH).read_text())
    assert [f["id"] for f in plan["features"]] == ["c_to_f", "table", "f_to_c"]
    code, out = rein(repo, "dev", "--json")  # the person starts the build: no planning turn
    assert code == 3, out
    assert "imported the plan from specs/active/40-development-plan.json (3 features)" in out
