"""Git's lock files, and rein's own lock of a repository.

Git writes ``index`` (or a ref) by creating ``index.lock`` exclusively, writing it, and
renaming it into place. A git killed in between (a ``git add`` killed with its process
group) leaves the lock, and every later git that writes the index fails with "File exists"
until someone removes it. rein removes such a lock only when its writer is gone:

* rein's own git work on a repository holds rein's lock of it (:func:`held`), so the lock
  was not left by a rein still at work;
* no process has the file open and no git process works in the repository (its current
  directory inside the work tree or the git directory), looked up in ``/proc``; a git of
  another user, whose files cannot be looked into, counts as at work;
* the lock has not changed for :data:`STALE_AFTER_SECONDS` (git writes its lock as it
  works), which also covers a writer rein cannot see (another PID namespace).

A lock whose writer may be alive is waited for, up to :data:`WAIT_SECONDS`, and then left
alone: the caller reports it as rein's own failure, never as the agent's. Where ``/proc`` is
absent, nothing is removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

STALE_AFTER_SECONDS = 3.0  # unchanged this long, with no writer in sight: left behind
WAIT_SECONDS = 20.0  # at most this long for a lock whose writer may be alive
MAX_RECOVERIES = 3  # lock files removed for one git call before it is given up
_LOOK_SECONDS = 0.05


class Busy(Exception):
    """rein's own lock of the repository is held by another rein for too long."""


@contextlib.contextmanager
def held(root: Path, *, wait: float | None = None) -> Iterator[None]:
    """rein's lock of the repository at ``root`` (``.rein/dev/git.lock``), for the block."""
    path = root / ".rein" / "dev" / "git.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                 0o600)
    try:
        deadline = time.monotonic() + (WAIT_SECONDS if wait is None else wait)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise Busy(f"another rein process holds {path}") from None
                time.sleep(_LOOK_SECONDS)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def clear_stale(lock: Path, git_dir: Path, roots: Sequence[Path]) -> bool:
    """Remove ``lock`` if its writer is gone; True when the lock is gone (removed here or
    by its writer), so the git call may be tried again; False to leave it alone."""
    if lock.suffix != ".lock" or not _inside(lock.parent, git_dir):
        return False
    if holders(lock, roots) is None:
        return False  # this system cannot tell who holds it
    deadline = time.monotonic() + WAIT_SECONDS
    seen: tuple[int, int, int] | None = None
    quiet_since = time.monotonic()
    while True:
        try:
            info = os.lstat(lock)
        except FileNotFoundError:
            return True  # its writer finished
        if not _regular(info.st_mode):
            return False
        mark = (info.st_ino, info.st_mtime_ns, info.st_size)
        if mark != seen:
            seen, quiet_since = mark, time.monotonic()
        age = max(time.time() - info.st_mtime, time.monotonic() - quiet_since)
        if age >= STALE_AFTER_SECONDS and not holders(lock, roots):
            again = os.lstat(lock)
            if (again.st_ino, again.st_mtime_ns, again.st_size) == mark:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(lock)
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(_LOOK_SECONDS)


def holders(lock: Path, roots: Sequence[Path]) -> list[int] | None:
    """Processes that may hold ``lock``: one with it open, or a git working in one of
    ``roots``. None when this system has no ``/proc`` to look in."""
    proc = Path("/proc")
    if not (proc / "self" / "fd").is_dir():
        return None
    wanted = os.fsencode(os.path.abspath(lock))
    found = []
    for entry in os.scandir(proc):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        base = entry.path
        try:
            with open(f"{base}/stat", "rb") as fh:
                state = fh.read().rpartition(b")")[2].split()[0]
            with open(f"{base}/comm", "rb") as fh:
                comm = fh.read().strip()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if state in (b"Z", b"X"):
            continue
        is_git = comm == b"git" or comm.startswith(b"git-")
        try:
            if is_git and _inside(Path(os.readlink(f"{base}/cwd")), *roots):
                found.append(int(entry.name))
                continue
            if any(os.readlink(f"{base}/fd/{fd}").encode() == wanted
                   for fd in os.listdir(f"{base}/fd")):
                found.append(int(entry.name))
        except PermissionError:
            if is_git:  # another user's git: it may be working here
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _inside(path: Path, *roots: Path) -> bool:
    try:
        resolved = path.resolve()
    except OSError:
        return False
    return any(resolved == r or r in resolved.parents for r in (x.resolve() for x in roots))


def _regular(mode: int) -> bool:
    import stat

    return stat.S_ISREG(mode)
