"""A scripted driver of `rein spec` (then `rein dev`): the test double of an IDE agent.

It reads what `rein spec` / `rein next --json` print, writes the document the instruction
asks for (from :mod:`spec_bundle`, with one deliberately refused first attempt where asked),
writes the envelope to .rein/inbox.json and runs `rein submit --json`, through the real
command line. Feature instructions of `rein dev` are answered by the development flow's
scripted driver (it writes the tempconv package).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scripted import ScriptedDriver as DevDriver
from spec_bundle import good

from rein.spec.paths import PATHS

Rein = Callable[..., tuple[int, str]]


class SpecDriver:
    """Answers each instruction; ``refuse_first``: documents whose first attempt is bad."""

    def __init__(self, root: Path, rein: Rein, *,
                 bundle: dict[str, Any] | None = None,
                 refuse_first: dict[str, Callable[[dict[str, Any]], None]] | None = None
                 ) -> None:
        self.root, self.rein = root, rein
        self.bundle = bundle or good()
        self.refuse_first = dict(refuse_first or {})
        self.dev = DevDriver(root, rein, bad_plan_first=False, wrong_first=False)
        self.seen: list[dict[str, Any]] = []

    def work(self, instruction: dict[str, Any]) -> dict[str, Any]:
        node, attempt = instruction["node"], instruction["attempt"]
        self.seen.append(instruction)
        if not node.startswith("write_"):
            return self.dev.work(instruction)
        name = node.removeprefix("write_")
        doc = json.loads(json.dumps(self.bundle[name]))
        spoil = self.refuse_first.get(name)
        if spoil is not None and attempt == 1:
            spoil(doc)
        path = self.root / PATHS[name]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2))
        return {"protocol": "rein.driver/1", "token": instruction["token"], "node": node,
                "attempt": attempt, "status": "done", "outputs": {"document": PATHS[name]}}

    def submit(self, envelope: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        (self.root / ".rein").mkdir(exist_ok=True)
        (self.root / ".rein/inbox.json").write_text(json.dumps(envelope))
        code, out = self.rein("submit", "--json")
        return code, json.loads(out)

    def flow(self, command: str, *args: str) -> tuple[int, dict[str, Any]]:
        code, out = self.rein(command, *args, "--json")
        return code, json.loads(out)


def drive(driver: SpecDriver, approve: Callable[[str], Any], command: str = "spec", *,
          turns: int = 40) -> tuple[int, dict[str, Any]]:
    """Run `rein spec` (or `rein dev`) as an agent would until it stops waiting; a person
    approves whenever an approval is pending. The last `rein COMMAND --json` answer."""
    code, where = driver.flow(command)
    for _ in range(turns):
        if where["reason"] != "waiting":
            return code, where
        pending = where["instruction"]
        while pending["status"] == "instruction":
            _code, pending = driver.submit(driver.work(pending))
        if pending.get("for") == "approval":
            approve(where["run_id"])
        code, where = driver.flow(command)
    raise AssertionError(f"the flow did not stop in {turns} turns: {where}")


def protocol_errors(rein: Rein, runs: list[str]) -> int:
    """The envelopes rein refused (``driver/refused`` events) in ``runs``."""
    count = 0
    for run_id in runs:
        _code, out = rein("runs", "events", run_id, "--json")
        count += sum(json.loads(line).get("type") == "driver/refused"
                     for line in out.splitlines() if line.strip())
    return count
