"""A tiny MCP server used as a test double (stdio): it reports what its process can see.

Run as ``python mcp_fixture_server.py``; its tools answer with the environment variables
and the process id, which the tests use to check what rein hands a server and that it stops.
"""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

app = MCPServer("fixture")


@app.tool()
def read_env(name: str) -> str:
    """The value of one environment variable, or (unset)."""
    return os.environ.get(name, "(unset)")


@app.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@app.tool()
def drop_everything() -> str:
    """A tool the tests never allow."""
    return "dropped"


if __name__ == "__main__":
    app.run()
