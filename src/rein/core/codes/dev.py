"""Codes of the development flow (`rein dev`)."""

from __future__ import annotations

from rein.core.codes.model import Code, Kind

DEV = "Development flow"


def _c(code: str, kind: Kind, meaning: str, hint: str) -> Code:
    return Code(code=code, area=DEV, severity="error", kind=kind, meaning=meaning, hint=hint)


CODES = (
    _c("DEV001", "refused", "the workspace is not the root of a git repository (each feature "
       "is committed)", "run `git init` there, or run rein dev at the repository root"),
    _c("DEV002", "refused", "the repository has uncommitted changes, so a feature's commit "
       "would hold someone else's work", "commit the changes first"),
    _c("DEV003", "usage", "the target directory is not a path inside the repository",
       "set REIN_DEV_TARGET or [dev] target to a relative directory"),
    _c("DEV004", "usage", "a verify command is refused: it needs a shell, holds a "
       "placeholder, or checks nothing (true, echo, python --version, python -c pass)", "give a real test command run "
       "without a shell"),
    _c("DEV005", "usage", "a [dev] value in rein.toml has the wrong type or range",
       "fix the value the message names, or remove it for the default"),
    _c("DEV006", "error", "an existing plan file (feature_list.json, "
       "specs/active/40-development-plan.json) cannot be imported", "fix the reasons "
       "listed, or move the file away to plan from the briefs"),
    _c("DEV007", "error", "there is no brief in specs/ and no plan to import",
       "describe what to build in specs/*.md"),
    _c("DEV008", "refused", "the feature graph is not approved, or changed after it was "
       "approved (or the flow's file names a feature run that is not a run of it)",
       "approve it with `rein approvals accept`, restore the approved file, or plan again "
       "with `rein dev start --new`"),
    _c("DEV009", "error", "rein's own git work failed (git's message, a lock a live git "
       "holds, the disk), not the agent's: the feature's attempt is not counted",
       "fix the cause named, then run `rein dev`: it runs the same attempt again"),
    _c("DEV010", "refused", "the plan rein spec published (specs/active/40-development-plan.json) "
       "is out of date: its brief or a document changed since it was published, or it was "
       "published again after this flow imported it", "run `rein spec` (it reopens what "
       "changed, a person approves, and it publishes again), then `rein dev start --new`"),
    _c("DEV011", "error", "files outside the target directory changed since the last "
       "commit (written between turns, where no check of the turn saw them): rein would "
       "commit them as the feature; the attempt is not counted", "undo them, or a person "
       "commits them, outside an agent's turn; then run `rein dev`: it verifies the same "
       "attempt again"),
    _c("DEV404", "error", "there is no development flow in this workspace",
       "start one with `rein dev`"),
)
