"""The one "did you mean" helper: near names, case, prefixes, and silence when nothing is
near."""

from __future__ import annotations

from rein.core.suggest import closest, did_you_mean, with_suggestion

COMMANDS = ["approvals", "config", "driver", "graph", "init", "next", "profile", "resume",
            "run", "runs", "submit"]


def test_one_typo_finds_the_command() -> None:
    assert did_you_mean("grpah", COMMANDS) == "did you mean 'graph'?"
    assert did_you_mean("aprovals", COMMANDS) == "did you mean 'approvals'?"


def test_only_the_case_differs() -> None:
    assert closest("Graph", COMMANDS) == ["graph"]


def test_a_prefix_left_unfinished() -> None:
    assert closest("appr", COMMANDS) == ["approvals"]


def test_equally_near_names_are_all_offered_and_a_clear_winner_alone() -> None:
    assert closest("rnu", ["run", "runs"]) == ["run"]
    assert did_you_mean("project_trsut", ["project_trust", "project_hooks"]) == (
        "did you mean 'project_trust'?")
    assert did_you_mean("ab", ["abc", "abd"]) == "did you mean one of 'abc', 'abd'?"


def test_nothing_near_says_nothing() -> None:
    assert did_you_mean("xyz", COMMANDS) is None
    assert did_you_mean("graph", []) is None
    assert with_suggestion("see the list", "xyz", COMMANDS) == "see the list"


def test_the_suggestion_leads_an_existing_hint() -> None:
    assert with_suggestion("known keys: id, roles", "role", ["id", "roles"]) == (
        "did you mean 'roles'? (known keys: id, roles)")
    assert with_suggestion(None, "role", ["id", "roles"]) == "did you mean 'roles'?"
