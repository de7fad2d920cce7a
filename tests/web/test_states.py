"""One vocabulary of states: every badge and every box of every page comes from
rein.web.states, and that table names every state the engine has."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import pytest

from rein.core.states import ApprovalStatus, AttemptStatus, NodeStatus, RunStatus
from rein.web import pages_dev, pages_spec
from rein.web.states import STATES, TONES, look
from tests.web.conftest import Console


class _Badges(HTMLParser):
    """Every element classed ``status`` (its classes, data-state, text) and every box of
    the picture (data-status, data-tone)."""

    def __init__(self) -> None:
        super().__init__()
        self.badges: list[list[Any]] = []
        self.boxes: list[tuple[str, str]] = []
        self._open: list[Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if "status" in classes:
            self._open = [classes, a.get("data-state"), ""]
            self.badges.append(self._open)
        if tag == "g" and "node" in classes:
            self.boxes.append((a.get("data-status") or "", a.get("data-tone") or ""))

    def handle_endtag(self, tag: str) -> None:
        self._open = None

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open[2] += data


def wrong(html: str) -> list[str]:
    """What on a page is not in the vocabulary (empty when everything is)."""
    p = _Badges()
    p.feed(html)
    out = []
    for classes, state, text in p.badges:
        if state not in STATES:
            out.append(f"badge {classes} {text!r}: state {state!r} is not in the vocabulary")
        elif classes != ["status", f"tone-{look(state).tone}"] or text != look(state).label:
            out.append(f"badge {classes} {text!r} of {state!r}: not the vocabulary's look")
    for state, tone in p.boxes:
        if state not in STATES or tone != look(state).tone:
            out.append(f"box {state!r} drawn {tone!r}")
    return out


def test_the_vocabulary_names_every_engine_state_in_a_known_tone() -> None:
    for enum in (RunStatus, NodeStatus, AttemptStatus, ApprovalStatus):
        for member in enum:
            assert member.value in STATES, f"{enum.__name__}.{member.name}"
    assert {v.tone for v in STATES.values()} <= set(TONES)


def test_the_checker_finds_a_badge_of_its_own() -> None:
    assert wrong('<span class="status succeeded">succeeded</span>') != []
    assert wrong('<span class="status tone-good" data-state="succeeded">done</span>') != []
    assert wrong('<span class="status tone-good" data-state="succeeded">succeeded</span>') == []


def test_every_page_of_a_run_uses_the_vocabulary(console: Console) -> None:
    console.login()
    run_id = console.start("g.agraph.yaml")
    [ok] = console.pending()
    console.post(f"/approvals/{ok.approval_id}", {"action": "accept", "digest": ok.digest})
    assert console.steering is not None and console.steering.idle(60)
    pages = {path: console.client.get(path).text for path in (
        "/", f"/runs/{run_id}", "/approvals", f"/approvals?run={run_id}", "/threads",
        "/dev", "/spec", f"/runs/{run_id}/report")}
    pages["fragment"] = "".join(
        console.client.get(f"/runs/{run_id}/fragment?keys=work,ok,ask&svg=1&approvals=1")
        .json()[k] or "" for k in ("svg", "approvals"))
    found = {path: wrong(html) for path, html in pages.items()}
    assert found == {path: [] for path in pages}
    run_page = pages[f"/runs/{run_id}"]
    for state in ("awaiting_human", "succeeded", "accepted", "pending"):
        assert f'data-state="{state}"' in run_page  # the run, nodes, answers, the card


@pytest.mark.parametrize("reason", ["waiting", "done", "failed", "blocked", "timeout",
                                    "budget", "cancelled"])
def test_the_development_flow_uses_the_vocabulary(reason: str) -> None:
    snap = {"reason": reason, "message": "m", "next_action": "n", "clean_context": None,
            "stage": "features", "plan_id": "p", "planning_run": None, "features_run": None,
            "context_policy": "fresh",
            "features": [{"id": f"f{i}", "title": "t", "status": s, "attempts": 1,
                          "depends_on": [], "commit": None, "last_failure": None,
                          "checks": [{"attempt": 1, "status": s, "error": None,
                                      "results": []}]}
                         for i, s in enumerate(("planned", "running", "succeeded", "failed"))]}
    assert wrong(pages_dev.section(snap)) == []


@pytest.mark.parametrize("reason", ["waiting", "ready", "changed", "failed", "timeout",
                                    "budget", "cancelled"])
def test_the_specification_flow_uses_the_vocabulary(reason: str) -> None:
    snap = {"reason": reason, "message": "m", "next_action": "n", "spec_id": "s",
            "run_id": "run-1", "plan": "p", "published": None, "notices": [],
            "documents": [{"document": f"d{i}", "path": f"specs/d{i}.md", "title": "t",
                           "status": s, "attempts": 1}
                          for i, s in enumerate(("planned", "writing", "accepted", "approved",
                                                 "failed", "cancelled", "not run"))]}
    assert wrong(pages_spec.section(snap)) == []
