"""A change after READY: editing the brief or an approved document reopens the documents
that depend on it, and `rein dev` refuses the published plan until it is published again."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from devflow_support import BRIEF, Cli
from spec_bundle import good
from spec_driver import SpecDriver, drive, protocol_errors

from rein.spec.paths import PATHS, PLAN_PATH


def test_an_edited_brief_reopens_the_bundle_and_rein_dev_refuses_the_old_plan(
        repo: Path, cli: Cli, person: Callable[[str], str]) -> None:
    driver = SpecDriver(repo, cli)
    code, where = drive(driver, person)
    assert (code, where["reason"]) == (0, "ready"), where
    first = json.loads((repo / PLAN_PATH).read_text())
    code, where = driver.flow("dev")
    assert code == 3 and where["instruction"].get("for") == "approval", where

    (repo / "specs" / "brief.md").write_text(BRIEF + "\nAlso Kelvin.\n")
    code, refused = cli.json("dev")
    assert code == 4, refused
    assert refused["error"]["code"] == "DEV010"
    assert refused["error"]["message"] == (
        "the specification of specs/active/40-development-plan.json changed since it was "
        "published: specs/brief.md changed")
    assert refused["error"]["hint"].startswith("run `rein spec`: it reopens what changed")
    code, out = cli("dev", "status")  # status changes nothing and refuses nothing: it says so
    assert "DEV010" in out

    driver.seen.clear()
    code, where = driver.flow("spec")
    assert code == 0, where
    assert where["notices"][0] == ("reopened specs/active/10-charter.json: the brief changed "
                                  "(specs/brief.md)")
    assert where["notices"][1:] == [
        f"reopened {PATHS[n]}: specs/active/10-charter.json, which it depends on, is open "
        "again" for n in ("requirements", "design", "acceptance", "readiness")]
    assert [d["status"] for d in where["documents"]] == ["writing"] + ["planned"] * 4
    assert "is open again: the brief changed" in where["instruction"]["brief"]
    assert "Also Kelvin." in where["instruction"]["brief"]
    code, where = drive(driver, person)
    assert (code, where["reason"]) == (0, "ready"), where
    assert [i["node"] for i in driver.seen] == [
        "write_charter", "write_requirements", "write_design", "write_acceptance",
        "write_readiness"]
    second = json.loads((repo / PLAN_PATH).read_text())
    assert second["spec"]["sources"]["specs/brief.md"] != first["spec"]["sources"][
        "specs/brief.md"]

    # Published again: the running dev flow built from the old plan still stops...
    code, refused = cli.json("dev")
    assert (code, refused["error"]["code"]) == (4, "DEV010")
    assert "was published again" in refused["error"]["message"]
    assert "rein dev start --new" in refused["error"]["hint"]
    # ...and a new one builds the new plan.
    code, out = cli("dev", "start", "--new")
    assert code == 3 and "waiting for a person to approve the feature graph" in out, out
    assert protocol_errors(cli, json.loads((repo / ".rein/spec/flow.json").read_text())[
        "runs"]) == 0
    _code, report = cli.json("spec", "report")  # every run: each document was written twice
    assert [(d["runs"], d["steps"]) for d in report["documents"]] == [(2, 2)] * 5


def test_an_edited_approved_document_reopens_it_and_what_depends_on_it(
        repo: Path, cli: Cli, person: Callable[[str], str]) -> None:
    driver = SpecDriver(repo, cli)
    code, where = drive(driver, person)
    assert code == 0, where
    path = repo / PATHS["design"]
    design = json.loads(path.read_text())
    design["decisions"][0]["reason"] = "callers asked for exact values"
    path.write_text(json.dumps(design))

    driver.seen.clear()
    code, where = driver.flow("spec")
    assert where["notices"] == [
        "reopened specs/active/25-design.json: it was edited after it was approved",
        ("reopened specs/active/30-acceptance.json: specs/active/25-design.json, which it "
        "depends on, is open again"),
        ("reopened specs/active/35-readiness.json: specs/active/25-design.json, which it "
        "depends on, is open again")]
    assert [d["status"] for d in where["documents"]] == [
        "approved", "approved", "writing", "planned", "planned"]
    # The reopened design may not drop a published id: stable ids, refused with the reason.
    driver.bundle["design"] = design
    del driver.bundle["design"]["interfaces"][0]
    driver.refuse_first = {}
    _code, pending = driver.submit(driver.work(where["instruction"]))
    evidence = pending["feedback"]["failed_criteria"][0]["evidence"]
    assert ("id(s) IF-1 were published in specs/active/25-design.json and are gone: keep "
            "them (ids are never renumbered or reused)") in evidence
    # The published plan records the ids each document published.
    assert json.loads((repo / PLAN_PATH).read_text())["spec"]["ids"]["design"] == [
        "CMP-1", "CMP-2", "D-1", "IF-1"]
    driver.bundle["design"] = design | {"interfaces": good()["design"]["interfaces"]}
    code, where = drive(driver, person)
    assert (code, where["reason"]) == (0, "ready"), where
    plan = json.loads((repo / PLAN_PATH).read_text())
    assert "D-1: floats in, floats out (because: callers asked for exact values)" in \
        plan["features"][0]["context"]["decisions"]


def test_a_declined_document_is_written_again_with_the_person_s_note(
        repo: Path, cli: Cli, person: Callable[[str], str]) -> None:
    driver = SpecDriver(repo, cli)
    _code, where = driver.flow("spec")
    _code, _pending = driver.submit(driver.work(where["instruction"]))  # the charter
    person(where["run_id"])
    _code, where = driver.flow("spec")
    _code, _pending = driver.submit(driver.work(where["instruction"]))  # the requirements
    _code, queue = cli.json("approvals", "list")
    [row] = queue["approvals"]
    code, out = cli("approvals", "decline", row["approval_id"], "--note",
                    "FR-3 is not needed yet")
    assert code == 1, out  # the run ended: the person said no
    code, where = driver.flow("spec")
    assert code == 0, where
    assert where["notices"][0] == ("reopened specs/active/20-requirements.json: a person "
                                   "declined it: FR-3 is not needed yet")
    assert [d["status"] for d in where["documents"]] == [
        "approved", "writing", "planned", "planned", "planned"]
    assert "a person declined it: FR-3 is not needed yet" in where["instruction"]["brief"]
    code, where = drive(driver, person)
    assert (code, where["reason"]) == (0, "ready"), where


def test_a_writing_node_cannot_rewrite_the_published_plan(
        repo: Path, cli: Cli, person: Callable[[str], str]) -> None:
    driver = SpecDriver(repo, cli)
    code, where = drive(driver, person)
    assert code == 0, where
    (repo / PATHS["design"]).write_text(json.dumps(good()["design"] | {"data": []}, indent=1))
    _code, where = driver.flow("spec")  # the design is reopened
    envelope = driver.work(where["instruction"])
    plan = json.loads((repo / PLAN_PATH).read_text())
    plan["spec"]["ids"]["design"] = []  # the published ids dropped: stability escaped
    (repo / PLAN_PATH).write_text(json.dumps(plan))
    code, answer = driver.submit(envelope)
    assert code == 4 and answer["status"] == "refused", answer
    assert PLAN_PATH in json.dumps(answer["error"]), answer


def test_a_kept_approval_the_flow_file_claims_and_no_gate_showed_does_not_count(
        repo: Path, cli: Cli, person: Callable[[str], str]) -> None:
    """The documents kept from an earlier run are listed in .rein/spec/flow.json, which the
    agent may write. Editing an approved document and writing its new digest there must
    not keep it from being reopened, nor publish it without a person seeing it."""
    driver = SpecDriver(repo, cli)
    code, where = drive(driver, person)
    assert (code, where["reason"]) == (0, "ready"), where
    design = json.loads((repo / PATHS["design"]).read_text())  # a person edits the design:
    design["decisions"][0]["reason"] = "callers asked for exact values"  # reopened from it
    (repo / PATHS["design"]).write_text(json.dumps(design))
    driver.bundle["design"] = design
    code, where = driver.flow("spec")
    assert [d["status"] for d in where["documents"]][:3] == ["approved", "approved",
                                                             "writing"], where
    code, _pending = driver.submit(driver.work(where["instruction"]))
    assert code == 3  # the design waits for a person; no instruction is pending meanwhile
    # The agent: the requirements (kept from the first run) changed, the change "approved".
    requirements = repo / PATHS["requirements"]
    edited = json.loads(requirements.read_text())
    edited["requirements"][0]["statement"] += " (FORGED)"
    requirements.write_text(json.dumps(edited))
    flow_file = repo / ".rein" / "spec" / "flow.json"
    flow = json.loads(flow_file.read_text())
    flow["approved"][PATHS["requirements"]] = \
        "sha256:" + hashlib.sha256(requirements.read_bytes()).hexdigest()
    flow_file.write_text(json.dumps(flow))

    driver.seen.clear()
    code, where = drive(driver, person)
    assert (code, where["reason"]) == (0, "ready"), where
    # Reopened when the design's run ended, written again, and shown to the person.
    assert [i["node"] for i in driver.seen] == [
        "write_acceptance", "write_readiness", "write_requirements", "write_design",
        "write_acceptance", "write_readiness"]
    assert "FORGED" not in (repo / PLAN_PATH).read_text()


def test_a_kept_approval_of_a_version_a_person_approved_a_change_of_since_does_not_count(
        repo: Path, cli: Cli, person: Callable[[str], str]) -> None:
    """A person approved the requirements, then a change of them. Later, while a reopened
    design waits for its gate (no instruction out), the agent puts the first version back
    and names its digest as kept in .rein/spec/flow.json: an accepted gate did show that
    digest once, but the person's last word on the file is the change."""
    driver = SpecDriver(repo, cli)
    code, where = drive(driver, person)
    assert (code, where["reason"]) == (0, "ready"), where
    requirements = repo / PATHS["requirements"]
    first = requirements.read_bytes()
    changed = json.loads(first)
    changed["requirements"][0]["statement"] += " Results are rounded to 2 decimals."
    requirements.write_text(json.dumps(changed, indent=2))  # a person's change, approved
    driver.bundle["requirements"] = changed
    code, where = drive(driver, person)
    assert (code, where["reason"]) == (0, "ready"), where
    design = json.loads((repo / PATHS["design"]).read_text())
    design["decisions"][0]["reason"] = "callers asked for exact values"
    (repo / PATHS["design"]).write_text(json.dumps(design))  # reopened from the design
    driver.bundle["design"] = design
    code, where = driver.flow("spec")
    code, _pending = driver.submit(driver.work(where["instruction"]))
    assert code == 3  # the design waits for a person
    requirements.write_bytes(first)
    flow_file = repo / ".rein" / "spec" / "flow.json"
    flow = json.loads(flow_file.read_text())
    flow["approved"][PATHS["requirements"]] = "sha256:" + hashlib.sha256(first).hexdigest()
    flow["runs"] = flow["runs"][:1] + flow["runs"][2:]  # the run that approved the change
    flow_file.write_text(json.dumps(flow))

    driver.seen.clear()
    code, where = drive(driver, person)
    assert (code, where["reason"]) == (0, "ready"), where
    assert [i["node"] for i in driver.seen][:3] == [
        "write_acceptance", "write_readiness", "write_requirements"]
    assert "rounded to 2 decimals" in (repo / PLAN_PATH).read_text()


def test_the_documents_shown_approved_are_not_the_flow_file_s_word(
        repo: Path, cli: Cli, person: Callable[[str], str]) -> None:
    """While the charter's gate waits, the agent writes in .rein/spec/flow.json that the run
    starts after the last document: `rein spec status` must not show the person, asked
    about the charter, every document as approved."""
    driver = SpecDriver(repo, cli)
    _code, where = driver.flow("spec")
    code, _pending = driver.submit(driver.work(where["instruction"]))
    assert code == 3  # the charter waits for a person
    flow_file = repo / ".rein" / "spec" / "flow.json"
    flow = json.loads(flow_file.read_text())
    flow["start"] = 5
    flow_file.write_text(json.dumps(flow))
    code, where = cli.json("spec", "status")
    assert [d["status"] for d in where["documents"]] == ["accepted"] + ["planned"] * 4, where
    assert where["message"] == "waiting for a person to approve specs/active/10-charter.json"


def test_an_earlier_run_named_as_the_current_one_does_not_publish_what_it_approved(
        repo: Path, cli: Cli, person: Callable[[str], str]) -> None:
    """The first run approved every document; a later one approved a change of the
    requirements. While a third run's gate waits, the agent names the first run as the
    current one in .rein/spec/flow.json and puts its documents back: its approvals are
    not the person's last word on the requirements, so nothing of it is published."""
    driver = SpecDriver(repo, cli)
    code, where = drive(driver, person)
    assert (code, where["reason"]) == (0, "ready"), where
    first_run = where["run_id"]
    first = {name: (repo / path).read_bytes() for name, path in PATHS.items()}
    changed = json.loads(first["requirements"])
    changed["requirements"][0]["statement"] += " Results are rounded to 2 decimals."
    (repo / PATHS["requirements"]).write_text(json.dumps(changed, indent=2))
    driver.bundle["requirements"] = changed
    code, where = drive(driver, person)
    assert (code, where["reason"]) == (0, "ready"), where
    design = json.loads((repo / PATHS["design"]).read_text())
    design["decisions"][0]["reason"] = "callers asked for exact values"
    (repo / PATHS["design"]).write_text(json.dumps(design))
    driver.bundle["design"] = design
    _code, where = driver.flow("spec")
    code, _pending = driver.submit(driver.work(where["instruction"]))
    assert code == 3  # the design waits for a person
    for name, content in first.items():
        (repo / PATHS[name]).write_bytes(content)
    flow_file = repo / ".rein" / "spec" / "flow.json"
    flow = json.loads(flow_file.read_text())
    flow["run"] = first_run
    flow_file.write_text(json.dumps(flow))
    published = (repo / PLAN_PATH).read_text()

    code, where = driver.flow("spec")
    assert where["reason"] == "waiting" and where["run_id"] != first_run, where
    assert (repo / PLAN_PATH).read_text() == published  # not published again
    assert "reopened specs/active/20-requirements.json: it was edited after it was " \
        "approved" in where["notices"], where
