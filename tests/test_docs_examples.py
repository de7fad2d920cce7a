"""Every console example of README.md and docs/ that shows what rein prints is run, and what
rein prints is compared with what the page shows.

A fenced block (``console``, ``text`` or none) whose ``$ rein …`` lines are followed by
output is an example; a ``$`` line the page shows without output is a synopsis and is not run. Each page's examples run in order in one prepared temporary project (a git
repository, the files the page says to create, a scripted approver identity instead of the
reader's own), in this process, with no model API key: stdout and stderr are captured
together, as a terminal shows them. The page's own ``python``, ``json`` and ``toml`` blocks
are what the session writes (greet.py, the envelope, the approver file), so they are checked
too. Blocks with no output (a synopsis: commands and comments only) are checked for parsing by
tests/cli/test_doc_commands.py; the sessions of docs/dev-flow.md and docs/spec-flow.md are
run and compared by tests/dev/test_docs.py and tests/spec/test_spec_docs.py.

Both sides are normalised before they are compared; what the page shows may use these
placeholders, and the program's output is rewritten to them:

==================  ==============================================================
``RUN``             a run id (``run-20261130T003409-17d215``)
``TOKEN``           a driver token (``drv-d36d2fd1deebe55fa981``)
``APPROVAL``        an approval id (``apv-20261130T003425-4274b6``)
``TIME``            a timestamp (``2026-11-30T00:34:09.123Z``)
``SECONDS``         a duration (``1.6s``)
``PYTHON``          the interpreter rein runs on (``/usr/bin/python3.11``)
``WORKSPACE``       the temporary project (an absolute path)
==================  ==============================================================

and ``…`` stands for anything: a line holding only ``…`` for any number of lines, ``…``
inside a line for any text. Trailing blanks are ignored. ``$ echo $?`` shows the exit code of
the command before it.

An example that cannot run here is listed in ``NOT_RUN`` with the reason; a console block
with output that is neither run nor listed fails the inventory test, so a new example is
either made to run or named here.

README.md shows commands without their output (``sh`` blocks): each ``rein`` line of them
runs, in order, in a project holding a copy of examples/, and must exit with the code the
README gives it (0 unless ``README_CODES`` says otherwise); its ``[approver]`` block is the
approver. Its other lines (make, pip, pipx, activate) are named in ``README_NOT_RUN`` with the
reason.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from support import EXAMPLES, ROOT, account_files

from rein.cli import main

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```(\w*)\s*$")

# Examples that do not run here, by page and the first command shown with output (its
# comment left out), each with the reason.
NOT_RUN: dict[tuple[str, str], str] = {
    ("docs/configuration.md", "rein run build.agraph.yaml"):
        "an illustration of the trust prompt: its error line is elided (`...`) and the "
        "answer is typed on a terminal; tests/config/ pin the trust flow's messages",
    ("docs/mcp.md", "rein profile mcp examples/clock-keeper.agent.yaml --yes"):
        "launches the reference MCP time server (mcp-server-time), a package fetched from "
        "the network; tests/mcp run rein's own stdio server instead",
    ("docs/dev-flow.md", "rein dev report"):
        "a report of a real session driven by the codex CLI, read from its rollout files; "
        "tests/agents/test_usage_reports.py compares it where the agent CLIs are installed",
    ("docs/dev-flow.md", ".venv/bin/python benchmarks/dev_turn.py --repeat 21"):
        "a benchmark: its figures are timings of the machine it ran on",
    ("docs/durability.md", "rein resume --dry-run"):
        "needs a run whose rein was killed mid-attempt; tests/cli/test_resume_plan.py makes "
        "one with a real kill -9 and checks this plan",
    ("docs/eval.md", "time rein eval examples/eval --config oracle --config nop --trials 3 -q"):
        "timings of the machine it ran on",
    ("docs/setup.md", "rein doctor"):
        "a machine's own findings (an openai provider without its key, no bubblewrap), "
        "elided; tests/cli/test_doctor.py makes each gap for real",
    ("docs/web.md", "rein serve"):
        "a server that runs until it is stopped; tests/web start it and drive it",
}

# Pages whose examples run here, with what the page's narrative does between commands.
RUN_PAGES = ("docs/worked-example.md", "docs/mcp.md", "docs/eval.md")


@dataclass
class Example:
    """One ``$`` command of a page and the output the page shows for it."""

    page: str
    line: int
    command: str
    shown: list[str]


@dataclass
class Page:
    """A page read in order: its examples and the other blocks between them."""

    name: str
    blocks: list[tuple[str, int, list[str], bool]] = field(default_factory=list)
    # (language, first line, lines, inside a session the flow's own test compares)


def read_page(path: Path) -> Page:
    page = Page(name=path.relative_to(ROOT).as_posix())
    lang: str | None = None
    session = False
    body: list[str] = []
    start = 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("<!-- session:"):
            session = line.startswith("<!-- session:start")
        opened = _FENCE.match(line)
        if opened and lang is None:
            lang, body, start = opened.group(1), [], number + 1
        elif line.startswith("```") and lang is not None:
            page.blocks.append((lang, start, body, session))
            lang = None
        elif lang is not None:
            body.append(line)
    return page


def examples(page: Page, start: int, lines: list[str]) -> list[Example]:
    """The commands of one console block, each with the lines shown after it."""
    out: list[Example] = []
    pending = ""
    for offset, line in enumerate(lines):
        if pending or line.startswith("$ "):
            text = pending + line.removeprefix("$ ").strip() if not pending else \
                pending + " " + line.strip()
            if text.endswith("\\"):
                pending = text[:-1].rstrip()
                continue
            pending = ""
            out.append(Example(page=page.name, line=start + offset, command=text, shown=[]))
        elif out:
            out[-1].shown.append(line)
    for example in out:
        while example.shown and not example.shown[-1].strip():
            example.shown.pop()
    return out


def shown_examples(page: Page) -> list[list[Example]]:
    """The blocks that show commands with their output (not synopses, not a flow's
    session)."""
    found = []
    for lang, start, lines, session in page.blocks:
        if lang not in ("console", "text", "") or session:
            continue
        block = examples(page, start, lines)
        if any(e.shown for e in block):
            found.append(block)
    return found


def block_key(page: str, block: list[Example]) -> tuple[str, str]:
    """How ``NOT_RUN`` names a block: its page and its first command shown with output."""
    first = next(e for e in block if e.shown)
    return page, first.command.split("  #", 1)[0].strip()


# -- normalising ---------------------------------------------------------------------------

_VOLATILE = [
    (re.compile(r"run-\d{8}T\d{6}-[0-9a-f]{6}"), "RUN"),
    (re.compile(r"drv-[0-9a-f]{20}"), "TOKEN"),
    (re.compile(r"apv-\d{8}T\d{6}-[0-9a-f]{6}"), "APPROVAL"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?"), "TIME"),
    (re.compile(r"\b\d+\.\d+s\b"), "SECONDS"),
]


def normalise(text: str, ws: Path) -> list[str]:
    import sys

    text = text.replace(str(ws.resolve()), "WORKSPACE").replace(str(ws), "WORKSPACE")
    text = text.replace(sys.executable, "PYTHON")
    for pattern, placeholder in _VOLATILE:
        text = pattern.sub(placeholder, text)
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def matches(shown: list[str], printed: list[str]) -> bool:
    """Whether ``printed`` is what ``shown`` shows, ``…`` standing for anything."""
    parts = []
    for line in shown:
        if line.strip() == "…":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(p) for p in line.split("…")) + r"\n")
    return re.fullmatch("".join(parts), "".join(f"{line}\n" for line in printed)) is not None


# -- running -------------------------------------------------------------------------------


class Session:
    """A temporary project and rein's command line in this process."""

    def __init__(self, ws: Path) -> None:
        self.ws = ws
        self.code = 0
        self.ids: dict[str, str] = {}  # placeholder -> the newest id of its kind rein printed

    def rein(self, command: str) -> str:
        import shlex

        # The page's ids are its session's: a command names the ones this session printed.
        for pattern, placeholder in _VOLATILE[:3]:
            if placeholder in self.ids:
                command = pattern.sub(self.ids[placeholder], command)
        words = shlex.split(self._substitute(command), comments=True)
        assert words[0] == "rein", command
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            self.code = main(words[1:])
        printed = buffer.getvalue()
        for pattern, placeholder in _VOLATILE[:3]:
            found = pattern.findall(printed)
            if found:
                self.ids[placeholder] = found[-1]
        return printed

    def _substitute(self, command: str) -> str:
        """``$(rein …)`` replaced by what it prints, as the shell would."""
        def run(m: re.Match[str]) -> str:
            return self.rein(m.group(1)).strip()

        return re.sub(r'"?\$\((rein [^)]*)\)"?', run, command)

    def pending(self) -> dict[str, Any]:
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            main(["next", "--json"])
        status: dict[str, Any] = json.loads(buffer.getvalue())
        return status


Action = Callable[[Session, Page], None]


def _blocks(page: Page, lang: str) -> list[list[str]]:
    return [lines for language, _start, lines, _s in page.blocks if language == lang]


def _inbox(session: Session, envelope: dict[str, Any]) -> None:
    (session.ws / ".rein" / "inbox.json").write_text(json.dumps(envelope))


def _answer_from_page(session: Session, page: Page, which: int) -> None:
    """The page's envelope block ``which``, for the pending instruction (its token)."""
    envelope = json.loads("\n".join(_blocks(page, "json")[which]))
    envelope["token"] = session.pending()["token"]
    _inbox(session, envelope)


def _write_greet(which: int) -> Action:
    def act(session: Session, page: Page) -> None:
        (session.ws / "greet.py").write_text("\n".join(_blocks(page, "python")[which]) + "\n")
    return act


def _worked_setup(session: Session, page: Page) -> None:
    """`git init -q && cp examples/driver-demo.agraph.yaml .`, and the approver file the
    page shows, as the account's own (a stand-in of ~/.config/rein/rein.toml)."""
    subprocess.run(["git", "init", "-q"], cwd=session.ws, check=True)
    shutil.copyfile(EXAMPLES / "driver-demo.agraph.yaml", session.ws / "driver-demo.agraph.yaml")


def _first_answer(session: Session, page: Page) -> None:
    _write_greet(0)(session, page)
    _answer_from_page(session, page, 0)


def _old_attempt(session: Session, page: Page) -> None:
    """The new token with the old attempt number."""
    _answer_from_page(session, page, 0)
    envelope = json.loads((session.ws / ".rein" / "inbox.json").read_text())
    envelope.pop("context_usage", None)
    _inbox(session, {**envelope, "attempt": 1})


def _fixed_answer(session: Session, page: Page) -> None:
    _write_greet(1)(session, page)
    _answer_from_page(session, page, 0)
    envelope = json.loads((session.ws / ".rein" / "inbox.json").read_text())
    envelope.pop("context_usage", None)
    _inbox(session, {**envelope, "attempt": 2})


def _mcp_setup(session: Session, page: Page) -> None:
    """The profile in a discovery root, and rein's policy the example names."""
    agents = session.ws / ".agents"
    agents.mkdir()
    shutil.copyfile(EXAMPLES / "clock-keeper.agent.yaml", agents / "clock-keeper.agent.yaml")
    (session.ws / "rein.toml").write_text('[policy]\ndeny_tools = ["mcp/time/**"]\n')


# What the narrative does before a command: (page, command, its occurrence) -> action.
BEFORE: dict[tuple[str, str, int], Action] = {
    ("docs/worked-example.md", "rein submit", 1): _first_answer,
    ("docs/worked-example.md", "rein submit", 3): _old_attempt,
    ("docs/worked-example.md", ("rein submit          # inbox: token "
     "drv-a5937a1f4e963c9b39d6, attempt 2"), 1): _fixed_answer,
}
def _eval_setup(session: Session, page: Page) -> None:
    """A checkout's examples/eval suite."""
    shutil.copytree(EXAMPLES / "eval", session.ws / "examples" / "eval")


SETUP: dict[str, Action] = {
    "docs/worked-example.md": _worked_setup,
    "docs/mcp.md": _mcp_setup,
    "docs/eval.md": _eval_setup,
}
# Shell lines of a page that the setup above does.
SHELL = {"git init -q && cp examples/driver-demo.agraph.yaml ."}


def _approver_file(page: Page, user: Path) -> None:
    """The page's ``[approver]`` block, written where the account's own file would be."""
    for lines in _blocks(page, "toml"):
        if any(line.strip() == "[approver]" for line in lines):
            user.parent.mkdir(parents=True, exist_ok=True)
            user.write_text("\n".join(lines) + "\n")
            return


@pytest.mark.parametrize("name", RUN_PAGES)
def test_the_page_shows_what_rein_prints(name: str, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    page = read_page(ROOT / name)
    ws = tmp_path / "project"
    ws.mkdir()
    monkeypatch.chdir(ws)
    for var in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(var, "t")
    for var in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(var, "t@example.org")
    monkeypatch.setenv("NO_COLOR", "1")
    for var in ("REIN_SCRIPTED_ANSWERS", "REIN_CONTEXT_USAGE_JSON", "REIN_USAGE_JSON"):
        monkeypatch.delenv(var, raising=False)
    _managed, user = account_files(monkeypatch, tmp_path / "account")
    _approver_file(page, user)
    session = Session(ws)
    SETUP[name](session, page)
    seen: dict[str, int] = {}
    problems = []
    for block in shown_examples(page):
        if block_key(name, block) in NOT_RUN:
            continue
        for example in block:
            if example.command in SHELL or not example.shown:
                continue  # done by the setup; or a synopsis line, shown without output
            if example.command == "echo $?":
                printed = str(session.code)
            else:
                seen[example.command] = seen.get(example.command, 0) + 1
                act = BEFORE.get((name, example.command, seen[example.command]))
                if act is not None:
                    act(session, page)
                printed = session.rein(example.command)
            got = normalise(printed, ws)
            if not matches(normalise("\n".join(example.shown), ws), got):
                # As printed (real ids), ready to paste into the page.
                problems.append(f"{name}:{example.line}: $ {example.command}\n"
                                + printed.replace(str(ws), "WORKSPACE").rstrip())
    assert problems == [], "\n\n".join(problems)


def test_every_example_with_output_is_run_or_named_with_its_reason() -> None:
    unaccounted = []
    listed = set()
    for path in PAGES:
        page = read_page(path)
        for block in shown_examples(page):
            key = block_key(page.name, block)
            if key in NOT_RUN:
                listed.add(key)
            elif page.name not in RUN_PAGES:
                unaccounted.append(f"{page.name}:{block[0].line}: $ {block[0].command}")
    assert unaccounted == []
    assert listed == set(NOT_RUN)  # no reason kept for an example that is gone


def test_the_comparison_tells_a_difference() -> None:
    assert matches(["a", "…", "d"], ["a", "b", "c", "d"])
    assert matches(["x · … · y"], ["x · run RUN · y"])
    assert not matches(["a", "…", "d"], ["a", "b", "c"])
    assert not matches(["exit code 3"], ["exit code 4"])


# -- README.md: its command lines run, each with the exit code the README gives it --------

README_NOT_RUN: dict[str, str] = {
    "make run": "builds .venv and runs scripts/demo.sh: tests/test_demo.py runs the demo",
    "make test": "runs this suite",
    "make install": "builds .venv with pip (tests/test_makefile.py checks what it runs)",
    ". .venv/bin/activate": "puts the environment running this test on PATH: nothing to do",
    "python3.11 -m pip wheel --no-deps -w dist .": "builds a wheel: tests/test_install.py",
    "pipx install dist/rein_ags-*.whl": "installs with pipx, from the network",
}
# Exit codes other than 0, as the README states them ("3 waiting").
README_CODES = {
    "rein run examples/driver-demo.agraph.yaml --approve "
    '"$(rein graph digest examples/driver-demo.agraph.yaml)"': 3,
    "rein submit": 3,  # the gate waits for a person
}


def _readme_answer(session: Session, page: Page) -> None:
    """"the agent does the work and writes its answer to .rein/inbox.json"."""
    (session.ws / "greet.py").write_text(
        'def greet(name):\n    """Greet."""\n    return f"Hello, {name}!"\n')
    _inbox(session, session.pending()["example"])


def test_the_readme_commands_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = read_page(ROOT / "README.md")
    ws = tmp_path / "project"
    shutil.copytree(EXAMPLES, ws / "examples")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    monkeypatch.chdir(ws)
    monkeypatch.setenv("NO_COLOR", "1")
    for var in ("REIN_SCRIPTED_ANSWERS", "REIN_CONTEXT_USAGE_JSON", "REIN_USAGE_JSON"):
        monkeypatch.delenv(var, raising=False)
    _managed, user = account_files(monkeypatch, tmp_path / "account")
    _approver_file(page, user)
    session = Session(ws)
    ran, problems = [], []
    for lines in _blocks(page, "sh"):
        for line in lines:
            command = line.split("  #", 1)[0].strip()
            if not command or command.startswith("#"):
                continue
            if not command.startswith("rein "):
                assert command in README_NOT_RUN, f"README.md: {command}: run it or say why not"
                continue
            if command == "rein submit":
                _readme_answer(session, page)
            printed = session.rein(command.replace("APPROVAL_ID", session.ids.get(
                "APPROVAL", "APPROVAL_ID")))
            ran.append(command)
            if session.code != README_CODES.get(command, 0):
                problems.append(f"README.md: $ {command}\nexit {session.code}\n{printed}")
    assert problems == [], "\n\n".join(problems)
    assert "rein approvals accept APPROVAL_ID" in ran  # the README's own approver answered
