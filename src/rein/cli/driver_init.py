"""``rein init --agent claude|codex|copilot|devin|kimi``: tell an IDE agent how to drive rein.

Each agent reads its own instruction file: Claude Code ``CLAUDE.md``, Codex ``AGENTS.md``,
GitHub Copilot ``.github/copilot-instructions.md``, Devin ``.devin/workflows/rein.md``, Kimi
``.kimi/agents/rein.md``. Each also says how to run the development flow (`rein dev`).
rein never overwrites one: it appends a section between two marker comments, and on a later
run replaces only that section, so running ``init`` again changes nothing unless rein's text
changed.
"""

from __future__ import annotations

from pathlib import Path

import click

from rein.cli.output import emit_json, json_option
from rein.errors import ExitCode

START = "<!-- rein:driver:start (managed by `rein init`; edits inside are replaced) -->"
END = "<!-- rein:driver:end -->"

FILES = {
    "claude": "CLAUDE.md",
    "codex": "AGENTS.md",
    "copilot": ".github/copilot-instructions.md",
    "devin": ".devin/workflows/rein.md",
    "kimi": ".kimi/agents/rein.md",
}

# How each agent gets a clean context when an instruction asks for one.
_CLEAN = {
    "claude": "hand the instruction to a fresh sub-agent (the Task tool) and relay its answer",
    "codex": "start a new Codex session for it (`codex exec` in a fresh process)",
    "copilot": "start a new chat for it",
    "devin": "start a new Devin session for it and relay its answer",
    "kimi": "start a new Kimi session (or sub-agent) for it and relay its answer",
}

_BODY = """\
## Driving rein

Work in this repository runs through rein: rein decides what happens next and checks the
work; you do the work. Loop until rein says DONE or STOPPED:

1. Run `rein next` (or `rein next --json`). It prints one instruction: the brief, the inputs,
   the outputs to produce, your permissions, feedback from a failed attempt, and the exact
   envelope to answer with. Asking again repeats it; it never starts new work.
2. Do exactly that work with your own tools. Write only where the instruction's `fs:write`
   permissions allow: rein compares the workspace after you answer and refuses the submit
   on any other write (undo it and submit again; repeated, it fails the attempt). Do not
   commit. Answer only the instruction `rein next` prints: one at a time.
3. Write the envelope (one JSON object like the instruction's `example`, each `<placeholder>`
   replaced with the real value, valid against its `respond_with`) to `.rein/inbox.json`
   with your file tool, never as a shell argument.
   Use `"status": "failed"` and a `message` if you cannot do the work. Add
   `"context_usage": {{"used_tokens": N, "window_tokens": M}}` when you know it.
4. Run `rein submit`. rein checks the work itself and prints what comes next.

- REFUSED (exit 4): nothing changed. Read the reason, fix the envelope, submit again.
- WAITING (exit 3) for an approval: a person must decide. Show them the printed
  `rein approvals accept ...` command and stop; never answer approvals yourself.
- A CLEAN CONTEXT instruction (an llm_judge, or your context is nearly full): {clean}.
- DONE (exit 0) or STOPPED (exit 1, with a reason: budget, timeout, blocked, failed,
  cancelled): stop and report rein's message as it is.
- Never claim the work is done: rein's checks decide.

## The development flow (`rein dev`)

When asked to "use the rein development flow" (briefs in `specs/*.md`), run `rein dev`: it
starts or continues the flow and prints the pending instruction (exit 3). Answer it with
`rein submit` as above. Whenever `rein next` or `rein submit` says DONE or WAITING for an
approval, run `rein dev` again: only `rein dev` saying `done` ends the flow. rein checks the
plan you write, runs each feature's verify command itself and commits each feature itself:
never run the verify to report a result, never commit, and put in a feature only what its
instruction asks. A stop names its reason (`failed`, `blocked`, `budget`, `timeout`) and
the next action: report it as it is. `rein dev status` says where the flow stands.
"""


def section(agent: str) -> str:
    """The managed section for ``agent``, markers included."""
    return f"{START}\n{_BODY.format(clean=_CLEAN[agent])}{END}\n"


def write_section(path: Path, text: str) -> str:
    """Add or refresh the managed section of ``path``: ``created``, ``appended``,
    ``updated`` or ``unchanged``. Nothing outside the markers is touched."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return "created"
    current = path.read_text(encoding="utf-8")
    start, end = current.find(START), current.find(END)
    if start != -1 and end > start:
        stop = end + len(END)
        if current[stop:stop + 1] == "\n":
            stop += 1
        updated = current[:start] + text + current[stop:]
        if updated == current:
            return "unchanged"
        path.write_text(updated, encoding="utf-8")
        return "updated"
    joiner = "" if current.endswith("\n\n") else ("\n" if current.endswith("\n") else "\n\n")
    path.write_text(current + joiner + text, encoding="utf-8")
    return "appended"


@click.command("init")
@click.option("--agent", "agents", multiple=True, required=True,
              type=click.Choice(sorted(FILES)), help="The IDE agent (repeatable).")
@click.option("--workspace", "workspace", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Workspace directory (default: the current directory).")
@json_option
def init_command(agents: tuple[str, ...], workspace: Path | None, as_json: bool) -> int:
    """Write the instructions an IDE agent needs to drive rein with next/submit.

    claude → CLAUDE.md, codex → AGENTS.md, copilot → .github/copilot-instructions.md,
    devin → .devin/workflows/rein.md, kimi → .kimi/agents/rein.md. Each file also says how
    to run the development flow (`rein dev`).
    An existing file is never overwritten: rein appends a delimited section, and running
    init again refreshes only that section (idempotent).

    \b
    Example:
      rein init --agent claude
      rein init --agent codex --agent copilot --json

    \b
    Exit codes: 0 written (or already up to date), 64 usage error.
    """
    root = (workspace or Path.cwd()).resolve()
    done = []
    for agent in dict.fromkeys(agents):
        path = root / FILES[agent]
        done.append({"agent": agent, "path": FILES[agent],
                     "action": write_section(path, section(agent))})
    notices = _notices(root)
    if as_json:
        emit_json({"files": done, "notices": notices})
    else:
        for item in done:
            click.echo(f"{item['path']}: {item['action']} (rein driver section for "
                       f"{item['agent']})")
        for line in notices:
            click.echo(line, err=True)
    return int(ExitCode.OK)


def _notices(root: Path) -> list[str]:
    """What the person setting an agent up here should know: that approvals are not signed
    where the run store lies in the workspace the agent works in."""
    from rein.cli.approval_view import unsigned_notice
    from rein.cli.workspace import open_harness
    from rein.errors import ReinError

    try:
        with open_harness(root, create=False) as harness:
            notice = unsigned_notice(harness)
    except ReinError:  # a rein.toml rein cannot read: the commands that use it say so
        return []
    return [notice] if notice else []


init = init_command
