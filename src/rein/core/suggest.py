"""The "did you mean" helper every surface uses to point at the name a person meant.

It runs only on the error path (an unknown command, key, node or profile), so the import of
:mod:`difflib` waits until a suggestion is asked for and ``rein --help`` never pays for it.
"""

from __future__ import annotations

from collections.abc import Iterable

# difflib's ratio: 0.6 finds one typo in a short word ("grpah" → "graph") without offering
# unrelated names for a word that is simply wrong.
_CUTOFF = 0.6
_SPREAD = 0.05


def closest(word: str, candidates: Iterable[str], *, limit: int = 3) -> list[str]:
    """The candidates nearest to ``word``, best first (at most ``limit``; none when nothing
    is near). Case is ignored when comparing, kept in what is returned."""
    import difflib

    names = sorted({c for c in candidates if c and c != word})
    by_fold: dict[str, str] = {}
    for name in names:
        by_fold.setdefault(name.casefold(), name)
    folded = word.casefold()
    if folded in by_fold:  # only the case differs: that is the answer
        return [by_fold[folded]]
    scored = []
    for fold in by_fold:
        matcher = difflib.SequenceMatcher(None, folded, fold)
        if (matcher.real_quick_ratio() >= _CUTOFF and matcher.quick_ratio() >= _CUTOFF
                and (score := matcher.ratio()) >= _CUTOFF):
            scored.append((score, fold))
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    # Only names about as near as the nearest: one clear answer is not diluted by a list.
    best = scored[0][0] if scored else 1.0
    found = [fold for score, fold in scored if score >= best - _SPREAD][:limit]
    # A prefix the person stopped typing ("appr" for "approvals") is near too.
    if not found and len(folded) >= 3:
        found = [f for f in by_fold if f.startswith(folded)][:limit]
    return [by_fold[f] for f in found]


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """``did you mean 'graph'?`` (or a short list), or None when nothing is near enough."""
    found = closest(word, candidates)
    if not found:
        return None
    if len(found) == 1:
        return f"did you mean {found[0]!r}?"
    return "did you mean one of " + ", ".join(repr(f) for f in found) + "?"


def with_suggestion(hint: str | None, word: str, candidates: Iterable[str]) -> str | None:
    """``hint`` with the suggestion put first, for errors that already carry a hint."""
    suggestion = did_you_mean(word, candidates)
    if suggestion is None:
        return hint
    return f"{suggestion} ({hint})" if hint else suggestion
