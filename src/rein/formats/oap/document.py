"""Reading OAP documents in their three encodings: YAML, JSON, Markdown with frontmatter.

All three give the same logical document (OAP §2.1). In ``.agent.md`` the YAML frontmatter
is the document minus ``spec.role.instructions`` and the body is the instructions
(``body.rstrip() + "\\n"``, which is what the reference reads, so digests agree); setting
the instructions in both places is an error. Parsing goes through :mod:`rein.formats.loader`
(YAML 1.2 core, duplicate keys refused, alias, depth and size limits); frontmatter is parsed
with a line offset so locations point into the real file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from rein.core.frozen import Frozen
from rein.errors import LoadError, Location
from rein.formats.loader import (
    DEFAULT_LIMITS,
    Document,
    LoadLimits,
    load_path,
    load_text,
    read_limited,
)

Encoding = Literal["yaml", "json", "md"]

PROFILE_SUFFIXES = (".agent.yaml", ".agent.yml", ".agent.json", ".agent.md")
DELTA_SUFFIXES = (".delta.yaml", ".delta.yml", ".delta.json")


class OapDocument(Frozen):
    """One loaded OAP document: data as plain JSON values, its encoding, and source positions.

    ``data`` is the document *as loaded* (digests are computed over it, before trust is
    recomputed). ``header`` keeps a YAML file's leading comment lines so a write keeps them.
    """

    data: dict[str, Any]
    source: str
    encoding: Encoding
    loaded: Document
    header: str = ""

    @property
    def kind(self) -> str | None:
        kind = self.data.get("kind")
        return kind if isinstance(kind, str) else None

    def locate(self, pointer: str = "") -> Location:
        """File, line and column of a JSON Pointer into the document."""
        if self.encoding == "md" and pointer.startswith("/spec/role/instructions"):
            # The instructions are the body: point at the line after the frontmatter.
            return Location(file=self.source, line=self.loaded.line_offset
                            + self.loaded.text.count("\n") + 2, pointer=pointer)
        return self.loaded.locate(pointer)


def encoding_for(path: str | Path) -> Encoding:
    """``md`` for ``*.md``, ``json`` for ``*.json``, otherwise ``yaml``."""
    name = str(path).lower()
    if name.endswith(".md"):
        return "md"
    return "json" if name.endswith(".json") else "yaml"


def is_oap_file(path: Path) -> bool:
    """Whether a file name is a profile or delta name (``*.agent.*``, ``*.delta.*``)."""
    name = path.name.lower()
    return name.endswith(PROFILE_SUFFIXES) or name.endswith(DELTA_SUFFIXES)


def load_oap(path: str | Path, *, limits: LoadLimits = DEFAULT_LIMITS) -> OapDocument:
    """Read a profile or delta file. Every failure is a :class:`LoadError` with a location."""
    encoding = encoding_for(path)
    if encoding != "md":
        doc = load_path(path, limits=limits, format=encoding)
        return _wrap(doc, encoding)
    raw = read_limited(path, limits.max_bytes)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LoadError(f"cannot read {path}: {exc}", kind="encoding",
                        location=Location(file=str(path)), hint="save the file as UTF-8") from None
    return load_oap_text(text, source=str(path), encoding="md", limits=limits)


def load_oap_text(text: str, *, source: str = "<input>", encoding: Encoding = "yaml",
                  limits: LoadLimits = DEFAULT_LIMITS) -> OapDocument:
    """Parse OAP text in the given encoding."""
    if encoding != "md":
        return _wrap(load_text(text, source=source, format=encoding, limits=limits), encoding)
    front, offset, body = split_frontmatter(text, source)
    doc = load_text(front, source=source, format="yaml", limits=limits, line_offset=offset)
    data = doc.data if doc.data is not None else {}
    if not isinstance(data, dict):
        raise LoadError("the frontmatter must be a mapping", kind="syntax",
                        location=Location(file=source, line=offset + 1))
    spec = data.setdefault("spec", {})
    role = spec.setdefault("role", {}) if isinstance(spec, dict) else None
    if not isinstance(role, dict):
        raise LoadError("spec.role in the frontmatter must be a mapping", kind="syntax",
                        location=doc.locate("/spec/role"))
    if "instructions" in role:
        raise LoadError(
            "spec.role.instructions is given both in the frontmatter and as the Markdown body "
            "[L3-G1, OAP §2.1]", kind="double_instructions",
            location=doc.locate("/spec/role/instructions"),
            hint="in an .agent.md file the body is the instructions: remove the key from the "
                 "frontmatter",
        )
    if not body.strip():
        raise LoadError("the Markdown body (the instructions) is empty", kind="syntax",
                        location=Location(file=source, line=text.count("\n") + 1),
                        hint="write the agent's instructions below the closing ---")
    role["instructions"] = body.rstrip() + "\n"
    return OapDocument(data=data, source=source, encoding="md", loaded=doc)


def split_frontmatter(text: str, source: str = "<input>") -> tuple[str, int, str]:
    """``(frontmatter, lines before it, body)`` of a Markdown profile."""
    text = text.removeprefix("\ufeff")
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        raise LoadError("a Markdown profile must start with YAML frontmatter (a --- line)",
                        kind="syntax", location=Location(file=source, line=1),
                        hint="put the document between two --- lines, instructions below")
    for number, line in enumerate(lines[1:], start=1):
        if line.rstrip() == "---":
            front = "\n".join(lines[1:number]) + "\n"
            body = "\n".join(lines[number + 1:]).lstrip("\n")
            return front, 1, body
    raise LoadError("the YAML frontmatter is never closed by a --- line", kind="syntax",
                    location=Location(file=source, line=1))


def _wrap(doc: Document, encoding: Encoding) -> OapDocument:
    if not isinstance(doc.data, dict):
        raise LoadError("an OAP document must be a mapping at the top level", kind="syntax",
                        location=Location(file=doc.source, line=1),
                        hint="start with `oap: \"1.0\"` and `kind: AgentProfile`")
    header = ""
    if encoding == "yaml":
        kept = []
        for line in doc.text.splitlines(keepends=True):
            if not line.startswith("#"):
                break
            kept.append(line)
        header = "".join(kept)
    return OapDocument(data=doc.data, source=doc.source, encoding=encoding, loaded=doc,
                       header=header)
