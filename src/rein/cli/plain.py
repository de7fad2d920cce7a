"""The plain forms of the driver's commands, ``rein next``, ``rein submit`` and ``rein
dev``: the ones answered without click (cli/quick.py, cli/quick/submit.py,
cli/quick/dev.py). Imported on every driver turn before anything else, so it imports
nothing."""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` costs a plain turn more than the rest of what it imports
if TYPE_CHECKING:
    from collections.abc import Sequence


def plain_options(args: Sequence[str], *, takes_source: bool
                  ) -> tuple[str | None, bool, str | None] | None:
    """``(source, as_json, run_id)`` of a driver command's plain forms (`--json`, `--run
    RUN` and, where ``takes_source``, one file or `-`), else ``None``: every other form
    goes to the click command, which explains it."""
    source: str | None = None
    as_json, run_id = False, None
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--json" and not as_json:
            as_json = True
        elif arg == "--run" and run_id is None and rest and rest[0][:1] not in ("", "-"):
            run_id = rest.pop(0)
        elif takes_source and source is None and arg and (arg == "-" or
                                                          not arg.startswith("-")):
            source = arg
        else:
            return None
    return source, as_json, run_id


def plain_dev(args: Sequence[str]) -> tuple[bool, bool] | None:
    """``(status, as_json)`` of the plain forms (``dev``, ``dev status``, each with one
    ``--json`` after it), else ``None``."""
    rest = list(args)
    status = rest[:1] == ["status"]
    if status:
        rest = rest[1:]
    if rest in ([], ["--json"]):
        return status, bool(rest)
    return None

