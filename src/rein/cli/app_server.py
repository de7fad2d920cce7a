"""``rein app-server``: the session runtime over Codex's app-server protocol, on stdio."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rein.cli.sync import run_sync
from rein.cli.workspace import open_harness, resolve_workspace, workspace_option


@click.group("app-server", invoke_without_command=True)
@click.option("--listen", default="stdio://", show_default=True,
              help="Where to listen; only stdio:// is supported.")
@workspace_option
@click.pass_context
def app_server(ctx: click.Context, listen: str, workspace: Path | None) -> int | None:
    """Serve threads and turns to a client over stdio (Codex app-server v2, JSON lines).

    A client (an IDE, the openai-codex Python SDK, a console) starts this process and
    drives it: initialize, thread/start, turn/start, and answers the approval requests it
    is sent. Threads are durable in the workspace's store: another process resumes them.
    Logs go to stderr; stdout carries only protocol messages. See docs/app-server.md.

    \b
    Example:
      rein app-server --workspace ./project
      python -c "from openai_codex import Codex, CodexConfig; ..."   # see docs/sdk.md

    \b
    Exit codes: 0 the client closed the connection, 64 usage error.
    """
    if ctx.invoked_subcommand is not None:
        return None
    if listen != "stdio://":
        raise click.UsageError(f"--listen {listen}: only stdio:// is supported")
    from rein.appserver.server import serve

    with open_harness(resolve_workspace(workspace), surface="app-server") as harness:
        run_sync(serve(harness, sys.stdin.buffer, sys.stdout.buffer))
    return 0


@app_server.command("generate-json-schema")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The directory to write the schema files to (created).")
def generate_json_schema(out: Path) -> int:
    """Write the JSON Schema of the protocol rein's app-server speaks.

    One file per request, result and notification type (draft-07), and the unions
    ClientRequest.json, ServerRequest.json and ServerNotification.json, from the same
    types the server's messages are checked against.

    \b
    Example:
      rein app-server generate-json-schema --out schema/

    \b
    Exit codes: 0 written, 64 usage error.
    """
    from rein.appserver.schema import write

    written = write(out)
    click.echo(f"wrote {len(written)} files to {out}")
    return 0
