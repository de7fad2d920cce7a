"""A repository's refs read from its files, as ``git show-ref --head`` lists them.

What :mod:`rein.tools.gitguard` compares before and after an attempt, without starting a
process: on the event loop a process start stalls every turn of the process for as long as
the kernel takes to start ``git`` (tens of milliseconds on a loaded machine), and a read of
a few files does not. The files read: ``HEAD``, the loose refs under ``refs/`` and
``packed-refs`` (a loose ref wins over its packed line), in the common directory of a
linked worktree as well as its own. A symbolic ref is listed under the commit it names,
and left out when that does not exist yet (an unborn branch), as git does.

A repository this reader does not know how to read (the reftable format, or one that
``GIT_DIR`` and its kin point elsewhere) raises :class:`Unreadable`: the caller asks git.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

# Variables that make git look somewhere other than the directory it runs in.
GIT_VARIABLES = ("GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE", "GIT_CEILING_DIRECTORIES",
                 "GIT_DISCOVERY_ACROSS_FILESYSTEM")
HOPS = 10  # symbolic refs followed before one is given up as a loop


class Unreadable(Exception):
    """The repository is laid out in a way only git itself reads."""


def read_refs(workspace: str | os.PathLike[str],
              env: Mapping[str, str] = os.environ) -> dict[str, str] | None:
    """Every ref and ``HEAD`` → commit, or None outside a repository (Unreadable: ask
    git)."""
    if any(name in env for name in GIT_VARIABLES):
        raise Unreadable("git is pointed elsewhere by the environment")
    git_dir = _git_dir(Path(workspace).resolve())
    if git_dir is None:
        return None
    common = _common_dir(git_dir)
    if (common / "reftable").exists() or (git_dir / "reftable").exists():
        raise Unreadable("the reftable format")
    values = _packed(common / "packed-refs")
    for root in dict.fromkeys((common, git_dir)):  # a linked worktree's own refs too
        values.update(_loose(root))
    head = _read(git_dir / "HEAD")
    if head is not None:
        values["HEAD"] = head
    refs = {}
    for name in values:
        commit = _resolve(name, values)
        if commit is not None:
            refs[name] = commit
    return refs


def _git_dir(start: Path) -> Path | None:
    """The repository ``start`` is in, as git finds it: the first ``.git`` above."""
    for folder in (start, *start.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return dot
        if dot.is_file():
            text = _read(dot) or ""
            if not text.startswith("gitdir:"):
                raise Unreadable(f"{dot} names no git directory")
            return (folder / text.removeprefix("gitdir:").strip()).resolve()
    return None


def _common_dir(git_dir: Path) -> Path:
    named = _read(git_dir / "commondir")
    return git_dir if named is None else (git_dir / named).resolve()


def _packed(path: Path) -> dict[str, str]:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return {}
    out = {}
    for line in lines:
        if line and line[0] not in "#^":  # a comment, or the commit a tag peels to
            sha, _, name = line.partition(" ")
            out[name.strip()] = sha
    return out


def _loose(git_dir: Path) -> dict[str, str]:
    out = {}
    refs = git_dir / "refs"
    for folder, _, files in os.walk(refs):
        for file in files:
            if file.endswith(".lock"):  # a write in progress: the ref is what it was
                continue
            path = Path(folder) / file
            value = _read(path)
            if value:
                out[path.relative_to(git_dir).as_posix()] = value
    return out


def _resolve(name: str, values: Mapping[str, str]) -> str | None:
    value: str | None = values.get(name)
    for _ in range(HOPS):
        if value is None or not value.startswith("ref:"):
            return value
        value = values.get(value.removeprefix("ref:").strip())
    return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


__all__ = ["GIT_VARIABLES", "Unreadable", "read_refs"]
