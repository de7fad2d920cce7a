"""``rein app-server`` beside ``rein run`` on the same graph, in one run.

Run on demand (``.venv/bin/python benchmarks/app_server.py``), never in the test suite.
The graph: ``n`` task nodes in a chain, each served by the scripted provider (a test
double) that submits its output at once, so what is timed is rein, not a model.

- **CLI**: ``rein run g.agraph.yaml --approve DIGEST --json`` as a subprocess, in a fresh
  workspace; wall time of the child. Checked: exit 0 and ``succeeded``.
- **app-server**: one ``rein app-server`` process per sample, driven over JSON lines by a
  minimal client (no SDK, so its import time is not counted): ``initialize``,
  ``thread/start``, then a graph turn (``turn/start`` with a ``mention`` of the same graph),
  the digest question answered ``accept`` at once, read until ``turn/completed``. Timed in
  the client: ``turn/start`` → the first ``item/started``, and ``turn/start`` →
  ``turn/completed``. Checked: the turn completed and every node's plan step completed.

Per node: (time at ``n`` − time at 1) / (``n`` − 1) for both paths, so process start-up is
left out; the overhead per item is the app-server's per-node time minus the CLI's, divided
by the messages (notifications and questions) the app-server sent per node. min / median / max over ``--repeat`` samples.

    python benchmarks/app_server.py
    python benchmarks/app_server.py --nodes 40 --repeat 7
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REIN = (sys.executable, "-c", "import sys; from rein.cli import run; sys.exit(run())")
TOML = ('[providers.script]\nkind = "scripted"\noptions = { script = "turns.json" }\n\n'
        '[tiers.standard]\nprovider = "script"\nmodel = "scripted-1"\n')


def workspace(nodes: int) -> Path:
    root = Path(tempfile.mkdtemp(prefix="rein-bench-as-"))
    chain = {}
    for i in range(1, nodes + 1):
        node: dict[str, Any] = {
            "type": "task", "title": f"Step {i}", "description": f"Do step {i}.",
            "intelligence": {"tier": "standard"},
            "outputs": {"done": {"type": "string", "description": "what was done"}},
            "requirements": {"tools": [], "permissions": [], "workspace": "read_only"}}
        if i > 1:
            node["depends_on"] = [f"n{i - 1}"]
        chain[f"n{i}"] = node
    graph = {"ags_version": "1.0", "kind": "AgenticGraph", "id": "rein/bench/chain",
             "title": "chain", "version": "1.0.0", "requires_conformance": 1,
             "objective": "Benchmark.", "entrypoints": ["n1"], "nodes": chain}
    (root / "g.agraph.yaml").write_text(yaml.safe_dump(graph, sort_keys=False))
    submit = {"tool_calls": [{"name": "submit_outputs", "arguments": {"done": "ok"}}]}
    (root / "turns.json").write_text(json.dumps([submit] * nodes * 2))  # two turns
    (root / "rein.toml").write_text(TOML)
    return root


def environment(root: Path) -> dict[str, str]:
    home = root / ".home"
    return {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "REIN_MANAGED_CONFIG": str(root / ".etc" / "rein.toml")}


def cli(nodes: int) -> float:
    root = workspace(nodes)
    env = environment(root)
    digest = subprocess.run([*REIN, "graph", "digest", "g.agraph.yaml"], cwd=root, env=env,
                            capture_output=True, text=True, check=True).stdout.strip()
    start = time.perf_counter()
    done = subprocess.run([*REIN, "run", "g.agraph.yaml", "--approve", digest, "--json"],
                          cwd=root, env=env, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 0 and last["status"] == "succeeded", done.stdout[-500:]
    return took


class Client:
    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen([*REIN, "app-server", "--workspace", str(root)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=environment(root))

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed its output"
        return dict(json.loads(line))

    def until(self, key: str, value: Any) -> dict[str, Any]:
        while (message := self.read()).get(key) != value:
            pass
        return message

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=120)


def app_server(nodes: int) -> tuple[float, float, float, int]:
    """Two graph turns in one server: (turn/start → first item/started of the first turn,
    the same for the second, turn/start → turn/completed of the second, messages read)."""
    root = workspace(nodes)
    c = Client(root)
    c.send({"id": 1, "method": "initialize", "params": {"clientInfo": {
        "name": "bench", "version": "1"}}})
    c.until("id", 1)
    c.send({"method": "initialized"})
    c.send({"id": 2, "method": "thread/start", "params": {}})
    thread = c.until("id", 2)["result"]["thread"]["id"]
    cold, _, _ = turn(c, thread, nodes, 3)
    warm, total, messages = turn(c, thread, nodes, 4)
    c.close()
    return cold, warm, total, messages


def turn(c: Client, thread: str, nodes: int, request_id: int) -> tuple[float, float, int]:
    start = time.perf_counter()
    c.send({"id": request_id, "method": "turn/start", "params": {"threadId": thread, "input": [
        {"type": "mention", "name": "chain", "path": "g.agraph.yaml"}]}})
    first = None
    messages = 0
    plan: list[dict[str, Any]] = []
    while True:
        message = c.read()
        method = message.get("method")
        if method == "item/started" and first is None:
            first = time.perf_counter() - start
        if method == "item/tool/requestUserInput":
            c.send({"id": message["id"], "result": {"answers": {"digest": {
                "answers": ["accept"]}}}})
        if method is not None:
            messages += 1  # every notification and question the client had to read
        if method == "turn/plan/updated":
            plan = message["params"]["plan"]
        elif method == "turn/completed":
            total = time.perf_counter() - start
            assert message["params"]["turn"]["status"] == "completed", message
            break
    assert first is not None and len(plan) == nodes
    assert all(step["status"] == "completed" for step in plan), plan
    return first, total, messages


def spread(values: list[float]) -> str:
    return (f"{min(values) * 1000:9.2f} {statistics.median(values) * 1000:9.2f} "
            f"{max(values) * 1000:9.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n = args.nodes
    rows: dict[str, list[float]] = {k: [] for k in ("cli1", "clin", "cold", "warm", "as1",
                                                    "asn")}
    per_node = []
    for _ in range(args.repeat):
        rows["cli1"].append(cli(1))
        rows["clin"].append(cli(n))
        cold, warm, one, messages_one = app_server(1)
        rows["cold"].append(cold)
        rows["warm"].append(warm)
        rows["as1"].append(one)
        _, _, many, messages_many = app_server(n)
        rows["asn"].append(many)
        per_node.append((messages_many - messages_one) / (n - 1))
    cli_node = [(b - a) / (n - 1) for a, b in zip(rows["cli1"], rows["clin"], strict=True)]
    as_node = [(b - a) / (n - 1) for a, b in zip(rows["as1"], rows["asn"], strict=True)]
    messages = statistics.median(per_node)
    overhead = [(s - c) / messages for s, c in zip(sorted(as_node), sorted(cli_node),
                                                    strict=True)]
    print(f"{n} nodes in a chain, scripted provider, {args.repeat} samples; "
          f"{messages:.1f} messages per node on the wire")
    print(f"{'measure (ms)':48} {'min':>9} {'median':>9} {'max':>9}")
    print(f"{'rein run, whole run, 1 node':48} {spread(rows['cli1'])}")
    print(f"{f'rein run, whole run, {n} nodes':48} {spread(rows['clin'])}")
    print(f"{'turn/start -> first item/started, first turn':48} {spread(rows['cold'])}")
    print(f"{'turn/start -> first item/started, next turn':48} {spread(rows['warm'])}")
    print(f"{'turn/start -> turn/completed, next turn, 1':48} {spread(rows['as1'])}")
    print(f"{f'turn/start -> turn/completed, next turn, {n}':48} {spread(rows['asn'])}")
    print(f"{'per node, rein run':48} {spread(cli_node)}")
    print(f"{'per node, app-server':48} {spread(as_node)}")
    print(f"{'overhead per message, app-server - rein run':48} {spread(overhead)}")


if __name__ == "__main__":
    main()
