"""A damaged store: found once, by a full check, and refused from then on.

SQLite's ``PRAGMA integrity_check`` reads every page of the file (29 ms for a 5 MB store
in the page cache, 165 ms from the disk, in proportion for a larger one), so no command
runs it as it opens the store (``rein next`` takes about 40 ms in all). Opening costs SQLite's own checks of the
header and the schema, and one ``stat``: whether a verdict lies beside the file. The full
check runs when SQLite reports a damaged page (``SQLITE_CORRUPT``) to any command; when
it finds problems, the verdict is written beside the file (``rein.db.damage``: JSON with
the problems found and the file it is about) and the command fails with STORE003, as
does every command that opens the store after it, until the file is recovered or
restored. A verdict names its file by device, inode, size and modification time; once
any of them changed (a backup restored over it, another file moved into its place), the
file is checked again, once, fully, and the verdict is dropped when it is whole.

A damaged page that no command reads is not found: the store is used until one does. A
full check on demand is ``sqlite3 .rein/rein.db "PRAGMA integrity_check"``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sqlite3
from pathlib import Path
from typing import Any

from rein.errors import StoreError
from rein.store.sqlite_errors import DAMAGE_SUFFIX, cannot_write

#: Problems the check reports at most (it still reads the whole file when there are fewer).
FINDINGS = 20


def verdict_path(path: Path) -> Path:
    """Where the verdict on the store at ``path`` is written."""
    return Path(f"{path}{DAMAGE_SUFFIX}")


def _identity(path: Path) -> list[int]:
    info = os.stat(path)
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns]


def check(path: Path) -> list[str]:
    """The problems SQLite's integrity check finds in the store at ``path`` (none: whole),
    read on a connection of its own that writes nothing to the store."""
    from urllib.parse import quote

    from rein.store import sqlite_readonly

    try:
        db = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=30.0)
    except sqlite3.Error as exc:
        return [str(exc)]
    try:
        try:
            rows = db.execute(f"PRAGMA integrity_check({FINDINGS})").fetchall()
        except sqlite3.Error as exc:
            if not cannot_write(exc):
                return [str(exc)]  # not even the schema could be read
            db.close()  # where rein may not write, read as the store itself is read
            db = sqlite3.connect(sqlite_readonly.uri(path), uri=True, timeout=30.0)
            rows = db.execute(f"PRAGMA integrity_check({FINDINGS})").fetchall()
    except sqlite3.Error as exc:
        return [str(exc)]
    finally:
        db.close()
    return [str(row[0]) for row in rows if row[0] != "ok"]


def examine(path: Path) -> StoreError | None:
    """After SQLite reported a damaged page: the full check, and the verdict written when
    it finds problems (STORE003, returned); ``None`` when the file is whole."""
    problems = check(path)
    if not problems:
        return None
    record(path, problems)
    return damaged(path, problems)


def record(path: Path, problems: list[str]) -> None:
    """Write the verdict beside the store, whole or not at all. Where rein may not write,
    none is kept, and each command that meets the damage checks again."""
    target = verdict_path(path)
    fresh = target.with_name(f".{target.name}.{os.getpid()}.new")
    try:
        fresh.write_text(json.dumps({"file": _identity(path), "problems": problems},
                                    indent=2) + "\n", encoding="utf-8")
        os.replace(fresh, target)
    except OSError:
        with contextlib.suppress(OSError):
            fresh.unlink()


def rebind(path: Path) -> None:
    """Name the store's file as it is now in its verdict, when that is the same file:
    the command that found the damage may have written it since (closing folds the WAL
    into it), and the next command should not check it fully again for that."""
    target = verdict_path(path)
    try:
        found = json.loads(target.read_text(encoding="utf-8"))
        now = _identity(path)
    except (OSError, ValueError):
        return
    file = found.get("file") if isinstance(found, dict) else None
    if isinstance(file, list) and file[:2] == now[:2]:
        record(path, [str(p) for p in found.get("problems", [])])


def refuse_if_damaged(path: Path) -> None:
    """Raise STORE003 when a verdict lies beside the store and still holds."""
    target = verdict_path(path)
    try:
        found: Any = json.loads(target.read_text(encoding="utf-8"))
        now = _identity(path)
    except FileNotFoundError:
        return
    except (OSError, ValueError):
        found, now = None, None
    if isinstance(found, dict) and found.get("file") == now:
        raise damaged(path, [str(p) for p in found.get("problems", [])])
    problems = check(path)  # the file changed since the verdict: look again
    if problems:
        record(path, problems)
        raise damaged(path, problems)
    with contextlib.suppress(OSError):
        target.unlink()


def damaged(path: Path, problems: list[str]) -> StoreError:
    """The refusal of a damaged store, with what the check found and how to recover."""
    many = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
    if len(problems) >= FINDINGS:
        many = f"at least {many}"
    first = problems[0] if problems else "(none listed)"
    return StoreError(
        f"the run store {path} is damaged: SQLite's integrity check found {many}, the "
        f"first: {first}. rein no longer reads or writes it",
        code="STORE003", hint=recovery(path))


def recovery(path: Path) -> str:
    """The steps that keep the damaged file and give the workspace a sound store."""
    folder, name = shlex.quote(str(path.parent)), shlex.quote(path.name)
    return (f"stop every rein process of this workspace, then keep the damaged file aside "
            f"(never overwrite it): `cd {folder} && mkdir damaged && mv {name}* damaged/`; "
            f"then restore {path.name} from a backup, or rebuild it from what the damaged "
            f"file still holds: `sqlite3 -readonly damaged/{name} .recover | sqlite3 {name}` "
            f"(docs/durability.md, \"A damaged store\", says more)")


__all__ = ["FINDINGS", "check", "damaged", "examine", "rebind", "record",
           "recovery", "refuse_if_damaged", "verdict_path"]
