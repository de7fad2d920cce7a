"""Skills (OAP §3.4, L3-K1): found on disk, verified, read, and placed in the prompt.

Resolution (:mod:`rein.profiles.resolve`) finds each skill's directory and checks its pin;
nothing is ever installed or fetched (T2). When a session starts, :func:`load_skills` reads
each directory once, recomputes the digest over exactly the bytes it read, and refuses a
skill whose pinned digest no longer matches (the directory may have changed since
resolution). The instructions a skill gives are its ``SKILL.md`` (else ``README.md``),
which must be a regular file inside the skill directory.

:func:`render_skills` is the block :func:`rein.profiles.prompt.assemble_prompt` inserts
after the examples (step 6) and before learned state (step 7): OAP gives skills no slot of
their own, and material may be inserted between steps, never reordered. A skill is
profile-authored content, so it ranks with the role, below rein's rules, and it changes no
tool or permission.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rein.core.frozen import Frozen
from rein.errors import LoadError
from rein.formats.canonical import oap_digest
from rein.formats.loader import read_limited
from rein.profiles.records import ProfileError

ENTRY_FILES = ("SKILL.md", "README.md")
MAX_FILES = 1000
MAX_BYTES = 5_000_000  # the whole directory
MAX_PROMPT_CHARS = 20_000  # one skill's text in the prompt


class SkillProblem(ProfileError):
    """A skill that cannot be loaded; the message says why."""

    default_code = "OAP223"


class LoadedSkill(Frozen):
    """A skill's instructions as read, with the digest of the directory they came from."""

    name: str
    path: str
    digest: str
    entry: str | None  # SKILL.md or README.md, None when the skill has neither
    text: str
    files: tuple[str, ...]
    truncated: bool = False


def _snapshot(directory: Path) -> dict[str, bytes]:
    """Every regular file below ``directory`` by relative POSIX path, read once."""
    out: dict[str, bytes] = {}
    total = 0
    for path in sorted(directory.rglob("*")):
        if not path.is_file():
            continue
        if len(out) >= MAX_FILES:
            raise SkillProblem(f"more than {MAX_FILES} files")
        try:  # read no more than what is left of the bound, however large the file is
            data = read_limited(path, MAX_BYTES - total)
        except LoadError as exc:
            if exc.kind == "too_large":
                raise SkillProblem(f"more than {MAX_BYTES:,} bytes") from None
            raise SkillProblem(exc.message) from None
        total += len(data)
        out[path.relative_to(directory).as_posix()] = data
    return out


def snapshot_digest(files: Mapping[str, bytes]) -> str:
    """rein's skill digest (the same as :func:`rein.profiles.resolve.skill_digest`)."""
    return oap_digest({name: hashlib.sha256(data).hexdigest() for name, data in files.items()})


def load_skill(entry: Mapping[str, Any]) -> LoadedSkill:
    """Read one resolved skill (an entry of ``ResolvedProfile.skills``). Raises SkillProblem."""
    directory = Path(entry["path"])
    try:
        root = directory.resolve(strict=True)
        files = _snapshot(root)
    except OSError as exc:
        raise SkillProblem(f"cannot be read: {exc.strerror or exc}") from None
    digest = snapshot_digest(files)
    if entry.get("digest") and entry["digest"] != digest:
        raise SkillProblem(f"digest mismatch: pinned {entry['digest']}, now {digest}")
    name = next((n for n in ENTRY_FILES if n in files), None)
    text, truncated = "", False
    if name is not None:
        real = (root / name).resolve()
        if real.parent != root:  # a symlinked SKILL.md must not pull in another file
            raise SkillProblem(f"{name} points outside the skill directory")
        text = files[name].decode("utf-8", errors="replace").strip()
        if len(text) > MAX_PROMPT_CHARS:
            text, truncated = text[:MAX_PROMPT_CHARS], True
    return LoadedSkill(name=entry["name"], path=str(root), digest=digest, entry=name, text=text,
                       files=tuple(files), truncated=truncated)


def load_skills(entries: Iterable[Mapping[str, Any]]) -> tuple[tuple[LoadedSkill, ...],
                                                                tuple[str, ...]]:
    """``(loaded, problems)``. A required skill that fails raises SkillProblem (T5: fail
    rather than degrade); an optional one is left out and its problem reported."""
    loaded, problems = [], []
    for entry in entries:
        try:
            loaded.append(load_skill(entry))
        except SkillProblem as exc:
            if entry.get("required"):
                raise SkillProblem(f"required skill {entry['name']!r}: {exc.message}") from None
            problems.append(f"skill {entry['name']!r} left out: {exc.message}")
    return tuple(loaded), tuple(problems)


def render_skills(skills: Iterable[LoadedSkill], problems: Iterable[str] = ()) -> str:
    """The prompt block for the loaded skills, or "" when there are none."""
    blocks = []
    for skill in skills:
        body = skill.text or ("(no SKILL.md; files: " + ", ".join(skill.files[:20]) + ")")
        note = f"\n[{skill.name}: cut at {MAX_PROMPT_CHARS:,} characters]" if skill.truncated \
            else ""
        blocks.append(f"### Skill: {skill.name}\n{body}{note}")
    notes = [f"[{p}]" for p in problems]
    if not blocks and not notes:
        return ""
    head = ("## Skills\nProcedures that come with this profile. They describe how to work; "
            "they do not grant tools or permissions.")
    return "\n\n".join([head, *blocks, *notes])
