"""The console's rules: token → cookie, sessions, Host, Origin and CSRF on changes,
read-only, bounded bodies, and no file outside the workspace through the plan view."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rein.web.auth import COOKIE, MAX_BODY
from tests.web.conftest import TOKEN, Console, make_console


def test_the_token_becomes_an_http_only_strict_cookie(console: Console) -> None:
    r = console.client.get(f"/plans?token={TOKEN}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/plans"  # the token is gone
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert console.client.get("/plans").status_code == 200


@pytest.mark.parametrize("path", ["/", "/plans", "/approvals", "/plan?path=g.agraph.yaml",
                                  "/runs/x", "/runs/x/events", "/runs/x/record", "/runs.stream"])
def test_every_page_needs_a_session(console: Console, path: str) -> None:
    r = console.client.get(path)
    assert r.status_code == 401 and "WEB401" in r.text


def test_a_wrong_token_or_cookie_is_refused(console: Console) -> None:
    r = console.client.get("/?token=" + "x" * 40, follow_redirects=False)
    assert r.status_code == 401 and "WEB401" in r.text
    console.client.cookies.set(COOKIE, "made-up")
    assert console.client.get("/").status_code == 401


def test_another_host_is_refused_before_anything(console: Console) -> None:
    console.login()
    r = console.client.get("/", headers={"host": "evil.example:8765"})
    assert r.status_code == 421 and "WEB421" in r.text
    r = console.client.get(f"/?token={TOKEN}", headers={"host": "evil.example"},
                           follow_redirects=False)
    assert r.status_code == 421


def test_a_change_needs_the_session_origin_and_csrf(console: Console) -> None:
    console.login()
    data = {"path": "g.agraph.yaml", "digest": console.digest("g.agraph.yaml")}
    r = console.post("/plan/run", data, origin="http://evil.example")
    assert r.status_code == 403 and "WEB402" in r.text
    r = console.post("/plan/run", data, origin=None)  # neither Origin nor Referer
    assert r.status_code == 403 and "WEB402" in r.text
    r = console.post("/plan/run", data, csrf=False)
    assert r.status_code == 403 and "WEB402" in r.text
    r = console.post("/plan/run", {**data, "csrf": "0" * 64}, csrf=False)
    assert r.status_code == 403
    assert console.harness.store.list_runs() == []  # nothing was started
    console.client.cookies.clear()
    r = console.post("/plan/run", {**data, "csrf": "0" * 64}, csrf=False)
    assert r.status_code == 401
    assert console.harness.store.list_runs() == []


def test_a_referer_of_this_console_stands_in_for_a_missing_origin(console: Console) -> None:
    console.login()
    data = {"path": "g.agraph.yaml", "digest": console.digest("g.agraph.yaml"),
            "csrf": console.csrf()}
    r = console.client.post("/plan/run", data=data, follow_redirects=False,
                            headers={"referer": "http://testserver/plan?path=g.agraph.yaml"})
    assert r.status_code == 303


def test_a_body_over_the_limit_is_refused(console: Console) -> None:
    console.login()
    r = console.post("/plan/run", {"path": "g.agraph.yaml", "pad": "x" * (MAX_BODY + 1)})
    assert r.status_code == 413 and "WEB413" in r.text


@pytest.fixture
def read_only(workspace: Path) -> Iterator[Console]:
    yield from make_console(workspace, read_only=True)


def test_read_only_shows_but_refuses_every_change(read_only: Console) -> None:
    read_only.login()
    page = read_only.client.get("/plan?path=g.agraph.yaml")
    assert page.status_code == 200 and "Approve and run" not in page.text
    r = read_only.post("/plan/run", {"path": "g.agraph.yaml",
                                     "digest": read_only.digest("g.agraph.yaml")})
    assert r.status_code == 403 and "WEB403" in r.text
    assert read_only.harness.store.list_runs() == []


@pytest.mark.parametrize("given", [
    "../outside.agraph.yaml", "/etc/passwd", "sub/../../outside.agraph.yaml",
    "link.agraph.yaml", "notes.txt", "missing.agraph.yaml", "", "a\0b",
    "%2e%2e/outside.agraph.yaml", "sub",
])
def test_the_plan_view_reads_nothing_outside_the_workspace(console: Console, given: str) -> None:
    outside = console.root.parent / "outside.agraph.yaml"
    outside.write_text((console.root / "g.agraph.yaml").read_text().replace("gated", "SECRET"))
    (console.root / "notes.txt").write_text("SECRET")
    (console.root / "sub").mkdir(exist_ok=True)
    link = console.root / "link.agraph.yaml"
    if not link.exists():
        link.symlink_to(outside)
    console.login()
    r = console.client.get("/plan", params={"path": given})
    assert r.status_code == 404 and "WEB404" in r.text
    assert "SECRET" not in r.text
    r = console.post("/plan/run", {"path": given, "digest": "sha256-x"})
    assert r.status_code == 404 and console.harness.store.list_runs() == []
