"""rein: a deterministic harness for AI agents.

Plans are Agentic Graphs (AGS 1.0), workers are Open Agent Profiles (OAP 1.0), and the
harness owns the flow. The public front is small on purpose; everything else is reached
through its layer (``rein.formats``, ``rein.engine``, ...).
"""

from rein.errors import ExitCode, Finding, Location, ReinError

__version__ = "0.1.0"

__all__ = ["ExitCode", "Finding", "Location", "ReinError", "__version__"]
