"""Which workspace files a configured command runs, and their bytes: what trust binds.

A hook (or a command worker) from a project ``rein.toml`` is code a person reviewed before
trusting it. The files of the workspace that the command runs are code too, and a node may
be able to write them, so trusting the command binds their bytes (:func:`pin`): a changed
file makes the configuration untrusted again, rein refuses to run the command
(:func:`changed`), and the write guard keeps every node from writing those paths. A hook
and a command worker run copies of the bytes compared (:mod:`rein.config.command_seal`,
through :class:`Walk`).

Which files, by rule (read from the command line as a person reads it, never guessed):

1. A string runs through ``/bin/sh -c``: it is split into simple commands by the splitter of
   ``shell:exec`` grants (:mod:`rein.core.shellsplit`). A list is an argv, taken as written.
2. Each word of each command is a candidate: the program, every argument, the value of an
   ``--option=value`` and the file of an input redirection (``<file``). Options, variable
   assignments and output redirections name nothing to run; neither does a word holding
   whitespace or a URL (``://``).
3. A candidate read as a path from the workspace (the command's working directory;
   ``$REIN_PROJECT_DIR`` and ``$CLAUDE_PROJECT_DIR`` stand for it) that stays inside it is
   bound, whether it exists or not: a file by its bytes, a missing path as absent, so that
   creating it later changes the command too. A directory on the line is data, not bound
   (nor is the workspace itself); ``files`` binds one.
4. A program named without a ``/`` is looked up on ``PATH``: each ``PATH`` directory inside
   the workspace binds its candidate, up to the first directory that holds the program.
5. The command line of a shell's ``-c`` (``sh -c '...'``, ``bash -lc '...'``) is split in turn.
6. The table's ``files`` names what the line does not show: a script that sources another,
   a Python script's imports from its own directory. A directory there binds every file
   below it, and no file may be added to it.

A command whose files cannot be told is never trusted (:data:`UNSURE_CODE`): a line the
splitter does not split with certainty (command substitution, subshells, here-documents),
a word the shell computes (``$VAR``, a glob, ``~``) other than the project directory
variables, a line that changes directory (``cd``): write such a command as a list, or name
its files from the workspace root. What stays outside the rule is said in
``docs/security.md``: an interpreter's own lookups (Python's imports from the working
directory, ``node_modules``) reach files the line does not name unless ``files`` lists them.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from rein.core.frozen import Frozen
from rein.core.shellsplit import ShellCommand, split_commands

#: The code of a command whose files cannot be told (it is never trusted).
UNSURE_CODE = "CFG016"
ABSENT = "absent"
#: A directory named in ``files`` binds at most this many files (beyond: not trusted).
MAX_TREE_FILES = 2000
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"})
# A hook runs with these set to the workspace (rein.tools.hooks.hook_env).
_PROJECT = ("REIN_PROJECT_DIR", "CLAUDE_PROJECT_DIR")
_DIRECTORY_CHANGES = frozenset({"cd", "pushd", "popd"})
_CHUNK = 1 << 20


class CommandFiles(Frozen):
    """The workspace files one command runs (workspace-relative POSIX paths, sorted), or
    why they cannot be told."""

    paths: tuple[str, ...] = ()
    unsure: str | None = None


class _Unsure(Exception):
    """The command's files cannot be told from its line."""


def command_files(command: str | Sequence[str], workspace: Path, *,
                  search_path: str | None, extra: Iterable[str] = ()) -> CommandFiles:
    """The files ``command`` runs from ``workspace`` (see the module's rules), with the
    ``files`` a table adds (``extra``). ``search_path`` is the ``PATH`` it runs with."""
    found = Walk(Path(workspace), search_path or "")
    try:
        if isinstance(command, str):
            found.line(command)
        else:
            found.argv(list(command))
        for name in extra:
            found.named(name)
    except _Unsure as exc:
        return CommandFiles(unsure=str(exc))
    return CommandFiles(paths=tuple(sorted(found.paths)))


class Walk:
    """A walk over the words of a command, by the rules above: :meth:`add` hears each file
    it names, and :meth:`swap` may give the path to name in its place (what a sealed run
    does, :mod:`rein.config.command_seal`; here nothing is swapped)."""

    def __init__(self, workspace: Path, search_path: str) -> None:
        self.workspace = workspace
        self.search_path = search_path
        self.paths: set[str] = set()

    def command(self, command: str | Sequence[str]) -> str | tuple[str, ...]:
        """``command`` with every swapped word in place (raises :class:`ValueError` for a
        command whose files cannot be told)."""
        try:
            return self.line(command) if isinstance(command, str) else tuple(
                self.argv(list(command)))
        except _Unsure as exc:
            raise ValueError(str(exc)) from None

    def line(self, text: str) -> str:
        commands = split_commands(text, known={v: str(self.workspace) for v in _PROJECT})
        if commands is None:
            raise _Unsure(f"the shell line {_short(text)} does not split with certainty "
                          "(command substitution, a subshell, a here-document...)")
        words = [self.simple(command) for command in commands]
        if all(new == command.words for new, command in zip(words, commands, strict=True)):
            return text
        return self.respell(text, commands, words)

    def respell(self, text: str, commands: Sequence[ShellCommand],
                words: Sequence[tuple[str, ...]]) -> str:
        """``text`` with the words of its commands replaced by ``words``."""
        raise NotImplementedError("only a walk that swaps words rewrites a line")

    def simple(self, command: ShellCommand) -> tuple[str, ...]:
        out = list(command.words)
        at: list[int] = []  # where the program and its arguments are
        for i, (word, kind, computed) in enumerate(zip(command.words, command.kinds,
                                                       command.computed, strict=True)):
            if kind == "assign":
                if word.startswith("PATH="):
                    raise _Unsure(f"{word!r} sets the PATH its program is looked up on")
                continue  # a variable for the command, not a file it runs
            target = word.lstrip("0123456789") if kind == "redirect" else word
            if kind == "redirect" and not (target.startswith("<")
                                           and not target.startswith("<&")):
                continue  # output redirections write; they name nothing to run
            if computed:
                raise _Unsure(f"{word!r} is computed by the shell when the command runs "
                              "(a variable, a glob or ~)")
            if kind == "redirect":  # input: the file is fed to the program
                swapped = self.candidate(target[1:])
                if swapped is not None:
                    out[i] = word[: len(word) - len(target) + 1] + swapped
            else:
                at.append(i)
        for i, word in zip(at, self.argv([out[i] for i in at]), strict=True):
            out[i] = word
        return tuple(out)

    def argv(self, words: list[str]) -> list[str]:
        if not words:
            return words
        out = list(words)
        program, *arguments = words
        if PurePosixPath(program).name in _DIRECTORY_CHANGES:
            raise _Unsure(f"{program!r} changes the directory the rest of the line runs in")
        swapped = self.candidate(program) if "/" in program else self.on_path(program)
        if swapped is not None:
            out[0] = swapped
        shell = PurePosixPath(program).name in _SHELLS
        inline = False
        for i, word in enumerate(arguments, start=1):
            if inline:  # the command line of a shell's -c
                out[i] = self.line(word)
                inline = False
            elif word.startswith("-"):
                inline = shell and not word.startswith("--") and "c" in word[1:]
                if "=" in word:
                    option, value = word.split("=", 1)
                    swapped = self.candidate(value)
                    if swapped is not None:
                        out[i] = f"{option}={swapped}"
            else:
                swapped = self.candidate(word)
                if swapped is not None:
                    out[i] = swapped
        return out

    def on_path(self, program: str) -> str | None:
        """Each PATH directory in the workspace binds its candidate, up to the first
        directory that holds the program (an empty entry is the working directory)."""
        passed = False
        for entry in self.search_path.split(os.pathsep):
            full = os.path.join(self.workspace, entry, program)  # an absolute entry wins
            inside = self.inside(full)
            if inside is not None:
                self.add(inside)
                passed = True
            if self.holds(full, inside):
                return self.found(full, inside) if passed else None
        return None

    def holds(self, full: str, inside: str | None) -> bool:
        """Whether ``full`` (``inside`` the workspace, or None) is a program to run."""
        return os.path.isfile(full) and os.access(full, os.X_OK)

    def found(self, full: str, inside: str | None) -> str | None:
        """What to run for a program looked up on a PATH with workspace directories."""
        return None

    def candidate(self, word: str) -> str | None:
        """A word of the line: bound when it is a path in the workspace, unless it is a
        directory there (an argument naming a folder is data; ``files`` binds one)."""
        if not word or "://" in word or any(c.isspace() for c in word) or "\x00" in word:
            return None
        inside = self.inside(word)
        if inside is not None and not (self.workspace / inside).is_dir():
            self.add(inside)
            return self.swap(inside)
        return None

    def swap(self, inside: str) -> str | None:
        """The path to name in place of the workspace file ``inside`` (None: as written)."""
        return None

    def named(self, name: str) -> None:
        inside = self.inside(name)
        if inside is None:
            raise _Unsure(f"files: {name!r} is not a path inside the workspace")
        self.add(inside)

    def inside(self, word: str) -> str | None:
        """``word`` as a workspace-relative POSIX path, or None outside (or the root; or a
        word no file can be named by)."""
        if not word or "\x00" in word:
            return None
        path = word if os.path.isabs(word) else os.path.join(self.workspace, word)
        relative = os.path.relpath(os.path.normpath(path), os.path.normpath(self.workspace))
        if relative == "." or relative == ".." or relative.startswith("../"):
            return None
        return PurePosixPath(*Path(relative).parts).as_posix()

    def add(self, relative: str) -> None:
        self.paths.add(relative)


def _short(text: str) -> str:
    return repr(text if len(text) <= 80 else text[:77] + "...")


# ---------------------------------------------------------------------------- bytes


def pin(workspace: Path, paths: Iterable[str]) -> dict[str, str]:
    """``{path: digest}`` for each workspace-relative path: ``sha256:<hex>`` for a file,
    ``tree:sha256:<hex>`` over the names and bytes of every file below a directory,
    ``absent`` for nothing there."""
    root = Path(workspace)
    return {p: digest(root / p) for p in sorted(set(paths))}


def changed(workspace: Path, pins: Mapping[str, str]) -> list[str]:
    """The pinned paths whose content is no longer what was pinned."""
    root = Path(workspace)
    return [p for p, want in sorted(pins.items()) if digest(root / p) != want]


#: Reads one file for a digest: (its path, its path below the pinned folder, or "") → digest.
Reader = Callable[[str, str], str]


def digest(path: Path, *, read: Reader | None = None) -> str:
    """The digest :func:`pin` records for one path. ``read`` reads each file in place of
    :func:`file_digest` (a sealed run copies the bytes it hashes)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return ABSENT
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    if stat.S_ISDIR(info.st_mode):
        return _tree(path, read or _whole)
    return (read or _whole)(str(path), "")


def file_digest(path: Path | str, *, copy_to: Path | None = None) -> str:
    """A regular file's SHA-256, opened without blocking (a FIFO never waits). With
    ``copy_to``, the bytes hashed are written there as well, to a new file, read-only and
    executable if the file is: the copy holds exactly the bytes of the digest. A copy that
    cannot be made raises :class:`OSError`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    try:
        try:
            mode = os.fstat(fd).st_mode
        except OSError as exc:
            return f"unreadable:{exc.errno}"
        if not stat.S_ISREG(mode):
            return f"other:{stat.S_IFMT(mode):o}"
        out = None if copy_to is None else _new_file(copy_to, mode)
        try:
            return _hash(fd, out)
        finally:
            if out is not None:
                os.close(out)
    finally:
        os.close(fd)


def _whole(path: str, _below: str) -> str:
    return file_digest(path)


def _hash(fd: int, out: int | None) -> str:
    sha = hashlib.sha256()
    while True:
        try:
            block = os.read(fd, _CHUNK)
        except OSError as exc:
            return f"unreadable:{exc.errno}"
        if not block:
            return "sha256:" + sha.hexdigest()
        sha.update(block)
        view = memoryview(block)
        while out is not None and view:
            view = view[os.write(out, view):]


def _new_file(path: Path, mode: int) -> int:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    return os.open(path, flags, 0o500 if mode & 0o111 else 0o400)


def _tree(root: Path, read: Reader) -> str:
    sha = hashlib.sha256()
    count = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            count += 1
            if count > MAX_TREE_FILES:
                return f"tree:more-than-{MAX_TREE_FILES}-files"
            full = os.path.join(dirpath, name)
            relative = os.path.relpath(full, root).replace(os.sep, "/")
            sha.update(f"{relative}\x00{read(full, relative)}\n".encode())
        for name in dirnames:  # a directory link is an entry, not walked
            if os.path.islink(os.path.join(dirpath, name)):
                sha.update(f"{os.path.relpath(os.path.join(dirpath, name), root)}\x00link\n"
                           .encode())
    return "tree:sha256:" + sha.hexdigest()


__all__ = ["ABSENT", "MAX_TREE_FILES", "UNSURE_CODE", "CommandFiles", "Reader", "Walk",
           "changed", "command_files", "digest", "file_digest", "pin"]
