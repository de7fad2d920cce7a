"""What lifecycle hooks add to a model-worker tool call, beside a bare process spawn.

One model attempt with the scripted provider makes ``--calls`` ``file_read`` calls, then
submits; the time of the attempt divided by the calls is the cost of one tool call through
the whole loop (the model turn, the permission check, the tool, the records). It runs:

- with **no hooks configured**, and with one hook configured whose matcher selects no
  tool (the chain is looked up and is empty): what rein adds when hooks are absent;
- with **one hook** on ``PreToolUse`` (``true``, matched to ``file_read``): the spawn;
- with one hook running a **workspace script** (``sh hooks/allow.sh``), once as a hook of
  the user's (nothing bound) and once as a trusted project's hook (its script bound by
  digest, so each run reads it into a private copy beside links to the rest of its folders,
  checks it and runs the copy, ``rein.config.command_seal``): the difference is what running
  the checked bytes costs a call;
- and, as the reference from the same run, a **bare** ``true`` started through
  :func:`rein.tools.process.run_process` (the same process-group handling and the same
  environment a hook gets).

Each figure is min / median / max over ``--repeat`` runs. Checked before printing: every
attempt succeeded with the expected number of tool results, and the hooked runs recorded
one hook run per call.

    .venv/bin/python benchmarks/hooks.py
    .venv/bin/python benchmarks/hooks.py --calls 100 --repeat 7
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rein.config.command_files import pin
from rein.providers.scripted import ScriptedProvider
from rein.tools.hooks import Hook, hook_env
from rein.tools.process import run_process
from rein.workers.base import AttemptRequest, AttemptResult, ItemKind, OutputSpec
from rein.workers.model import SUBMIT, ModelWorker


def request(ws: Path) -> AttemptRequest:
    return AttemptRequest(
        run_id="bench", node_id="read", attempt=1, kind="task", title="Read", brief="Read.",
        inputs={}, outputs=(OutputSpec(name="summary", type="string", description="s"),),
        permissions=("fs:read:**",), tools=("file_read",), workspace=str(ws),
        workspace_access="read_only")


def turns(calls: int) -> list[dict[str, Any]]:
    read = {"tool_calls": [{"name": "file_read", "arguments": {"path": "a.txt"}}]}
    done = {"tool_calls": [{"name": SUBMIT, "arguments": {"summary": "read"}}]}
    return [read] * calls + [done]


async def attempt(ws: Path, calls: int, hooks: tuple[Hook, ...]) -> tuple[float, int, int]:
    """Seconds per tool call, tool results seen, hook runs completed."""
    worker = ModelWorker(provider=ScriptedProvider(turns(calls)), model="s", hooks=hooks,
                         max_steps=calls + 1)
    results = ran = 0
    started = time.perf_counter()
    async for out in worker.run(request(ws)):
        if isinstance(out, AttemptResult):
            assert out.failure is None, out.message
            break
        results += out.kind is ItemKind.TOOL_RESULT
        ran += out.kind is ItemKind.HOOK_COMPLETED
    return (time.perf_counter() - started) / calls, results, ran


async def bare_spawn(ws: Path) -> float:
    started = time.perf_counter()
    # The environment a hook gets (rein's own, less secrets): exec and PATH lookup cost
    # depend on it, so the reference pays the same.
    result = await run_process(["true"], cwd=ws, env=hook_env(os.environ, ws), timeout=30,
                               stdin_data=b"{}")
    assert result.exit_code == 0
    return time.perf_counter() - started


def row(name: str, seconds: list[float]) -> str:
    ms = [s * 1000 for s in seconds]
    return f"{name:<44} {min(ms):9.3f} {statistics.median(ms):9.3f} {max(ms):9.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    true = ("true",)
    configs = {
        "no hooks configured": (),
        "one hook, matcher selects no tool": (
            Hook(name="shell-only", command=true, events=("PreToolUse",), matcher="shell"),),
        "one hook on PreToolUse (true)": (
            Hook(name="t", command=true, events=("PreToolUse",), matcher="file_read"),),
    }
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        (ws / "a.txt").write_text("hello\n")
        (ws / "hooks").mkdir()
        (ws / "hooks" / "allow.sh").write_text("cat > /dev/null\n")
        script = "sh hooks/allow.sh"
        configs["one hook, a workspace script, not bound"] = (
            Hook(name="s", command=script, events=("PreToolUse",), matcher="file_read"),)
        configs["one hook, the same script bound (sealed)"] = (
            Hook(name="s", command=script, events=("PreToolUse",), matcher="file_read",
                 files=pin(ws, ["hooks/allow.sh"])),)
        times: dict[str, list[float]] = {name: [] for name in configs}
        spawns: list[float] = []

        async def run() -> None:
            await attempt(ws, 3, ())  # warm imports and caches outside the clock
            names = list(configs)
            for repeat in range(args.repeat):
                # A different order each round, so no configuration always runs first.
                for name in names[repeat % len(names):] + names[:repeat % len(names)]:
                    hooks = configs[name]
                    per_call, results, ran = await attempt(ws, args.calls, hooks)
                    assert results == args.calls + 1, results  # every read, and the submit
                    hooked = any(h.matcher == "file_read" for h in hooks)
                    assert ran == (args.calls if hooked else 0), ran
                    times[name].append(per_call)
                for _ in range(args.calls // 5 or 1):
                    spawns.append(await bare_spawn(ws))

        asyncio.run(run())
    print(f"per tool call, {args.calls} calls an attempt, {args.repeat} attempts "
          f"(Python {sys.version.split()[0]})")
    print(f"{'':<44} {'min ms':>9} {'median':>9} {'max':>9}")
    for name, seconds in times.items():
        print(row(name, seconds))
    print(row("reference: bare `true` via run_process", spawns))
    base = statistics.median(times["no hooks configured"])
    empty = statistics.median(times["one hook, matcher selects no tool"]) - base
    one = statistics.median(times["one hook on PreToolUse (true)"]) - base
    print(f"added by a configured hook that matches nothing: {empty * 1000:+.3f} ms/call")
    print(f"added by one hook: {one * 1000:+.3f} ms/call; a bare spawn: "
          f"{statistics.median(spawns) * 1000:.3f} ms (ratio {one / statistics.median(spawns):.2f})")
    sealed = (statistics.median(times["one hook, the same script bound (sealed)"])
              - statistics.median(times["one hook, a workspace script, not bound"]))
    print(f"added by running the checked bytes of a bound script (copy, check, run the "
          f"copy): {sealed * 1000:+.3f} ms/call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
