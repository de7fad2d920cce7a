"""Recording and forgetting the user's trust in a project's ``rein.toml`` (``rein config
trust``): reads the merged configuration, so it sits above both :mod:`rein.config` and the
trust verdicts of :mod:`rein.config.trust`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.config import load_config
from rein.config.command_files import UNSURE_CODE
from rein.config.files import config_paths
from rein.config.trust import (
    ProjectTrust,
    TrustState,
    project_key,
    read_records,
    trust_file,
    verdict,
    write_records,
)
from rein.errors import ConfigError, Location, Refused


def trust_project(workspace: Path, *, expected_digest: str | None = None,
                  env: Mapping[str, str] | None = None,
                  now: dt.datetime | None = None) -> ProjectTrust:
    """Record the user's trust in the project ``rein.toml`` of ``workspace`` as it is now.

    ``expected_digest`` binds the trust to what the user reviewed: if the file changed in
    between, nothing is recorded (:class:`Refused` CFG011). A managed or user
    ``policy.project_trust = false`` refuses (CFG010), and so does a command whose workspace
    files cannot be told from its line (CFG016). A project file that defines nothing
    needing trust records nothing.
    """
    config = load_config(workspace, env=env)
    trust = config.project_trust
    if trust is None:
        raise ConfigError(f"no rein.toml in {workspace}", code="CFG013",
                          hint="trust applies to a workspace's own rein.toml; pass "
                               "--workspace DIR to name another workspace")
    if trust.state is TrustState.NOTHING:
        return trust
    if trust.state is TrustState.FORBIDDEN:
        raise Refused(f"{trust.path}: project trust is forbidden (policy.project_trust = "
                      "false in a managed or user rein.toml)", code="CFG010",
                      location=Location(file=trust.path),
                      hint="ask whoever manages that file, or copy the definitions you need "
                           "into your user rein.toml")
    if trust.unsure:
        item = trust.unsure[0]
        raise ConfigError(f"{trust.path}: {item.key} cannot be trusted: {item.unsure}",
                          code=UNSURE_CODE, location=Location(file=trust.path),
                          hint="rein trusts the workspace files a command runs, so it must "
                               "tell them from the line: write the command as a list (no "
                               "shell), name scripts from the workspace root, and list what "
                               "they source or import in the hook's files")
    if expected_digest is not None and expected_digest != trust.digest:
        raise Refused(f"{trust.path} changed since it was reviewed: expected "
                      f"{expected_digest}, now {trust.digest}", code="CFG011",
                      location=Location(file=trust.path),
                      hint="run `rein config trust` again to review the current content")
    user_config = config_paths(workspace, env)[1][1]
    store = trust_file(user_config)
    records = read_records(store)
    moment = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    record: dict[str, Any] = {"digest": trust.digest, "trusted_at": moment.isoformat().replace("+00:00", "Z"),
              "sections": [item.key for item in trust.items]}
    files = {p: d for item in trust.items for p, d in item.files.items()}
    if files:  # kept to name, later, which of them changed
        record["files"] = files
    records[project_key(Path(trust.path))] = record
    write_records(store, records)
    return verdict(Path(trust.path), trust.items, records, allowed=True)


def untrust_project(workspace: Path, *, env: Mapping[str, str] | None = None) -> bool:
    """Forget the trust in ``workspace``'s ``rein.toml``; whether there was any to forget."""
    paths = config_paths(workspace, env)
    store = trust_file(paths[1][1])
    records = read_records(store)
    if records.pop(project_key(paths[2][1]), None) is None:
        return False
    write_records(store, records)
    return True
