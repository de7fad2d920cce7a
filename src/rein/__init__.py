"""rein: a deterministic harness for AI agents.

Plans are Agentic Graphs (AGS 1.0), workers are Open Agent Profiles (OAP 1.0), and the
harness owns the flow. The public front is small on purpose: :class:`Harness` (start,
resume, cancel and answer runs; drive them; follow their events) and the error tree;
everything else is reached through its layer (``rein.formats``, ``rein.engine``, ...).
"""

from __future__ import annotations

from rein.core.version import VERSION

# Not `typing.TYPE_CHECKING`: importing `typing` costs a driver turn's plain forms more than
# the rest of what they import, and mypy reads a constant of this name the same way.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from rein.errors import ExitCode, Finding, Location, ReinError
    from rein.protocol.sdk import Harness

__version__ = VERSION

__all__ = ["ExitCode", "Finding", "Harness", "Location", "ReinError", "__version__"]

_ERRORS = ("ExitCode", "Finding", "Location", "ReinError")


def __getattr__(name: str) -> object:
    # Each is imported on first use: the Harness pulls in the whole engine, and even the
    # error tree imports `typing` and `dataclasses`, which `rein --help`, the document
    # layer and a driver turn's plain forms do without. The Harness a program opens is
    # the engine's, with the SDK's threads (rein.protocol.sdk).
    if name == "Harness":
        from rein.protocol.sdk import Harness

        return Harness
    if name in _ERRORS:
        from rein import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'rein' has no attribute {name!r}")
