"""Screenshots of the web console from a real run, for docs/web.md.

Copies examples/no-worker.agraph.yaml into a temporary workspace with one more node, an
approval gate at the end, starts ``rein serve`` there, runs the graph from the plan view in
headless Chromium (Debian's ``chromium`` through Playwright), and saves the run page and the
approval queue while the run waits at that gate.

    python scripts/web_screenshots.py            # writes docs/images/web-*.png
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

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


def main() -> int:
    reason = why_not()
    if reason is not None:
        print(f"cannot take screenshots: {reason}", file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
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
    for name in ("web-plan.png", "web-run.png", "web-approvals.png"):
        print(OUT / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
