"""``rein profile propose`` and ``rein profile mcp``: the session side of a profile.

Added to the ``rein profile`` group by :mod:`rein.cli.profile`. The commands
translate; generation lives in :mod:`rein.profiles.generate`, the MCP client in
:mod:`rein.tools.mcp`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from rein.cli.output import emit_json, json_option
from rein.cli.profile_args import CONTEXT, now, resolve, workspace_option
from rein.errors import ExitCode, Refused


def _write_delta(delta: dict[str, Any], out: Path) -> None:
    from rein.core.writing import write_atomic
    from rein.profiles.store import serialize

    write_atomic(out, serialize(delta, "json" if out.name.lower().endswith(".json") else "yaml"))


@click.command("propose", context_settings=CONTEXT,
                 epilog="Exit codes: 0 delta written (or printed), 1 the profile or the "
                        "findings are invalid, 64 usage error.")
@click.argument("profile_ref", metavar="PROFILE")
@click.argument("findings", metavar="FINDINGS", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False), default=None,
              help="Write the delta here (*.delta.yaml or *.delta.json); default: stdout.")
@workspace_option
@json_option
def propose(profile_ref: str, findings: str, output: str | None, workspace: str,
            as_json: bool) -> int:
    """Turn a session's findings (JSON or YAML) into a state delta for PROFILE, without
    touching the profile. Learned items need evidence (kind + ref); changes to metadata or
    spec become proposals with the risk rein computes.

    \b
    FINDINGS format:
      {"session": {"id": "s-42", "outcome": "completed"},
       "learned": [{"text": "CI gates merges on 85% coverage.",
                    "evidence": [{"kind": "file", "ref": ".github/workflows/ci.yml"}]}],
       "threads": [{"title": "Flaky auth tests", "status": "done",
                    "evidence": [{"kind": "decision", "ref": "turn 9"}]}],
       "changes": [{"path": "/spec/tools/allow", "value": ["read", "shell"],
                    "rationale": "Running the suite needs the shell."}]}
    Evidence kinds: user_statement, decision, thread_status, file, tool_result, session.

    \b
    Example:
      rein profile propose code-reviewer findings.json -o session.delta.yaml
      rein profile apply .agents/code-reviewer.agent.yaml session.delta.yaml --approve
    """
    from rein.profiles.findings import load_findings
    from rein.profiles.generate import draft_delta

    resolved, _ = resolve(profile_ref, workspace)
    if output and Path(output).resolve() == Path(resolved.source).resolve():
        raise click.UsageError("-o names the profile itself; generating a delta never writes "
                               "the profile [L2-G3]")
    args = load_findings(findings)
    from rein.formats.redaction import known_secrets

    # Every known secret (REIN_SECRET_* and provider keys), named as the store names them.
    secrets = {name or "": value for value, name in known_secrets(os.environ).pairs}
    draft = draft_delta(resolved, secrets=secrets, now=now(), **args)
    if output:
        _write_delta(draft.delta, Path(output))
    if as_json:
        emit_json({"path": output, "delta": draft.delta, "skipped": list(draft.skipped),
                   "notes": list(draft.notes)})
    elif not output:
        from rein.profiles.store import serialize

        click.echo(serialize(draft.delta, "yaml"), nl=False)
    for line in (*draft.skipped, *draft.notes):
        if not as_json:
            click.echo(f"note: {line}", err=True)
    if output and not as_json:
        ops, props = len(draft.delta.get("operations", [])), len(draft.delta.get("proposals", []))
        click.echo(f"wrote {output}: {ops} operation(s), {props} proposal(s), target "
                   f"{resolved.name} r{resolved.revision}", err=True)
    return int(ExitCode.OK)


@click.command("mcp", context_settings=CONTEXT,
                 epilog="Exit codes: 0 ok, 1 a server failed or the call failed, 4 refused "
                        "(launch not confirmed, or the tool is not granted), 64 usage error.")
@click.argument("profile_ref", metavar="PROFILE")
@click.option("--call", "call", default=None, metavar="TOOL",
              help="Call one tool, named mcp/<server>/<tool>.")
@click.option("--args", "arguments", default="{}", metavar="JSON",
              help="The tool's arguments as a JSON object.")
@click.option("--yes", "assume_yes", is_flag=True,
              help="Launch the profile's MCP servers without asking (you have read their "
                   "command lines in `rein profile show`).")
@click.option("--approve-call", is_flag=True,
              help="Approve the call when the profile's permissions say `ask`.")
@workspace_option
@json_option
def mcp(profile_ref: str, call: str | None, arguments: str, assume_yes: bool,
        approve_call: bool, workspace: str, as_json: bool) -> int:
    """Launch PROFILE's MCP servers, list the tools a session of it may use (the profile's
    allow/deny and rein's policy applied), and optionally call one.

    Launching a server runs a command from the profile, so rein asks first: on a terminal
    it shows each command line and asks; otherwise pass --yes, or it refuses (exit 4).

    \b
    Example:
      rein profile mcp clock-keeper
      rein profile mcp clock-keeper --yes --call mcp/time/get_current_time \\
          --args '{"timezone": "UTC"}'
    """
    from rein.cli.sync import run_sync
    from rein.profiles.effective import effective_profile
    from rein.profiles.policy import Policy
    from rein.tools.mcp import LaunchRequest, McpHub, servers_from_profile
    from rein.workers.profile_mcp import grant_checks

    resolved, config = resolve(profile_ref, workspace)
    eff = effective_profile(resolved, Policy.from_config(config))
    try:
        parsed = json.loads(arguments)
    except ValueError as exc:
        raise click.UsageError(f"--args is not JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise click.UsageError("--args must be a JSON object")
    interactive = sys.stdin.isatty() and not as_json

    async def confirm(request: LaunchRequest) -> str:
        click.echo(request.render(), err=True)
        from rein.cli.prompt import approved

        return "accept" if approved("launch it?", err=True) else "decline"

    async def session() -> tuple[dict[str, Any], int]:
        hub = McpHub(servers_from_profile(resolved.mcp_servers), gate=eff.decide,
                     profile=resolved.name, trust=resolved.trust, workspace=Path(workspace),
                     assume_yes=assume_yes, confirm=confirm if interactive else None,
                     **grant_checks(eff))
        async with hub:
            listing = hub.to_json()
            if call is None:
                return listing, int(ExitCode.OK)
            decision, result = await hub.call(call, parsed, approved=approve_call)
            code = ExitCode.REFUSED if result.refused else (
                ExitCode.OK if result.ok else ExitCode.FAILURE)
            return {**listing, "call": {"tool": call, "decision": decision,
                                        **result.to_json()}}, int(code)

    try:
        data, code = run_sync(session())
    except Refused as exc:
        if as_json:
            emit_json({"error": exc.to_json()})
        else:
            click.echo(f"refused: {exc.message}" + (f"\nhint: {exc.hint}" if exc.hint else ""),
                       err=True)
        return int(ExitCode.REFUSED)
    if as_json:
        emit_json(data)
        return code
    for server in data["servers"]:
        reason = f": {server['reason']}" if server.get("reason") else ""
        click.echo(f"{server['name']} ({server['transport']}): {server['status']}{reason}")
        for tool in server.get("tools", []):
            click.echo(f"  {tool['name']}  {tool['decision']}  {tool['description']}")
        for hidden in server.get("hidden", []):
            click.echo(f"  (hidden) {hidden}")
    if "call" in data:
        click.echo(data["call"]["content"])
    return code
