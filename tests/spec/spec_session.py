"""The session docs/spec-flow.md shows: run for real, each rein command's output normalised.

`python tests/spec/spec_session.py DIR` prints the session's console blocks (to refresh the
page); test_docs.py runs it again and compares. Only what differs on every run is replaced
(ids, tokens, digests, times, the interpreter's path), as for docs/dev-flow.md.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "dev"))

from session import markdown, normalise
from spec_driver import SpecDriver

Rein = Callable[..., tuple[int, str]]


def no_fit_criterion(doc: dict[str, Any]) -> None:
    del doc["requirements"][1]["fit_criterion"]


def run_session(root: Path, rein: Rein) -> list[tuple[str, str, str]]:
    """(kind, command, output) in order; kind is "rein" (compared) or "agent" (narrative)."""
    driver = SpecDriver(root, rein, refuse_first={"requirements": no_fit_criterion})
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
        (root / ".rein/inbox.json").write_text(json.dumps(envelope))
        agent(f"the agent writes {envelope['outputs'].get('document')} (attempt "
              f"{envelope['attempt']}) and its envelope to .rein/inbox.json")

    def accept() -> None:
        _code, listed = rein("approvals", "list", "--json")
        approval = json.loads(listed)["approvals"][0]["approval_id"]
        agent("a person reads the document and accepts it")
        cmd("approvals", "accept", approval)

    cmd("init", "--agent", "claude")
    cmd("spec")
    answer()
    cmd("submit")
    accept()
    answer()
    cmd("submit")  # the requirements are refused: the reasons come back
    answer()
    cmd("submit")
    cmd("spec")
    accept()
    for _ in range(3):
        answer()
        cmd("submit")
        accept()
    cmd("spec")
    plan = json.loads((root / "specs/active/40-development-plan.json").read_text())
    steps.append(("file", "specs/active/40-development-plan.json (the first feature)",
                  normalise(json.dumps(plan["features"][0], indent=2))))
    cmd("dev")
    agent("a person edits the brief")
    with (root / "specs/brief.md").open("a") as fh:
        fh.write("\nTemperatures may be negative.\n")
    cmd("dev", "--json")
    cmd("spec", "status")
    cmd("spec")
    return steps


def page(steps: list[tuple[str, str, str]]) -> str:
    out = []
    for kind, command, output in steps:
        if kind == "file":
            out.append(f"*{command}:*\n\n```json\n{output}\n```\n")
        else:
            out.append(markdown([(kind, command, output)]))
    return "\n".join(out)


if __name__ == "__main__":  # refresh the page's session: python tests/spec/spec_session.py DIR
    import os

    from devflow_support import captured, new_project

    where = new_project(Path(sys.argv[1]))
    os.chdir(where)
    print(page(run_session(where, captured)), end="")
