"""`rein dev start --new` after a failed feature: the features already committed with the
same definition, whose verify passes on the current tree (rein runs it), are not built
again; a feature whose definition changed, or whose verify fails now, is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devflow_support import Cli, drive
from scripted import ScriptedDriver, git, good_plan

TABLE_WRONG = ("def table(start, stop, step):\n"
               "    return []\n")


class TableFailsFirst(ScriptedDriver):
    """Gets the table wrong until ``fixed``."""

    fixed = False

    def work(self, instruction: dict[str, Any]) -> dict[str, Any]:
        envelope = super().work(instruction)
        if instruction["node"] == "feature_table" and not self.fixed:
            self.write("tempconv/table.py", TABLE_WRONG)
        return envelope


def failed_table(repo: Path, cli: Cli, **kwargs: Any) -> TableFailsFirst:
    """A flow whose c_to_f and f_to_c are committed and whose table failed; the failed
    attempt's files removed, as a person does before `rein dev start --new`."""
    (repo / "rein.toml").write_text("[dev]\nsteps_per_feature = 1\n")
    git(repo, "add", "rein.toml")
    driver = TableFailsFirst(repo, cli, bad_plan_first=False, wrong_first=False, **kwargs)
    code, where = drive(driver, cli)
    assert (code, where["reason"], where["failed"]) == (1, "failed", ["table"]), where
    (repo / "tempconv" / "table.py").unlink()
    (repo / "tests" / "test_table.py").unlink()
    assert git(repo, "status", "--porcelain") == ""
    driver.fixed = True
    driver.seen.clear()
    return driver


def test_a_new_plan_builds_only_what_is_not_committed_unchanged(
        repo: Path, cli: Cli) -> None:
    driver = failed_table(repo, cli)
    before = git(repo, "log", "--format=%H").split()
    code, where = driver.dev("start", "--new")
    assert where["reason"] == "waiting", where
    code, where = drive(driver, cli)
    assert (code, where["reason"]) == (0, "done"), where
    assert [(i["node"], i["attempt"]) for i in driver.seen] == [("plan", 1),
                                                                ("feature_table", 1)]
    assert {f["id"]: f["status"] for f in where["features"]} == {
        "c_to_f": "committed", "f_to_c": "committed", "table": "succeeded"}
    assert "2 of them under an earlier plan" in where["message"]
    log = git(repo, "log", "--format=%H %s").splitlines()
    assert [line.split()[0] for line in log[1:]] == before
    assert log[0].endswith("feat(dev): feature table - A conversion table")
    # Each feature commit carries the digest of the definition it was built from.
    body = git(repo, "log", "-1", "--format=%B")
    assert any(line.startswith("Rein-Dev-Definition: sha256:") for line in body.splitlines())


def test_the_person_sees_what_is_not_built_again(repo: Path, cli: Cli) -> None:
    driver = failed_table(repo, cli)
    driver.dev("start", "--new")
    _code, pending = cli.json("next")
    driver.submit(driver.work(pending))
    code, out = cli("dev")
    assert code == 3, out
    shown = out.split("not built again", 1)[1]
    assert "c_to_f: Celsius to Fahrenheit (" in shown and "f_to_c: " in shown
    assert "committed c_to_f: Celsius to Fahrenheit (as " in out
    graph = (repo / "specs" / "plan.agraph.yaml").read_text()
    assert "feature_table:" in graph and "feature_c_to_f:" not in graph


def test_a_feature_whose_definition_changed_is_built_again(repo: Path, cli: Cli) -> None:
    driver = failed_table(repo, cli)
    changed = good_plan()
    changed["features"][0]["description"] = "c_to_f(c) in Fahrenheit, rounded to 0.1"
    driver.plan = changed
    driver.dev("start", "--new")
    code, where = drive(driver, cli)
    assert (code, where["reason"]) == (0, "done"), where
    # c_to_f is asked again (its new definition); f_to_c, unchanged, is not.
    assert [i["node"] for i in driver.seen] == ["plan", "feature_c_to_f", "feature_table"]
    assert {f["id"]: f["status"] for f in where["features"]} == {
        "f_to_c": "committed", "c_to_f": "succeeded", "table": "succeeded"}


def test_a_committed_feature_whose_verify_fails_now_is_built_again(
        repo: Path, cli: Cli) -> None:
    driver = failed_table(repo, cli)
    init = repo / "tempconv" / "__init__.py"
    init.write_text(init.read_text().replace("+ 32", "+ 31"))
    git(repo, "commit", "-qam", "a person's change breaks c_to_f")
    driver.dev("start", "--new")
    _code, pending = cli.json("next")
    driver.submit(driver.work(pending))
    _code, where = driver.dev()
    assert where["instruction"].get("for") == "approval", where
    assert {f["id"]: f["status"] for f in where["features"]} == {
        "f_to_c": "committed", "c_to_f": "planned", "table": "planned"}
    graph = (repo / "specs" / "plan.agraph.yaml").read_text()
    assert "feature_c_to_f:" in graph and "feature_f_to_c:" not in graph
