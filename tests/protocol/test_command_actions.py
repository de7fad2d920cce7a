"""What a person approving a shell command is told it does (Codex's ``commandActions``):
a read, a listing or a search only when the shell runs nothing else."""

from __future__ import annotations

import pytest

from rein.protocol.items import command_actions


@pytest.mark.parametrize("command", [
    "cat notes.txt;reboot",  # a separator without spaces is still a separator
    "cat a#b;reboot",  # shlex would drop the rest as a comment; the shell does not
    "cat x`id`",
    "cat a$(touch${IFS}p)",
    "ls\nreboot",  # a line break is another command
    "cat a>b",
    "cat a|sh",
    "cat a&",
])
def test_a_command_that_may_run_another_program_is_unknown(command: str) -> None:
    assert command_actions(command) == [{"type": "unknown", "command": command}]


def test_reads_listings_and_searches_are_named() -> None:
    assert command_actions("cat notes.txt && ls src") == [
        {"type": "read", "command": "cat notes.txt", "name": "notes.txt", "path": "notes.txt"},
        {"type": "listFiles", "command": "ls src", "path": "src"}]
    assert command_actions('cat "a;b"') == [  # quoted: one file name
        {"type": "read", "command": "cat 'a;b'", "name": "a;b", "path": "a;b"}]
    assert command_actions("rg -n TODO src") == [
        {"type": "search", "command": "rg -n TODO src", "query": "TODO", "path": "src"}]


@pytest.mark.parametrize("command", [
    "find . -delete",  # a listing by its program, a deletion by its option
    "find . -name '*.py' -exec rm {} +",
    "find -fprint out",
    "fd -x rm",
    "fd --exec=rm",
    "rg --pre sh TODO",
    "rg --pre=sh TODO src",
    "rg -z TODO",  # runs a decompressor on every compressed file
    "git-grep -O TODO",
    "tree -o listing.txt",
    "less +!reboot notes.txt",
    "bat --pager=sh notes.txt",
])
def test_a_reader_that_runs_or_writes_through_an_option_is_unknown(command: str) -> None:
    assert command_actions(command) == [{"type": "unknown", "command": command}]


def test_options_that_only_shape_the_output_keep_the_action() -> None:
    assert command_actions("ls -la src")[0]["type"] == "listFiles"
    assert command_actions("rg -n -i TODO src")[0]["type"] == "search"
    assert command_actions("head -5 log.txt")[0]["type"] == "read"
