"""Every stop has its own reason, next action and exit code (iao.md weak point 2), and the
guards are rein's: steps per feature, the global step budget, the verify timeout."""

from __future__ import annotations

from pathlib import Path

from devflow_support import Cli, alive, drive
from scripted import PYTHON, ScriptedDriver, git, good_plan


class AlwaysWrong(ScriptedDriver):
    """Never gets c_to_f right."""

    def work(self, instruction: dict) -> dict:  # type: ignore[type-arg]
        envelope = super().work(instruction)
        if instruction["node"] == "feature_c_to_f":
            self.write("tempconv/__init__.py", "def c_to_f(c):\n    return c\n")
        return envelope


def toml(repo: Path, text: str) -> None:
    (repo / "rein.toml").write_text(text)
    git(repo, "add", "rein.toml")  # a person's file, committed: the tree stays clean


def test_done_is_exit_0(driver: ScriptedDriver, cli: Cli) -> None:
    code, where = drive(driver, cli)
    assert (code, where["reason"], where["exit_code"]) == (0, "done", 0)
    assert where["next_action"].startswith("nothing")


def test_a_feature_that_never_passes_blocks_its_dependents(repo: Path, cli: Cli) -> None:
    toml(repo, "[dev]\nsteps_per_feature = 2\n")
    driver = AlwaysWrong(repo, cli, bad_plan_first=False)
    code, where = drive(driver, cli)
    assert (code, where["reason"]) == (1, "blocked"), where
    assert where["failed"] == ["c_to_f"] and where["blocked"] == ["table"]
    assert "cannot start: they depend on c_to_f, which failed" in where["message"]
    assert [i["node"] for i in driver.seen].count("feature_c_to_f") == 2  # the guard
    assert git(repo, "log", "--oneline", check=False) == ""  # nothing unverified committed


def test_a_failed_feature_without_dependents_is_failed(repo: Path, cli: Cli) -> None:
    toml(repo, "[dev]\nsteps_per_feature = 1\n")
    plan = good_plan()
    plan["features"] = plan["features"][:1]
    driver = AlwaysWrong(repo, cli, bad_plan_first=False, plan=plan)
    code, where = drive(driver, cli)
    assert (code, where["reason"], where["failed"]) == (1, "failed", ["c_to_f"]), where
    assert "feature c_to_f failed after 1 attempt(s)" in where["message"]


def test_the_step_budget_stops_with_exit_4_and_a_person_raises_it(
        repo: Path, cli: Cli) -> None:
    toml(repo, "[dev]\nmax_steps = 2\n")
    driver = ScriptedDriver(repo, cli, bad_plan_first=False)
    code, where = drive(driver, cli)
    assert (code, where["reason"]) == (4, "budget"), where
    assert "rein.toml" in where["next_action"]
    assert len(git(repo, "log", "--oneline").splitlines()) == 1  # c_to_f, in two steps
    # Running `rein dev` again changes nothing while the limit is the same.
    code, again = driver.dev()
    assert (code, again["reason"]) == (4, "budget")

    (repo / "rein.toml").write_text("[dev]\nmax_steps = 10\n")
    git(repo, "commit", "-qam", "raise the step budget")
    code, where = driver.dev()
    assert any("the budget was raised" in n for n in where["notices"]), where
    assert where["instruction"].get("for") == "approval"  # a person approves the rest
    code, where = drive(driver, cli)
    assert (code, where["reason"]) == (0, "done"), where
    assert len(git(repo, "log", "--format=%s").splitlines()) == 4  # 3 features + the toml
    assert [i["node"] for i in driver.seen].count("feature_c_to_f") == 2


def test_a_raised_budget_puts_before_a_person_only_the_rest_of_the_approved_graph(
        repo: Path, cli: Cli) -> None:
    """At a budget stop no instruction is out: the agent may rewrite the feature graph (a
    verify command weakened) before a person raises the limit. rein must not put that
    graph before the person as the rest of the plan "with the new limits"."""
    toml(repo, "[dev]\nmax_steps = 2\n")
    driver = ScriptedDriver(repo, cli, bad_plan_first=False)
    code, where = drive(driver, cli)
    assert (code, where["reason"]) == (4, "budget"), where
    graph = repo / "specs" / "plan.agraph.yaml"
    approved = graph.read_text()
    graph.write_text(approved.replace("tests/test_table.py", "tests/test_c_to_f.py"))
    (repo / "rein.toml").write_text("[dev]\nmax_steps = 10\n")
    git(repo, "commit", "-qam", "raise the step budget")
    code, out = cli.json("dev")
    assert code == 4 and out["error"]["code"] == "DEV008", out
    assert out["error"]["message"].startswith("specs/plan.agraph.yaml "), out
    _code, queue = cli.json("approvals", "list")
    assert not [a for a in queue["approvals"] if a["status"] == "pending"]
    graph.write_text(approved)  # the approved graph back: the rest is put up for approval
    code, where = driver.dev()
    assert any("the budget was raised" in n for n in where["notices"]), where


def test_a_hung_verify_is_killed_with_its_group_at_the_timeout(
        repo: Path, cli: Cli, tmp_path: Path) -> None:
    toml(repo, "[dev]\nverify_timeout_seconds = 1\nsteps_per_feature = 1\n")
    pid_file = tmp_path / "grandchild.pid"
    hang = ("import subprocess, sys, time\n"
            "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
            f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
            "time.sleep(300)\n")
    plan = good_plan()
    plan["features"] = plan["features"][:1]
    plan["features"][0]["verify"] = [PYTHON, "hang.py"]
    driver = ScriptedDriver(repo, cli, bad_plan_first=False, wrong_first=False, plan=plan)
    driver.write("hang.py", hang)
    code, where = drive(driver, cli)
    assert (code, where["reason"]) == (1, "failed"), where
    assert "took longer than 1 s; its process group was killed" in where["message"]
    assert where["features"][0]["last_failure"].startswith("verify: verify failed")
    grandchild = int(pid_file.read_text())
    assert not alive(grandchild)


def test_a_failing_smoke_command_fails_the_attempt_before_the_verify(
        repo: Path, cli: Cli) -> None:
    (repo / "rein.toml").write_text(
        f'[dev]\nsmoke = ["{PYTHON}", "-c", "import sys; sys.exit(\'init broken\')"]\n'
        "steps_per_feature = 1\n")
    git(repo, "add", "rein.toml")
    plan = good_plan()
    plan["features"] = plan["features"][:1]
    driver = ScriptedDriver(repo, cli, bad_plan_first=False, wrong_first=False, plan=plan)
    code, where = drive(driver, cli)
    assert (code, where["reason"]) == (1, "failed"), where
    assert "smoke failed" in where["message"] and "init broken" in where["message"]
