"""``rein graph validate [--strict] [--json] PATH...`` answered without click.

An editor or a pre-commit hook validates a graph on every save, and for a small graph the
command is mostly start-up, of which importing click is a large part. The plain forms are
read here and printed exactly as the click command prints them (the text of the reports is
built in this module for both). Anything else returns ``None`` and goes through click:
``--help``, any other option, a path that starts with ``-``, an error to report (validating
is a read, so doing it again through click changes nothing), and output click would alter
(text with terminal escapes, which it strips from a pipe; a stream that is not UTF-8).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rein.errors import Finding

if TYPE_CHECKING:
    from rein.formats.ags.report import Report


def quick_validate(args: Sequence[str]) -> int | None:
    """The exit code of ``rein graph validate ARGS``, or ``None`` to leave it to click."""
    parsed = _parse(args)
    if parsed is None or "utf" not in str(getattr(sys.stdout, "encoding", "")).lower():
        return None
    paths, strict, as_json = parsed
    from pathlib import Path

    from rein.config import loader_limits
    from rein.errors import ReinError
    from rein.formats.ags import iter_graph_files, validate_path

    try:
        limits = loader_limits(Path.cwd())
        reports = [validate_path(p, limits=limits) for p in iter_graph_files(paths)]
    except (ReinError, OSError):
        return None  # click's command reports it, as every command does
    if not reports:
        return None  # the command's own message for a folder without graphs
    if as_json:
        from rein.cli.output import shown

        # As emit_json prints it; JSON escapes every control character.
        text = json.dumps(shown({"documents": [r.to_json() for r in reports]}),
                          ensure_ascii=False, indent=2, sort_keys=False)
    else:
        text = reports_text(reports)
        if "\x1b" in text:
            return None
    from rein.cli.output import validation_exit_code
    from rein.cli.safe_output import guarded

    guarded(sys.stdout.write)(text + "\n")
    guarded(sys.stdout.flush)()
    return validation_exit_code(failed=any(r.errors for r in reports),
                                warned=any(r.warnings for r in reports), strict=strict)


def _parse(args: Sequence[str]) -> tuple[list[str], bool, bool] | None:
    """``(paths, strict, as_json)`` for the forms answered here, else ``None``."""
    paths: list[str] = []
    strict = as_json = False
    for arg in args:
        if arg == "--strict" and not strict:
            strict = True
        elif arg == "--json" and not as_json:
            as_json = True
        elif arg[:1] not in ("", "-"):
            paths.append(arg)
        else:
            return None
    return (paths, strict, as_json) if paths else None


def reports_text(reports: Sequence[Report]) -> str:
    """The reports as ``rein graph validate`` prints them for people: a line per clean
    document, each finding (with its hint), and the totals."""
    lines: list[str] = []
    errors = warnings = 0
    for r in reports:
        if not r.findings:
            lines.append(f"{r.path}: ok")
        lines.extend(finding_text(f) for f in r.findings)
        errors += len(r.errors)
        warnings += len(r.warnings)
    docs = _plural(len(reports), "document")
    lines.append(f"{docs}: {_plural(errors, 'error')}, {_plural(warnings, 'warning')}")
    return "\n".join(lines)


def finding_text(f: Finding) -> str:
    """One finding: ``file:line:column: severity CODE: message (at /pointer)`` and its hint."""
    loc = f.location
    where = ":".join(str(p) for p in (loc.file or "<input>", loc.line, loc.column)
                     if p is not None)
    text = f"{where}: {f.severity} {f.code}: {f.message}"
    if loc.pointer:
        text += f" (at {loc.pointer})"
    if f.hint:
        text += f"\n    hint: {f.hint}"
    return text


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


__all__ = ["finding_text", "quick_validate", "reports_text"]
