"""Every command and group: --help shows an example and the exit codes it uses, and the
examples name only commands and options that exist."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import click
import pytest

from rein.cli import main
from rein.cli.app import cli


def _walk(group: click.Group, ctx: click.Context, path: tuple[str, ...]
          ) -> Iterator[tuple[str, ...]]:
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        yield (*path, name)
        if isinstance(command, click.Group):
            yield from _walk(command, click.Context(command, parent=ctx, info_name=name),
                             (*path, name))


def _leaf(path: tuple[str, ...]) -> click.Command:
    command: Any = cli
    ctx = click.Context(cli, info_name="rein")
    for name in path:
        command = command.get_command(ctx, name)
        ctx = click.Context(command, parent=ctx, info_name=name)
    return command


COMMANDS = list(_walk(cli, click.Context(cli, info_name="rein"), ()))
LEAVES = [p for p in COMMANDS if not isinstance(_leaf(p), click.Group)]
# Commands allowed to lack an example or exit codes (none today).
KNOWN_GAPS: set[tuple[str, ...]] = set()


@pytest.mark.parametrize("path", [p for p in COMMANDS if p not in KNOWN_GAPS], ids=" ".join)
def test_help_has_an_example_and_exit_codes(path: tuple[str, ...], capsys: Any) -> None:
    assert main([*path, "--help"]) == 0
    text = capsys.readouterr().out
    assert "Example:" in text
    assert "Exit codes:" in text
    assert "Traceback" not in text


@pytest.mark.parametrize("path", LEAVES, ids=" ".join)
def test_help_examples_use_real_options(path: tuple[str, ...], capsys: Any) -> None:
    main([*path, "--help"])
    text = capsys.readouterr().out
    command = _leaf(path)
    ctx = click.Context(command, info_name=path[-1])
    known = {opt for p in command.get_params(ctx) for opt in [*p.opts, *p.secondary_opts]}
    example = text.split("Example:", 1)[1].split("Exit codes:", 1)[0]
    prefix = " ".join(("rein", *path)) + " "
    for line in example.splitlines():
        line = line.strip()
        if not line.startswith(prefix):
            continue
        words = line.split("#", 1)[0].split()
        for word in words:
            option = word.split("=", 1)[0]
            if option.startswith("--"):
                assert option in known, f"{line!r}: {option} is not an option of {prefix}"
