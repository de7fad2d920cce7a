"""Features a new plan keeps unchanged: committed before, verified again, not built again.

`rein dev start --new` plans again, and the new plan may hold features rein already
committed under an earlier plan. A feature is the same one when its definition is: its
id, title, description and context, and its verify command and target (the digest
:func:`rein.dev.graphs.definition_of`, which rein writes into each feature commit as a
``Rein-Dev-Definition`` line). Such a feature is left out of the new feature graph only
when rein runs its verify command (and the smoke command) on the current tree and it
passes; a feature whose definition changed, or whose verify fails now, is built again.
Nothing here is the agent's word: the digest is rein's, the commit is rein's, the verify
runs in rein.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rein.dev import git as g
from rein.dev import locks
from rein.dev.commands import run_command
from rein.dev.graphs import command_of, definition_of
from rein.dev.plan_check import Feature
from rein.dev.settings import DevSettings

__all__ = ["already_committed"]


async def already_committed(root: Path, features: Sequence[Feature], *,
                            verify: tuple[str, ...] | None, settings: DevSettings
                            ) -> tuple[dict[str, str], list[str]]:
    """The features (id → commit) committed with the same definition whose verify passes
    on the current tree, and what to say of those whose verify fails now. rein's own git
    failures (:class:`rein.dev.git.GitFailed`, :class:`rein.dev.locks.Busy`, ``OSError``)
    are the caller's to report."""
    found: dict[str, tuple[str, tuple[str, ...]]] = {}
    with locks.held(root):
        repo = g.Repo(root)
        for feature in features:
            command = command_of(feature, verify, settings)
            sha = repo.defined(definition_of(feature, command=command,
                                             target=settings.target))
            if sha is not None:
                found[feature.id] = (sha, command)
    committed: dict[str, str] = {}
    notes: list[str] = []
    cwd = root / settings.target
    for feature_id, (sha, command) in found.items():
        failed = None
        for argv in (settings.smoke, command):
            if argv and failed is None:
                failed = await run_command(list(argv), cwd,
                                           float(settings.verify_timeout_seconds))
        if failed is None:
            committed[feature_id] = sha
        else:
            notes.append(f"feature {feature_id} was committed as {sha} with the same "
                         "definition, but its verify fails on the current tree: it is "
                         f"built again ({failed.splitlines()[0]})")
    return committed, notes
