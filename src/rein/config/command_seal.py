"""Running a command from sealed copies of its workspace files: the bytes rein checked run.

Trust binds the workspace files a command runs (:mod:`rein.config.command_files`). Comparing
them with their digests before the start is not enough: the program (an interpreter, or the
kernel for a ``#!`` script) opens the script again by its path after the check, and a
process that rewrites it in that instant would run code nobody approved. So
:func:`sealed_command` reads each bound file once, writing the bytes it hashes to a copy in
a folder of its own (``rein-run-*`` in the temporary directory, mode 0700, under the file's
workspace path: ``hooks/log.sh`` is ``<folder>/hooks/log.sh``), compares those digests with
the pins, and hands back the command with every word that names a bound file naming its
copy instead. A copy the line runs is hashed once more just before the start. Nothing runs
if a digest differs, and the folder is removed on every way out.

For the command that runs, this means:

- ``sh hooks/log.sh`` runs ``sh <folder>/hooks/log.sh``, ``["hooks/check.py"]`` (a ``#!``
  script) runs ``<folder>/hooks/check.py``, and ``"$REIN_PROJECT_DIR"/hooks/x.sh`` the
  same copy; an input redirection, an ``--option=value`` and the line of a shell's ``-c``
  name copies too, the rest of the line is left as written;
- a program looked up on a ``PATH`` with workspace directories runs as found when the
  files were checked: its copy, or the program outside the workspace by its full path;
- the script's own path (``$0``, ``__file__``) is the copy's: next to it are the copies of
  the hook's other bound files (its ``files``, at their workspace paths) and, for the rest
  of each folder on the way (up to the workspace's root), links to the workspace's files
  and folders (:meth:`_Seal.mirror`): a module imported or a file sourced beside the
  script, unbound, is read from the workspace as before; only a new file written beside it
  lands in the folder (and goes with it). The working directory and ``$REIN_PROJECT_DIR``
  are the workspace still, so a file reached through them is read from the workspace
  (compared just before the start when bound, not copied);
- a file bound by its full path, outside the workspace (what ``rein eval`` pins of a
  suite: ``{suite}/hooks/deny.py``), is copied under ``<folder>/rein-outside/`` at its full
  path, and a word naming it by that path names its copy;
- a path bound as absent, or that is not a regular file, is left as written;
- a workspace file the line names that trust did not bind (a ``PATH`` that differs from
  the one it was read with, a folder since replaced by a file) is reported, and nothing runs.

A copy is a file, not a sealed ``memfd``: interpreters resolve and read their script by
path (Node.js follows ``/proc/self/fd/N`` to a name that does not exist), and some choose
by its extension, so the copy keeps the script's name. The folder is private to the user:
a process of the same user outside any sandbox could still find it (a node under
bubblewrap has its own ``/tmp`` and ``/proc``). A command worker's copies go to the
attempt's private directory instead, which its sandbox shows (``within``).

A command with no bound files runs as written, with no folder and no copy.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from rein.config.command_files import ABSENT, Reader, Walk, digest, file_digest
from rein.core.frozen import Frozen
from rein.core.shellsplit import ShellCommand, split_commands

__all__ = ["FOLDER_PREFIX", "Sealed", "sealed_command", "word_spans"]

#: The name of a sealed run's folder starts so (in the temporary directory, or ``within``).
FOLDER_PREFIX = "rein-run-"
_PROJECT = ("REIN_PROJECT_DIR", "CLAUDE_PROJECT_DIR")
# Where the copies of files bound by their full path (outside the workspace) go, under it.
_OUTSIDE = "rein-outside"
_SEPARATORS = ("&&", "||", "|&", ";", "&", "|")
_REDIRECTS = ("<>", "<&", ">&", ">>", ">|", "<", ">")


class Sealed(Frozen):
    """A command ready to run from its copies, or the bound files that stop it."""

    command: str | tuple[str, ...]  # what to run: the words naming bound files name copies
    changed: tuple[str, ...] = ()  # bound files not as pinned (or not bound): do not run
    folder: str | None = None  # where the copies are, until the context ends


@contextlib.contextmanager
def sealed_command(command: str | Sequence[str], workspace: Path, pins: Mapping[str, str],
                   *, search_path: str, within: Path | None = None) -> Iterator[Sealed]:
    """``command`` to run from ``workspace`` with its bound files (``pins``, as
    :func:`rein.config.command_files.pin` records them) read from sealed copies. The
    copies' folder is made in ``within`` (by default the temporary directory): a command
    that runs under bubblewrap needs it where the sandbox shows it. Raises
    :class:`OSError` when a copy cannot be made, :class:`ValueError` when the command's
    files can no longer be told."""
    as_given = command if isinstance(command, str) else tuple(command)
    if not pins:
        yield Sealed(command=as_given)
        return
    copies = any(want != ABSENT and not want.startswith(("other:", "unreadable:"))
                 for want in pins.values())
    folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX, dir=within)) if copies else None
    try:
        seal = _Seal(Path(workspace), search_path, pins, folder)
        stale = seal.copy()
        if stale:
            yield Sealed(command=as_given, changed=tuple(stale))
            return
        seal.mirror()
        swapped = seal.command(as_given)
        stale = sorted(set(seal.unbound) | set(seal.recheck()))
        yield Sealed(command=as_given if stale else swapped, changed=tuple(stale),
                     folder=None if folder is None else str(folder))
    finally:
        if folder is not None:
            _remove(folder)


class _Seal(Walk):
    """The walk of a sealed run: bound files are copied, and the words naming them swapped."""

    def __init__(self, workspace: Path, search_path: str, pins: Mapping[str, str],
                 folder: Path | None) -> None:
        super().__init__(workspace, search_path)
        self.known = {name: str(workspace) for name in _PROJECT}
        self.pins = pins
        self.folder = folder
        self.written: dict[str, str] = {}  # each copy's workspace path → its bytes' digest
        self.unbound: list[str] = []
        self.runs: set[str] = set()  # the copies the line names
        # A file bound by its full path: its path as a word of the line may spell it.
        self.full = {os.path.normpath(name): name for name in pins if os.path.isabs(name)}

    def place(self, name: str) -> Path:
        """Where the copy of the bound path ``name`` goes: at its workspace path, or, bound
        by its full path (outside the workspace), at that path under ``rein-outside``
        (never the path itself: ``folder / "/abs"`` would name the original)."""
        assert self.folder is not None
        if os.path.isabs(name):
            return self.folder / _OUTSIDE / name.lstrip("/")
        return self.folder / name

    def copy(self) -> list[str]:
        """Copy every bound file and folder, hashing what is copied; the paths whose
        digest is not the pinned one. A path inside a folder already copied is compared
        only: its copy is the folder's, covered by the folder's digest."""
        stale: list[str] = []
        trees: list[str] = []
        for path, want in sorted(self.pins.items()):
            inside = any(path.startswith(tree + "/") for tree in trees)
            if self.folder is None or inside or want == ABSENT:
                got = digest(self.workspace / path)
            else:
                got = digest(self.workspace / path, read=self._copier(path))
                if got.startswith("tree:"):
                    trees.append(path)
            if got != want:
                stale.append(path)
        return stale

    def mirror(self) -> None:
        """Beside the copies, the rest of each folder they are in, as links to the files and
        folders of the workspace (or, for a file bound by its full path, of its own folder):
        a script that imports a module or sources a file beside itself, or goes up from its
        folder, reads what it read before, from the workspace (bound only if trust bound it,
        as before). Only the bound files are copies."""
        if self.folder is None:
            return
        outside = self.folder / _OUTSIDE
        for here, dirs, _files in os.walk(self.folder):
            at = Path(here)
            if at == outside:
                continue  # the full paths' root: a folder of the file system, not the work
            relative = at.relative_to(self.folder)
            if relative.parts[:1] == (_OUTSIDE,):
                source = Path("/", *relative.parts[1:])
                if not any(p.parent == source for p in map(Path, self.full.values())):
                    continue  # above a file bound by its full path: its own folder only
            else:
                source = self.workspace / relative
            try:
                entries = os.listdir(source)
            except OSError:
                continue
            for name in entries:
                if name == "__pycache__" or (relative == Path(".") and name == _OUTSIDE) or \
                        (at / name).exists() or (at / name).is_symlink():
                    continue  # Python writes the copies' bytecode beside them, not there
                with contextlib.suppress(OSError):
                    os.symlink(source / name, at / name)
            dirs[:] = [d for d in dirs if not (at / d).is_symlink()]

    def _copier(self, path: str) -> Reader:
        def read(full: str, below: str) -> str:
            name = f"{path}/{below}" if below else path
            assert self.folder is not None
            got = file_digest(full, copy_to=self.place(name))
            if got.startswith("sha256:"):
                self.written[name] = got
            return got
        return read

    def recheck(self) -> list[str]:
        """The copies the line runs whose bytes are no longer those hashed."""
        folder = self.folder
        return [name for name in sorted(self.runs)
                if folder is None or digest(self.place(name)) != self.written[name]]

    def add(self, relative: str) -> None:
        if relative not in self.pins and os.path.exists(self.workspace / relative):
            self.unbound.append(relative)

    def swap(self, inside: str) -> str | None:
        if inside not in self.written or self.folder is None:
            return None  # absent, not a regular file, or not bound: left as written
        self.runs.add(inside)
        return str(self.place(inside))

    def holds(self, full: str, inside: str | None) -> bool:
        if inside is None:
            return super().holds(full, None)
        # A workspace directory holds the program if its checked copy does.
        return (self.folder is not None and inside in self.written
                and os.access(self.place(inside), os.X_OK))

    def candidate(self, word: str) -> str | None:
        if self.full and os.path.isabs(word) and "\x00" not in word:
            name = self.full.get(os.path.normpath(word))
            if name is not None:  # bound by its full path, outside the workspace
                return self.swap(name)
        return super().candidate(word)

    def found(self, full: str, inside: str | None) -> str | None:
        return os.path.abspath(full) if inside is None else self.swap(inside)

    def respell(self, text: str, commands: Sequence[ShellCommand],
                words: Sequence[tuple[str, ...]]) -> str:
        """``text`` with each changed word's source replaced by its new value, quoted;
        the result must split into exactly ``words`` (else :class:`ValueError`)."""
        spans = word_spans(text)
        old = [(word, kind) for c in commands for word, kind in zip(c.words, c.kinds,
                                                                    strict=True)]
        new = [word for command in words for word in command]
        if spans is None or len(spans) != len(old):
            raise ValueError(f"the shell line {text!r} could not be rewritten to run copies")
        parts, at = [], 0
        for (start, end), (was, kind), now in zip(spans, old, new, strict=True):
            if now == was:
                continue
            # A redirection's span is its target: the digits and operator stay as written.
            head = len(was) - len(was.lstrip("0123456789")) + 1 if kind == "redirect" else 0
            parts += [text[at:start], shlex.quote(now[head:])]
            at = end
        rewritten = "".join([*parts, text[at:]])
        again = split_commands(rewritten, known=self.known)
        if again is None or [(c.words, c.kinds) for c in again] != [
                (w, c.kinds) for w, c in zip(words, commands, strict=True)]:
            raise ValueError(f"the shell line {text!r} could not be rewritten to run copies")
        return rewritten


def word_spans(line: str) -> list[tuple[int, int]] | None:
    """Where each word of a shell line is, as :func:`rein.core.shellsplit.split_commands`
    splits it, in order (a redirection's word is its target); None for a line that has
    a construct it refuses. Only the boundaries are found here: what a word means is the
    splitter's, and a rewritten line is split again to check it."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch == "\\" and line[i + 1:i + 2] == "\n":
            i += 2  # a line continuation: removed, starts no word
        elif ch == "\\":
            start = i if start is None else start
            i += 2
        elif ch == "'":
            start = i if start is None else start
            end = line.find("'", i + 1)
            if end < 0:
                return None
            i = end + 1
        elif ch == '"':
            start = i if start is None else start
            i = _double_quoted_end(line, i)
            if i < 0:
                return None
        elif ch in " \t\n" or ch in ";&|<>":
            if ch in "<>" and start is not None and line[start:i].isdigit():
                start = None  # the descriptor of a redirection, not a word
            if start is not None:
                spans.append((start, i))
                start = None
            operators = _REDIRECTS if ch in "<>" else _SEPARATORS
            i += next((len(op) for op in operators if line.startswith(op, i)), 1)
        elif ch == "#" and start is None:
            end = line.find("\n", i)
            i = n if end < 0 else end
        else:
            start = i if start is None else start
            i += 1
    if start is not None:
        spans.append((start, n))
    return spans


def _double_quoted_end(line: str, i: int) -> int:
    """Where the double-quoted string opening at ``i`` ends (past its quote), or -1."""
    i += 1
    while i < len(line):
        if line[i] == "\\":
            i += 2
        elif line[i] == '"':
            return i + 1
        else:
            i += 1
    return -1


def _remove(folder: Path) -> None:
    """Remove a sealed run's folder, even if what ran made parts of it read-only."""
    for dirpath, dirnames, _files in os.walk(folder):
        for name in dirnames:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(dirpath, name), 0o700)
    shutil.rmtree(folder, ignore_errors=True)
