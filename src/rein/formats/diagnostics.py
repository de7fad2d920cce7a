"""Every diagnostic code rein can report, as one lookup and one generated page.

The AG codes live with the validator (:mod:`rein.formats.ags.codes`) and everything else in
:mod:`rein.core.codes`; this module joins them, so a user, a report or a test asks one place.
``docs/codes.md`` is rendered from here; regenerate it with
``python -m rein.formats.diagnostics > docs/codes.md`` (a test checks it is current).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType

from rein.core import codes as own
from rein.core.codes import Code
from rein.formats.ags import codes as ags


def _from_ags(info: ags.CodeInfo) -> Code:
    # The AG catalogue states each rule (what must hold); a finding means it was broken.
    return Code(code=info.code, area=f"Validation (AGS), {info.layer} rules",
                severity=info.severity, kind="finding", meaning=f"broken: {info.rule}",
                hint=info.hint, source="AGS 1.0 §18.1")


def _all() -> Mapping[str, Code]:
    joined = {info.code: _from_ags(info) for info in ags.CODES.values()}
    clash = joined.keys() & own.CODES.keys()
    assert not clash, f"codes in both catalogues: {sorted(clash)}"
    joined.update(own.CODES)
    return MappingProxyType(joined)


ALL_CODES: Mapping[str, Code] = _all()
"""Every code rein reports, AG codes included, by code."""


def lookup(code: str) -> Code | None:
    """The entry for ``code`` (or an old name of it); None if rein reports no such code."""
    return ALL_CODES.get(own.ALIASES.get(code, code))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _areas() -> Iterator[tuple[str, list[Code]]]:
    order: dict[str, list[Code]] = {}
    for entry in ALL_CODES.values():
        order.setdefault(entry.area, []).append(entry)
    yield from order.items()


_INTRO = """\
# Diagnostic codes

Every code rein reports, what it means, how it reaches you and how to fix it. Generated from
`rein.formats.diagnostics` (`python -m rein.formats.diagnostics > docs/codes.md`); a test
fails when this page and the catalogue differ.

- **AG** codes are the spec's validation codes (AGS 1.0 §18.1), **RT** codes its runtime
  codes (§18.2). rein uses them exactly as the spec defines them and invents none.
- rein's own codes are `AREA` + three digits (`STORE001`, `TOOL023`): `000` is an area's
  catch-all, `404` means "no such …". Older names in another shape (`STORE_BUSY`,
  `DRIVER_ENVELOPE`, …) are kept, since scripts match them, and marked *legacy name*.
- **Kind** says how a code reaches you: *error* (exit 1), *usage* (exit 64), *refused*
  (exit 4), *finding* (in a validation report), *notice* (in a plan), *diagnostic* (in the
  run record and its `diagnostic` event), *tool* (the result a model sees for a failed tool
  call).
"""


def render_page() -> str:
    """The Markdown of ``docs/codes.md``."""
    lines = [_INTRO]
    for area, entries in _areas():
        lines += [f"## {area}", "", "| Code | Severity | Kind | Meaning | Fix |",
                  "| --- | --- | --- | --- | --- |"]
        for e in entries:
            notes = [n for n, on in (("legacy name", e.legacy_name), ("reserved", e.reserved))
                     if on]
            notes += [f"was {alias}" for alias in e.aliases]
            code = f"`{e.code}`" + (f" ({', '.join(notes)})" if notes else "")
            lines.append(f"| {code} | {e.severity} | {e.kind} | {_cell(e.meaning)} | "
                         f"{_cell(e.hint)} |")
        lines.append("")
    lines += ["## Old names", "",
              ("A renamed code is looked up under its old name; rein no longer reports the old "
               "one."),
              "", "| Old name | Now | Why |", "| --- | --- | --- |"]
    lines += [f"| `{old}` | `{new}` | AGS does not define it; it moved to rein's namespace |"
              for old, new in sorted(own.ALIASES.items())]
    return "\n".join(lines) + "\n"


__all__ = ["ALL_CODES", "lookup", "render_page"]

if __name__ == "__main__":
    print(render_page(), end="")
