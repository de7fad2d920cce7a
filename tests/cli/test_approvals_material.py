"""An approval binds the content of the files it shows, not their names: a file edited after it
was presented is refused at answer time (APPROVAL_STALE) and never approved by an old answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.test_run_commands import GATED
from tests.scenarios.harness import Scenario


@pytest.fixture
def presents_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Scenario:
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    scenario = Scenario(tmp_path, monkeypatch, capsys)
    data = json.loads(json.dumps(GATED))
    data["nodes"]["work"]["outputs"] = {"notes": {"type": "file", "description": "Notes."}}
    data["nodes"]["work"]["requirements"] = {"workspace": "read_write",
                                             "permissions": ["fs:write:notes.md"]}
    data["nodes"]["ok"]["gate"]["present"] = ["nodes.work.outputs.notes"]
    scenario.file("g.agraph.yaml", yaml.safe_dump(data, sort_keys=False))
    scenario.answers({"nodes": {"work": [{"outputs": {"notes": "notes.md"},
                                          "files": {"notes.md": "reviewed text\n"}}]}})
    code, _ = scenario.run("g.agraph.yaml")
    assert code == 3
    return scenario


def test_the_request_binds_the_content_of_the_presented_file(presents_a_file: Scenario
                                                             ) -> None:
    from rein.engine.run.material import shown_files

    [pending] = presents_a_file.pending()
    assert pending["request"]["files"] == shown_files(presents_a_file.root, ["notes.md"])
    assert set(pending["request"]["files"]) == {"notes.md"}


def test_an_accept_of_a_file_edited_after_it_was_shown_is_refused(presents_a_file: Scenario
                                                                 ) -> None:
    [pending] = presents_a_file.pending()
    presents_a_file.file("notes.md", "something else entirely\n")
    code, out = presents_a_file.rein("approvals", "accept", pending["approval_id"], "--json")
    assert code == 4
    error = json.loads(out)["error"]
    assert error["code"] == "APPROVAL_STALE" and "notes.md" in error["message"]
    assert [p["approval_id"] for p in presents_a_file.pending()] == [pending["approval_id"]]


def test_a_stale_approval_can_be_declined_and_the_current_content_is_asked_about(
        presents_a_file: Scenario) -> None:
    """A decline approves nothing: a changed file does not keep a person from closing the
    entry. The run asks about the content as it is now, in a new entry."""
    [pending] = presents_a_file.pending()
    presents_a_file.file("notes.md", "something else entirely\n")
    code, out = presents_a_file.rein("approvals", "decline", pending["approval_id"],
                                     "--note", "not this", "--json")
    assert code == 3, out
    code, out = presents_a_file.rein("approvals", "show", pending["approval_id"], "--json")
    assert json.loads(out)["status"] == "declined"
    [again] = presents_a_file.pending()
    assert again["approval_id"] != pending["approval_id"]
    code, _ = presents_a_file.rein("approvals", "accept", again["approval_id"])
    assert code == 0


def test_a_stale_approval_can_be_cancelled_and_the_cancel_stops_the_run(
        presents_a_file: Scenario) -> None:
    [pending] = presents_a_file.pending()
    presents_a_file.file("notes.md", "something else entirely\n")
    code, out = presents_a_file.rein("approvals", "cancel", pending["approval_id"], "--json")
    assert code != 4, out
    assert presents_a_file.pending() == []  # nothing asked about the new content
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    said = [e["payload"]["message"] for e in events if e.get("type") == "diagnostic"
            and e["payload"].get("code") == "RUN_CANCELLED"]
    assert said == [f"cancelled through approval {pending['approval_id']}"]


def test_resume_closes_the_approval_it_replaces(presents_a_file: Scenario) -> None:
    """`rein resume` presents changed content as a new approval and cancels the one it
    replaces, with an event naming the new one: a single entry is pending."""
    [pending] = presents_a_file.pending()
    presents_a_file.file("notes.md", "edited while it waited\n")
    run_id = presents_a_file.last_run()
    code, _ = presents_a_file.rein("resume", run_id)
    assert code == 3
    [again] = presents_a_file.pending()
    assert again["approval_id"] != pending["approval_id"]
    code, out = presents_a_file.rein("approvals", "show", pending["approval_id"], "--json")
    old = json.loads(out)
    assert old["status"] == "cancelled"
    assert old["answer"]["superseded_by"] == again["approval_id"]
    assert old["answer"]["note"] == (f"superseded by {again['approval_id']}: notes.md "
                                     "changed since it was presented")
    code, out = presents_a_file.rein("runs", "events", run_id, "--json")
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    closed = [e for e in events if e.get("type") == "approval/answered"
              and (e.get("payload") or {}).get("approval_id") == pending["approval_id"]]
    [event] = closed
    assert event["payload"]["superseded_by"] == again["approval_id"]
    asked = [e for e in events if e.get("type") == "approval/requested"
             and (e.get("payload") or {}).get("approval_id") == again["approval_id"]]
    assert asked[0]["seq"] + 1 == event["seq"]  # written together, the new one first
    # The content put back is asked about afresh, not taken for the closed entry.
    presents_a_file.file("notes.md", "reviewed text\n")
    code, _ = presents_a_file.rein("resume", run_id)
    assert code == 3
    [third] = presents_a_file.pending()
    assert third["approval_id"] not in (pending["approval_id"], again["approval_id"])
    assert third["request"]["files"] == pending["request"]["files"]
    code, _ = presents_a_file.rein("approvals", "accept", third["approval_id"])
    assert code == 0


def test_an_answer_does_not_approve_content_edited_after_it(presents_a_file: Scenario) -> None:
    [pending] = presents_a_file.pending()
    code, _ = presents_a_file.rein("approvals", "accept", pending["approval_id"],
                                   "--no-continue")
    assert code == 0
    presents_a_file.file("notes.md", "swapped in after the answer\n")
    code, _ = presents_a_file.rein("resume", presents_a_file.last_run())
    assert code == 3  # the edited content is asked about afresh
    [again] = presents_a_file.pending()
    assert again["approval_id"] != pending["approval_id"]
    assert again["request"]["files"] != pending["request"]["files"]
    code, _ = presents_a_file.rein("approvals", "accept", again["approval_id"])
    assert code == 0


def test_directories_are_bound_by_every_file_under_them(tmp_path: Path) -> None:
    from rein.engine.run.material import shown_files

    (tmp_path / "site" / "img").mkdir(parents=True)
    (tmp_path / "site" / "index.html").write_text("<p>one</p>")
    (tmp_path / "site" / "img" / "a.svg").write_text("<svg/>")
    first = shown_files(tmp_path, {"out": "site", "text": "no such file", "up": "../x"})
    assert set(first) == {"site"}
    (tmp_path / "site" / "img" / "a.svg").write_text("<svg>changed</svg>")
    assert shown_files(tmp_path, ["site"]) != first


@pytest.mark.parametrize("verb", ["accept", "decline", "cancel"])
def test_an_answer_to_an_entry_rein_closed_names_the_one_that_replaced_it(
        presents_a_file: Scenario, verb: str) -> None:
    """An entry `rein resume` superseded was closed by rein, not by a person: an answer to
    it (a person who typed the id they were shown earlier) is refused with the id of the
    entry that asks the same now, and nothing is recorded; the cancel of the new entry is
    what stops the run."""
    [pending] = presents_a_file.pending()
    presents_a_file.file("notes.md", "edited while it waited\n")
    run_id = presents_a_file.last_run()
    assert presents_a_file.rein("resume", run_id)[0] == 3
    [again] = presents_a_file.pending()
    before = presents_a_file.rein("runs", "events", run_id, "--json")[1]
    code, out = presents_a_file.rein("approvals", verb, pending["approval_id"], "--json")
    assert code == 4, out
    error = json.loads(out)["error"]
    assert error["code"] == "APPROVAL_ANSWERED"
    assert "closed by rein" in error["message"] and "notes.md changed" in error["message"]
    assert f"rein approvals show {again['approval_id']}" in error["hint"]
    assert presents_a_file.rein("runs", "events", run_id, "--json")[1] == before
    assert [p["approval_id"] for p in presents_a_file.pending()] == [again["approval_id"]]
