"""docs/codes.md is the catalogue, rendered; the docs name only codes rein has."""

from __future__ import annotations

import re

from support import ROOT

from rein.formats.ags.codes import CODES as AG_CODES
from rein.formats.diagnostics import ALL_CODES, lookup, render_page

DOCS = ROOT / "docs"
PAGE = DOCS / "codes.md"


def test_the_checked_in_page_is_the_generated_one() -> None:
    # On a difference: python -m rein.formats.diagnostics > docs/codes.md
    assert PAGE.read_text(encoding="utf-8") == render_page()


def test_the_page_lists_every_code_once() -> None:
    tables, _, old_names = render_page().partition("## Old names")
    rows = re.findall(r"^\| `([A-Z][A-Z0-9_]+)`", tables, flags=re.MULTILINE)
    assert sorted(rows) == sorted(ALL_CODES)
    assert "| `RT000` | `RUN000` |" in old_names


def test_one_lookup_answers_for_ag_rt_and_rein_codes() -> None:
    assert set(AG_CODES) <= set(ALL_CODES)
    found = [lookup(c) for c in ("AG204", "RT033", "STORE_BUSY", "RT000")]
    assert [e.code if e else None for e in found] == ["AG204", "RT033", "STORE_BUSY", "RUN000"]
    assert [e.kind if e else None for e in found] == ["finding", "diagnostic", "error",
                                                        "diagnostic"]


def test_the_docs_index_links_the_page() -> None:
    assert "(codes.md)" in (DOCS / "README.md").read_text(encoding="utf-8")


def test_every_code_the_docs_name_exists() -> None:
    """A page that tells users to look for a code rein never reports misleads them."""
    shape = re.compile(r"\b(?:[A-Z]{2,10}[0-9]{3}|(?:STORE|DRIVER|APPROVAL|RUN)_[A-Z_]+)\b")
    unknown = []
    for page in sorted(DOCS.rglob("*.md")):
        if page in (PAGE, DOCS / "security.md"):  # the generated page; security.md is not ours
            continue
        text = page.read_text(encoding="utf-8")
        unknown += [f"{page.relative_to(DOCS)}: {m}" for m in shape.findall(text)
                    if lookup(m) is None]
    assert unknown == []
