"""``rein acp``: the session runtime as an ACP agent, on stdio."""

from __future__ import annotations

from pathlib import Path

import click

from rein.cli.run import open_harness, resolve_workspace, workspace_option
from rein.cli.sync import run_sync


@click.command("acp")
@workspace_option
def acp(workspace: Path | None) -> int:
    """Serve ACP sessions to an editor or client over stdio (Agent Client Protocol v1).

    The client (Zed, acpx, the agent-client-protocol SDK) starts this process and drives
    it: initialize, session/new, session/prompt, and answers the permission requests it
    is sent. A session is a durable rein thread: session/load in another process replays
    it. Modes are sandbox policies (read-only, workspace-write, danger-full-access) that
    only narrow what rein.toml and the profile allow. Logs go to stderr; stdout carries
    only protocol messages. See docs/acp.md.

    \b
    Example:
      acpx --agent 'rein acp --workspace ./project' --approve-all exec "run the tests"

    \b
    Exit codes: 0 the client closed the connection, 64 usage error.
    """
    from rein.core.extras import require

    require("acp", "rein acp", code="ACP001")
    from rein.acp.agent import serve

    with open_harness(resolve_workspace(workspace), surface="acp") as harness:
        run_sync(serve(harness))
    return 0
