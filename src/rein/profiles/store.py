"""Writing a profile back to disk: same encoding, re-validated, atomic, under a lock.

* The profile keeps its encoding: ``.agent.md`` stays frontmatter + Markdown body (the
  reference writes YAML into it, research E.6-1), JSON stays JSON, YAML keeps its leading
  comment block (other comments are lost: a known gap).
* The serialized text is parsed back and must give exactly the document, and the document
  must validate, before anything touches the file (the reference writes invalid profiles).
* Writes go to a temporary file in the same directory, are flushed and fsynced, then
  renamed over the original, and the directory is fsynced (L2-A12, T8).
* Read, check, apply and write happen under one advisory lock per profile, so two
  concurrent applies cannot lose an update between the revision check and the write.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rein.errors import DocumentError, LoadError, Refused
from rein.formats.oap.document import Encoding, OapDocument, load_oap_text
from rein.formats.oap.validate import validate_document
from rein.formats.yaml_text import Dumper, dump

LOCK_TIMEOUT_SECONDS = 10.0
_LOOK_SECONDS = 0.02  # how often a waiter tries the lock again


class _Dumper(Dumper):
    """rein's YAML with readable multi-line strings (``|`` blocks)."""

    block_text = True


def _yaml(data: Any) -> str:
    return dump(data, width=100, dumper=_Dumper)


def serialize(document: dict[str, Any], encoding: Encoding, header: str = "") -> str:
    """The text of ``document`` in ``encoding``."""
    if encoding == "json":
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if encoding == "yaml":
        return header + _yaml(document)
    front = json.loads(json.dumps(document))
    role = front.get("spec", {}).get("role", {})
    instructions = role.pop("instructions", "")
    if not role:
        front["spec"].pop("role")
    if not front.get("spec"):
        front.pop("spec", None)
    return f"---\n{_yaml(front)}---\n\n{instructions}"


def checked_text(document: dict[str, Any], original: OapDocument) -> str:
    """Serialize, parse back, compare, validate. Raises :class:`DocumentError` on any doubt."""
    text = serialize(document, original.encoding, original.header)
    try:
        again = load_oap_text(text, source=original.source, encoding=original.encoding)
    except LoadError as exc:
        raise DocumentError(f"the updated profile would not parse: {exc.message}",
                            code="OAP250") from None
    if again.data != document:
        raise DocumentError("the updated profile does not survive a write and re-read "
                            "unchanged; nothing was written", code="OAP251")
    report = validate_document(again)
    errors = [f for f in report.findings if f.severity == "error"]
    if errors:
        raise DocumentError(f"the updated profile would be invalid: {errors[0].message}; "
                            "nothing was written", code="OAP252", location=errors[0].location)
    return text


@contextlib.contextmanager
def profile_lock(path: Path, timeout: float = LOCK_TIMEOUT_SECONDS) -> Iterator[None]:
    """Hold the advisory lock of one profile file (``.<name>.lock`` beside it, removed when
    the lock is released: a profile folder is not left with a lock file per profile)."""
    try:
        with vanishing_lock(path.parent / f".{path.name}.lock", timeout):
            yield
    except LockTimeout:
        raise Refused(f"{path} is locked by another rein process", code="OAP253",
                      hint="retry when the other write has finished") from None


class LockTimeout(Exception):
    """Another process held the lock for longer than the caller would wait."""


@contextlib.contextmanager
def vanishing_lock(lock: Path, timeout: float) -> Iterator[None]:
    """An exclusive ``flock`` on ``lock`` whose file is removed at release.

    The file is unlinked while it is still held, so a process that opened it meanwhile and
    then gets the lock sees that the name no longer refers to the file it locked, and
    starts over on the name's new file: two holders can never lock two different files.
    """
    deadline = time.monotonic() + timeout
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                     0o600)
        try:
            _flock(fd, lock, deadline)
            try:
                current = os.stat(lock, follow_symlinks=False)
            except FileNotFoundError:
                current = None
        except BaseException:
            os.close(fd)
            raise
        if current is not None and os.path.samestat(os.fstat(fd), current):
            break
        os.close(fd)  # its holder removed it as it let go: lock the file the name has now
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)
        os.close(fd)  # closing releases the lock


def _flock(fd: int, lock: Path, deadline: float) -> None:
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise LockTimeout(str(lock)) from None
            time.sleep(_LOOK_SECONDS)
