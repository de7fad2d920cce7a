"""The web console: from an event in the store to the DOM change in the browser, and what
the server spends while 20 tabs follow a 500-node run.

    .venv/bin/python benchmarks/web.py [--gates 20] [--nodes 500] [--tabs 20] [--repeat 3]

Needs Playwright and Debian's chromium (scripts/system-deps.sh). Everything runs against a
real ``rein serve`` subprocess in a temporary workspace.

1. **Latency.** A chain of approve gates; a run page is open with a MutationObserver that
   stamps ``Date.now()`` on every ``data-status`` change. Each gate is answered and the time
   from the ``node/finished`` event's ``at`` (written before its commit, so the figure errs
   high) to the stamp of that node turning ``succeeded`` is one sample. Two ways in: the
   answer posted to the console (the commit is in the server process, which wakes its
   watcher at once), and ``rein approvals accept`` then ``rein resume`` from other
   processes (found by the console's one watcher of the store, which looks at SQLite's
   change number every 10 ms and then reads the run's new events once for every tab).
   The reference is the goal, 100 ms.
2. **Load.** A graph of one gate then ``--nodes`` expression decisions (layers of 10). With
   0 tabs (the reference: the run alone) and with ``--tabs`` tabs on the run page, the gate
   is accepted and the server's CPU time (utime + stime of /proc/PID/stat) and peak RSS
   (VmHWM) are read once every tab shows the run ``succeeded``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.web.browser import launched, why_not

OBSERVE = """() => {
  window.__stamps = [];
  new MutationObserver((ms) => { for (const m of ms) {
    window.__stamps.push([m.target.getAttribute('data-node'), m.target.getAttribute('data-status'),
                          Date.now()]); } })
    .observe(document.querySelector('svg.dag'), {attributes: true, subtree: true,
                                                 attributeFilter: ['data-status']});
}"""


def gate(name: str, after: list[str]) -> dict[str, Any]:
    return {"type": "gate", "title": name, "description": "Approve.", "depends_on": after,
            "gate": {"mode": "approve", "prompt": f"{name}?"}}


def chain_graph(n: int) -> dict[str, Any]:
    nodes = {f"g{i:02d}": gate(f"g{i:02d}", [f"g{i - 1:02d}"] if i else []) for i in range(n)}
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": "bench/web-chain",
            "title": "chain", "objective": "bench", "requires_conformance": 3,
            "entrypoints": ["g00"], "nodes": nodes}


def wide_graph(n: int) -> dict[str, Any]:
    nodes: dict[str, Any] = {"go": gate("go", [])}
    for i in range(n):
        layer = i // 10
        deps = ["go"] if layer == 0 else [f"d{(layer - 1) * 10 + (i % 10):03d}"]
        nodes[f"d{i:03d}"] = {"type": "decision", "title": f"d{i:03d}", "description": "d",
                              "depends_on": deps, "decision": {
                                  "evaluator": "expression", "default_branch": "x",
                                  "branches": [{"label": "x", "when": "true",
                                                "description": "x"}]}}
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": "bench/web-wide",
            "title": "wide", "objective": "bench", "requires_conformance": 3,
            "constraints": {"max_node_executions": n + 10}, "entrypoints": ["go"],
            "nodes": nodes}


def rein(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from rein.cli import run; run()", *args],
                          cwd=folder, capture_output=True, text=True, env=os.environ.copy(),
                          check=False)


class Server:
    def __init__(self, folder: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from rein.cli import run; run()", "serve", "--port", "0"],
            cwd=folder, stdout=subprocess.PIPE, text=True, env=os.environ.copy())
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        self.base = self.url.split("/?")[0]

    def usage(self) -> tuple[float, float]:
        """(CPU seconds so far, peak RSS in MB) of the server process."""
        stat = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
        hwm = re.search(r"VmHWM:\s+(\d+) kB", Path(f"/proc/{self.proc.pid}/status").read_text())
        return cpu, int(hwm.group(1)) / 1024 if hwm else 0.0

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def start(page: Any, base: str, path: str) -> str:
    page.goto(f"{base}/plan?path={path}")
    page.click("text=Approve and run")
    page.wait_for_url(f"{base}/runs/run-*")
    return str(page.url.rsplit("/", 1)[-1])


def at_ms(text: str) -> float:
    return dt.datetime.fromisoformat(text).timestamp() * 1000


def latency(browser: Any, folder: Path, gates: int) -> dict[str, list[float]]:
    (folder / "chain.agraph.yaml").write_text(yaml.safe_dump(chain_graph(gates)))
    server = Server(folder)
    out: dict[str, list[float]] = {"posted to the console": [], "another process": []}
    try:
        context = browser.new_context()
        watch, answer = context.new_page(), context.new_page()
        watch.goto(server.url)
        for way, samples in out.items():
            run_id = start(watch, server.base, "chain.agraph.yaml")
            watch.wait_for_selector('g.node[data-node="g00"][data-status="awaiting_human"]')
            watch.evaluate(OBSERVE)
            for i in range(gates):
                node = f"g{i:02d}"
                watch.wait_for_selector(f'g.node[data-node="{node}"][data-status="awaiting_human"]')
                if way == "posted to the console":
                    answer.goto(f"{server.base}/approvals?run={run_id}")
                    answer.click("form.answer button[value=accept]")
                else:
                    listed = json.loads(rein(folder, "approvals", "list", "--json").stdout)
                    [apv] = [a for a in listed["approvals"] if a["run_id"] == run_id]
                    rein(folder, "approvals", "accept", apv["approval_id"], "--no-continue")
                    rein(folder, "resume", run_id)
                watch.wait_for_selector(f'g.node[data-node="{node}"][data-status="succeeded"]')
            stamps = {(n, s): t for n, s, t in watch.evaluate("window.__stamps")}
            events = [json.loads(line) for line in
                      rein(folder, "runs", "events", run_id, "--json").stdout.splitlines()]
            for e in events:
                p = e.get("payload") or {}
                if e.get("type") == "node/finished" and p.get("status") == "succeeded":
                    samples.append(stamps[(p["node"], "succeeded")] - at_ms(e["at"]))
        context.close()
    finally:
        server.close()
    return out


def load(browser: Any, folder: Path, nodes: int, tabs: int) -> tuple[float, float, float]:
    (folder / "wide.agraph.yaml").write_text(yaml.safe_dump(wide_graph(nodes)))
    server = Server(folder)
    try:
        context = browser.new_context()
        first = context.new_page()
        first.goto(server.url)
        run_id = start(first, server.base, "wide.agraph.yaml")
        pages = [first] if tabs else []
        viewers = []
        # One browser context per viewer: tabs of one browser share about six connections
        # to a server, and each followed run holds one (hidden tabs let theirs go).
        for _ in range(tabs - 1):
            viewer = browser.new_context()
            viewers.append(viewer)
            p = viewer.new_page()
            p.goto(server.url)
            p.goto(f"{server.base}/runs/{run_id}")
            pages.append(p)
        for p in pages:
            p.wait_for_selector('g.node[data-node="go"][data-status="awaiting_human"]')
        cpu0, _ = server.usage()
        t0 = time.perf_counter()
        answer = context.new_page()
        answer.goto(f"{server.base}/approvals?run={run_id}")
        answer.click("form.answer button[value=accept]")
        for p in pages:
            p.wait_for_selector("[data-run-status].succeeded", timeout=300_000)
        if not pages:
            answer.wait_for_url(f"{server.base}/runs/{run_id}")
            while json.loads(rein(folder, "runs", "list", "--json").stdout)["runs"][0][
                    "status"] != "succeeded":
                time.sleep(0.2)  # polling a finished state, not timing with it
        wall = time.perf_counter() - t0
        events = rein(folder, "runs", "events", run_id, "--json").stdout.splitlines()
        done = sum(1 for line in events if '"node/finished"' in line and '"succeeded"' in line)
        assert done == nodes + 1, f"{done} nodes succeeded, not {nodes + 1}"
        cpu1, peak = server.usage()
        for viewer in viewers:
            viewer.close()
        context.close()
        return wall, cpu1 - cpu0, peak
    finally:
        server.close()


def fmt(values: list[float], unit: str) -> str:
    return (f"min {min(values):.1f} {unit}  median {statistics.median(values):.1f} {unit}  "
            f"max {max(values):.1f} {unit}  (n={len(values)})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gates", type=int, default=20)
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--tabs", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if (reason := why_not()) is not None:
        print(f"cannot run: {reason}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp, launched() as browser:
        folder = Path(tmp)
        os.environ["REIN_USER_CONFIG"] = str(folder / "none.toml")
        print(f"event in the store → DOM change ({args.gates} gates; goal < 100 ms)")
        for way, values in latency(browser, folder, args.gates).items():
            print(f"  {way:24} {fmt(values, 'ms')}")
        print(f"\n{args.nodes}-node run, server process, {args.repeat} runs each")
        for tabs in (0, args.tabs):
            rows = [load(browser, folder, args.nodes, tabs) for _ in range(args.repeat)]
            label = "reference: 0 tabs" if tabs == 0 else f"rein: {tabs} tabs"
            print(f"  {label:20} wall  {fmt([r[0] for r in rows], 's')}")
            print(f"  {'':20} CPU   {fmt([r[1] for r in rows], 's')}")
            print(f"  {'':20} peak RSS {fmt([r[2] for r in rows], 'MB')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
