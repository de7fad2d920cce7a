"""Records shared by resolution and instantiation: adjustments and profile errors."""

from __future__ import annotations

from typing import Any

from rein.core.frozen import Frozen
from rein.errors import DocumentError, Finding


class Adjustment(Frozen):
    """One field rein dropped, narrowed or substituted, and why (L1-I9, T5)."""

    field: str  # a JSON Pointer into the profile, or a name like "tools"
    requested: Any
    granted: Any
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"field": self.field, "requested": self.requested, "granted": self.granted,
                "reason": self.reason}


class ProfileError(DocumentError):
    """A profile cannot be resolved or instantiated. ``findings`` has every problem."""

    default_code = "OAP200"

    def __init__(self, message: str, *, findings: tuple[Finding, ...] = (), **kwargs: Any):
        super().__init__(message, **kwargs)
        self.findings = findings
