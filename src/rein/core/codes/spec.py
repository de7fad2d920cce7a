"""Codes of the specification flow (`rein spec`)."""

from __future__ import annotations

from rein.core.codes.model import Code, Kind

SPEC = "Specification flow"


def _c(code: str, kind: Kind, meaning: str, hint: str) -> Code:
    return Code(code=code, area=SPEC, severity="error", kind=kind, meaning=meaning, hint=hint)


CODES = (
    _c("SPEC001", "usage", "a [spec] value in rein.toml is unknown, or has the wrong type or "
       "range", "fix the value the message names, or remove it for the default"),
    _c("SPEC002", "error", "there is no brief in specs/ to specify",
       "describe what to build in specs/brief.md, then run `rein spec`"),
    _c("SPEC003", "refused", "a document's approval was not given by a holder of the roles "
       "[dev] plan_roles asks for", "start again with `rein spec start --new`; a person "
       "holding the role approves"),
    _c("SPEC004", "error", "the approved bundle does not hold together when it is checked "
       "whole before publishing", "edit the document named (`rein spec` reopens it and the "
       "ones after it), or `rein spec start --new`"),
    _c("SPEC404", "error", "there is no specification flow in this workspace",
       "start one with `rein spec`"),
)
