"""The result of validating one graph document, and the collector the checks report into."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rein.core.frozen import Frozen
from rein.errors import Finding, Location
from rein.formats.ags.codes import CODES
from rein.formats.loader import Document


class Report(Frozen):
    """Findings about one document, sorted by location, with its digest when it loaded."""

    path: str
    kind: str  # "AgenticGraph", or "unknown" when the document could not be read
    digest: str | None  # ags_digest of the document as loaded; None when it did not load
    findings: tuple[Finding, ...]
    document: Document | None

    @property
    def errors(self) -> tuple[Finding, ...]:
        """Findings of severity ``error``: the document must not run."""
        return tuple(f for f in self.findings if f.severity == "error")

    @property
    def warnings(self) -> tuple[Finding, ...]:
        """Advisory findings (AG9xx); failures only under ``--strict``."""
        return tuple(f for f in self.findings if f.severity == "warning")

    @property
    def codes(self) -> frozenset[str]:
        """The distinct codes found, handy for tests and summaries."""
        return frozenset(f.code for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        """The shape of ``rein graph validate --json`` for one document."""
        return {
            "path": self.path,
            "kind": self.kind,
            "digest": self.digest,
            "findings": [f.to_json() for f in self.findings],
        }


class Collector:
    """Gathers findings as (code, pointer, message); locations are computed once, at the end.

    Checks run on every document, most of which have no findings, so nothing here touches
    source positions until :meth:`findings` is called. The same finding reported twice
    (for example through two paths to one fragment) is kept once.
    """

    __slots__ = ("_raw", "document", "source")

    def __init__(self, document: Document | None, source: str) -> None:
        self.document = document
        self.source = source
        self._raw: dict[tuple[str, str, str], tuple[str | None, Location | None]] = {}

    def add(self, code: str, pointer: str, message: str, hint: str | None = None,
            location: Location | None = None) -> None:
        """Record one finding at a JSON Pointer (or at a ``location`` known already).

        ``hint`` defaults to the catalogue's fix for the code.
        """
        if code not in CODES:  # a typo in a check must not ship an undocumented code
            raise ValueError(f"unknown AGS code {code}")
        self._raw.setdefault((code, pointer, message), (hint, location))

    def codes(self) -> set[str]:
        """Codes recorded so far."""
        return {key[0] for key in self._raw}

    def __len__(self) -> int:
        return len(self._raw)

    def findings(self) -> tuple[Finding, ...]:
        """The findings with file, line, column and pointer, sorted by location."""
        out: list[Finding] = []
        if self.document is not None:  # one pass of the text for all of them
            self.document.prepare(pointer for (_, pointer, _), (_, location) in self._raw.items()
                                  if location is None)
        for (code, pointer, message), (hint, location) in self._raw.items():
            info = CODES[code]
            if location is None:
                if self.document is not None:
                    location = self.document.locate(pointer)
                else:
                    location = Location(file=self.source, pointer=pointer)
            out.append(Finding(code=code, severity=info.severity, message=message,
                               location=location, hint=hint or info.hint))
        out.sort(key=_sort_key)
        return tuple(out)


def _sort_key(f: Finding) -> tuple[int, int, str, str, str]:
    loc = f.location
    return (loc.line or 0, loc.column or 0, loc.pointer or "", f.code, f.message)


def near(code: str, word: str, names: Iterable[str]) -> str:
    """The catalogue's fix for ``code``, led by the declared name nearest to ``word`` (a
    misspelt node id, param or context key), when one is near enough."""
    from rein.core.suggest import with_suggestion

    fix = CODES[code].hint
    return with_suggestion(fix, word, names) or fix
