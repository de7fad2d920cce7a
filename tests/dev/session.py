"""The session docs/dev-flow.md shows: run for real, each rein command's output normalised.

`python tests/dev/session.py` prints the session's console blocks (to refresh the page);
test_docs.py runs it again and compares every `$ rein ...` block of the page with it. Only
what differs on every run is replaced: ids, tokens, digests, commit hashes, the Python
interpreter's path, times.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

from scripted import PYTHON, ScriptedDriver, git

Rein = Callable[..., tuple[int, str]]

_VOLATILE = [
    (re.compile(re.escape(PYTHON)), "python"),
    (re.compile(r"run-\d{8}T\d{6}-[0-9a-f]{6}"), "run-…"),
    (re.compile(r"drv-[0-9a-f]{20}"), "drv-…"),
    (re.compile(r"apv-\d{8}T\d{6}-[0-9a-f]{6}"), "apv-…"),
    (re.compile(r"\d{14}-[0-9a-f]{6}"), "PLAN-ID"),
    (re.compile(r"sha256-[A-Za-z0-9+/]{43}="), "sha256-…"),
    (re.compile(r"sha256:[0-9a-f]{64}"), "sha256:…"),
    (re.compile(r"(committed feature \w+ as |^)[0-9a-f]{7}\b", re.MULTILINE), r"\1abc1234"),
    (re.compile(r" +\d+\.\d\d(?=\s)"), "     0.00"),  # wall times, column kept
    (re.compile(r"in \d+\.\d+s\b"), "in 0.01s"),  # pytest's own timing
    # a report's times, each at its column's width
    (re.compile(r" *\b(\d+\.\d s|\d+ min \d\d s|\d+ h \d\d min)\b"),
     lambda m: "0.0 s".rjust(len(m.group(0)))),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?"), "TIME"),
]


def normalise(text: str) -> str:
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return "\n".join(line.rstrip() for line in text.splitlines())


def run_session(root: Path, rein: Rein) -> list[tuple[str, str, str]]:
    """(kind, command, output) in order; kind is "rein" (compared) or "agent" (narrative)."""
    driver = ScriptedDriver(root, rein)
    steps: list[tuple[str, str, str]] = []

    def cmd(*args: str) -> str:
        code, out = rein(*args)
        steps.append(("rein", normalise("rein " + " ".join(args)),
                      normalise(out) + f"\n[exit {code}]"))
        return out

    def agent(what: str) -> None:
        steps.append(("agent", what, ""))

    def answer() -> None:
        _code, status = rein("next", "--json")
        envelope = driver.work(json.loads(status))
        driver.write(".rein/inbox.json", json.dumps(envelope))
        agent(f"the agent does the work of {envelope['node']} (attempt {envelope['attempt']}) "
              "and writes its envelope to .rein/inbox.json")

    cmd("init", "--agent", "claude")
    cmd("dev")
    answer()
    cmd("submit")
    answer()
    cmd("submit")
    cmd("dev")
    _code, listed = rein("approvals", "list", "--json")
    approval = json.loads(listed)["approvals"][0]["approval_id"]
    agent("a person reviews the feature graph and accepts it")
    cmd("approvals", "accept", approval)
    cmd("dev")
    for _ in range(4):
        answer()
        cmd("submit")
    cmd("dev")
    cmd("dev", "report")
    steps.append(("git", "git log --oneline", normalise(git(root, "log", "--oneline"))))
    return steps


def markdown(steps: list[tuple[str, str, str]]) -> str:
    out = []
    for kind, command, output in steps:
        if kind == "agent":
            out.append(f"*({command})*\n")
            continue
        out.append(f"```console\n$ {command}\n{output}\n```\n")
    return "\n".join(out)


if __name__ == "__main__":  # refresh the page's session: python tests/dev/session.py DIR
    import os

    from devflow_support import captured, new_project

    where = new_project(Path(sys.argv[1]))
    os.chdir(where)
    print(markdown(run_session(where, captured)))
