"""The catalogue of rein's diagnostic codes: every code rein reports besides the AG codes.

The AG codes of document validation have their own catalogue next to the validator
(``rein.formats.ags.codes``); ``rein.formats.diagnostics`` joins both into one lookup and
renders ``docs/codes.md``. Two sources meet here:

* **the spec's** runtime codes, ``RT011``–``RT062`` (AGS 1.0 §18.2), kept exactly as the
  spec defines them; rein never invents an ``RT`` code;
* **rein's own** codes, one style going forward: ``AREA`` + three digits (``STORE001``,
  ``TOOL023``), where AREA names the part of rein that reports it, ``000`` is the area's
  catch-all and ``404`` means "no such …". The digits leave room to group (``OAP0xx``
  document findings, ``OAP2xx`` raised while a profile is in use).

Older codes that predate the style (``STORE_BUSY``, ``DRIVER_ENVELOPE``, ``APPROVAL_STALE``,
``REFUSED``, …) keep their names, since scripts match them; they are marked ``legacy_name``
and no new code may take that shape. A code that is renamed keeps its old name as an alias:
``RT000``, which AGS does not define, is now ``RUN000``, and ``lookup("RUN000")`` finds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from rein.core.codes import dev, eval, profiles, runtime, sessions, spec, system, web
from rein.core.codes.model import STYLE, Code, Kind, Source


def _index(entries: tuple[Code, ...]) -> Mapping[str, Code]:
    out: dict[str, Code] = {}
    for entry in entries:
        # A duplicate would silently hide one meaning behind another.
        assert entry.code not in out, f"{entry.code} is catalogued twice"
        out[entry.code] = entry
    return MappingProxyType(out)


CODES: Mapping[str, Code] = _index((*runtime.CODES, *system.CODES, *profiles.CODES,
                                     *sessions.CODES, *dev.CODES, *spec.CODES, *eval.CODES,
                                     *web.CODES))
"""Every code rein reports except the AG codes, by code."""

ALIASES: Mapping[str, str] = MappingProxyType(
    {alias: entry.code for entry in CODES.values() for alias in entry.aliases})
"""Old name → current code. An alias is only looked up, never emitted."""


def lookup(code: str) -> Code | None:
    """The catalogue entry for ``code`` or one of its old names; None if rein has no such code."""
    return CODES.get(ALIASES.get(code, code))


__all__ = ["ALIASES", "CODES", "STYLE", "Code", "Kind", "Source", "lookup"]
