"""``rein serve``: the web console over this workspace's runs."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rein.cli.sync import run_sync
from rein.cli.workspace import given_store, resolve_workspace, workspace_option
from rein.errors import ExitCode


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but loopback needs --token-env.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: any free port).")
@click.option("--read-only", is_flag=True,
              help="Show runs and the queue; refuse every answer, start and cancel.")
@click.option("--token-env", "token_env", metavar="VAR", default=None,
              help="Take the access token from this environment variable (at least 32 "
                   "characters) instead of making a fresh one.")
@workspace_option
def serve(host: str, port: int, read_only: bool, token_env: str | None,
          workspace: Path | None) -> int:
    """Watch and steer runs from a browser: runs, the live graph of a run, the approval
    queue, and the plan of any graph file with "approve and run".

    Prints one line, the URL to open (it carries the access token; the page swaps it for
    a cookie). Runs started here go on in this process and are kept in the store: another
    `rein` process can go on driving them after the server stops.

    \b
    Example:
      rein serve
      rein serve --port 9000 --read-only
      REIN_WEB_TOKEN=$(openssl rand -hex 24) rein serve --host 0.0.0.0 --token-env REIN_WEB_TOKEN

    \b
    Exit codes: 0 stopped, 1 failure, 4 refused (a non-loopback host without a token),
    64 usage error (the web extra missing, the port taken).
    """
    from rein.web.server import check_bind, require
    from rein.web.server import serve as serve_console

    require()
    bind = check_bind(host, port, token_env=token_env, read_only=read_only)

    def announce(url: str) -> None:
        click.echo(url)
        sys.stdout.flush()  # the one line a script or a terminal waits for

    try:
        run_sync(serve_console(resolve_workspace(workspace), bind, store_url=given_store(),
                               announce=announce))
    except KeyboardInterrupt:
        pass
    return int(ExitCode.OK)
