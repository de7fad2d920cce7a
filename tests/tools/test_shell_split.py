"""The shell splitter against real shells: what it says a line runs is what bash and sh run.

The oracle is a directory of shims on ``PATH``: each logs its own name, so the log holds
every program a shell actually started for a line (``echo`` is a builtin and never logs;
it is the granted command in these tests). A narrow grant must never let a line start a
program it does not cover, and for every line the splitter splits, each program started
must be one the splitter reported.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rein.core.shellsplit import split_commands
from rein.tools.permissions import Permission, PermissionSet, shell_commands

SHIMS = ("ok", "touch", "evil", "rm")  # programs the shells find only on the shim PATH
GRANTED = {"ok"}  # with the builtin echo, what shell:exec:echo* + shell:exec:ok * cover
# Programs that run their arguments (or redefine names): the splitter reports them, not
# what they run, so the soundness check does not apply; no grant here covers them.
RUNNERS = {"eval", "exec", "command", "alias", ".", "source", "builtin", "trap", "enable"}
SHELLS = [s for s in ("bash", "sh") if shutil.which(s)]
NARROW = PermissionSet.parse(["shell:exec:echo*", "shell:exec:ok *"])


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("oracle")
    shims = root / "bin"
    shims.mkdir()
    log = root / "log"
    for name in SHIMS:
        shim = shims / name
        shim.write_text(f"#!/bin/sh\nprintf '%s\\n' {name} >> {log}\n")
        shim.chmod(0o755)
    work = root / "work"
    work.mkdir()

    def run(shell: str, line: str) -> list[str]:
        """The programs ``shell -c line`` started (each shim logs its name)."""
        log.write_text("")
        program = shutil.which(shell)
        assert program is not None
        subprocess.run(
            [program, "-c", line],
            cwd=work,
            env={"PATH": str(shims), "HOME": str(work)},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=20,  # bounds a runaway line; no assertion depends on time
            check=False,
        )
        return log.read_text().split()

    return run


def allowed(line: str) -> bool:
    return NARROW.allows(Permission(scope="shell", action="exec", target=line))


# -- the lines of the issue, and their relatives ---------------------------------------

REFUSED = [
    "echo a\ntouch x",  # a newline separates commands
    "echo ok #\ntouch x",  # a comment ends at the newline
    "echo ok # \\\ntouch x",  # a comment does not continue with a backslash
    "echo a \\\n; touch x",  # backslash-newline joins lines, the ';' still separates
    "echo a\r\ntouch x",  # CR is no blank to the shell; the newline still separates
    "echo a &&\ntouch x",
    "echo a |\n touch x",
    "echo a & touch x",
    "echo a;touch x",
    "echo $(touch x)",
    "echo `touch x`",
    "echo \"$(touch x)\"",
    "echo ${X:-$(touch x)}",
    "echo a | (touch x)",
    "echo a; { touch x; }",
    "echo a; if true; then touch x; fi",
    "echo() { touch x; }; echo a",
    "function echo { touch x; }; echo a",
    "echo a\ncat <<EOF\n$(touch x)\nEOF",
    "echo a; X=touch; $X x",
    "echo a; {touch,x}",
    "echo/../../../usr/bin/touch x",
    "echo a &>/dev/null; touch x",
    "echo 'unterminated\ntouch x",
    "echo a; ! touch x",
]


@pytest.mark.parametrize("line", REFUSED)
def test_a_narrow_grant_refuses_lines_that_run_more(line: str) -> None:
    assert not allowed(line), shell_commands(line)


@pytest.mark.skipif(not SHELLS, reason="neither bash nor sh is installed")
@pytest.mark.parametrize(
    "line", ["echo a\ntouch x", "echo ok #\ntouch x", "echo a \\\n; touch x"]
)
def test_the_shells_do_run_touch_for_the_lines_of_the_issue(oracle, line: str) -> None:  # type: ignore[no-untyped-def]
    for shell in SHELLS:
        assert oracle(shell, line) == ["touch"], shell


def test_lines_that_only_run_what_is_granted_are_allowed() -> None:
    for line in (
        "echo a",
        "echo a # touch x",
        "echo 'a\ntouch x'",  # quoted: one argument, no second command
        "echo a#b; echo c",
        "echo a 2>&1 >out.txt",
        "echo \"$HOME\" && ok run",
        "ok run | ok more",
        "echo a \\\n b",
    ):
        assert allowed(line), line


def test_commands_are_reported_as_words_with_redirections_attached() -> None:
    assert shell_commands("echo hi > out.txt 2>&1") == ("echo hi >out.txt 2>&1",)
    assert shell_commands("X=1 ok run\nok  'two words'") == ("X=1 ok run", "ok two words")
    commands = split_commands("X=1 >log ok run")
    assert commands is not None and commands[0].program == "ok"
    assert split_commands("'X=1' ok")[0].program == "X=1"  # type: ignore[index]


def test_a_program_pattern_does_not_cover_a_program_path() -> None:
    perms = PermissionSet.parse(["shell:exec:echo*", "shell:exec:./scripts/*"])
    assert not perms.allows(Permission.parse("shell:exec:echo.d/run"))
    assert perms.allows(Permission.parse("shell:exec:./scripts/build.sh --fast"))
    assert PermissionSet.parse(["shell:exec:*"]).allows(Permission.parse("shell:exec:./x"))


# -- the fuzz corpus -------------------------------------------------------------------

FRAGMENTS = [
    *["echo", "ok", "touch", "evil", "rm", "x", "a", "-n", "X=touch", "$X", "${X}", "~"],
    *["eval", "exec", "command", "alias echo=touch", ".", "*", "ok/../touch", "EOF"],
    *[" ", " ", " ", "\t", "\n", "\r", ";", "&", "&&", "||", "|", "|&", "#", "'", '"'],
    *["\\", "\\\n", "`", "$(", "$((", "$[", ")", "(", "{", "}", "<", ">", ">>", "<<"],
    *["2>&1", "&>", "!", "if", "then", "fi", "for", "do", "done", "in", ";;", "=", "$'"],
    *["function", "()", "$", "${X:-", "\\;", "'\n'", '"\n"', "#x\n"],
]
# Lines close to what a narrow grant allows, so the "allowed" side is well explored too.
WORDS = [*["echo"] * 4, *["ok"] * 3, "a", "x", "touch", "evil", "'a b'", '"a"', ">out", "2>&1"]
GLUE = [" ", " ", " ", "\n", ";", "&&", "||", "|", "&", "\\\n", " #c\n", " #", "\r\n", "#"]
anything = st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=14).map("".join)
plausible = st.lists(
    st.tuples(st.sampled_from(WORDS), st.sampled_from(GLUE)), min_size=1, max_size=8
).map(lambda pairs: "".join(w + g for w, g in pairs))
lines = st.one_of(anything, plausible)


@pytest.mark.skipif(not SHELLS, reason="neither bash nor sh is installed")
@settings(
    max_examples=500,
    derandomize=True,  # the same corpus on every run
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(line=lines)
@example(line="echo a\ntouch x")
@example(line="echo ok #\ntouch x")
@example(line="alias echo=touch\necho x")
def test_fuzz_the_splitter_never_misses_a_command(oracle, line: str) -> None:  # type: ignore[no-untyped-def]
    commands = split_commands(line)
    if commands is None:
        return  # refused unless the grant has no target: nothing to compare
    programs = {c.program for c in commands}
    for shell in SHELLS:
        started = oracle(shell, line)
        if allowed(line):
            assert set(started) <= GRANTED, (shell, line, started)
        if not programs & RUNNERS:
            assert set(started) <= programs, (shell, line, started, programs)



def test_each_word_says_its_kind_and_whether_the_shell_computes_it() -> None:
    [command] = split_commands('X=1 sh "$HOME"/a.sh < in.txt 2>&1') or ()
    assert command.words == ("X=1", "sh", "$HOME/a.sh", "<in.txt", "2>&1")
    assert command.kinds == ("assign", "word", "word", "redirect", "redirect")
    assert command.computed == (False, False, True, False, False)


def test_a_known_variable_is_its_value_and_computes_nothing() -> None:
    known = {"REIN_PROJECT_DIR": "/ws"}
    [command] = split_commands('"$REIN_PROJECT_DIR"/hooks/x.sh ${REIN_PROJECT_DIR}',
                               known=known) or ()
    assert command.program == "/ws/hooks/x.sh" and command.words[1] == "/ws"
    assert command.computed == (False, False)
    # Unquoted, a value with a space would be split by the shell: not certain.
    assert split_commands("sh $REIN_PROJECT_DIR/x.sh", known={"REIN_PROJECT_DIR": "/a b"}) \
        is None
