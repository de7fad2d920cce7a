"""One entry of the diagnostic-code catalogue, and the style every new code follows."""

from __future__ import annotations

import re
from typing import Literal

from rein.core.frozen import Frozen
from rein.errors import Severity

# How a code reaches the user; the exit status follows from it (DESIGN.md, "Contracts").
Kind = Literal[
    "error",  # raised: the command stops with exit 1
    "usage",  # raised as a ConfigError: the configuration or command line is wrong, exit 64
    "refused",  # raised as Refused: approval, trust or a precondition is missing, exit 4
    "finding",  # reported by a validator or a preflight; the document is data, not a crash
    "notice",  # reported by planning; advisory, never blocks a run
    "diagnostic",  # written to the run record and emitted as a ``diagnostic`` event
    "tool",  # a tool call failed; the message goes back to the model as the tool's result
]

Source = Literal["rein", "AGS 1.0 §18.1", "AGS 1.0 §18.2"]

# rein's own codes are AREA + three digits (STORE001). AREA is 2–10 capital letters naming
# the part of rein that reports it; 000 is the area's catch-all and 404 means "no such …".
STYLE = re.compile(r"[A-Z]{2,10}[0-9]{3}")


class Code(Frozen):
    """A stable diagnostic code: what it means, how it reaches the user, and the fix."""

    code: str
    area: str  # the heading it is listed under
    severity: Severity
    kind: Kind
    meaning: str  # one line: what happened
    hint: str  # one line: what to do about it
    source: Source = "rein"
    aliases: tuple[str, ...] = ()  # older names that mean this code; never emitted again
    legacy_name: bool = False  # predates the AREA000 style; kept because scripts match it
    reserved: bool = False  # listed so records and reports can name it; nothing emits it


__all__ = ["STYLE", "Code", "Kind", "Source"]
