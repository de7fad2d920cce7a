"""What `rein dev` reports is read from the workspace only as a person approved it.

The flow's own files (`.rein/dev/flow.json`, the feature graph with the index of its
features) are the workspace's, which the agent may write between turns: while a person's
approval waits, or after the flow is done. A feature listed that the approved graph does
not hold, or a run of an earlier plan named as this plan's feature run, must not come out
as "verified and committed".
"""

from __future__ import annotations

import json
from pathlib import Path

from devflow_support import Cli, drive
from scripted import ScriptedDriver, good_plan

GRAPH = "specs/plan.agraph.yaml"
INDEX = "# rein-dev-index: "


def one_feature(repo: Path, cli: Cli) -> tuple[ScriptedDriver, dict]:  # type: ignore[type-arg]
    plan = good_plan()
    plan["features"] = plan["features"][:1]
    driver = ScriptedDriver(repo, cli, bad_plan_first=False, wrong_first=False, plan=plan)
    code, where = drive(driver, cli)
    assert (code, where["reason"]) == (0, "done"), where
    return driver, where


def test_features_listed_are_those_of_the_approved_graph(repo: Path, cli: Cli) -> None:
    one_feature(repo, cli)
    forged = {"node": None, "feature": "auth", "title": "Login, passwords hashed",
              "commit": "1234567"}
    # Where the index was kept before: a file rein no longer reads.
    (repo / ".rein" / "dev" / "features.json").write_text(json.dumps(
        {"plan_id": json.loads((repo / ".rein/dev/flow.json").read_text())["plan_id"],
         "features": [forged]}))
    code, where = cli.json("dev")
    assert (code, where["reason"]) == (0, "done"), where
    assert [f["id"] for f in where["features"]] == ["c_to_f"]
    assert where["message"] == "the one feature is verified and committed"
    # Where it is kept now: the graph's last line, whose bytes the plan approval bound.
    graph = repo / GRAPH
    head, _, line = graph.read_text().rpartition(INDEX)
    index = json.loads(line)
    index["features"].append(forged)
    graph.write_text(head + INDEX + json.dumps(index) + "\n")
    code, out = cli.json("dev")
    assert code == 4 and out["error"]["code"] == "DEV008", out
    assert out["error"]["message"].startswith(
        f"{GRAPH} is not the feature graph planning run ")
    code, where = cli.json("dev", "status")  # a reader refuses nothing: it says why
    assert (code, where["reason"], where["features"]) == (1, "failed", []), where
    assert where["message"].endswith("put before a person: it changed since (DEV008)")


def test_a_run_of_an_earlier_plan_is_not_reported_as_this_plan_s(
        repo: Path, cli: Cli) -> None:
    driver, first = one_feature(repo, cli)
    plan = good_plan()
    driver.plan = {"features": [plan["features"][0], plan["features"][2]]}  # f_to_c is new
    code, out = cli("dev", "start", "--new", "--json")
    _code, pending = driver.submit(driver.work(json.loads(out)["instruction"]))
    assert pending.get("for") == "approval", pending
    # Before a person looked at the new plan: the earlier plan's feature run, named as its.
    flow_file = repo / ".rein" / "dev" / "flow.json"
    flow = json.loads(flow_file.read_text())
    flow["features_run"] = first["features_run"]
    flow_file.write_text(json.dumps(flow))
    code, out = cli.json("dev")
    assert code == 4 and out["error"]["code"] == "DEV008", out
    assert out["error"]["message"] == (
        f"run {first['features_run']}, which .rein/dev/flow.json names as the feature run, "
        f"is not a run of the feature graph planning run {flow['planning_run']} "
        "put before a person")
    _code, where = cli.json("dev", "status")
    assert where["reason"] == "failed" and where["features"] == [], where


def test_the_graph_shown_for_approval_is_the_content_the_approval_binds(
        repo: Path, cli: Cli) -> None:
    """The feature graph waiting for a person is drawn from the approval's copy: content
    put in the file while they read it is not what they are shown (and is marked)."""
    driver = ScriptedDriver(repo, cli, bad_plan_first=False)
    _code, where = driver.dev()
    driver.submit(driver.work(where["instruction"]))  # the plan: its approval now waits
    _code, where = cli.json("dev")
    assert where["instruction"].get("for") == "approval", where
    bound = where["plan"]
    assert (bound["shown"], bound["changed"]) == ("as the approval presents it", False)
    graph = repo / GRAPH
    honest = graph.read_text()
    graph.write_text(honest.replace("c_to_f", "harmless_looking"))
    _code, where = cli.json("dev", "status")
    shown = where["plan"]
    assert shown["digest"] == bound["digest"] and shown["changed"] is True
    assert "harmless_looking" not in shown["text"] and "c_to_f" in shown["text"]
