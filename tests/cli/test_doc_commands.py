"""Every ``rein ...`` command line shown in README.md and docs/ names real commands and real
options, and a command line shown in a code block parses as written.

Command lines come from fenced shell blocks (``console``, ``sh``, ``bash`` or none; a
leading ``$ `` is dropped, ``\\`` continues a line, ``$(rein ...)`` is checked too) and from
inline code spans that start with ``rein``. An inline span may leave out required
arguments (``rein profile apply`` in a sentence) and may list alternatives
(``rein runs list|show``); a code block line must parse completely. Placeholders such as
``RUN`` or ``sha256-…`` are ordinary arguments to the parser, so they pass.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from itertools import product
from pathlib import Path

import click
import pytest
from support import ROOT

from rein.cli.app import cli

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^\s*```(\w*)")
_SHELL_BLOCKS = {"", "console", "sh", "bash", "shell"}
_INLINE = re.compile(r"`(rein(?: [^`]*)?)`")
_SUBSTITUTION = re.compile(r"\$\((rein [^)]*)\)")
_ENV_PREFIX = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S+\s+)+")


@dataclass(frozen=True, kw_only=True)
class Shown:
    """One command line as a page shows it."""

    where: str  # file:line
    text: str
    complete: bool  # from a code block: must parse with every required argument


def _block_commands(line: str) -> list[str]:
    found = _SUBSTITUTION.findall(line)
    line = _SUBSTITUTION.sub("SUBSTITUTED", line)
    for segment in re.split(r"\|\||&&|[|;>]", line):
        segment = _ENV_PREFIX.sub("", segment.strip())
        if segment == "rein" or segment.startswith("rein "):
            found.append(segment)
    return found


def shown_commands(path: Path, root: Path = ROOT) -> list[Shown]:
    """The rein command lines a Markdown page shows, with where each one is."""
    name = path.relative_to(root).as_posix()
    out: list[Shown] = []
    fence: str | None = None
    pending, start = "", 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        opened = _FENCE.match(line)
        if opened:
            fence = None if fence is not None else opened.group(1)
            continue
        if fence is None:
            out += [Shown(where=f"{name}:{number}", text=m, complete=False)
                    for m in _INLINE.findall(line.replace("\\|", "|"))]
            continue
        if fence not in _SHELL_BLOCKS:
            continue
        text = line.strip().removeprefix("$ ")
        if not pending:
            start = number
        text = f"{pending} {text}".strip()
        if text.endswith("\\"):
            pending = text[:-1]
            continue
        pending = ""
        out += [Shown(where=f"{name}:{start}", text=c, complete=True)
                for c in _block_commands(text)]
    return out


def _variants(words: list[str]) -> list[list[str]]:
    """``a|b`` in an inline span offers alternatives; ``…`` stands for "and others"."""
    choices = [[w for w in word.split("|") if w not in ("…", "...")] or [word]
               if "|" in word and not word.startswith(("'", '"', "{")) else [word]
               for word in words]
    return [list(v) for v in product(*choices)]


def check(shown: Shown) -> list[str]:
    """What is wrong with one command line (empty when it parses)."""
    try:
        words = shlex.split(shown.text, comments=True)
    except ValueError as exc:
        return [f"{shown.where}: cannot split {shown.text!r}: {exc}"]
    if not shown.complete:
        words = [w.strip("[]") for w in words if w.strip("[]")]
    problems = []
    for variant in _variants(words[1:]) if not shown.complete else [words[1:]]:
        problem = _parse(variant, complete=shown.complete)
        if problem:
            problems.append(f"{shown.where}: {shown.text!r}: {problem}")
    return problems


def _parse(args: list[str], *, complete: bool) -> str | None:
    command: click.Command = cli
    ctx = click.Context(cli, info_name="rein")
    path = ["rein"]
    while isinstance(command, click.Group) and args and not args[0].startswith("-"):
        sub = command.get_command(ctx, args[0])
        if sub is None:
            return f"{' '.join(path)} has no command {args[0]!r}"
        path.append(args.pop(0))
        command, ctx = sub, click.Context(sub, parent=ctx, info_name=sub.name)
    if isinstance(command, click.Group):
        # A group named alone (`rein approvals`) is a mention or prints its help.
        options = {o for p in command.get_params(ctx) for o in p.opts}
        if not args or args[0] in options:
            return None
        return f"{' '.join(path)} has no command {args[0]!r}"
    try:
        command.make_context(path[-1], list(args), parent=ctx.parent)
    except click.exceptions.Exit:
        return None  # --help or --version
    except click.MissingParameter as exc:
        return f"{exc.format_message()}" if complete else None
    except click.BadParameter as exc:
        # A file shown as an example need not exist here; any other bad value is wrong.
        if isinstance(exc.param.type if exc.param else None, click.Path | click.File):
            return None
        return exc.format_message()
    except click.BadOptionUsage as exc:
        # Inline, `rein run --approve` names the option; its value may be left out.
        return None if not complete and args and args[-1] == exc.option_name else (
            exc.format_message())
    except click.UsageError as exc:
        return exc.format_message()
    return None


ALL = [shown for path in DOCS for shown in shown_commands(path)]


def test_the_pages_show_command_lines() -> None:
    # The extractor finds both kinds; an empty list would make the test below vacuous.
    assert any(s.complete for s in ALL) and any(not s.complete for s in ALL)
    assert len(ALL) > 100


@pytest.mark.parametrize("shown", ALL, ids=lambda s: f"{s.where} {s.text[:40]}")
def test_a_documented_command_line_parses(shown: Shown) -> None:
    assert check(shown) == []


@pytest.mark.parametrize(("text", "complete", "wrong"), [
    ("rein graph validat x.yaml", True, "has no command 'validat'"),
    ("rein runs events RUN --folow", True, "No such option"),
    ("rein profile apply", True, "Missing argument"),
    ("rein config trust --digest", True, "requires an argument"),
    ("rein runs list|shoe", False, "has no command 'shoe'"),
    ("rein run g.yaml extra", True, "unexpected extra argument"),
])
def test_the_check_catches_what_is_wrong(text: str, complete: bool, wrong: str) -> None:
    [problem] = check(Shown(where="x.md:1", text=text, complete=complete))
    assert wrong in problem


@pytest.mark.parametrize("text", [
    "rein profile apply",  # inline: arguments may be left out
    "rein runs list|show|events|record",
    "rein config show [--workspace DIR] [--json]",
    "rein init --agent claude|codex|copilot",
])
def test_inline_mentions_may_be_partial(text: str) -> None:
    assert check(Shown(where="x.md:1", text=text, complete=False)) == []


def test_block_lines_join_continuations_and_substitutions(tmp_path: Path) -> None:
    page = tmp_path / "probe.md"
    page.write_text("```console\n$ rein run g.yaml --approve \"$(rein graph digest g.yaml)\"\n"
                    "$ rein runs events RUN \\\n    --follow --json | jq .\n```\n")
    shown = shown_commands(page, tmp_path)
    assert [s.text for s in shown] == [
        "rein graph digest g.yaml", 'rein run g.yaml --approve "SUBSTITUTED"',
        "rein runs events RUN  --follow --json"]
    assert all(s.complete for s in shown)
