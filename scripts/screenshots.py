#!/usr/bin/env python3
"""Take the screenshot of the live view in docs/images from a real run.

Runs `rein run` on a small graph (a retried task, a map, a loop and an approval gate,
answered by the scripted worker so that no model is called) inside a pseudo-terminal,
feeds everything rein wrote to a terminal emulator (pyte, in the test extras), and saves
the screen as it was left, colours included, as an SVG through rich. Nothing is drawn by
hand: the picture is what a terminal showed.

    .venv/bin/python scripts/screenshots.py            # writes docs/images/live-view.svg
    .venv/bin/python scripts/screenshots.py OUT.svg
"""

from __future__ import annotations

import fcntl
import os
import pty
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COLUMNS, LINES = 100, 30
# pyte's names of the eight ANSI colours, as rich names them ("brown" is ANSI yellow).
_COLOURS = {"default": None, "brown": "yellow", "black": "black", "red": "red",
            "green": "green", "blue": "blue", "magenta": "magenta", "cyan": "cyan",
            "white": "white"}

GRAPH = """\
ags_version: "1.0"
kind: AgenticGraph
id: demo/release-check
title: Check a release before it ships
objective: Build the release, check every item, and ask a person before shipping.
requires_conformance: 3
constraints: {max_cost_usd: 0.50, max_node_executions: 30}
params:
  checks:
    type: array
    description: What to check.
    default: [docs/changelog, docs/upgrade, tests/unit, tests/e2e, licence]
entrypoints: [draft_notes]
nodes:
  draft_notes:
    title: Draft the release notes
    description: Write the notes.
  build:
    title: Build the release
    description: Build and test it.
    depends_on: [draft_notes]
    failure:
      retry: {max_attempts: 3, backoff: fixed, initial_delay_seconds: 0,
              retry_on: [criteria_failed], feedback: failure_summary}
  checks:
    type: map
    title: Check each item
    description: One decision per item.
    depends_on: [build]
    map:
      over: params.checks
      as: check
      max_items: 10
      max_parallel: 2
      body:
        title: One check
        entrypoints: [classify]
        nodes:
          classify:
            type: decision
            title: Classify the item
            description: Docs or not.
            decision:
              evaluator: expression
              branches:
                - {label: docs, description: docs, when: 'startswith(check, "docs/")'}
                - {label: other, description: other, when: "true"}
              default_branch: other
  polish:
    type: loop
    title: Polish the notes
    description: Two fixed passes.
    depends_on: [build]
    loop:
      mode: repeat
      max_iterations: 2
      body:
        title: One pass
        entrypoints: [pass]
        nodes:
          pass:
            type: decision
            title: One pass
            description: A pass.
            decision:
              evaluator: expression
              branches: [{label: done, description: done, when: "true"}]
              default_branch: done
  ship:
    type: gate
    title: Ship it
    description: A person approves the release.
    depends_on: [checks, polish]
    gate: {mode: approve, prompt: "Ship the release?"}
"""

ANSWERS = """\
nodes:
  draft_notes:
    - {outputs: {}, delay_seconds: 0.4,
       usage: {input_tokens: 1800, output_tokens: 600, cost_usd: 0.03}}
  build:
    - {failure: criteria_failed, message: "2 of 48 tests failed (test_upgrade_path)",
       delay_seconds: 0.6, usage: {input_tokens: 4200, output_tokens: 900, cost_usd: 0.06}}
    - {outputs: {}, delay_seconds: 0.8,
       usage: {input_tokens: 5100, output_tokens: 1100, cost_usd: 0.07}}
"""


def capture(rein: str, workspace: Path, env: dict[str, str]) -> bytes:
    """Everything `rein run` writes to a terminal of COLUMNS x LINES."""
    digest = subprocess.run([rein, "graph", "digest", "release.agraph.yaml"], cwd=workspace,
                            env=env, check=True, capture_output=True, text=True).stdout.strip()
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
    proc = subprocess.Popen([rein, "run", "release.agraph.yaml", "--approve", digest],
                            cwd=workspace, env=env, stdin=slave, stdout=slave, stderr=slave,
                            close_fds=True)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    proc.wait(timeout=120)
    return out


def to_svg(raw: bytes, target: Path) -> None:
    """The emulated screen, cell by cell with its colours, saved as an SVG by rich."""
    import pyte
    from rich.console import Console
    from rich.style import Style
    from rich.text import Text

    screen = pyte.Screen(COLUMNS, LINES)
    pyte.ByteStream(screen).feed(raw)
    rows = [screen.buffer[y] for y in range(screen.lines)]
    last = max((y for y, line in enumerate(screen.display) if line.strip()), default=0)
    console = Console(record=True, width=COLUMNS, force_terminal=True,
                      color_system="truecolor", file=open(os.devnull, "w"))  # noqa: SIM115
    for y in range(last + 1):
        text = Text()
        for x in range(COLUMNS):
            cell = rows[y][x]
            color = _COLOURS.get(cell.fg, cell.fg)
            if color and len(color) == 6 and all(c in "0123456789abcdef" for c in color):
                color = f"#{color}"  # pyte's 256-colour and true-colour cells
            text.append(cell.data, Style(color=color, bold=cell.bold))
        text.rstrip()
        console.print(text)
    target.parent.mkdir(parents=True, exist_ok=True)
    console.save_svg(str(target), title="rein run")


def main(argv: list[str]) -> int:
    try:
        import pyte  # noqa: F401
    except ImportError:
        print("screenshots.py needs pyte: .venv/bin/python -m pip install -e '.[test]'",
              file=sys.stderr)
        return 1
    target = Path(argv[0]) if argv else ROOT / "docs" / "images" / "live-view.svg"
    rein = shutil.which("rein", path=str(Path(sys.executable).parent)) or "rein"
    with tempfile.TemporaryDirectory(prefix="rein-screenshot-") as tmp:
        workspace = Path(tmp)
        (workspace / "release.agraph.yaml").write_text(GRAPH)
        (workspace / "answers.yaml").write_text(ANSWERS)
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "CI")}
        env.update(TERM="xterm-256color", REIN_SCRIPTED_ANSWERS=str(workspace / "answers.yaml"),
                   REIN_USER_CONFIG=str(workspace / "user.toml"))
        (workspace / "user.toml").write_text('[approver]\nid = "ana"\n')
        raw = capture(rein, workspace, env)
    to_svg(raw, target)
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
