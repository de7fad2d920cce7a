"""Screenshots of the web console from a real run, for docs/web.md.

Copies examples/no-worker.agraph.yaml into a temporary workspace with one more node, an
approval gate at the end, starts ``rein serve`` there, runs the graph from the plan view in
headless Chromium (Debian's ``chromium`` through Playwright), and saves the run page and the
approval queue while the run waits at that gate. Then a thread: a conversation turn of the
scripted provider that ran a command and now asks to run another, and a development flow
driven by the flow's scripted agent until its first feature was repaired and committed.

    python scripts/web_screenshots.py            # writes docs/images/web-*.png
    python scripts/web_screenshots.py thread dev # only these pages
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.web.browser import launched, served, why_not

OUT = ROOT / "docs" / "images"


def workspace(folder: Path) -> None:
    data = yaml.safe_load((ROOT / "examples" / "no-worker.agraph.yaml").read_text())
    data["nodes"]["publish"] = {
        "type": "gate", "title": "Approve the release", "depends_on": ["verdict", "announce_start"],
        "description": "A person approves publishing with the verdict in front of them.",
        "gate": {"mode": "approve", "prompt": "Publish the release? Verdict: "
                 "${{ nodes.verdict.outputs.verdict }}",
                 "present": ["nodes.verdict.outputs.verdict"]}}
    data["outputs"]["verdict"]["from"] = "nodes.verdict.outputs.verdict"
    (folder / "release.agraph.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def thread_shot(browser: Any) -> list[Path]:
    """A thread's page: the turn's items, and its command question open."""
    from tests.web import threads_env

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ["REIN_USER_CONFIG"] = str(folder / "none.toml")
        threads_env.configure(folder)
        thread_id, _ = threads_env.waiting_thread(folder, name="Tidy the notes")
        with served(folder) as url:
            base = url.split("/?")[0]
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(url)
            page.goto(f"{base}/threads/{thread_id}")
            page.wait_for_selector("[data-question]", timeout=30_000)
            page.screenshot(path=str(OUT / "web-thread.png"), full_page=False)
            page.close()
    return [OUT / "web-thread.png"]


def dev_shot(browser: Any) -> list[Path]:
    """The development flow's page once its first feature was repaired and committed."""
    from tests.web import dev_env

    with tempfile.TemporaryDirectory() as tmp:
        root = dev_env.repository(Path(tmp) / "tempconv")
        os.environ["REIN_USER_CONFIG"] = str(Path(tmp) / "none.toml")
        here, path = os.getcwd(), os.environ["PATH"]
        os.chdir(root)  # the command line works on the current directory
        # The verify commands name `python`, as a plan would, not this interpreter's path.
        os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{path}"
        try:
            agent = dev_env.driver(root, python="python")
            for _ in range(5):  # plan, approve, c_to_f twice (its first try is wrong), f_to_c
                dev_env.step(agent)
            with served(root) as url:
                base = url.split("/?")[0]
                page = browser.new_page(viewport={"width": 1440, "height": 900})
                page.goto(url)
                page.goto(f"{base}/dev")
                page.click("[data-feature-detail='c_to_f'] summary")
                page.screenshot(path=str(OUT / "web-dev.png"), full_page=False)
                page.close()
        finally:
            os.chdir(here)
            os.environ["PATH"] = path
    return [OUT / "web-dev.png"]


def main(argv: list[str] | None = None) -> int:
    wanted = set(argv if argv is not None else sys.argv[1:]) or {"run", "thread", "dev"}
    reason = why_not()
    if reason is not None:
        print(f"cannot take screenshots: {reason}", file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    taken: list[Path] = []
    if "thread" in wanted or "dev" in wanted:
        with launched() as browser:
            if "thread" in wanted:
                taken += thread_shot(browser)
            if "dev" in wanted:
                taken += dev_shot(browser)
    if "run" in wanted:
        taken += run_shots()
    for path in taken:
        print(path)
    return 0


def run_shots() -> list[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        workspace(folder)
        os.environ["REIN_USER_CONFIG"] = str(folder / "none.toml")
        with served(folder) as url, launched() as browser:
            base = url.split("/?")[0]
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(url)
            page.goto(f"{base}/plan?path=release.agraph.yaml")
            page.screenshot(path=str(OUT / "web-plan.png"), full_page=False)
            page.click("text=Approve and run")
            page.wait_for_selector('g.node[data-node="publish"][data-status="awaiting_human"]',
                                   timeout=30_000)
            page.reload()  # the node list is rendered at load; the picture was live
            page.screenshot(path=str(OUT / "web-run.png"), full_page=False)
            page.goto(f"{base}/approvals")
            page.click("summary")  # what is shown, opened
            page.screenshot(path=str(OUT / "web-approvals.png"), full_page=False)
    return [OUT / name for name in ("web-plan.png", "web-run.png", "web-approvals.png")]


if __name__ == "__main__":
    raise SystemExit(main())
