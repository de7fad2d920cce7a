"""Time as rein writes it: RFC 3339 in UTC with a ``Z``, as the run record schema expects."""

from __future__ import annotations

import datetime as dt


def iso(moment: dt.datetime) -> str:
    """RFC 3339 with a ``Z``."""
    return moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
