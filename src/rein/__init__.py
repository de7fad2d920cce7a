"""rein: a deterministic harness for AI agents.

Plans are Agentic Graphs (AGS 1.0), workers are Open Agent Profiles (OAP 1.0), and the
harness owns the flow. The public front is small on purpose: :class:`Harness` (start,
resume, cancel and answer runs; drive them; follow their events) and the error tree;
everything else is reached through its layer (``rein.formats``, ``rein.engine``, ...).
"""

from typing import TYPE_CHECKING, Any

from rein.core.version import VERSION
from rein.errors import ExitCode, Finding, Location, ReinError

if TYPE_CHECKING:
    from rein.engine.service import Harness

__version__ = VERSION

__all__ = ["ExitCode", "Finding", "Harness", "Location", "ReinError", "__version__"]


def __getattr__(name: str) -> Any:
    # The Harness pulls in the whole engine: imported on first use, so that `rein --help`
    # and the document layer stay light.
    if name == "Harness":
        from rein.engine.service import Harness

        return Harness
    raise AttributeError(f"module 'rein' has no attribute {name!r}")
