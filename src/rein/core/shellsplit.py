"""Splitting a shell line into the simple commands it runs, or refusing to guess.

A ``shell:exec`` grant with a target (``shell:exec:pytest*``) must cover every command the
line runs, and trusting a hook binds the workspace files its command line names
(:mod:`rein.config.command_files`); both need the line split the way ``sh`` and ``bash``
split it: at ``;``, ``&``, ``&&``, ``||``, ``|``, ``|&`` and at newlines; a ``#`` that starts
a word comments out the rest of the line only, up to the newline; a backslash before a
newline joins the lines.

The splitter is deliberately smaller than the shell: whatever it cannot split with
certainty makes :func:`split_commands` return ``None``, and such a line is granted only by a
``shell:exec`` grant without a target. That covers everything that can hide or define a
command: command and process substitution (``$(...)``, backticks, ``<(...)``), subshells
and function definitions (``(``, ``)``), here-documents (``<<``), ``${...}`` beyond a plain
name, bash's ``$'...'`` and ``$"..."`` quoting and ``&>`` (the shells disagree on them),
reserved words in command position (``if``, ``for``, ``{``, ``!``, ``function``, ...), a
command name that is computed (``$X``, a glob, a brace expansion) or climbs out with
``..``, unterminated quotes, a trailing backslash and NUL bytes.
"""

from __future__ import annotations

from collections.abc import Mapping

from rein.core.frozen import Frozen, Record

# Words the shells treat as syntax, not as a program, when they stand in command position.
RESERVED = frozenset({
    "!", "{", "}", "[[", "]]", "case", "coproc", "do", "done", "elif", "else", "esac", "fi",
    "for", "function", "if", "in", "select", "then", "time", "until", "while",
})
_SEPARATORS = ("&&", "||", "|&", ";", "&", "|")  # longest first
_REDIRECTS = ("<>", "<&", ">&", ">>", ">|", "<", ">")  # longest first; "<<" is refused
_NAME_START = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
_NAME_CHARS = _NAME_START + "0123456789"
_SPECIAL_PARAMS = "@*#?-$!0123456789"
_COMPUTED = set("$*?[]{}~")  # unquoted in a command name: the shell computes the name


class Unsure(Exception):
    """The line uses something the splitter does not split with certainty."""


class ShellCommand(Frozen):
    """One simple command: its words after quote removal, and the program it runs."""

    words: tuple[str, ...]  # assignments, program, arguments; redirections as "2>&1", ">out"
    program: str | None  # None for a line of assignments and redirections only
    # Per word: "assign", "word" or "redirect"; and whether the shell computes it (an
    # expansion, or an unquoted pattern character): its value is known only when it runs.
    kinds: tuple[str, ...] = ()
    computed: tuple[bool, ...] = ()

    @property
    def text(self) -> str:
        """The words joined by single spaces: what a ``shell:exec`` target is matched to."""
        return " ".join(self.words)


class _Word(Record, kw_only=False):
    text: str = ""
    started: bool = False  # a word may be empty ('' is a word)
    computed: bool = False  # holds an expansion or an unquoted pattern character
    quoted_from: int | None = None  # where its first quoted character is, if any


def split_commands(line: str, *, known: Mapping[str, str] | None = None
                   ) -> tuple[ShellCommand, ...] | None:
    """The simple commands ``line`` runs, in order, or ``None`` when it cannot tell.

    ``known`` holds variables whose value is certain when the line runs (a hook's
    ``$REIN_PROJECT_DIR``): ``$NAME`` and ``${NAME}`` of those are replaced by their value,
    as text the shell does not split or expand further, and compute nothing."""
    try:
        return _Splitter(line, known or {}).run()
    except Unsure:
        return None


class _Splitter:
    def __init__(self, line: str, known: Mapping[str, str]) -> None:
        if "\x00" in line:
            raise Unsure("NUL byte")
        self.s = line
        self.known = known
        self.i = 0
        self.commands: list[ShellCommand] = []
        self.words: list[tuple[str, str, bool]] = []  # (text, kind, computed)
        self.word = _Word()
        self.redirect: str | None = None  # an operator waiting for its target word
        self.after_operator = False  # a separator came last: a command must follow

    def run(self) -> tuple[ShellCommand, ...]:
        s = self.s
        while self.i < len(s):
            ch = s[self.i]
            if ch == "\\":
                self._backslash()
            elif ch == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise Unsure("unterminated single quote")
                self._add(s[self.i + 1 : end], quoted=True)
                self.i = end + 1
            elif ch == '"':
                self._double_quoted()
            elif ch == "`":
                raise Unsure("command substitution")
            elif ch == "$":
                self._dollar()
            elif ch in " \t":
                self._end_word()
                self.i += 1
            elif ch == "\n":
                self._end_command()
                self.i += 1
            elif ch == "#" and not self.word.started:
                end = s.find("\n", self.i)
                self.i = len(s) if end < 0 else end  # the newline still ends the command
            elif ch in "()":
                raise Unsure("subshell, function or case syntax")
            elif ch in ";&|":
                self._separator()
            elif ch in "<>":
                self._redirection()
            else:
                self._add(ch, quoted=False, computed=ch in _COMPUTED)
                self.i += 1
        self._end_command()
        return tuple(self.commands)

    # -- words -------------------------------------------------------------------------

    def _add(self, text: str, *, quoted: bool, computed: bool = False) -> None:
        if quoted and self.word.quoted_from is None:
            self.word.quoted_from = len(self.word.text)
        self.word.text += text
        self.word.started = True
        self.word.computed = self.word.computed or (computed and not quoted)

    def _backslash(self) -> None:
        nxt = self.s[self.i + 1 : self.i + 2]
        if nxt == "":
            raise Unsure("trailing backslash")
        if nxt != "\n":  # backslash-newline joins the lines and is removed
            self._add(nxt, quoted=True)
        self.i += 2

    def _double_quoted(self) -> None:
        s = self.s
        self.i += 1
        self._add("", quoted=True)
        while True:
            if self.i >= len(s):
                raise Unsure("unterminated double quote")
            ch = s[self.i]
            if ch == '"':
                self.i += 1
                return
            if ch == "`":
                raise Unsure("command substitution")
            if ch == "$":
                self._dollar(quoted=True)
                continue
            if ch == "\\" and s[self.i + 1 : self.i + 2] in ('"', "\\", "$", "`", "\n"):
                if s[self.i + 1] != "\n":
                    self._add(s[self.i + 1], quoted=True)
                self.i += 2
                continue
            self._add(ch, quoted=True)
            self.i += 1

    def _dollar(self, *, quoted: bool = False) -> None:
        s = self.s
        nxt = s[self.i + 1 : self.i + 2]
        if nxt in ("(", "["):
            raise Unsure("command substitution or arithmetic")
        if nxt in ("'", '"') and not quoted:
            raise Unsure("$'...' and $\"...\" mean different things to sh and bash")
        if nxt == "{":
            end = s.find("}", self.i + 2)
            name = s[self.i + 2 : end] if end >= 0 else ""
            if not _is_name(name) and not (len(name) == 1 and name in _SPECIAL_PARAMS):
                raise Unsure("parameter expansion beyond ${NAME}")
            self._expansion(s[self.i : end + 1], quoted)
            self.i = end + 1
        elif nxt and nxt in _NAME_START:
            j = self.i + 1
            while j < len(s) and s[j] in _NAME_CHARS:
                j += 1
            self._expansion(s[self.i : j], quoted)
            self.i = j
        elif nxt and nxt in _SPECIAL_PARAMS:
            self._expansion(s[self.i : self.i + 2], quoted)
            self.i += 2
        else:
            self._add("$", quoted=True)  # a lone "$" is a literal dollar sign
            self.i += 1

    def _expansion(self, text: str, quoted: bool) -> None:
        name = text.strip("${}")
        if name in self.known:
            value = self.known[name]
            if not quoted and set(value) & (set(" \t\n") | _COMPUTED):
                raise Unsure(f"${name} unquoted: the shell splits or expands its value")
            self._add(value, quoted=True)
            return
        # Kept as written, so a grant sees "$HOME", and always marks the word as computed:
        # quoted or not, its value is only known when the shell runs.
        self._add(text, quoted=quoted)
        self.word.computed = True

    def _end_word(self) -> None:
        if not self.word.started:
            return
        word, self.word = self.word, _Word()
        self.after_operator = False
        if self.redirect is not None:
            self.words.append((self.redirect + word.text, "redirect", word.computed))
            self.redirect = None
            return
        name, eq, _ = word.text.partition("=")
        plain = len(word.text) + 1 if word.quoted_from is None else word.quoted_from
        kind = "assign" if eq and _is_name(name) and len(name) < plain else "word"
        self.words.append((word.text, kind, word.computed))

    # -- operators ---------------------------------------------------------------------

    def _separator(self) -> None:
        s = self.s
        if s.startswith(";;", self.i) or s.startswith(";&", self.i):
            raise Unsure("case syntax")
        if s.startswith("&>", self.i):
            raise Unsure("&> is a redirection in bash and a separator in sh")
        op = next(o for o in _SEPARATORS if s.startswith(o, self.i))
        self._end_command()
        if not self.commands or self.after_operator:
            raise Unsure(f"{op!r} with no command before it")
        self.after_operator = True
        self.i += len(op)

    def _redirection(self) -> None:
        s = self.s
        if s.startswith("<<", self.i):
            raise Unsure("here-document")
        if s.startswith("<(", self.i) or s.startswith(">(", self.i):
            raise Unsure("process substitution")
        op = next(o for o in _REDIRECTS if s.startswith(o, self.i))
        word = self.word
        # Digits right before the operator are its file descriptor ("2>&1").
        number = word.started and word.quoted_from is None and word.text.isdigit()
        prefix = word.text if number else ""
        if prefix:
            self.word = _Word()
        else:
            self._end_word()
        if self.redirect is not None:
            raise Unsure("a redirection without a target")
        self.redirect = prefix + op
        self.i += len(op)

    def _end_command(self) -> None:
        self._end_word()
        if self.redirect is not None:
            raise Unsure("a redirection without a target")
        words, self.words = self.words, []
        if not words:
            return
        # The program is the first word that is neither an assignment nor a redirection.
        program = next(((t, c) for t, kind, c in words if kind == "word"), None)
        if program is not None:
            name, computed = program
            if computed:
                raise Unsure("the program name is computed by the shell")
            if name in RESERVED:
                raise Unsure(f"shell syntax {name!r}")
            if "/" in name and ".." in name.split("/"):
                raise Unsure("a program path that climbs with '..'")
            if any(ch in name for ch in " \t\n"):
                raise Unsure("a program name with whitespace")
        self.commands.append(
            ShellCommand(words=tuple(t for t, _, _ in words),
                         program=program[0] if program else None,
                         kinds=tuple(k for _, k, _ in words),
                         computed=tuple(c for _, _, c in words))
        )


def _is_name(text: str) -> bool:
    return bool(text) and text[0] in _NAME_START and all(c in _NAME_CHARS for c in text)
