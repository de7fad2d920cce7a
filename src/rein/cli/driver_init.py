"""``rein init --agent claude|codex|copilot|devin|kimi``: tell an IDE agent how to drive rein.

Each agent reads its own instruction file: Claude Code ``CLAUDE.md``, Codex ``AGENTS.md``,
GitHub Copilot ``.github/copilot-instructions.md``, Devin ``.devin/workflows/rein.md``, Kimi
``.kimi/agents/rein.md``. Each also says how to run the development flow (`rein dev`)
and the specification flow (`rein spec`).
rein never overwrites one: it appends a section between two marker comments, and on a later
run replaces only that section, so running ``init`` again changes nothing unless rein's text
changed.

The files name rein as ``.rein/bin/rein``, a script ``init`` writes that runs the very rein
that wrote it. An agent's commands often run in a login shell (the Codex CLI runs each one
with ``bash -lc``), whose profile resets ``PATH``: an activated virtual environment is lost
and a bare ``rein`` is not found. ``init`` runs the script in a login shell once, as an
agent would, and says so if it does not answer.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import click

from rein.cli import starters
from rein.cli.output import emit_json, json_option
from rein.core.version import VERSION
from rein.errors import ExitCode, ReinError

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

# The command the files name: a script in the workspace, found from its root whatever PATH
# the agent's shell sets.
SHIM = ".rein/bin/rein"

_BODY = """\
## Driving rein

Work in this repository runs through rein: rein decides what happens next and checks the
work; you do the work. Run rein as `.rein/bin/rein`, from the repository's root: it runs
the rein this project set up, whatever PATH your shell has. Where rein's own messages say
`rein next`, `rein submit` or `rein dev`, run them as `.rein/bin/rein ...` too. Loop until
rein says DONE or STOPPED:

1. Run `.rein/bin/rein next` (or `.rein/bin/rein next --json`). It prints one instruction:
   the brief, the inputs, the outputs to produce, your permissions, feedback from a failed
   attempt, and the exact envelope to answer with. Asking again repeats it; it never
   starts new work.
2. Do exactly that work with your own tools. Write only where the instruction's `fs:write`
   permissions allow: rein compares the workspace after you answer and refuses the submit
   on any other write (undo it and submit again; repeated, it fails the attempt). Do not
   commit. Answer only the instruction `rein next` prints: one at a time.
3. Write the envelope (one JSON object like the instruction's `example`, each `<placeholder>`
   replaced with the real value, valid against its `respond_with`) to `.rein/inbox.json`
   with your file tool, then run `.rein/bin/rein submit`. With only a shell, hand it to
   `.rein/bin/rein submit -` on standard input, in a here-document whose delimiter is
   quoted: every character reaches rein as it is (only a line that is exactly
   `REIN_ENVELOPE` would end it early).

       .rein/bin/rein submit - <<'REIN_ENVELOPE'
       {{"protocol": "rein.driver/1", "token": "...", "node": "...", ...}}
       REIN_ENVELOPE

   Never put the envelope in a shell argument or an `echo`. Use `"status": "failed"` and a
   `message` if you cannot do the work: it is a failed attempt, and the graph's retry
   policy decides what follows (another attempt told your message, or the run stops). Add
   `"context_usage": {{"used_tokens": N, "window_tokens": M}}` when you know it.
4. rein checks the work itself and prints what comes next.

- An INSTRUCTION exits 0: it is your next piece of work, not an error.
- REFUSED (exit 4): nothing changed. Read the reason, fix the envelope, submit again.
- WAITING (exit 3) for an approval: a person must decide. Show them the printed
  `rein approvals accept ...` command and stop; never answer approvals yourself (from a
  sandbox rein refuses it). Once they say they answered it, go on with the command rein's
  message names (`rein next`, or `rein dev` / `rein spec` in a flow).
- A CLEAN CONTEXT instruction (an llm_judge, or your context is nearly full): {clean}.
- DONE (exit 0): if its message names `rein dev` or `rein spec` to run for what comes
  next, run that; otherwise stop and report rein's message as it is.
- STOPPED (exit 1, with a reason: budget, timeout, blocked, failed, cancelled): stop and
  report rein's message as it is.
- Never claim the work is done: rein's checks decide.

## The development flow (`rein dev`)

When asked to "use the rein development flow" (briefs in `specs/*.md`), run
`.rein/bin/rein dev`: it starts or continues the flow and prints the pending instruction
(exit 0). Answer it with `.rein/bin/rein submit` as above. Whenever `rein next` or
`rein submit` says DONE, run `.rein/bin/rein dev` again: only `rein dev` saying `done`
ends the flow. When rein says WAITING for an approval (the plan), show the person the
printed command and stop; once they have answered, run `.rein/bin/rein dev` again.
rein checks the plan you write, runs each feature's verify command itself and commits
each feature itself: never run the verify to report a result, never commit, and put in a
feature only what its instruction asks. An answer with `"status": "failed"` is a failed
attempt: rein asks for the feature again, with your message as feedback, until its
attempts (`[dev] steps_per_feature`) are spent; then the flow stops `failed`, and going
on needs a new plan that a person approves. So say precisely what stops you. A stop
names its reason (`failed`, `blocked`, `budget`, `timeout`) and the next action: report
it as it is.
`.rein/bin/rein dev status` says where the flow stands.

## The specification flow (`rein spec`)

When asked to "specify" a brief first (or to "use the rein specification flow"), run
`.rein/bin/rein spec`: it prints the instruction for one document at a time (charter,
requirements, design, acceptance, readiness review). Write the document as the JSON file
the instruction names, with the shape it shows, and answer with `.rein/bin/rein submit`.
rein checks each document; a refusal lists every reason: fix exactly those and submit
again. Never write TBD or TODO: put an open point in the readiness review's open questions,
with the assumption you make meanwhile. Keep every id you were given (never renumber). A
person approves each document: when rein says WAITING for an approval, show them the
printed command and stop; once they have answered, and whenever rein says DONE, run
`.rein/bin/rein spec` again; only `rein spec` saying `ready` ends it. READY publishes
`specs/active/40-development-plan.json`: then run `.rein/bin/rein dev`, which builds it
without a planning turn. If `rein dev` refuses it (`DEV010`: the specification changed
since it was published), run `.rein/bin/rein spec` to write the reopened documents again.
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
    start = current.find(START)
    end = current.find(END, start) if start != -1 else -1
    if start != -1 and end == -1:
        # Replacing up to an end marker further on, or appending a second section whose
        # end a later run would take for this one's, would delete what lies in between.
        raise ReinError(f"{path} has rein's start marker but no end marker after it: rein "
                        "cannot tell where its section ends", code="INIT003",
                        hint=f"put back the line {END} where the section ends, or remove "
                             "the section from the start marker on; then run `rein init` "
                             "again")
    if start != -1:
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


def shim_text(python: str) -> str:
    """The script at :data:`SHIM`: runs ``python -P -m rein`` with its arguments, and says
    what to do when that interpreter is gone (a virtual environment moved or deleted).
    ``-P``: the current folder is not put on the module path, so a ``rein`` package in the
    workspace is never what runs."""
    quoted = shlex.quote(python)
    return (
        "#!/bin/sh\n"
        "# Written by `rein init`: runs the rein that wrote it, whatever PATH the shell has\n"
        "# (a login shell resets it). `rein init --agent ...` writes it again.\n"
        f"if [ ! -x {quoted} ]; then\n"
        f"  echo \"rein: {_sh_double(python)} is gone: run 'rein init --agent ...' again with "
        "the rein you use\" >&2\n"
        "  exit 127\n"
        "fi\n"
        f"exec {quoted} -P -m rein \"$@\"\n")


def _sh_double(text: str) -> str:
    """``text`` for the inside of a double-quoted sh string."""
    return "".join("\\" + c if c in '"\\$`' else c for c in text)


def write_shim(root: Path) -> str:
    """Write :data:`SHIM` for the running interpreter: ``created``, ``updated`` or
    ``unchanged``. rein's state folder is kept out of git (``.rein/.gitignore``)."""
    state = root / ".rein"
    state.mkdir(exist_ok=True)
    ignore = state / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n", encoding="utf-8")
    path = root / SHIM
    text = shim_text(sys.executable)
    action = "created"
    if path.exists():
        if path.read_text(encoding="utf-8", errors="replace") == text and \
                os.access(path, os.X_OK):
            return "unchanged"
        action = "updated"
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".new")
    temporary.write_text(text, encoding="utf-8")
    temporary.chmod(0o755)
    temporary.replace(path)
    return action


def check_shim(root: Path) -> str:
    """Run ``.rein/bin/rein --version`` in a login shell from ``root``, as an agent's
    command runs; raise INIT001 if it does not answer with this rein's version. Returns the
    shell it was checked with."""
    shells = [(["bash", "-lc"], "bash -lc"), (["sh", "-c"], "sh -c")]
    for argv, name in shells:
        try:
            done = subprocess.run([*argv, f"{SHIM} --version"], cwd=root,
                                  capture_output=True, text=True, timeout=60,
                                  stdin=subprocess.DEVNULL, check=False)
        except FileNotFoundError:
            continue  # no such shell here: try the next
        except subprocess.TimeoutExpired:
            done = None
        if done is not None and done.returncode == 0 and VERSION in done.stdout:
            return name
        said = "" if done is None else (done.stderr or done.stdout).strip()[-300:]
        raise ReinError(
            f"`{SHIM} --version` does not answer in `{name}` from {root}: {said or 'no answer'}",
            code="INIT001",
            hint=f"check that {root} allows running programs (not a noexec mount) and that "
                 f"{sys.executable} runs; then run `rein init` again")
    return "none (no shell found to check with)"


@click.command("init")
@click.option("--agent", "agents", multiple=True, type=click.Choice(sorted(FILES)),
              help="The IDE agent (repeatable): writes its instruction file.")
@click.option("--graph", "graph", is_flag=True,
              help=f"Write a first graph to start from ({starters.GRAPH}).")
@click.option("--brief", "brief", is_flag=True,
              help=f"Write a first brief for `rein dev` ({starters.BRIEF}).")
@click.option("--example", "example_names", multiple=True, metavar="NAME",
              help="Copy an example shipped with rein (repeatable); --list-examples names "
                   "them.")
@click.option("--list-examples", "list_examples", is_flag=True,
              help="List the examples shipped with rein, and write nothing.")
@click.option("--workspace", "workspace", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Workspace directory (default: the current directory).")
@json_option
def init_command(agents: tuple[str, ...], graph: bool, brief: bool,
                 example_names: tuple[str, ...], list_examples: bool, workspace: Path | None,
                 as_json: bool) -> int:
    """Set a workspace up: what an IDE agent needs to drive rein, and something to start from.

    --agent writes the instructions an IDE agent needs to drive rein with next/submit:
    claude → CLAUDE.md, codex → AGENTS.md, copilot → .github/copilot-instructions.md,
    devin → .devin/workflows/rein.md, kimi → .kimi/agents/rein.md. Each file also says how
    to run the development flow (`rein dev`) and the specification flow (`rein spec`).
    An existing file is never overwritten: rein appends a delimited section, and running
    init again refreshes only that section (idempotent).

    --graph writes a first graph, --brief a first brief for `rein dev`, --example a graph
    shipped with rein (with the documents it references). A file that is already there is
    kept as it is.

    \b
    Example:
      rein init --graph
      rein init --example no-worker
      rein init --agent claude --brief
      rein init --agent codex --agent copilot --json

    \b
    Exit codes: 0 written (or already there), 64 usage error (nothing asked for; an
    example that is not shipped: INIT002).
    """
    root = (workspace or Path.cwd()).resolve()
    if list_examples:
        return _list_examples(as_json)
    if not (agents or graph or brief or example_names):
        raise click.UsageError("say what to write: --agent NAME, --graph, --brief or "
                               "--example NAME (--list-examples names the examples)")
    for name in example_names:  # every name checked before anything is written
        if name not in starters.examples():
            starters.write_example(root, name)  # raises INIT002 with the names there are
    made = [*([starters.write_graph(root)] if graph else []),
            *([starters.write_brief(root)] if brief else []),
            *(f for name in dict.fromkeys(example_names)
              for f in starters.write_example(root, name))]
    done = []
    for agent in dict.fromkeys(agents):
        path = root / FILES[agent]
        done.append({"agent": agent, "path": FILES[agent],
                     "action": write_section(path, section(agent))})
    command = None
    if agents:
        command = {"path": SHIM, "action": write_shim(root), "runs": sys.executable,
                   "checked_with": check_shim(root)}
    notices = _notices(root) if agents else []
    if as_json:
        emit_json({"files": done, "command": command, "notices": notices, "starters": made})
        return int(ExitCode.OK)
    for item in done:
        click.echo(f"{item['path']}: {item['action']} (rein driver section for "
                   f"{item['agent']})")
    if command is not None:
        click.echo(f"{SHIM}: {command['action']} (runs {command['runs']} -P -m rein; answers "
                   f"in `{command['checked_with']}`)")
    for item in made:
        click.echo(f"{item['path']}: {item['action']} ({item['what']}"
                   + ("; it was there already, and is left as it is)"
                      if item["action"] == "kept" else ")"))
    graphs = [m["path"] for m in made if m["path"].endswith(".agraph.yaml")]
    if graphs:
        click.echo(f"next: rein graph plan {graphs[0]}, then rein run {graphs[0]}")
    elif brief:
        click.echo("next: rein dev (your IDE agent answers its instructions)")
    for line in notices:
        click.echo(line, err=True)
    return int(ExitCode.OK)


def _list_examples(as_json: bool) -> int:
    shipped = {name: starters.describe(item) for name, item in starters.examples().items()}
    if as_json:
        emit_json({"examples": [{"name": n, "file": starters.examples()[n].name, "title": t}
                                for n, t in shipped.items()]})
        return int(ExitCode.OK)
    width = max(map(len, shipped), default=0)
    for name, title in shipped.items():
        click.echo(f"{name.ljust(width)}  {title}")
    click.echo("copy one with `rein init --example NAME`")
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
