"""``spec.context.files`` (OAP §3.6): files loaded at boot, or named for the agent to fetch.

``mode: always`` injects the file at boot: its text is read when the profile is resolved
(the session's start) and placed in the system prompt, labelled with its path, after the
examples and skills and before the learned state (OAP gives context files no slot of their
own; material inserted between the steps is allowed, reordering is not). ``mode:
on_demand`` (the default) advertises the path, with its description, for the agent to read
with its file tool. ``max_bytes`` bounds what is read (:data:`DEFAULT_MAX_BYTES` when
absent); a longer file is cut at a character boundary and the prompt says so.

An ``always`` file that cannot be read (missing, a directory, not UTF-8 text) is said
where it would have been, and in the profile's warnings (``OAP224``): the session starts
without it, and neither the agent nor the person is left to believe it was loaded (OAP
gives files no ``required`` flag, and published profiles name files a workspace may not
have). A path outside the workspace is refused before, with every other profile path
(``OAP008``). A file the session may not read (outside
its read roots, or under its ``deny_paths``, ``.git`` and ``.rein`` included) is not put in
the prompt: the prompt says it was withheld, so no profile reads around rein's file policy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rein.core.frozen import Frozen
from rein.formats.globs import path_within

DEFAULT_MAX_BYTES = 100_000
TAG = "context-file"
UNREADABLE = "OAP224"  # an always file that could not be read at the session's start


class ContextFile(Frozen):
    """One ``context.files`` entry as the session sees it."""

    path: str  # workspace-relative, as the profile names it
    mode: str  # always | on_demand
    description: str = ""
    text: str | None = None  # always: what was read (None for on_demand)
    cut_at: int | None = None  # always: the file was longer than max_bytes
    problem: str | None = None  # always: why it could not be read

    @property
    def warning(self) -> str | None:
        """The profile's warning about this file, if it could not be loaded."""
        if self.problem is None:
            return None
        return (f"{UNREADABLE}: context file {self.path!r} (mode: always) cannot be read: "
                f"{self.problem}; the session starts without it")


def load(data: Mapping[str, Any], workspace: Path) -> tuple[ContextFile, ...]:
    """The entries of ``spec.context.files``, the ``always`` ones read (or why not)."""
    context = (data.get("spec") or {}).get("context") or {}
    out = []
    for entry in context.get("files") or []:
        path, mode = str(entry["path"]), str(entry.get("mode") or "on_demand")
        description = str(entry.get("description") or "")
        if mode != "always":
            out.append(ContextFile(path=path, mode=mode, description=description))
            continue
        limit = int(entry.get("max_bytes") or DEFAULT_MAX_BYTES)
        try:
            with (workspace / path).open("rb") as handle:
                raw = handle.read(limit + 1)
            text = raw[:limit].decode("utf-8", errors="ignore" if len(raw) > limit
                                      else "strict")
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else \
                "it is not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else str(exc)
            out.append(ContextFile(path=path, mode=mode, description=description,
                                   problem=why))
            continue
        out.append(ContextFile(path=path, mode=mode, description=description, text=text,
                               cut_at=limit if len(raw) > limit else None))
    return tuple(out)


def render(files: Sequence[ContextFile], *, read_roots: Sequence[str],
           deny_paths: Sequence[str]) -> str:
    """The prompt's block for the profile's context files ("" when it names none)."""
    if not files:
        return ""

    def readable(path: str) -> bool:
        return any(path_within(root, path) for root in read_roots) and not any(
            path_within(denied, path) for denied in deny_paths)

    loaded, named = [], []
    for f in files:
        about = f" ({f.description})" if f.description else ""
        if not readable(f.path):
            named.append(f"- {f.path}{about}: withheld, outside what this session may read")
        elif f.problem is not None:
            named.append(f"- {f.path}{about}: meant to be loaded here, but it could not be "
                         f"read at the start of the session ({f.problem})")
        elif f.text is None:
            named.append(f"- {f.path}{about}")
        else:
            body = f.text.replace(f"</{TAG}", f"<\\/{TAG}")  # the file cannot close the block
            cut = f"\n[cut at {f.cut_at} bytes]" if f.cut_at is not None else ""
            loaded.append(f'<{TAG} path="{f.path}">\n{body.rstrip()}{cut}\n</{TAG}>')
    parts = []
    if loaded:
        parts.append("## Context files\nWorkspace files this profile loads at the start of "
                     "every session, as they were then.\n\n" + "\n\n".join(loaded))
    if named:
        parts.append("## Files to read when you need them\n" + "\n".join(named))
    return "\n\n".join(parts)
