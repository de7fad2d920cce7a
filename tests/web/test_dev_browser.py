"""The development flow's page in real headless Chromium against a real ``rein serve``: the
page is left open while an agent (the scripted driver) and a person advance the flow from
this process, and the features change state on it without a reload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.web.browser import served, why_not
from tests.web.dev_env import driver, repository, step

pytestmark = pytest.mark.skipif(why_not() is not None, reason=str(why_not()))

WAIT = 30_000  # ms: an upper bound on waiting, not a pause
FEATURE = "[data-feature='{}'].status[data-state='{}']"


def test_the_dev_page_shows_features_changing_state(
        browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = repository(tmp_path / "project")
    monkeypatch.chdir(root)
    monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "no-user.toml"))
    for name in ("REIN_DEV_TARGET", "REIN_DEV_VERIFY", "REIN_CONTEXT_USAGE_JSON"):
        monkeypatch.delenv(name, raising=False)
    d = driver(root)
    step(d)  # the planning run exists and its plan is submitted
    with served(root) as url:
        base = url.split("/?")[0]
        page = browser.new_page()
        page.goto(url)
        page.click("text=Dev flow")
        page.wait_for_url(f"{base}/dev", timeout=WAIT)
        page.wait_for_selector(FEATURE.format("c_to_f", "planned"), timeout=WAIT)
        page.evaluate("window.notReloaded = true")
        step(d)  # a person accepts the feature graph
        step(d)  # the feature run starts; c_to_f's first attempt fails its verify
        page.wait_for_selector("[data-stop='waiting'] >> text=feature c_to_f", timeout=WAIT)
        page.wait_for_selector("[data-feature-detail='c_to_f'] [data-check='verify']"
                               "[data-passed='false']", state="attached", timeout=WAIT)
        step(d)  # the repair passes and is committed
        page.wait_for_selector(FEATURE.format("c_to_f", "succeeded"), timeout=WAIT)
        for _ in range(10):
            if step(d)["reason"] == "done":
                break
        page.wait_for_selector("[data-stop='done']", timeout=WAIT)
        for feature in ("c_to_f", "f_to_c", "table"):
            assert page.locator(FEATURE.format(feature, "succeeded")).count() == 1
        assert page.evaluate("window.notReloaded") is True
        page.close()
