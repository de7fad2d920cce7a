"""An agent that answers ``"status": "failed"`` with a message: the feature is tried again,
told that message, until its attempts run out; the stop that follows says only what failed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from devflow_support import Cli, drive
from scripted import ScriptedDriver, git, good_plan

from rein.cli import main

UNSURE = "I could not decide on the output format"


class GivesUpFirst(ScriptedDriver):
    """Answers the first ``gives_up`` attempts of feature c_to_f with a failure."""

    def __init__(self, *args: Any, gives_up: int = 1, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gives_up = gives_up
        self.printed: list[str] = []  # what `rein submit` printed for each failed answer

    def work(self, instruction: dict[str, Any]) -> dict[str, Any]:
        if instruction["node"] == "feature_c_to_f" and instruction["attempt"] <= self.gives_up:
            self.seen.append(instruction)
            return {"protocol": "rein.driver/1", "token": instruction["token"],
                    "node": instruction["node"], "attempt": instruction["attempt"],
                    "status": "failed", "message": UNSURE}
        return super().work(instruction)

    def submit(self, envelope: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """A failed answer is submitted as a person would read it (the text output)."""
        if envelope["status"] != "failed":
            return super().submit(envelope)
        self.write(".rein/inbox.json", json.dumps(envelope))
        capsys = self.rein.capsys  # type: ignore[attr-defined]
        capsys.readouterr()
        main(["submit"])
        said = capsys.readouterr()
        self.printed.append(said.out + said.err)  # the progress lines are on stderr
        code, out = self.rein("next", "--json")
        return code, json.loads(out)


def one_feature() -> dict[str, Any]:
    plan = good_plan()
    plan["features"] = plan["features"][:1]
    return plan


def test_a_failed_answer_is_tried_again_with_its_message_as_feedback(
        repo: Path, cli: Cli) -> None:
    driver = GivesUpFirst(repo, cli, bad_plan_first=False, wrong_first=False)
    code, where = drive(driver, cli)
    assert (code, where["reason"]) == (0, "done"), where
    turns = [(i["node"], i["attempt"]) for i in driver.seen if i["node"] == "feature_c_to_f"]
    assert turns == [("feature_c_to_f", 1), ("feature_c_to_f", 2)]
    feedback = driver.seen[[i["node"] for i in driver.seen].index("feature_c_to_f") + 1][
        "feedback"]
    assert feedback["failure_class"] == "model_error"
    assert feedback["summary"] == UNSURE
    assert git(repo, "log", "--format=%s").splitlines()[-1] == \
        "feat(dev): feature c_to_f - Celsius to Fahrenheit"


def test_failed_answers_stop_the_flow_once_the_attempts_are_spent(
        repo: Path, cli: Cli) -> None:
    (repo / "rein.toml").write_text("[dev]\nsteps_per_feature = 2\n")
    git(repo, "add", "rein.toml")
    driver = GivesUpFirst(repo, cli, bad_plan_first=False, gives_up=2, plan=one_feature())
    code, where = drive(driver, cli)
    assert (code, where["reason"], where["failed"]) == (1, "failed", ["c_to_f"]), where
    assert f"feature c_to_f failed after 2 attempt(s): model_error: {UNSURE}" \
        in where["message"]
    assert [i["node"] for i in driver.seen].count("feature_c_to_f") == 2


def test_the_stop_after_a_failed_feature_names_no_unbound_output(
        repo: Path, cli: Cli) -> None:
    """The driver's summary of a feature that failed is missing because the feature failed:
    the run's record and what `rein submit` prints say the failure, not a second error."""
    (repo / "rein.toml").write_text("[dev]\nsteps_per_feature = 1\n")
    git(repo, "add", "rein.toml")
    driver = GivesUpFirst(repo, cli, bad_plan_first=False, plan=one_feature())
    code, where = drive(driver, cli)
    assert (code, where["reason"]) == (1, "failed"), where
    assert len(driver.printed) == 1
    assert "feature_c_to_f failed" in driver.printed[0]
    assert "RT041" not in driver.printed[0]
    _code, record = cli.json("runs", "show", where["features_run"])
    assert record["status"] == "failed"
    assert "RT041" not in json.dumps(record)
