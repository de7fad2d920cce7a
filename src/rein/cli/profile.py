"""``rein profile``: Open Agent Profiles (OAP 1.0): validate, resolve, narrow, apply deltas.

The commands translate; the decisions live in :mod:`rein.profiles` and
:mod:`rein.formats.oap`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rein.cli import profile_session
from rein.cli.output import emit_json, json_option, validation_exit_code
from rein.cli.profile_args import CONTEXT, now, resolve, workspace_option
from rein.errors import ExitCode, Finding


def _actor(actor: str | None, workspace: str, *, approving: str | None = None) -> str:
    """Who approves: the approver rein knows (``[approver]``, else the OS account); ``--actor``
    only checks it, because a typed name is a claim anyone can make. ``approving``: what is
    approved, which a confined process (an agent's sandbox) is refused (APPROVAL003)."""
    from rein.cli.approvals import approver_for

    return str(approver_for(Path(workspace).resolve(), actor, approving=approving).id)


def _signer(workspace: str) -> Any:
    """Where approvals are signed ([approver] allowed_signers), what signs a decision on a
    profile change with the approver's key and verifies it before anything is written
    (APPROVAL004 when it cannot be signed, or does not verify); None where they are not."""
    from rein.cli.approvals import approver_for

    approver = approver_for(Path(workspace).resolve(), None)
    if approver.allowed_signers is None:
        return None

    def sign(message: bytes) -> dict[str, Any]:
        from rein.config.signing import sign as ssh_sign
        from rein.config.signing import verify
        from rein.errors import Refused

        if approver.signing_key is None:
            raise Refused("the profile change was not made: approvals here are signed, and no "
                          "signing key is set for this account; nothing was written",
                          code="APPROVAL004", hint="the approver decides it from their own "
                          "account, where their signing key is set")
        click.echo(f"signing the decision with {approver.signing_key} (ssh-keygen may ask for "
                   "the key's passphrase or a touch)", err=True)
        signature = ssh_sign(approver.signing_key, message, what="the decision")
        checked = verify(approver.allowed_signers, approver.id, message, signature,
                         workspace=Path(workspace).resolve())
        return {"principal": checked.principal, "fingerprint": checked.fingerprint,
                "key": checked.key_type, "signature": signature}

    return sign


def _print_findings(findings: tuple[Finding, ...] | list[Finding]) -> None:
    for finding in findings:
        click.echo(finding.render(), err=True)


def _invalid(path: str, findings: tuple[Finding, ...] | list[Finding], as_json: bool) -> int:
    """A file that is not a valid profile: its findings, as one JSON object under --json."""
    if as_json:
        errors = [f for f in findings if f.severity == "error"] or list(findings)
        first = errors[0].to_json() if errors else {"code": "OAP001", "message": "invalid"}
        emit_json({"path": path, "error": {k: v for k, v in first.items() if k != "severity"},
                   "findings": [f.to_json() for f in findings]})
    else:
        _print_findings(findings)
    return int(ExitCode.FAILURE)


@click.group("profile", context_settings=CONTEXT)
def profile() -> None:
    """Validate, resolve and update Open Agent Profiles (OAP 1.0).

    \b
    Example:
      rein profile validate .agents/
      rein profile effective code-reviewer
      rein profile apply code-reviewer.agent.yaml session.delta.yaml --approve

    \b
    Exit codes: 0 ok, 1 invalid, 2 warnings under --strict, 3 queued for approval,
    4 refused, 64 usage error (each command's --help says which it uses).
    """


# ---------------------------------------------------------------------------- validate


def _collect(paths: tuple[str, ...]) -> list[Path]:
    from rein.formats.oap.document import is_oap_file

    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.is_file() and is_oap_file(f)))
        else:
            out.append(p)
    return out


@profile.command("validate", context_settings=CONTEXT,
                 epilog="Exit codes: 0 valid, 1 errors (unreadable files included), "
                        "2 warnings under --strict, 64 usage error.")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--strict", is_flag=True, help="Treat warnings as failures.")
@json_option
def validate(paths: tuple[str, ...], strict: bool, as_json: bool) -> int:
    """Check profiles (*.agent.yaml|json|md) and deltas (*.delta.yaml|json), or folders of them.

    Each finding names the OAP rule it breaks in brackets, e.g. [L1-P3].

    \b
    Example:
      rein profile validate code-reviewer.agent.yaml
      rein profile validate --json .agents/
    """
    from rein.formats.oap.validate import validate_file

    reports = [validate_file(p) for p in _collect(paths)]
    if not reports:
        click.echo(f"error: no profiles (*.agent.yaml|json|md) or deltas (*.delta.yaml|json) "
                   f"in {', '.join(paths)}", err=True)
    if as_json:
        emit_json({"documents": [r.to_json() for r in reports]})
    else:
        for r in reports:
            click.echo(f"{'PASS' if r.ok else 'FAIL'}  {r.path}  ({r.kind or 'unknown'})")
            for f in r.findings:
                click.echo("  " + f.render().replace("\n", "\n  "))
        valid = sum(r.ok for r in reports)
        if reports:
            click.echo(f"{valid}/{len(reports)} documents valid")
    return validation_exit_code(
        failed=not reports or not all(r.ok for r in reports),
        warned=any(f.severity == "warning" for r in reports for f in r.findings),
        strict=strict,
    )


@profile.command("digest", context_settings=CONTEXT,
                 epilog="Exit codes: 0 ok, 1 the file is not a valid profile, 64 usage error.")
@click.argument("path", type=click.Path())
@click.option("--spec", "spec_only", is_flag=True, help="Print the spec digest instead.")
@json_option
def digest(path: str, spec_only: bool, as_json: bool) -> int:
    """Print a profile's digest (sha256:<hex> over the document as loaded, OAP §2.2).

    Graphs use the other notation (sha256- and base64, AGS §3.3: `rein graph digest`).

    \b
    Example:
      rein profile digest code-reviewer.agent.yaml
      rein profile digest --spec code-reviewer.agent.yaml
    """
    from rein.formats.oap.validate import validate_file

    report = validate_file(path)
    if report.digest is None or not report.ok:
        return _invalid(path, report.findings, as_json)
    if as_json:
        emit_json({"path": path, "digest": report.digest, "spec_digest": report.spec_digest})
    else:
        click.echo(report.spec_digest if spec_only else report.digest)
    return int(ExitCode.OK)


# ---------------------------------------------------------------------------- resolve


def _writeback_cap(workspace: str) -> str:
    """rein's ``[policy] writeback``: the widest mode any profile gets here."""
    from rein.config import load_config
    from rein.profiles.policy import Policy

    return Policy.from_config(load_config(Path(workspace))).writeback


def _effective(name: str, workspace: str) -> Any:
    from rein.profiles.effective import effective_profile
    from rein.profiles.policy import Policy

    resolved, config = resolve(name, workspace)
    return effective_profile(resolved, Policy.from_config(config))


_RESOLVE_EPILOG = ("Exit codes: 0 ok, 1 the profile is invalid or cannot be instantiated, "
                   "64 usage error (including a bad rein.toml).")


@profile.command("show", context_settings=CONTEXT, epilog=_RESOLVE_EPILOG)
@click.argument("profile_ref", metavar="PROFILE")
@workspace_option
@json_option
def show(profile_ref: str, workspace: str, as_json: bool) -> int:
    """Resolve a profile (by name or path) and print it: extends merged, trust from its root,
    variables substituted, and every adjustment.

    \b
    Example:
      rein profile show python-reviewer
      rein profile show --json .agents/code-reviewer.agent.yaml
    """
    resolved, _ = resolve(profile_ref, workspace)
    if as_json:
        emit_json({**resolved.record(), "document": resolved.data,
                   "warnings": list(resolved.warnings)})
        return int(ExitCode.OK)
    from rein.profiles.store import serialize

    click.echo(f"# {resolved.name} r{resolved.revision} ({resolved.trust}) from {resolved.source}")
    click.echo(f"# spec digest {resolved.spec_digest}")
    for a in resolved.adjustments:
        click.echo(f"# {a.field}: {a.reason}")
    click.echo(serialize(dict(resolved.data), "yaml"), nl=False)
    return int(ExitCode.OK)


@profile.command("effective", context_settings=CONTEXT, epilog=_RESOLVE_EPILOG)
@click.argument("profile_ref", metavar="PROFILE")
@workspace_option
@json_option
def effective(profile_ref: str, workspace: str, as_json: bool) -> int:
    """What a session of the profile may do under rein's policy (rein.toml [policy]): tools,
    permissions, roots, network, model, budgets, and every requested / granted / reason.

    \b
    Example:
      rein profile effective code-reviewer
      rein profile effective --json data-engineer.agent.yaml | jq .adjustments
    """
    eff = _effective(profile_ref, workspace)
    if as_json:
        emit_json(eff.to_json())
        return int(ExitCode.OK)
    data = eff.to_json()
    click.echo(f"{eff.name} r{eff.resolved.revision} ({eff.resolved.trust})")
    click.echo(f"  tools:       {', '.join(data['tools']['granted']) or 'none'}")
    click.echo("  permissions: " + ", ".join(f"{k}={v}" for k, v in eff.permissions.items()))
    click.echo(f"  read roots:  {', '.join(eff.read_roots) or 'none'}; write roots: "
               f"{', '.join(eff.write_roots) or 'none'}")
    click.echo(f"  network:     {eff.network} ({', '.join(eff.allow_hosts) or 'no hosts'})")
    click.echo(f"  model:       {eff.model.rule}: {eff.model.reason}")
    budgets = {k: v for k, v in eff.budgets.items() if v is not None}
    click.echo("  budgets:     " + (", ".join(f"{k}={v}" for k, v in budgets.items()) or "none"))
    click.echo(f"  writeback:   {eff.writeback}")
    for a in eff.adjustments:
        click.echo(f"  adjusted {a.field}: requested {a.requested!r}, granted {a.granted!r} "
                   f"({a.reason})")
    return int(ExitCode.OK)


@profile.command("prompt", context_settings=CONTEXT, epilog=_RESOLVE_EPILOG)
@click.argument("profile_ref", metavar="PROFILE")
@click.option("--task", "task", default=None, help="A task brief to include.")
@workspace_option
@json_option
def prompt(profile_ref: str, task: str | None, workspace: str, as_json: bool) -> int:
    """Print the system prompt a session of the profile gets (OAP §3.2 order).

    \b
    Example:
      rein profile prompt code-reviewer --task "Review the diff in PR 42"
    """
    from rein.profiles.prompt import assemble_prompt

    text = assemble_prompt(_effective(profile_ref, workspace), task_brief=task)
    if as_json:
        emit_json({"profile": profile_ref, "prompt": text})
    else:
        click.echo(text, nl=False)
    return int(ExitCode.OK)


# ---------------------------------------------------------------------------- writeback


@profile.command("apply", context_settings=CONTEXT,
                 epilog="Exit codes: 0 applied (or dry run), 1 an invalid document or a failed "
                        "operation (nothing written), 3 queued for approval (writeback: "
                        "propose without --approve), 4 refused (stale revision or digest, "
                        "writeback off, profile locked), 64 usage error.")
@click.argument("profile_path", metavar="PROFILE", type=click.Path())
@click.argument("delta_path", metavar="DELTA", type=click.Path())
@click.option("--approve", is_flag=True,
              help="Approve the delta (needed under writeback: propose, also for a delta "
                   "without operations).")
@click.option("--dry-run", is_flag=True, help="Print the updated profile; write nothing.")
@click.option("--actor", default=None,
              help="Refuse unless rein knows you by this name (a check, not a claim).")
@workspace_option
@json_option
def apply(profile_path: str, delta_path: str, approve: bool, dry_run: bool, actor: str | None,
          workspace: str, as_json: bool) -> int:
    """Apply a state delta to a profile file: /state only, revision +1, a history entry, an
    atomic write in the profile's own encoding. The delta's proposals (changes to metadata or
    spec) are never applied here: they are queued with a risk rein computes.

    \b
    Example:
      rein profile apply code-reviewer.agent.yaml session.delta.yaml --approve
      rein profile apply code-reviewer.agent.yaml session.delta.yaml --approve --dry-run
    """
    from rein.profiles.apply import apply_file
    from rein.profiles.records import ProfileError

    try:
        outcome = apply_file(Path(profile_path), Path(delta_path), workspace=Path(workspace),
                             approve=approve, dry_run=dry_run,
                             actor=_actor(actor, workspace, approving="the profile delta"
                                          if approve and not dry_run else None),
                             now=now(), cap=_writeback_cap(workspace),
                             sign=_signer(workspace) if approve and not dry_run else None)
    except ProfileError as exc:
        if as_json:
            emit_json({"error": exc.to_json(), "findings": [f.to_json() for f in exc.findings]})
        else:
            click.echo(f"error: {exc}", err=True)
            _print_findings([f for f in exc.findings if f.message not in exc.message])
        return int(ExitCode.FAILURE)
    if as_json:
        emit_json(outcome.to_json())
    else:
        for warning in outcome.warnings:
            click.echo(f"warn: {warning}", err=True)
        if outcome.status == "dry_run":
            click.echo(outcome.text, nl=False)
            click.echo(f"(dry run) would write revision {outcome.revision}", err=True)
        elif outcome.status == "written":
            click.echo(f"wrote {outcome.path} at revision {outcome.revision}", err=True)
        else:
            click.echo("writeback is 'propose': the delta waits for approval", err=True)
        for q in outcome.queued:
            click.echo(f"queued {q['id']} [{q['risk']}] {q['kind']} {q['path']}: "
                       f"{q.get('rationale') or ''}".rstrip(), err=True)
    return int(ExitCode.WAITING if outcome.status == "queued" else ExitCode.OK)


@profile.command("history", context_settings=CONTEXT,
                 epilog="Exit codes: 0 ok, 1 the file is not a valid profile, 64 usage error.")
@click.argument("path", type=click.Path())
@json_option
def history(path: str, as_json: bool) -> int:
    """Print a profile's revision history, oldest first.

    \b
    Example:
      rein profile history code-reviewer.agent.yaml
    """
    from rein.formats.oap.validate import validate_file

    report = validate_file(path)
    if report.document is None or not report.ok:
        return _invalid(path, report.findings, as_json)
    entries = report.document.data.get("history") or []
    meta = report.document.data["metadata"]
    if as_json:
        emit_json({"path": path, "name": meta["name"], "revision": meta.get("revision", 1),
                   "history": entries})
        return int(ExitCode.OK)
    if not entries:
        click.echo(f"{meta['name']} r{meta.get('revision', 1)}: no history yet (no delta "
                   "or proposal has been applied)")
    for e in entries:
        approved = f", approved by {e['approved_by']}" if e.get("approved_by") else ""
        click.echo(f"r{e['revision']}  {e['at']}  {e.get('by', '?')}{approved}  "
                   f"[{', '.join(e.get('sections', []))}]  {e.get('change', '')}")
    return int(ExitCode.OK)


# ---------------------------------------------------------------------------- proposals


@profile.group("proposals", context_settings=CONTEXT)
def proposals() -> None:
    """The queue of changes waiting for a person: contract proposals and, under
    writeback: propose, state operations.

    \b
    Example:
      rein profile proposals list
      rein profile proposals accept p-2de36277e968

    \b
    Exit codes: 0 ok, 1 invalid result or unreadable queue, 4 refused (stale, or
    already decided), 64 usage error (unknown id).
    """


@proposals.command("list", context_settings=CONTEXT,
                   epilog="Exit codes: 0 ok, 1 the queue is unreadable, 64 usage error.")
@click.option("--all", "show_all", is_flag=True, help="Include accepted and declined items.")
@workspace_option
@json_option
def proposals_list(show_all: bool, workspace: str, as_json: bool) -> int:
    """List queued items, oldest first, with the risk rein computed.

    \b
    Example:
      rein profile proposals list --json
    """
    from rein.profiles.proposals import Queue

    items = Queue.for_workspace(Path(workspace)).items(None if show_all else "pending")
    if as_json:
        emit_json({"proposals": [{k: v for k, v in i.items() if k != "delta"} for i in items]})
        return int(ExitCode.OK)
    if not items:
        click.echo("no pending proposals")
    for i in items:
        value = f" → {i['value']!r}" if i["kind"] == "proposal" else ""
        click.echo(f"{i['id']}  [{i['risk']}]  {i['status']}  {i['profile_name']}  "
                   f"{i.get('op', '')} {i['path']}{value}")
        if i.get("rationale"):
            click.echo(f"    {i['rationale']}")
    return int(ExitCode.OK)


@proposals.command("accept", context_settings=CONTEXT,
                   epilog="Exit codes: 0 applied, 1 the result would be invalid, 4 refused "
                          "(stale: the profile changed since; or already decided), "
                          "64 usage error (unknown id).")
@click.argument("item_id", metavar="ID")
@click.option("--actor", default=None,
              help="Refuse unless rein knows you by this name (a check, not a claim).")
@workspace_option
@json_option
def proposals_accept(item_id: str, actor: str | None, workspace: str, as_json: bool) -> int:
    """Apply a queued item to its profile: re-validated, revision +1, recorded with who
    accepted it.

    \b
    Example:
      rein profile proposals accept p-2de36277e968
    """
    from rein.profiles.apply import accept

    result = accept(Path(workspace), item_id,
                    actor=_actor(actor, workspace, approving=f"profile proposal {item_id}"),
                    now=now(), cap=_writeback_cap(workspace), sign=_signer(workspace))
    if as_json:
        emit_json({"id": item_id, "status": "accepted", **result})
    else:
        click.echo(f"accepted {item_id}: wrote {result['path']} at revision "
                   f"{result['revision']}")
    return int(ExitCode.OK)


@proposals.command("decline", context_settings=CONTEXT,
                   epilog="Exit codes: 0 declined, 4 refused (already accepted or declined), "
                          "64 usage error (unknown id).")
@click.argument("item_id", metavar="ID")
@click.option("--reason", default=None, help="Why, for the record.")
@click.option("--actor", default=None,
              help="Refuse unless rein knows you by this name (a check, not a claim).")
@workspace_option
@json_option
def proposals_decline(item_id: str, reason: str | None, actor: str | None, workspace: str,
                      as_json: bool) -> int:
    """Decline a queued item; the profile is not touched.

    \b
    Example:
      rein profile proposals decline p-2de36277e968 --reason "no shell for reviewers"
    """
    from rein.profiles.apply import decline

    item = decline(Path(workspace), item_id,
                   actor=_actor(actor, workspace, approving=f"profile proposal {item_id}"),
                   now=now(),
                   reason=reason)
    if as_json:
        emit_json({"id": item_id, "status": item["status"]})
    else:
        click.echo(f"declined {item_id}")
    return int(ExitCode.OK)


# The session-side commands (propose, mcp) live in their own module.
profile.add_command(profile_session.propose)
profile.add_command(profile_session.mcp)
