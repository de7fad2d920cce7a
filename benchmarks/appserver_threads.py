"""``rein app-server``: turns on many threads at once beside the same turns one after another.

Run on demand (``.venv/bin/python benchmarks/appserver_threads.py``), never in the test
suite. One ``rein app-server`` process per sample, driven over JSON lines by a minimal
client (no SDK), in a fresh workspace that is a git repository. The workload waits: each turn is one call to the scripted provider (a test
double) that sleeps ``--wait`` seconds before it submits the turn's reply, the way a turn
waits on a model or a tool; what overlaps is that wait.

- **sequential**: ``--threads`` threads, one ``turn/start`` each, the next sent once the
  previous ``turn/completed`` was read.
- **concurrent**: as many fresh threads in the same server, every ``turn/start`` sent at
  once, timed until the last ``turn/completed``.

``--on model`` (default) makes the wait the model call's; ``--on tool``, a shell command's
(``sleep``, allowed by the workspace's ``[policy]`` without asking), after which a second
model call submits the reply; ``--wait 0`` leaves nothing to overlap (the work is rein's
own, on one event loop).

Checked: every turn completed with the scripted reply. Printed, with min / median / max
over ``--repeat`` samples: the wall time of each mode, the speed-up (sequential /
concurrent), and the server's CPU time per turn in each mode (read from ``/proc``, so
what the machine's other load does to the wall time shows apart); and the ideal speed-up
(every wait overlapping, rein itself free): the number of threads.

    python benchmarks/appserver_threads.py
    python benchmarks/appserver_threads.py --threads 10 --wait 0.3 --repeat 5
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

REIN = (sys.executable, "-c", "import sys; from rein.cli import run; sys.exit(run())")
TOML = ('[providers.script]\nkind = "scripted"\n'
        'options = { script = "turns.json", position = "conversation" }\n\n'
        '[tiers.standard]\nprovider = "script"\nmodel = "scripted-1"\n')
REPLY = "waited"


def workspace(wait: float, on: str) -> Path:
    root = Path(tempfile.mkdtemp(prefix="rein-bench-threads-"))
    submit = {"tool_calls": [{"name": "submit_outputs", "arguments": {"reply": REPLY}}]}
    if on == "model":
        script = [{"delay_seconds": wait, **submit}]
        toml = TOML
    else:  # a shell command that waits, allowed without asking
        script = [{"tool_calls": [{"name": "shell_exec", "arguments": {
            "command": f"sleep {wait}"}}]}, submit]
        toml = TOML + '\n[policy]\nshell = "allow"\n'
    (root / "turns.json").write_text(json.dumps(script))
    (root / "rein.toml").write_text(toml)
    # A workspace is a git repository, as most are: rein snapshots its refs around each
    # attempt that may run commands (workers never commit).
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def environment(root: Path) -> dict[str, str]:
    home = root / ".home"
    return {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "REIN_MANAGED_CONFIG": str(root / ".etc" / "rein.toml"), "REIN_USER_CONFIG": ""}


class Client:
    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen([*REIN, "app-server", "--workspace", str(root)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=environment(root))
        self.ids = 0

    def request(self, method: str, params: dict[str, Any]) -> int:
        self.ids += 1
        self.send({"id": self.ids, "method": method, "params": params})
        return self.ids

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed its output"
        return dict(json.loads(line))

    def result(self, request_id: int) -> dict[str, Any]:
        while (message := self.read()).get("id") != request_id:
            pass
        assert "result" in message, message
        return dict(message["result"])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=120)


def threads(c: Client, n: int) -> list[str]:
    return [c.result(c.request("thread/start", {}))["thread"]["id"] for _ in range(n)]


def turns(c: Client, ids: list[str]) -> float:
    """Start a turn on each of ``ids`` at once; the wall time until all completed."""
    start = time.perf_counter()
    for thread in ids:
        c.request("turn/start", {"threadId": thread, "input": [
            {"type": "text", "text": "wait, then reply"}]})
    left = set(ids)
    replies: dict[str, str] = {}
    while left:
        message = c.read()
        params = message.get("params") or {}
        if message.get("method") == "item/completed" and \
                params["item"].get("phase") == "final_answer":
            replies[params["threadId"]] = params["item"]["text"]
        if message.get("method") == "turn/completed":
            assert params["turn"]["status"] == "completed", params
            left.discard(params["threadId"])
    took = time.perf_counter() - start
    assert replies == dict.fromkeys(ids, REPLY), replies
    return took


def cpu(pid: int) -> float:
    """Seconds of CPU process ``pid`` has used (user and system), or NaN off Linux."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sample(n: int, wait: float, on: str) -> tuple[float, float, float, float]:
    """(sequential, concurrent) wall time of ``n`` turns on ``n`` threads, one server, and
    the server's CPU seconds per turn in each mode."""
    c = Client(workspace(wait, on))
    c.result(c.request("initialize", {"clientInfo": {"name": "bench", "version": "1"}}))
    c.send({"method": "initialized"})
    turns(c, threads(c, 1))  # warm: imports and the store are paid once, outside both
    fresh = threads(c, n)
    before = cpu(c.proc.pid)
    sequential = sum(turns(c, [thread]) for thread in fresh)
    between = cpu(c.proc.pid)
    fresh = threads(c, n)
    middle = cpu(c.proc.pid)
    concurrent = turns(c, fresh)
    after = cpu(c.proc.pid)
    c.close()
    return sequential, concurrent, (between - before) / n, (after - middle) / n


def spread(values: list[float]) -> str:
    return f"{min(values):9.3f} {statistics.median(values):9.3f} {max(values):9.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=10)
    parser.add_argument("--wait", type=float, default=0.3,
                        help="seconds each turn's model call waits")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--on", choices=("model", "tool"), default="model",
                        help="what each turn waits on: its model call, or a shell command")
    args = parser.parse_args()
    runs = [sample(args.threads, args.wait, args.on) for _ in range(args.repeat)]
    what = "its model call" if args.on == "model" else "a shell command"
    print(f"{args.threads} turns on {args.threads} threads, each waiting {args.wait} s on "
          f"{what}; {args.repeat} samples")
    print(f"{'':44} {'min':>9} {'median':>9} {'max':>9}")
    print(f"{'rein sequential (s)':44} {spread([r[0] for r in runs])}")
    print(f"{'rein concurrent (s)':44} {spread([r[1] for r in runs])}")
    print(f"{'speed-up, sequential / concurrent (x)':44} "
          f"{spread([r[0] / r[1] for r in runs])}")
    print(f"{'server CPU per turn, sequential (ms)':44} "
          f"{spread([r[2] * 1000 for r in runs])}")
    print(f"{'server CPU per turn, concurrent (ms)':44} "
          f"{spread([r[3] * 1000 for r in runs])}")
    print(f"{'ideal speed-up (x)':44} {float(args.threads):9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
