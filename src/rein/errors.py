"""Every error rein raises, and the findings it reports.

    ReinError                      (code, message, hint, location)
    ├── DocumentError              a document could not be read or is not valid
    │   └── LoadError              bytes → data failed (syntax, limits, duplicate keys, …)
    ├── ConfigError                rein.toml or a command-line value is wrong
    ├── RunError                   a run could not start or continue
    │   ├── BudgetExceeded         a limit would be passed (names the limit and the value)
    │   ├── RoutingError           no worker or model can serve a node
    │   └── StoreError             the store is missing, locked or from the future
    ├── Refused                    approval missing or stale, revision conflict (exit 4)
    └── ProviderError              a model or tool vendor failed (translated at the edge)

Control-flow signals (a run pausing for a person or a driver) are not errors and live with
the engine. Findings are what validators report: a document with findings is data, not an
exception; only the loader raises, because nothing can be checked past a parse failure.
"""

from __future__ import annotations

import enum

from rein.core.frozen import Frozen, field

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any, Literal

    Severity = Literal["error", "warning", "info"]
else:
    Severity = str


class ExitCode(enum.IntEnum):
    """The exit codes every command keeps (see DESIGN.md, "Contracts")."""

    OK = 0  # success
    FAILURE = 1  # failure, or errors found
    WARNINGS = 2  # warnings under --strict
    WAITING = 3  # a run paused for a driver, a human or an approval
    REFUSED = 4  # approval missing or stale, revision conflict
    USAGE = 64  # the command line itself is wrong


class Location(Frozen):
    """Where something is: a file, a line and column (1-based), and a JSON Pointer."""

    file: str | None = None
    line: int | None = None
    column: int | None = None
    pointer: str | None = None

    def __str__(self) -> str:
        parts = [self.file or "<input>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        text = ":".join(parts)
        if self.pointer:
            text += f" ({self.pointer})"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "pointer": self.pointer,
        }


class Finding(Frozen):
    """One diagnostic about a document: a stable code, what is wrong, where, and the fix."""

    code: str
    severity: Severity
    message: str
    location: Location = field(default_factory=Location)
    hint: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "location": self.location.to_json(),
        }
        if self.hint:
            out["hint"] = self.hint
        return out

    def render(self) -> str:
        text = f"{self.location}: {self.severity} {self.code}: {self.message}"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text


class ReinError(Exception):
    """Base of every error rein raises on purpose. Never shown as a traceback."""

    default_code = "REIN000"
    exit_code = ExitCode.FAILURE

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        hint: str | None = None,
        location: Location | None = None,
        **fields: Any,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.hint = hint
        self.location = location
        self.fields = fields

    def to_finding(self) -> Finding:
        return Finding(
            code=self.code,
            severity="error",
            message=self.message,
            location=self.location or Location(),
            hint=self.hint,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.hint:
            out["hint"] = self.hint
        if self.location:
            out["location"] = self.location.to_json()
        out.update({k: v for k, v in self.fields.items() if _is_json_scalar(v)})
        return out

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        text = f"{where}{self.code}: {self.message}"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text


def _is_json_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


class DocumentError(ReinError):
    """A document could not be read or is not valid."""

    default_code = "DOC000"


class LoadError(DocumentError):
    """Turning bytes into data failed.

    ``kind`` is one of: ``syntax``, ``encoding``, ``duplicate_key``, ``alias_limit``,
    ``too_large``, ``too_deep``, ``non_finite``, ``bad_tag``, ``non_string_key``,
    ``bad_number``, ``not_found``, ``unreadable``. Each document format maps it to its own code
    (AGS: ``duplicate_key`` → AG005, everything else → AG001).
    """

    default_code = "LOAD001"

    def __init__(self, message: str, *, kind: str, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.kind = kind


class ConfigError(ReinError):
    """rein.toml or a command-line value is wrong."""

    default_code = "CFG001"
    exit_code = ExitCode.USAGE


class RunError(ReinError):
    """A run could not start or continue."""

    default_code = "RUN000"


class BudgetExceeded(RunError):
    """A limit would be passed; names the limit and the value."""

    default_code = "RT061"


class RoutingError(RunError):
    """No worker or model can serve a node at the requested tier."""

    default_code = "RT011"


class StoreError(RunError):
    """The store is missing, locked, corrupt, or written by a newer rein."""

    default_code = "STORE001"


class Refused(ReinError):
    """An approval is missing or stale, or a revision conflicts."""

    default_code = "REFUSED"
    exit_code = ExitCode.REFUSED


class ProviderError(ReinError):
    """A model or tool vendor failed; raised from the vendor's exception."""

    default_code = "PROVIDER"
