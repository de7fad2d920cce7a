"""The plain ``rein dev [--json]`` and ``rein dev status [--json]`` are answered without
click and without an event loop when they only read (cli/quick/dev.py), with the very
bytes and exit code of the click command (reached here through ``--workspace``, which only
the click command takes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from devflow_support import Cli, approve

from rein.cli.quick.dev import quick_dev

PLAN = {"verify": [sys.executable, "-m", "compileall", "-q", "."], "features": [
    {"id": f"f{i}", "title": f"Feature {i}", "priority": i,
     "depends_on": [f"f{i - 1}"] if i > 1 else []} for i in range(1, 4)]}
FORMS = (["dev"], ["dev", "--json"], ["dev", "status"], ["dev", "status", "--json"])


def _both_routes_agree(repo: Path, cli: Cli, code: int) -> dict[str, object]:
    for form in FORMS:
        cli.capsys.readouterr()
        assert quick_dev(form[1:]) == code, form  # answered here, not left to click
        quick = cli(*form)
        through_click = cli(*form, "--workspace", str(repo))
        assert quick == through_click, form
    return dict(json.loads(cli("dev", "--json")[1]))


def test_each_plain_form_prints_what_the_click_command_prints(repo: Path, cli: Cli) -> None:
    (repo / "feature_list.json").write_text(json.dumps(PLAN))
    code, _ = cli("dev")  # starts the flow: the click command acts
    assert code == 3
    where = _both_routes_agree(repo, cli, 3)  # the plan waits for a person's approval
    assert where["stage"] == "planning" and "plan" in where
    approve(cli)
    code, _ = cli("dev")  # starts the feature graph: the click command acts again
    assert code == 0
    where = _both_routes_agree(repo, cli, 0)  # an instruction for the agent
    assert where["stage"] == "features"
    assert where["instruction"]["node"] == "feature_f1"  # type: ignore[index]


_PROBE = """
import json, sys
from rein.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def test_a_turn_that_only_reads_imports_no_click_event_loop_dataclass_or_yaml(
        repo: Path, cli: Cli) -> None:
    (repo / "feature_list.json").write_text(json.dumps(PLAN))
    cli("dev")
    approve(cli)
    cli("dev")
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    for form in (["dev"], ["dev", "status", "--json"]):
        done = subprocess.run([sys.executable, "-c", _PROBE, *form], cwd=repo, env=env,
                              capture_output=True, text=True, check=False)
        seen = json.loads(done.stderr.strip().splitlines()[-1])
        assert seen["code"] == 0, done.stderr
        heavy = [m for m in seen["modules"]
                 if m.split(".")[0] in ("click", "asyncio", "dataclasses", "yaml")]
        assert heavy == [], (form, heavy)
