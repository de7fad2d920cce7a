"""``--baseline RESULT``: an evaluation against an earlier result, the gate of a change.

Each configuration run now is compared with the same-named one of the baseline (or the only
one with the only one), scenario by scenario, over the scenarios both ran. The gate fails on a
significant regression or on any scenario newly broken.

:func:`check` runs before any trial: a baseline with no configuration, or no scenario, to
compare with is refused (EVAL011) while that costs nothing, not once every trial has run. The
comparison then says which scenarios it could not compare (run on one side only) and which
changed since the baseline ran (another digest), so a gate never passes silently over less
than the person thinks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rein.errors import ConfigError
from rein.eval.results import comparison
from rein.eval.stats import Pair

BUILTIN = ("oracle", "nop")


def matched(names: Sequence[str], baseline: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(baseline's name, name now) of each configuration compared (EVAL011 for none)."""
    mine = [n for n in names if n not in BUILTIN]
    theirs = [c["name"] for c in baseline.get("configurations", [])
              if c.get("name") not in BUILTIN]
    pairs = [(n, n) for n in mine if n in theirs]
    if not pairs and len(mine) == 1 and len(theirs) == 1:
        pairs = [(theirs[0], mine[0])]
    if not pairs:
        raise ConfigError("the baseline has no configuration to compare with: "
                          f"baseline {sorted(theirs) or 'none'}, now {mine or 'none'}",
                          code="EVAL011", hint="run the same configuration names, or one "
                                               "configuration against a baseline of one")
    return pairs


def check(names: Sequence[str], scenarios: Sequence[str], baseline: Mapping[str, Any]) -> None:
    """Refuse, before anything runs, a baseline this evaluation could not be compared with:
    no configuration in common, or no scenario the baseline ran under it (EVAL011)."""
    for old, new in matched(names, baseline):
        ran = _ran(baseline, old)
        if not set(ran) & set(scenarios):
            raise ConfigError(f"the baseline ran {new if old == new else old} on none of "
                              f"this evaluation's scenarios: baseline {sorted(ran) or 'none'}, "
                              f"now {sorted(scenarios)}", code="EVAL011",
                              hint="evaluate the suite the baseline ran (its PATHs)")


def against_baseline(current: Mapping[str, Any], baseline: Mapping[str, Any], *,
                     alpha: float) -> dict[str, Any]:
    """Each configuration of ``current`` against the same-named one of ``baseline`` (or the
    only one against the only one), scenario by scenario: a significant regression or a
    scenario newly broken fails the gate."""
    names = [c["name"] for c in current["configurations"]]
    now = {s["name"]: s for s in current["scenarios"]}
    rows = []
    for old, new in matched(names, baseline):
        before = _ran(baseline, old)
        pairs = []
        for name, scenario in now.items():
            cell, after = before.get(name), scenario["results"].get(new)
            if cell is None or after is None:
                continue
            pairs.append(Pair(scenario=name, solved_a=cell["solved"], trials_a=cell["trials"],
                              solved_b=after["solved"], trials_b=after["trials"]))
        row = comparison(f"baseline:{old}", new, pairs, alpha=alpha)
        row["regression"] = row["verdict"] == "worse" or bool(row["broken"])
        row["not_compared"] = {
            "not_run_now": sorted(set(before) - set(now)),
            "not_in_baseline": sorted(n for n in now if n not in before),
            "changed": sorted(n for n, s in now.items() if n in before
                              and _digest(baseline, n) not in (None, s.get("digest")))}
        rows.append(row)
    return {"evaluation": baseline.get("evaluation"), "comparisons": rows,
            "passed": not any(r["regression"] for r in rows)}


def _ran(baseline: Mapping[str, Any], config: str) -> dict[str, Mapping[str, Any]]:
    """The baseline's results of ``config``, by scenario."""
    return {s["name"]: s["results"][config] for s in baseline.get("scenarios", [])
            if isinstance(s.get("results"), Mapping) and config in s["results"]}


def _digest(baseline: Mapping[str, Any], scenario: str) -> str | None:
    return next((s.get("digest") for s in baseline.get("scenarios", [])
                 if s.get("name") == scenario), None)


__all__ = ["against_baseline", "check", "matched"]
